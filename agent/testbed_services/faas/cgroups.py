"""Instance cgroups: CPU quota, memory limit and accounting, on cgroup v2 or v1 (or none)."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

PERIOD_US = 100_000
PIDS_MAX = 1024
V1_CONTROLLERS = ("cpu", "cpuacct", "memory", "pids")
BASE = "testbed-faas"


@dataclass
class CgStats:
    """Cumulative counters of one instance cgroup."""

    cpu_user_s: float = 0.0
    cpu_system_s: float = 0.0
    throttled_s: float = 0.0
    #: CFS enforcement periods the group was active in, and those that ended throttled
    nr_periods: int = 0
    nr_throttled: int = 0
    memory_peak_bytes: int = 0
    oom_kills: int = 0


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _keyed(text: str) -> dict[str, int]:
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out


def _cpu_stats(
    total_s: float | None, user_s: float, system_s: float, throttled_s: float, stat: dict
) -> CgStats:
    """CPU counters of one cgroup. User and system seconds are scaled so that they add up to the
    scheduler's exact CPU time ``total_s`` (v1 ``cpuacct.usage``, v2 ``usage_usec``; None: not
    readable). The user/system split is sampled at timer ticks: for a task the CFS quota throttles
    at tick boundaries, v1's ``usage_user`` read +30-40 % high at 0.07 vCPU, where
    ``cpuacct.usage`` gave the quota exactly. Periods come from ``cpu.stat`` (same keys in v1 and v2)."""
    sampled = user_s + system_s
    if total_s is not None:
        user_s, system_s = (
            (total_s * user_s / sampled, total_s * system_s / sampled) if sampled > 0 else (total_s, 0.0)
        )
    return CgStats(user_s, system_s, throttled_s, stat.get("nr_periods", 0), stat.get("nr_throttled", 0))


def _write(path: Path, value: str) -> None:
    with open(path, "w") as fh:
        fh.write(value)


def _rmdir(path: Path, wait_s: float = 2.0) -> None:
    end = time.monotonic() + wait_s
    while path.exists():
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > end:
                return
            time.sleep(0.02)


def _kill_pids(procs_file: Path, wait_s: float = 3.0) -> None:
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        pids = [int(p) for p in _read(procs_file).split() if p.isdigit()]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


class FdCache:
    """Counter files kept open and re-read with pread (a fresh open per read costs ~0.1 ms).
    Keyed by the path as a string, made once per instance: building and hashing a Path for every
    read cost more than the read itself (about 10 us each, twice per call on the warm path)."""

    def __init__(self) -> None:
        self._fds: dict[str, int] = {}

    def read(self, path: str) -> str:
        fd = self._fds.get(path)
        try:
            if fd is None:
                fd = self._fds[path] = os.open(path, os.O_RDONLY)
            return os.pread(fd, 65536, 0).decode()
        except OSError:
            return ""

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


class InstanceCgroup:
    """One instance's cgroup(s); ``procs_files`` are where the worker writes its pid.
    ``stats(full=False)`` reads only the CPU counters (the cheap read before a call)."""

    version = "none"

    def set_limits(self, vcpus: float, memory_bytes: int) -> None:
        """Apply the CPU quota (vCPUs of ``PERIOD_US``) and the memory limit (no swap)."""

    def procs_files(self) -> list[str]:
        return []

    def stats(self, full: bool = True) -> CgStats:
        return CgStats()

    def kill(self) -> None:
        """SIGKILL every process in the cgroup."""

    def remove(self) -> None:
        """Remove the (empty) cgroup directories."""


class V1Instance(InstanceCgroup):
    version = "v1"

    def __init__(self, dirs: dict[str, Path]) -> None:
        self.dirs = dirs
        self.files = FdCache()
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        acct, mem = dirs["cpuacct"], dirs["memory"]
        #: the counter files stats() reads, as strings (FdCache's keys)
        self._usage = str(acct / "cpuacct.usage")
        self._usage_user, self._usage_sys = str(acct / "cpuacct.usage_user"), str(acct / "cpuacct.usage_sys")
        self._acct_stat = str(acct / "cpuacct.stat")
        self._cpu_stat = str(dirs["cpu"] / "cpu.stat")
        self._max_usage = str(mem / "memory.max_usage_in_bytes")
        self._oom_control = str(mem / "memory.oom_control")

    def set_limits(self, vcpus: float, memory_bytes: int) -> None:
        cpu = self.dirs["cpu"]
        _write(cpu / "cpu.cfs_period_us", str(PERIOD_US))
        _write(cpu / "cpu.cfs_quota_us", str(max(1000, int(vcpus * PERIOD_US))))
        mem = self.dirs["memory"]
        _write(mem / "memory.limit_in_bytes", str(memory_bytes))
        if (mem / "memory.memsw.limit_in_bytes").exists():
            _write(mem / "memory.memsw.limit_in_bytes", str(memory_bytes))
        with contextlib.suppress(OSError):
            _write(mem / "memory.swappiness", "0")
        if "pids" in self.dirs:
            _write(self.dirs["pids"] / "pids.max", str(PIDS_MAX))

    def procs_files(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs.values()]

    def stats(self, full: bool = True) -> CgStats:
        read = self.files.read
        usage = read(self._usage).strip()
        stat = _keyed(read(self._cpu_stat))
        total = int(usage) / 1e9 if usage.isdigit() else None
        out = _cpu_stats(total, *self._user_sys(), stat.get("throttled_time", 0) / 1e9, stat)
        if full:
            peak = read(self._max_usage).strip()
            out.memory_peak_bytes = int(peak) if peak.isdigit() else 0
            out.oom_kills = _keyed(read(self._oom_control)).get("oom_kill", 0)
        return out

    def _user_sys(self) -> tuple[float, float]:
        """The tick-sampled user/system split (seconds) of cpuacct."""
        read = self.files.read
        user_ns, sys_ns = read(self._usage_user).strip(), read(self._usage_sys).strip()
        if user_ns.isdigit() and sys_ns.isdigit():
            return int(user_ns) / 1e9, int(sys_ns) / 1e9
        ticks = _keyed(read(self._acct_stat))
        hz = os.sysconf("SC_CLK_TCK")
        return ticks.get("user", 0) / hz, ticks.get("system", 0) / hz

    def kill(self) -> None:
        _kill_pids(self.dirs["memory"] / "cgroup.procs")
        for d in self.dirs.values():
            _kill_pids(d / "cgroup.procs", wait_s=0.5)

    def remove(self) -> None:
        self.files.close()
        for d in self.dirs.values():
            _rmdir(d)


class V2Instance(InstanceCgroup):
    version = "v2"

    def __init__(self, path: Path) -> None:
        self.path = path
        self.files = FdCache()
        path.mkdir(parents=True, exist_ok=True)
        #: the counter files stats() reads, as strings (FdCache's keys)
        self._cpu_stat = str(path / "cpu.stat")
        self._peak, self._current = str(path / "memory.peak"), str(path / "memory.current")
        self._events = str(path / "memory.events")

    def set_limits(self, vcpus: float, memory_bytes: int) -> None:
        p = self.path
        _write(p / "cpu.max", f"{max(1000, int(vcpus * PERIOD_US))} {PERIOD_US}")
        _write(p / "memory.max", str(memory_bytes))
        # optional files: no swap accounting, older kernels, or no pids controller
        for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1"), ("pids.max", str(PIDS_MAX))):
            with contextlib.suppress(OSError):
                _write(p / name, value)

    def procs_files(self) -> list[str]:
        return [str(self.path / "cgroup.procs")]

    def stats(self, full: bool = True) -> CgStats:
        read = self.files.read
        cpu = _keyed(read(self._cpu_stat))
        total = cpu["usage_usec"] / 1e6 if "usage_usec" in cpu else None
        user, system = cpu.get("user_usec", 0) / 1e6, cpu.get("system_usec", 0) / 1e6
        out = _cpu_stats(total, user, system, cpu.get("throttled_usec", 0) / 1e6, cpu)
        if full:
            peak = read(self._peak).strip() or read(self._current).strip()
            out.memory_peak_bytes = int(peak) if peak.isdigit() else 0
            out.oom_kills = _keyed(read(self._events)).get("oom_kill", 0)
        return out

    def kill(self) -> None:
        if (self.path / "cgroup.kill").exists():
            with contextlib.suppress(OSError):
                _write(self.path / "cgroup.kill", "1")
        _kill_pids(self.path / "cgroup.procs")

    def remove(self) -> None:
        self.files.close()
        _rmdir(self.path)


class Backend:
    """Creates instance cgroups under the emulator's own cgroup. ``none``: no limits."""

    version = "none"

    def __init__(self, reason: str = "") -> None:
        self.reason = reason

    @property
    def enforced(self) -> bool:
        return self.version != "none"

    def create(self, name: str) -> InstanceCgroup:
        return InstanceCgroup()

    def cleanup(self) -> None:
        """Remove the emulator's cgroup directories."""

    def reclaim(self, emulator_id: str) -> None:
        """Kill and remove what a dead emulator ``emulator_id`` left in the cgroup tree."""


