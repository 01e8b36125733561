"""One function instance: a worker process tree in its own cgroup, with its own /tmp."""

from __future__ import annotations

import contextlib
import json
import math
import os
import queue
import select
import shutil
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed_services.faas import environment
from testbed_services.faas.cgroups import InstanceCgroup
from testbed_services.faas.logs import LogCollector, LogRing
from testbed_services.faas.storage import TmpStore

START_TIMEOUT_S = 30.0
JOIN_AND_EXEC = 'while [ "$1" != -- ]; do echo $$ > "$1" || exit 97; shift; done; shift; exec "$@"'


class InstanceDied(Exception):
    """The worker exited (killed) while a call was running."""


class CallTimeout(Exception):
    """The call ran past the function's timeout."""


@dataclass
class Host:
    """An emulated host: identity, age when first used, lifetime, the memory its instances take and
    the function packages fetched to it. Times are the emulator's real seconds (time-scaled)."""

    capacity_mb: int
    lifetime_s: float = math.inf
    #: how old the host already was when the emulator first placed a container on it
    age_s: float = 0.0
    id: str = field(default_factory=lambda: "host-" + uuid.uuid4().hex[:10])
    booted: float = field(default_factory=time.monotonic)
    used_mb: int = 0
    #: containers ever placed on it (the inspector's ``host_containers``)
    containers: int = 0
    #: containers on it now (placed and not yet retired)
    live: int = 0
    #: when it last became empty (None while it holds a container)
    empty_since: float | None = None
    requests: int = 0
    directory: Path | None = None
    code: dict[tuple[str, str], Path] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def uptime_s(self) -> float:
        return self.age_s + time.monotonic() - self.booted

    def expired(self) -> bool:
        return self.uptime_s() >= self.lifetime_s


