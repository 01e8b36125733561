"""A fork server for the Python that runs the azure collection's modules in the rehearsal.

Every azure module imports the collection's ``azure_rm_common``, which imports the whole Azure
SDK: about 2,000 modules and 2-3 s of CPU, paid again by every task (a one-VM rehearsal runs
about 15 of them). The server imports that SDK once, then forks a child for each module run.

What the child runs is unchanged. It runs the module file Ansible wrote, with its arguments,
environment, working directory, umask and standard streams. It sees the same ``sys.executable``.
Only third-party modules are kept from the preload (the Azure SDK, requests, msal...): every
``ansible`` and ``ansible_collections`` module is dropped before the first fork, so the module
imports Ansible's code and the collection's ``azure_rm_common`` from the payload the controller
sent, as a fresh interpreter would. The SDK it finds already imported is the one that interpreter
would import, from the same site-packages.

    python forkserver.py serve --socket S [--idle SECONDS]   # in the SDK's venv
    python forkserver.py client --socket S --out FILE         # writes the interpreter to give Ansible

The client is a small script with that venv's python in its shebang. Ansible runs it as
``ansible_python_interpreter`` (``azure_vm_python``). It hands its argv, environment, working
directory, umask and file descriptors 0-2 to the server and exits with the child's status (a
child killed by a signal kills the client with it). When the server cannot be reached, or for
interpreter options it does not serve (``-c``, ``-m``, ...), the client execs the real python.
When the client dies, its child is killed. The server exits after ``--idle`` seconds without a
request, or when its parent dies.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import io
import json
import os
import select
import signal
import socket
import struct
import sys
import traceback
from pathlib import Path

#: what the server imports once: the collection's common module utility, which imports the SDK
PRELOAD = "ansible_collections.azure.azcollection.plugins.module_utils.azure_rm_common"
#: dropped from the preload before the first fork: the module takes these from its payload
DROPPED = ("ansible", "ansible_collections")
_PR_SET_PDEATHSIG = 1
_HEADER = struct.Struct("!I")
_STATUS = struct.Struct("!ci")

CLIENT = '''#!{python} -IS
"""Ansible's interpreter for the rehearsal's azure modules: runs them in a child of the fork
server on {socket!r} (tests/azure/forkserver.py), or as {python} when it cannot be reached."""
import json, os, socket, struct, sys

PYTHON, SOCKET = {python!r}, {socket!r}


def real():
    os.execv(PYTHON, [PYTHON, *sys.argv[1:]])


args = sys.argv[1:]
if args and args[0].startswith("-"):
    real()
try:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(SOCKET)
except OSError:
    real()
mask = os.umask(0)
os.umask(mask)
request = json.dumps({{"argv": args, "env": dict(os.environ), "cwd": os.getcwd(), "umask": mask}}).encode()
socket.send_fds(conn, [struct.pack({header!r}, len(request)) + request], [0, 1, 2])
reply = b""
while len(reply) < {status_size}:
    chunk = conn.recv({status_size} - len(reply))
    if not chunk:
        sys.stderr.write("forkserver: the server closed the connection without a status\\n")
        sys.exit(70)
    reply += chunk
kind, value = struct.unpack({status!r}, reply)
if kind == b"S":
    os.kill(os.getpid(), value)
sys.exit(value)
'''


def _die_with_parent() -> None:
    """SIGKILL this process when the process that forked it ends."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def preload() -> list[str]:
    """Import the SDK through ``PRELOAD``; drop Ansible's modules; return the base sys.path."""
    import threading

    __import__(PRELOAD)
    if threading.active_count() != 1:  # a fork copies only the calling thread
        raise SystemExit(f"forkserver: importing {PRELOAD} started threads: {threading.enumerate()}")
    for name in [n for n in sys.modules if n.split(".")[0] in DROPPED]:
        del sys.modules[name]
    return list(sys.path[1:])


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    while len(data) < _HEADER.size:
        data += conn.recv(1 << 16)
    (size,) = _HEADER.unpack_from(data)
    body = data[_HEADER.size :]
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ConnectionError("the client closed the connection mid-request")
        body += chunk
    return json.loads(body), fds