def reclaim_dir(d: Path) -> None:
    """Kill every process in the cgroup ``d`` and below it, then remove the directories."""
    if not d.is_dir():
        return
    for child in sorted((c for c in d.rglob("*") if c.is_dir()), key=lambda c: -len(c.parts)):
        _kill_pids(child / "cgroup.procs", wait_s=1.0)
        _rmdir(child, wait_s=0.5)
    _kill_pids(d / "cgroup.procs", wait_s=1.0)
    _rmdir(d, wait_s=0.5)


class V1Backend(Backend):
    version = "v1"

    def __init__(self, bases: dict[str, Path]) -> None:
        super().__init__()
        self.bases = bases

    def create(self, name: str) -> InstanceCgroup:
        return V1Instance({c: b / name for c, b in self.bases.items()})

    def cleanup(self) -> None:
        for b in self.bases.values():
            _rmdir(b, wait_s=0.2)
            _rmdir(b.parent, wait_s=0)

    def reclaim(self, emulator_id: str) -> None:
        for b in self.bases.values():
            reclaim_dir(b.parent / emulator_id)


class V2Backend(Backend):
    """Instances in ``base/ID``; ``base`` (``<own cgroup>/testbed-faas-<emulator id>``) has the
    controllers enabled for its children."""

    version = "v2"

    def __init__(self, base: Path, controllers: tuple[str, ...] = ("cpu", "memory", "pids")) -> None:
        super().__init__()
        self.base = base
        base.mkdir(exist_ok=True)
        _write(base / "cgroup.subtree_control", " ".join(f"+{c}" for c in controllers))

    def create(self, name: str) -> InstanceCgroup:
        return V2Instance(self.base / name)

    def cleanup(self) -> None:
        _rmdir(self.base, wait_s=0.2)

    def reclaim(self, emulator_id: str) -> None:
        reclaim_dir(self.base.parent / f"{BASE}-{emulator_id}")