class Instance:
    """A started worker; ``call`` sends one event and waits for its response."""

    def __init__(
        self,
        *,
        iid: str,
        deployment: Any,
        host: Host,
        cgroup: InstanceCgroup,
        tmp_path: Path,
        private_tmp: bool,
        directory: Path,
        facts: dict[str, str],
        key_service: str,
        logs: LogCollector,
        run_as: tuple[int, int, str] | None = None,
        code_dir: Path | None = None,
    ) -> None:
        """Start the worker. ``facts`` are the emulator's variables of the instance (ids, HOME);
        the worker's whole environment is :func:`environment.worker_env` of them. The deployment's
        own variables and the key service's address go to the worker through its stdin, never its
        environment or command line (any local user can read both), and the worker applies them
        after it dropped privileges.

        The worker starts its interpreter at once but enters its sandbox only on its start message,
        which :meth:`begin` sends with the instance's /tmp (``tmp_path``, a mount of its own when
        ``private_tmp``) made: the emulator makes it meanwhile."""
        self.id = iid
        self.deployment = deployment
        self.host = host
        self.cgroup = cgroup
        #: the instance's /tmp, given by :meth:`begin`
        self.tmp: TmpStore | None = None
        self._tmp_as = (tmp_path, private_tmp)
        self.directory = directory
        self.created = time.monotonic()
        self.last_used = self.created
        self.inflight = 0
        self.invocations = 0
        self.init_s = 0.0
        self.cold_start_s = 0.0
        self.cold_kind = "container"
        self.cold_costs: dict[str, float] = {}
        self.keep_alive_s = deployment.keep_alive_s
        self.retired = False
        self._ended = False
        self._pending: dict[int, queue.Queue] = {}
        self._next = 0
        self._lock = threading.Lock()
        #: held by whoever reads the worker's stdout (the reader thread, or a direct call)
        self._reading = threading.Lock()
        self.exit_code: int | None = None
        d = deployment
        cfg = {
            "private_tmp": private_tmp,
            "tmp_src": str(tmp_path),
            "tmp_dir": "/tmp" if private_tmp else str(tmp_path),
            "code_dir": str(code_dir or d.code.code_dir),
            "module": d.code.module,
            "handler": d.code.handler,
            "function_name": d.name,
            "version": d.version,
            "memory_mb": d.memory_mb,
            "concurrency": d.concurrency,
            "python_path": [str(p) for p in d.code.python_path],
            "run_as": list(run_as[:2]) if run_as else None,
        }
        env = environment.worker_env({**facts, "TMPDIR": cfg["tmp_dir"]})
        # the shell joins the cgroups before exec, so the interpreter's own memory is charged too
        self.proc = subprocess.Popen(  # noqa: S603 - a function instance of the emulator: in the instance's cgroup, ended with it
            [
                "/bin/sh",
                "-c",
                JOIN_AND_EXEC,
                "sh",
                *cgroup.procs_files(),
                "--",
                sys.executable,
                "-I",  # isolated: no PYTHON* variable, no user site, no script directory on sys.path
                "-m",
                "testbed_services.faas.worker",
                json.dumps(cfg),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=str(directory),
            start_new_session=True,
            bufsize=0,
        )
        self._start_message = (json.dumps({"env": dict(d.env), "key_service": key_service}) + "\n").encode()
        #: one call at a time: the calling thread reads the pipe itself (no reader-thread hand-off)
        self.direct = d.concurrency == 1
        self._buf = b""
        self._ready: queue.Queue = queue.Queue()
        self.log = LogRing()
        logs.add(self.proc.stderr, self.log)  # PIPE: never None
        if not self.direct:
            threading.Thread(target=self._read, name=f"read-{iid}", daemon=True).start()

    def begin(self, tmp: TmpStore) -> None:
        """Send the worker its start message: its /tmp ``tmp`` is ready (the store the worker was
        started for), so it may enter its sandbox and load the function."""
        self.tmp = tmp  # released with the instance, whatever follows
        if (tmp.path, tmp.enforced) != self._tmp_as:
            raise RuntimeError(f"instance {self.id}: /tmp {tmp.path} is not the one its worker expects")
        message, self._start_message = self._start_message, b""
        with contextlib.suppress(OSError):  # a worker that died at once is seen by wait_ready
            self.proc.stdin.write(message)  # PIPE: never None

    def _readline(self, timeout_s: float) -> bytes | None:
        """Next line from the worker (None at EOF); raise queue.Empty after ``timeout_s``."""
        fd = self.proc.stdout.fileno()  # PIPE: never None
        end = time.monotonic() + timeout_s
        while b"\n" not in self._buf:
            left = end - time.monotonic()
            if left <= 0:
                raise queue.Empty
            if not select.select([fd], [], [], left)[0]:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self.exit_code = self.proc.wait()
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def wait_ready(self) -> None:
        """Wait for the function's init; raise RuntimeError with its error."""
        try:
            if self.direct:
                with self._reading:
                    line = None if self.proc.stdout.closed else self._readline(START_TIMEOUT_S)
                msg = None if line is None else json.loads(line)
            else:
                msg = self._ready.get(timeout=START_TIMEOUT_S)
        except queue.Empty:
            raise RuntimeError(f"instance did not start within {START_TIMEOUT_S:.0f} s") from None
        if msg is None:
            raise RuntimeError(f"instance exited during init (code {self.proc.poll()})")
        if not msg.get("ready"):
            err = msg.get("error") or {}
            raise RuntimeError(f"function init failed: {err.get('type')}: {err.get('message')}")
        self.init_s = float(msg["init_s"])

    def _read(self) -> None:
        with self._reading:
            self._read_until_eof()
        self._close_stdout()

    def _close_stdout(self) -> None:
        """Close the worker's stdout once nobody reads it (else it stays open until collected)."""
        with contextlib.suppress(OSError):
            self.proc.stdout.close()  # PIPE: never None

    def _read_until_eof(self) -> None:
        ready = False
        while True:
            try:
                line = self._readline(3600.0)
            except queue.Empty:
                continue
            if line is None:
                break
            msg = json.loads(line)
            if not ready:
                ready = True
                self._ready.put(msg)
                continue
            with self._lock:
                q = self._pending.pop(msg.get("id"), None)
            if q is not None:
                q.put(msg)
        if not ready:
            self._ready.put(None)
        with self._lock:
            pending, self._pending = list(self._pending.values()), {}
        for q in pending:
            q.put(None)

    def call(self, event: Any, timeout_s: float, request_id: str) -> dict[str, Any]:
        """Run the handler once; raise InstanceDied or CallTimeout."""
        # the reader thread's hand-off; a direct call reads the pipe itself and needs none (a Queue
        # is a lock and three conditions: ~10 us on every warm call)
        q: queue.Queue | None = None if self.direct else queue.Queue(maxsize=1)
        with self._lock:
            if self.exit_code is not None:
                raise InstanceDied("instance is gone")
            self._next += 1
            cid = self._next
            if q is not None:
                self._pending[cid] = q
        line = json.dumps({"id": cid, "event": event, "timeout_s": timeout_s, "request_id": request_id})
        try:
            self.proc.stdin.write(line.encode() + b"\n")  # PIPE: never None
        except (BrokenPipeError, OSError, ValueError):
            raise InstanceDied("instance is gone") from None
        try:
            if q is None:
                with self._reading:
                    raw = None if self.proc.stdout.closed else self._readline(timeout_s)
                msg = None if raw is None else json.loads(raw)
            else:
                msg = q.get(timeout=timeout_s)
        except queue.Empty:
            raise CallTimeout(f"Task timed out after {timeout_s:.2f} seconds") from None
        if msg is None:
            raise InstanceDied(f"instance exited with {self.exit_code}")
        return msg

    def alive(self) -> bool:
        return self.exit_code is None and self.proc.poll() is None

    def retire(self) -> None:
        """Kill the process tree, release /tmp and the cgroup (once: later calls return at once)."""
        self.retired = True
        with self._lock:
            if self._ended:
                return
            self._ended = True
        try:
            if self.proc.stdin:
                self.proc.stdin.close()
        except OSError:
            pass
        self.cgroup.kill()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, 9)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        if self.direct and self._reading.acquire(blocking=False):  # else the caller reads EOF
            try:
                self._close_stdout()
            finally:
                self._reading.release()
        if self.tmp is not None:
            self.tmp.release()
        self.cgroup.remove()
        self.log.closed.set()
        shutil.rmtree(self.directory, ignore_errors=True)
