"""Benchmark processes die with the agent, and a resumed run first reaps what a killed one left.

Every benchmark process is started in its own session with ``PR_SET_PDEATHSIG`` = SIGKILL (it dies
when the agent dies, even by SIGKILL), its session id and start time are appended to a pid file in
the host's state directory, and as root it joins a pids cgroup (v1) of the run, which also holds
its descendants (fio workers, notebook kernels). On start, :meth:`ProcessTracker.reap` kills
whatever an earlier, killed attempt left: every process of a recorded session started no earlier
than its leader, and every process left in the run's cgroup.

Descendants do not inherit PR_SET_PDEATHSIG (fio's job processes, a notebook's kernel), so the
agent also starts a watchdog in its own session (``python -m testbed_agent.procs``): it blocks on a
pipe from the agent and, if the pipe closes without "done" (the agent died, even by SIGKILL of its
whole process group), reaps at once. It holds ``<state>/watchdog.lock`` while alive; a resumed
agent waits for that lock before reaping, so an old watchdog never races a new run.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from testbed_shared.atomic import write_atomically

PR_SET_PDEATHSIG = 1
CGROUP_ROOT = Path("/sys/fs/cgroup/pids")
_libc = ctypes.CDLL(None, use_errno=True)
_prctl = _libc.prctl


def die_with_parent(sig: int) -> Callable[[], None]:
    """A ``preexec_fn``: the child gets ``sig`` when the process (thread) that started it dies
    (``PR_SET_PDEATHSIG``), and exits at once if that happened before the setting took effect."""
    parent = os.getpid()

    def _child() -> None:
        _prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0)
        if os.getppid() != parent:
            os._exit(1)

    return _child


def proc_stat(pid: int) -> tuple[int, int] | None:
    """(session id, start time in clock ticks) of a live process; None if it is gone or a zombie."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()
    if fields[0] in (b"Z", b"X"):
        return None
    return int(fields[3]), int(fields[19])  # session, starttime (fields 6 and 22 of stat)


def _all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _ours(pid: int) -> bool:
    try:
        return os.getuid() == 0 or os.stat(f"/proc/{pid}").st_uid == os.getuid()
    except OSError:
        return False


class ProcessTracker:
    """Pid file (and cgroup, as root) of one host's run."""

    def __init__(self, state_dir: Path, name: str) -> None:
        self.state_dir = state_dir
        self.pidfile = state_dir / "pids"
        self.cgroup: Path | None = None
        if os.geteuid() == 0 and (CGROUP_ROOT / "cgroup.procs").exists():
            self.cgroup = CGROUP_ROOT / "testbed-agent" / name

    def open(self) -> None:
        """Create the state directory and the run's cgroup (where possible)."""
        self.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.cgroup is not None:
            try:
                self.cgroup.mkdir(parents=True, exist_ok=True)
            except OSError:
                self.cgroup = None

    def preexec(self) -> Callable[[], None]:
        """The child-side setup: die with the agent, join the run's cgroup."""
        die = die_with_parent(signal.SIGKILL)
        procs = str(self.cgroup / "cgroup.procs").encode() if self.cgroup else b""

        def _child() -> None:
            die()
            if procs:
                with contextlib.suppress(OSError):
                    fd = os.open(procs, os.O_WRONLY)
                    os.write(fd, b"0")
                    os.close(fd)

        return _child

    def started(self, pid: int) -> None:
        """Record a benchmark session leader (pid = session id) with its start time.

        Not fsynced: the file is read only while this boot lasts (by a resumed run and by the
        watchdog, through the page cache), and an fsync here waits behind the writeback of
        everything the benchmarks wrote (seconds, under gigabytes of dirty pages)."""
        info = proc_stat(pid)
        start = info[1] if info else 0
        with open(self.pidfile, "a", encoding="ascii") as fh:
            fh.write(f"{pid} {start}\n")

    def finished(self, pid: int) -> None:
        """Forget a session once its whole process group is gone."""
        keep = [e for e in self._entries() if e[0] != pid]
        write_atomically(self.pidfile, "".join(f"{p} {s}\n" for p, s in keep))

    def _entries(self) -> list[tuple[int, int]]:
        try:
            lines = self.pidfile.read_text().split("\n")
        except OSError:
            return []
        out = []
        for line in lines:
            parts = line.split()
            if len(parts) == 2 and all(p.isdigit() for p in parts):
                out.append((int(parts[0]), int(parts[1])))
        return out

    def leftovers(self) -> set[int]:
        """Pids of processes a killed attempt left: its recorded sessions and its cgroup."""
        sessions = dict(self._entries())
        pids: set[int] = set()
        for pid in _all_pids() if sessions else ():
            info = proc_stat(pid)
            if info and info[0] in sessions and info[1] >= sessions[info[0]] and _ours(pid):
                pids.add(pid)
        pids |= {p for p in self._cgroup_pids() if proc_stat(p)}
        pids.discard(os.getpid())
        return pids

    def _cgroup_pids(self) -> set[int]:
        if self.cgroup is None:
            return set()
        try:
            return {int(p) for p in (self.cgroup / "cgroup.procs").read_text().split()}
        except OSError:
            return set()

    def reap(self, timeout: float = 10.0) -> int:
        """Kill what a killed attempt left and wait until it is gone; return how many were killed."""
        killed: set[int] = set()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pids = self.leftovers()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                    killed.add(pid)
            time.sleep(0.05)
        with contextlib.suppress(OSError):
            self.pidfile.unlink()
        return len(killed)

    def wait_for_watchdog(self, timeout: float = 30.0) -> None:
        """Wait until the watchdog of an earlier attempt has finished (it holds the lock)."""
        fd = os.open(self.state_dir / "watchdog.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    return
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        return
                    time.sleep(0.02)
        finally:
            os.close(fd)  # releases the lock

    def start_watchdog(self) -> None:
        """Start the watchdog that reaps the run's processes if this agent dies."""
        cmd = [sys.executable, "-m", "testbed_agent.procs", str(self.state_dir), str(self.cgroup or "")]
        self._watchdog = subprocess.Popen(  # noqa: S603 - the tracker's own watchdog: it must outlive the agent to reap
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # survives a kill of the agent's process group
        )
        if self._watchdog.stdout is not None:
            self._watchdog.stdout.readline()  # "ready": it holds the lock

    def stop_watchdog(self) -> None:
        """Tell the watchdog the run ended cleanly."""
        dog = getattr(self, "_watchdog", None)
        if dog is not None and dog.stdin is not None:
            with contextlib.suppress(OSError):
                dog.stdin.write(b"done\n")
                dog.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                dog.wait(10)

    def close(self, timeout: float = 2.0) -> None:
        """Remove the run's cgroup once it is empty: a process still exiting (a stopped service's
        child) is waited for up to *timeout* s; one that stays keeps the cgroup, as before."""
        if self.cgroup is None:
            return
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.cgroup.rmdir()
                return
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    return
            time.sleep(0.02)


def _watchdog(state_dir: Path, cgroup: str) -> int:
    """Block on stdin; reap the run's processes unless the agent says ``done`` first."""
    fd = os.open(state_dir / "watchdog.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    if sys.stdin.readline().strip() != "done":
        tracker = ProcessTracker(state_dir, "")
        tracker.cgroup = Path(cgroup) if cgroup else None
        tracker.reap()
        tracker.close()
    os.close(fd)
    return 0


if __name__ == "__main__":
    raise SystemExit(_watchdog(Path(sys.argv[1]), sys.argv[2]))