def setup_v2(here: Path, emulator_id: str) -> V2Backend:
    """Delegate controllers below our own cgroup ``here``. When ``here`` does not pass cpu and
    memory to its children yet, we first move into a leaf (the no-internal-process rule), as a
    systemd service with ``Delegate=yes`` must; if other processes share ``here`` this fails."""
    available = _read(here / "cgroup.controllers").split()
    wanted = tuple(c for c in ("cpu", "memory", "pids") if c in available)
    if not {"cpu", "memory"} <= set(_read(here / "cgroup.subtree_control").split()):
        leaf = here / f"{BASE}-supervisor"
        leaf.mkdir(exist_ok=True)
        _write(leaf / "cgroup.procs", str(os.getpid()))
        try:
            _write(here / "cgroup.subtree_control", " ".join(f"+{c}" for c in wanted))
        except OSError:
            _write(here / "cgroup.procs", str(os.getpid()))
            _rmdir(leaf, wait_s=0)
            raise
    return V2Backend(here / f"{BASE}-{emulator_id}", wanted)


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(root, mount point, fs type, super options) of cgroup mounts, from mountinfo."""
    out = []
    for line in _read(Path("/proc/self/mountinfo")).splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(fields) >= 5 and len(rfields) >= 3 and rfields[0] in ("cgroup", "cgroup2"):
            out.append((fields[3], fields[4], rfields[0], set(rfields[2].split(","))))
    return out


def _own_paths() -> dict[str, str]:
    """Controller (or '' for v2) -> this process's cgroup path."""
    out = {}
    for line in _read(Path("/proc/self/cgroup")).splitlines():
        _, ctrls, path = line.split(":", 2)
        for c in ctrls.split(",") if ctrls else [""]:
            out[c] = path
    return out