def _streams() -> None:
    """Standard streams on descriptors 0-2, as a fresh interpreter opens them."""
    enc = sys.stdout.encoding
    raw_in = open(0, "rb", closefd=False)  # noqa: SIM115 - the process's stdin, closed at exit
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(raw_in, encoding=enc)
    for fd, name, errors in ((1, "stdout", "strict"), (2, "stderr", "backslashreplace")):
        raw = open(fd, "wb", closefd=False, buffering=0 if fd == 2 else -1)  # noqa: SIM115 - likewise
        stream = io.TextIOWrapper(
            raw, encoding=enc, errors=errors, line_buffering=fd == 2 or os.isatty(fd), write_through=fd == 2
        )
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def _run(request: dict, base_path: list[str]) -> int:
    """Run the request's program in this (forked) process; return its exit status."""
    import atexit
    import runpy
    import tempfile
    import types

    os.chdir(request["cwd"])
    os.umask(request["umask"])
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None
    _streams()
    argv = request["argv"]
    try:
        if argv:
            sys.argv = list(argv)
            sys.path[:] = [os.path.dirname(os.path.realpath(argv[0])), *base_path]
            runpy.run_path(argv[0], run_name="__main__")
        else:
            sys.argv = [""]
            sys.path[:] = ["", *base_path]
            main = types.ModuleType("__main__")
            sys.modules["__main__"] = main
            exec(compile(sys.stdin.buffer.read(), "<stdin>", "exec"), main.__dict__)
        status = 0
    except SystemExit as stop:
        code = stop.code
        status = code if isinstance(code, int) else 0 if code is None else 1
        if not isinstance(code, int) and code is not None:
            print(code, file=sys.stderr)
    except BaseException as error:  # noqa: BLE001 - what the interpreter does with an uncaught exception
        tb = error.__traceback__
        ours = (__file__, runpy.__file__, "<frozen runpy>")
        while tb is not None and tb.tb_frame.f_code.co_filename in ours:
            tb = tb.tb_next  # the traceback starts in the program, as the interpreter's does
        traceback.print_exception(type(error), error, tb)
        status = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            status = 120
    return status


def _handle(conn: socket.socket, base_path: list[str]) -> None:
    """Serve one request (in a child of the server): fork the runner, relay its status."""
    for sig in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    request, fds = _receive(conn)
    pid = os.fork()
    if pid == 0:
        _die_with_parent()
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in fds:
            if fd > 2:
                os.close(fd)
        os._exit(_run(request, base_path))
    for fd in fds:
        os.close(fd)
    child = os.pidfd_open(pid)
    ready, _, _ = select.select([conn, child], [], [])
    if child not in ready:  # the client went away (killed, or its task timed out): so does the child
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    kind, value = (b"S", os.WTERMSIG(status)) if os.WIFSIGNALED(status) else (b"E", os.WEXITSTATUS(status))
    with contextlib.suppress(OSError):  # a client gone has nobody to tell
        conn.sendall(_STATUS.pack(kind, value))


def serve(path: Path, idle: float) -> None:
    """Preload, listen on ``path``, fork a handler per connection; exit when idle or orphaned."""
    _die_with_parent()
    base_path = preload()
    sys.stdout.flush()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # handlers are reaped by the kernel
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    path.unlink(missing_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(64)
    server.settimeout(idle)
    try:
        while True:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                return
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                server.close()
                conn.settimeout(None)
                try:
                    _handle(conn, base_path)
                finally:
                    os._exit(0)
            conn.close()
    finally:
        path.unlink(missing_ok=True)


def write_client(path: Path, sock: Path, python: str = sys.executable) -> Path:
    """Write the interpreter script Ansible is given; return its path."""
    fields = {"header": _HEADER.format, "status": _STATUS.format, "status_size": _STATUS.size}
    path.write_text(CLIENT.format(python=python, socket=str(sock), **fields))
    path.chmod(0o755)
    return path


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("serve", help="preload the SDK and serve module runs on a Unix socket")
    run.add_argument("--socket", type=Path, required=True)
    run.add_argument(
        "--idle", type=float, default=3600, help="exit after this many seconds without a request"
    )
    client = sub.add_parser("client", help="write the interpreter script that talks to the server")
    client.add_argument("--socket", type=Path, required=True)
    client.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.command == "serve":
        serve(args.socket, args.idle)
    else:
        print(write_client(args.out, args.socket))
    return 0


if __name__ == "__main__":
    sys.exit(main())
