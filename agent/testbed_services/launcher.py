"""Start a local service, wait until it is ready, stop it: the one launcher of the toolkit.

Every service the toolkit runs on this machine for a benchmark or a test - the FaaS emulator
(``testbed-agent faas serve``), moto's KMS-compatible server, the stand-ins of the tests - starts
here: in its own session, its output in a log file (never an undrained pipe), ready when its
``ready`` probe says so (a URL file written, a port accepting), refused with the log's tail when it
exits or stays unready past the timeout. Given the agent's process tracker (``RunContext.tracker``),
the service dies with the agent and a resumed run reaps it like any benchmark process. Stopping sends
SIGTERM to the service, waits, then kills its whole process group.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

from testbed_shared.errors import Interrupted, TestbedError


class Tracker(Protocol):
    """What the launcher needs of a process tracker (``testbed_agent.procs.ProcessTracker``)."""

    def preexec(self) -> Callable[[], None]: ...

    def started(self, pid: int) -> None: ...

    def finished(self, pid: int) -> None: ...


@dataclass
class Service:
    """A started service: its name, the URL its probe found, its process and log."""

    name: str
    url: str
    proc: subprocess.Popen[bytes]
    log: Path | None = None
    tracker: Tracker | None = None
    _output: IO[bytes] | None = field(default=None, repr=False)

    def stop(self, timeout_s: float = 20.0) -> int | None:
        """SIGTERM to the service, up to ``timeout_s`` for it to end, then SIGKILL to its process
        group (nothing it started outlives it); its exit status."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=timeout_s)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if self.tracker is not None:
            self.tracker.finished(self.proc.pid)
        if self._output is not None:
            self._output.close()
        return self.proc.returncode

    def output_tail(self, chars: int = 600) -> str:
        """The end of what the service wrote (its log)."""
        if self._output is None:
            return ""
        self._output.flush()
        self._output.seek(0, os.SEEK_END)
        size = self._output.tell()
        self._output.seek(max(0, size - chars * 4))
        return self._output.read().decode("utf-8", "replace").strip()[-chars:]


def start(
    cmd: Sequence[str],
    *,
    name: str,
    ready: Callable[[], str | None],
    log: Path | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float = 30.0,
    tracker: Tracker | None = None,
    stop: threading.Event | None = None,
    hint: str | None = None,
) -> Service:
    """Start ``cmd`` and wait until ``ready()`` returns its URL; raise TestbedError (with the end
    of its output) when it exits first or is not ready within ``timeout_s``; Interrupted when
    ``stop`` is set while waiting."""
    output = open(log, "w+b") if log is not None else tempfile.TemporaryFile()  # noqa: SIM115 - the service's lifetime
    try:
        proc = subprocess.Popen(  # noqa: S603 - a service of the toolkit: tracked when given a tracker
            list(cmd),
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=tracker.preexec() if tracker else None,  # noqa: PLW1509 - the tracker's own hook
        )
    except OSError as exc:
        output.close()
        raise TestbedError(f"{name} could not start: {exc}", hint) from None
    if tracker is not None:
        tracker.started(proc.pid)
    svc = Service(name, "", proc, log, tracker, output)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            url = ready()
            if url:
                svc.url = url
                return svc
            if proc.poll() is not None:
                raise TestbedError(
                    f"{name} exited ({proc.returncode}) before it was ready: {svc.output_tail()}", hint
                )
            if time.monotonic() > deadline:
                raise TestbedError(f"{name} not ready within {timeout_s:g} s: {svc.output_tail()}", hint)
            if stop is not None and stop.is_set():
                raise Interrupted(f"interrupted while {name} started")
            time.sleep(0.05)
    except BaseException:
        svc.stop(timeout_s=5)
        raise


@contextlib.contextmanager
def running(cmd: Sequence[str], *, stop_timeout_s: float = 20.0, **kw) -> Iterator[Service]:
    """:func:`start` as a context: the service is stopped when the block ends."""
    svc = start(cmd, **kw)
    try:
        yield svc
    finally:
        svc.stop(stop_timeout_s)


# -- readiness probes ------------------------------------------------------------------------


def url_file(path: Path) -> Callable[[], str | None]:
    """Ready when the service has written its URL to ``path`` (``faas serve --url-file``)."""

    def probe() -> str | None:
        try:
            text = path.read_text().strip()
        except OSError:
            return None
        return text or None

    return probe


def port(host: str, number: int) -> Callable[[], str | None]:
    """Ready when ``host:number`` accepts a TCP connection; the URL is ``http://host:number``."""

    def probe() -> str | None:
        try:
            with socket.create_connection((host, number), timeout=0.5):
                return f"http://{host}:{number}"
        except OSError:
            return None

    return probe


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


# -- the services ----------------------------------------------------------------------------


def emulator(
    url: Path,
    state_dir: Path,
    *args: str,
    tracker: Tracker | None = None,
    log: Path | None = None,
    stop: threading.Event | None = None,
    timeout_s: float = 30.0,
) -> Service:
    """A private FaaS emulator on 127.0.0.1 (an ephemeral port) that writes its URL to ``url``
    and keeps its state in ``state_dir``; ``args`` are more ``faas serve`` options (``--profile``,
    ``--functions-dir`` ...)."""
    url.parent.mkdir(parents=True, exist_ok=True)
    url.unlink(missing_ok=True)
    cmd = [
        sys.executable, "-m", "testbed_agent", "faas", "serve", "--port", "0",
        "--url-file", str(url), "--state-dir", str(state_dir), *args,
    ]  # fmt: skip
    return start(
        cmd,
        name="FaaS emulator",
        ready=url_file(url),
        log=log,
        tracker=tracker,
        stop=stop,
        timeout_s=timeout_s,
        hint="see the emulator's log; `testbed-agent faas serve --help`",
    )


def moto_server(host: str = "127.0.0.1", tracker: Tracker | None = None, timeout_s: float = 30.0) -> Service:
    """moto's server (AWS-compatible, KMS among its services) on loopback, in its own process."""
    if not host.startswith("127."):
        raise TestbedError(f"the local key service binds to loopback only, not {host}")
    number = free_port(host)
    return start(
        [sys.executable, "-m", "moto.server", "-H", host, "-p", str(number)],
        name="local KMS server (moto)",
        ready=port(host, number),
        env={**os.environ, "MOTO_CALL_RESET_API": "false"},
        tracker=tracker,
        timeout_s=timeout_s,
        hint="is moto[server] installed in this Python? (requirements.txt)",
    )