def _join(mount: str, root: str, path: str) -> Path:
    rel = path[len(root) :] if root != "/" and path.startswith(root) else path
    return Path(mount) / rel.lstrip("/")


def _try_v2(mounts: list, own: dict[str, str], emulator_id: str, errors: list[str]) -> Backend | None:
    """A v2 backend on the first cgroup2 mount with cpu and memory controllers, else None."""
    for root, point, fstype, _ in mounts:
        if fstype != "cgroup2":
            continue
        here = _join(point, root, own.get("", "/"))
        if not {"cpu", "memory"} <= set(_read(here / "cgroup.controllers").split()):
            errors.append(f"cgroup v2 at {here} lacks cpu/memory controllers")
            continue
        try:
            return setup_v2(here, emulator_id)
        except OSError as exc:
            errors.append(
                f"cgroup v2 at {here}: cannot delegate controllers ({exc.strerror}; "
                "run as a service with Delegate=yes)"
            )
    return None


def _try_v1(mounts: list, own: dict[str, str], emulator_id: str, errors: list[str]) -> Backend | None:
    """A v1 backend when cpu, cpuacct and memory hierarchies are mounted and writable, else None."""
    bases = {}
    for ctrl in V1_CONTROLLERS:
        for root, point, fstype, opts in mounts:
            if fstype == "cgroup" and ctrl in opts:
                bases[ctrl] = _join(point, root, own.get(ctrl, "/")) / BASE / emulator_id
                break
    missing = {"cpu", "cpuacct", "memory"} - set(bases)
    if missing:
        errors.append("cgroup v1 lacks " + ", ".join(sorted(missing)))
        return None
    try:
        for b in bases.values():
            b.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        errors.append(f"cgroup v1: {exc.strerror}")
        return None
    return V1Backend(bases)


def detect(emulator_id: str, prefer: str = "auto") -> Backend:
    """Pick cgroup v2 where its controllers are usable, else v1, else none (with the reason)."""
    if os.geteuid() != 0:
        return Backend("not running as root: no cgroup limits")
    mounts, own = _mounts(), _own_paths()
    errors: list[str] = []
    found = _try_v2(mounts, own, emulator_id, errors) if prefer in ("auto", "v2") else None
    if found is None and prefer in ("auto", "v1"):
        found = _try_v1(mounts, own, emulator_id, errors)
    if found is not None:
        return found
    return Backend("; ".join(errors) or "no cgroup file system mounted")


#: CPU weight of the emulator's instance cgroups with ``--cpu-boost`` (v1 cpu.shares, v2 cpu.weight)
BOOST_SHARES, BOOST_WEIGHT = 262144, 10000


def boost(backend: Backend) -> bool:
    """Give the emulator's instances the largest CPU weight against the machine's other work, so
    each tier gets its quota even on a busy machine (for fidelity measurements). True if applied."""
    targets: list[tuple[Path, str, int]] = []
    if isinstance(backend, V1Backend) and "cpu" in backend.bases:
        base = backend.bases["cpu"]
        targets = [(base.parent, "cpu.shares", BOOST_SHARES), (base, "cpu.shares", BOOST_SHARES)]
    elif isinstance(backend, V2Backend):
        targets = [(backend.base, "cpu.weight", BOOST_WEIGHT)]
    try:
        for d, name, value in targets:
            _write(d / name, str(value))
    except OSError:
        return False
    return bool(targets)
