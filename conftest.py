"""The four lanes of `make test` (pytest-xdist, ``-n 4 --dist loadscope``), and the leak check every
test passes.

Lanes. Inside a lane tests run one after another, in collection order; the lanes run at once.
``guests``: the software-emulated guests (tests/kvm, tests/hyperv: one QEMU process holds a core
for most of their 15 minutes while the test waits). ``runs``: the Azure dress rehearsal
(stand-ins and a loopback sshd of its own), two run.yml tests with their own ports and directories,
the quick comparison's live runs, and the agent's kill, resume and scratch tests (their own run
directories, ``tmp_path`` plans).
``units``: the report's and the shared library's tests, plan derivation and fuzzing, the notebooks
at quick scale, the crypto vectors and key services, the ARM stand-in's loops and the lint gates
(files of their own ``tmp_path``, a few small dd plans of the agent there, stand-ins on loopback
ports they bind themselves; no Ansible, libvirt, cgroup or node_exporter: ``tests/test_lanes.py``).
``main``: everything else, among it every test that deploys node_exporter on its default port or
runs the documented commands, so those never overlap. What the lanes' run.yml runs share in the
checkout (the agent bundle) is built under a lock; what two checkouts share on the machine
(libvirtd, the image cache, the cargo target, Maven's repository) is locked too, and two `make
test` at once pass (README). Four lanes on two cores: the suite's work is mostly CPU (measured in
the 2026-11-30 17:32 clean clone: 1.8 of the 2 cores busy on average, three lanes), and with
three the units lane ended at 924 s while the other two ran to 1,790 s on fewer cores; four
smaller lanes end closer together. Each lane needs a worker of its own (``-n 4``): with fewer,
xdist queues a lane behind the first one of a worker. ``--dist loadscope`` is given lanes as its
scopes here (xdist's ``loadgroup`` marks cannot do it under pytest 9: xdist 3.8 renames node ids
through an attribute pytest 9 no longer reads). Without ``-n`` (make test-studies, a plain pytest)
nothing changes.

Leak check (issue 40 finding 3: a test's dd, never ended, filled the disk). After each test's
teardown:

* a process the test left running is an error of that test: every live descendant of the pytest
  process (a worker under xdist) that was not there after the previous test is killed and named,
  unless a fixture of a wider scope than the function started it or one of its ancestors (those
  are recorded when such a fixture is set up, and they and their children, e.g. an emulator's
  warm instances, live as long as the fixture does). A process still ending gets 2 s.
* a file over 1 GiB (apparent or allocated size) the test left in its ``tmp_path``, in the agent's
  scratch root (``$TESTBED_SCRATCH``, default /var/tmp/testbed-agent) or in ``$TMPDIR`` is an
  error of that test; files under this session's base temporary directory are removed. The
  test's own ``tmp_path`` is always searched; the other places only when the test's process tree
  (``write_bytes`` of /proc/self/io, which counts reaped children) or the filesystems holding
  them grew by 1 GiB or more. The build caches (the checkout's ``.cache`` and the machine's
  ``testbed`` cache: guest images, VHDX) are never searched: they hold what tests build once and
  share on purpose. Processes are found
  incrementally (:class:`Descendants`: only those started since the last look are read), so the
  check costs a few milliseconds a test.

Every process the tests start inherits a file size limit (``RLIMIT_FSIZE``, :data:`FILE_LIMIT`):
a runaway writer is stopped there (SIGXFSZ) instead of filling the disk.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed_shared.paths import build_cache

# One BLAS/OpenMP thread in every process of the suite (set before anything imports numpy; children
# inherit it, the notebooks' kernels too): four lanes share 2 cores, and OpenBLAS's idle worker
# threads spin between the many small matrix calls. The time-of-day calibration took 48.7 CPU-s in
# 27.4 s with the default pool and 22.3 CPU-s in 22.8 s with one thread (2026-12-01, one after the other).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

#: what the guests lane runs (node id prefixes, relative to the repository)
GUESTS_LANE = ("tests/kvm/", "tests/hyperv/")
#: what the runs lane runs (the lanes' sums of test times in the 2026-11-30 17:32 clean clone, three
#: lanes: main 1,822 s, guests 1,763 s, units 923 s; these files moved out of the first two)
RUNS_LANE = (
    "tests/azure/test_azure_rehearsal.py",
    "tests/test_ansible_local.py",
    "tests/faas/test_faas_platform_runyml.py",
    # the 18:24 clean clone (four lanes): main ended at 1,576 s of tests, runs at 1,341, guests at
    # 1,458, units at 1,095 (the machine's 2 cores busy until then); the quick comparison moved here
    "tests/test_quick_compare.py",
    "agent/tests/test_reliability_kills.py",
    "agent/tests/test_guard_links.py",
    "agent/tests/test_leak_check.py",
    "agent/tests/test_campaign.py",
    "agent/tests/test_fio_allowlist.py",
    "agent/tests/test_safety_scratch.py",
    "agent/tests/test_fs_races.py",
)
#: what the units lane runs: no Ansible, libvirt, cgroup or node_exporter (tests/test_lanes.py)
UNITS_LANE = (
    "reports/tests/",
    "shared/tests/",
    "tests/test_lint.py",
    "tests/test_role_specs.py",
    "agent/tests/test_plan_derive.py",
    "agent/tests/test_plan_fuzz.py",
    "agent/tests/test_import_graph.py",
    "tests/notebooks/test_notebooks.py",
    "tests/notebooks/test_generators.py",
    "tests/crypto/test_crypto_vectors.py",
    "tests/crypto/test_crypto_kms.py",
    "tests/azure/test_azure_sequential.py",
    "tests/azure/test_azure_arm_actions.py",
    "tests/test_standalone_install.py",
)
GIB = 1 << 30
#: a file no test leaves behind
BIG_FILE = GIB
#: no process a test starts writes a file larger than this (the guest image build writes 3 GiB)
FILE_LIMIT = 8 * GIB
#: the agent's scratch root (testbed_agent.scratch.DEFAULT_ROOT; not imported: the report's tests
#: run without the agent installed)
SCRATCH_ROOT = "/var/tmp/testbed-agent"
ENDING_S = 2.0
#: the build caches, the checkout's and the machine's (guest images and their VHDX, built once and
#: shared by content hash: Makefile, TESTBED_CACHE): what is there is kept on purpose, never a leak,
#: even when it lies under $TMPDIR
BUILD_CACHES = (
    Path(__file__).resolve().parent / ".cache",
    build_cache(),
)


def lane(nodeid: str) -> str:
    """The lane of the test *nodeid*."""
    if nodeid.startswith(GUESTS_LANE):
        return "guests"
    if nodeid.startswith(RUNS_LANE):
        return "runs"
    return "units" if nodeid.startswith(UNITS_LANE) else "main"


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "loadscope":
        return None  # xdist's own scheduler for any other --dist
    from xdist.scheduler import LoadScopeScheduling  # noqa: PLC0415 - only with pytest-xdist running

    class LaneScheduling(LoadScopeScheduling):
        """loadscope with the lanes as its scopes."""

        def _split_scope(self, nodeid: str) -> str:
            return lane(nodeid)

    return LaneScheduling(config, log)


# -- the leak check -----------------------------------------------------------------------------

Proc = tuple[int, int]  # (pid, start time in clock ticks): a pid reused later is another process


def _stat(pid: int) -> tuple[bytes, int, int, str] | None:
    """(state, parent pid, start time, command) of ``pid``; None when it is gone."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        data = os.read(fd, 1024)
    except OSError:
        return None
    finally:
        os.close(fd)
    close = data.rfind(b")")
    fields = data[close + 2 :].split(b" ", 20)
    return (
        fields[0],
        int(fields[1]),
        int(fields[19]),
        data[data.find(b"(") + 1 : close].decode(errors="replace"),
    )


def _alive(proc: Proc) -> bool:
    info = _stat(proc[0])
    return info is not None and info[2] == proc[1] and info[0] not in (b"Z", b"X")


def _last_pid() -> int:
    """The pid the kernel handed out last (/proc/loadavg)."""
    return int(Path("/proc/loadavg").read_text().split()[-1])


class Descendants:
    """The live descendants of the process ``root``, found incrementally: each look reads only the
    processes whose pids were handed out since the last one (a full /proc scan after a wrap of
    more than half the pid space). A process is a descendant when its parent chain reaches
    ``root`` or a descendant seen before (pid and start time)."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
        self.mark = _last_pid()
        self.seen: dict[int, int] = {}  # pid -> start time of the descendants found so far
        self.look(set(), full=True)

    def look(self, skip: set[Proc], full: bool = False) -> dict[Proc, str]:
        """The live descendants started since the last look, leaving out the subtrees of the
        processes in ``skip`` (their new descendants are added to it): {(pid, start): command}."""
        now = _last_pid()
        span = (now - self.mark) % self.pid_max
        low, self.mark = self.mark, now
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
        if not full and span <= self.pid_max // 2:
            pids = [p for p in pids if 0 < (p - low) % self.pid_max <= span]
        skipped = dict(skip)
        verdict: dict[int, str] = {}
        found: dict[Proc, str] = {}
        for pid in sorted(pids):
            info = _stat(pid)
            if info is None:
                continue
            whose = self._whose(pid, info, skipped, verdict)
            if whose == "skip":
                skip.add((pid, info[2]))
                skipped[pid] = info[2]
            elif whose == "ours":
                self.seen[pid] = info[2]
                if info[0] not in (b"Z", b"X"):
                    found[(pid, info[2])] = info[3]
        return found

    def _whose(self, pid: int, info: tuple, skipped: dict[int, int], verdict: dict[int, str]) -> str:
        """ "ours", "skip" (in the subtree of a skipped process) or "other", by the parent chain."""
        if skipped.get(pid) == info[2]:
            return "skip"
        chain, parent = [pid], info[1]
        while True:
            if parent == self.root:
                result = "ours"
                break
            if parent in verdict:
                result = verdict[parent]
                break
            up = _stat(parent) if parent > 1 else None
            if up is None:
                result = "other"
                break
            if skipped.get(parent) == up[2]:
                result = "skip"
                break
            if self.seen.get(parent) == up[2]:
                result = "ours"
                break
            chain.append(parent)
            parent = up[1]
        for p in chain:
            verdict[p] = result
        return result


def _written() -> int:
    """Bytes this process and its reaped children caused to be written (/proc/self/io)."""
    try:
        fd = os.open("/proc/self/io", os.O_RDONLY)
        try:
            data = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError:
        return 0
    for line in data.split(b"\n"):
        if line.startswith(b"write_bytes:"):
            return int(line.split()[1])
    return 0


def _used(paths: list[Path]) -> int:
    """Bytes used on the filesystems holding ``paths`` (each filesystem once)."""
    seen, total = set(), 0
    for p in paths:
        with contextlib.suppress(OSError):
            st = os.statvfs(p)
            if st.f_fsid not in seen:
                seen.add(st.f_fsid)
                total += (st.f_blocks - st.f_bfree) * st.f_frsize
    return total


def big_files(root: Path, since: float | None = None) -> list[tuple[Path, int]]:
    """Files under ``root`` over :data:`BIG_FILE` (apparent or allocated size), modified at or
    after ``since`` when given; links are not followed, :data:`BUILD_CACHES` are not searched."""
    found = []
    for top, dirs, files in os.walk(root, onerror=lambda _e: None):
        if any(Path(top).is_relative_to(c) for c in BUILD_CACHES):
            dirs[:] = []
            continue
        for name in files:
            path = Path(top) / name
            with contextlib.suppress(OSError):
                st = path.lstat()
                size = max(st.st_size, st.st_blocks * 512)
                if size > BIG_FILE and (since is None or st.st_mtime >= since):
                    found.append((path, size))
        dirs[:] = [d for d in dirs if not (Path(top) / d).is_symlink()]
    return found


class LeakCheck:
    """The per-test checks of the module docstring (one instance per pytest process)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.tree = Descendants(os.getpid())
        self.owned: set[Proc] = set()  # started by fixtures wider than a function, with their subtrees
        self.pending: dict[Proc, str] = {}

    def places(self) -> list[Path]:
        base = self.config._tmp_path_factory.getbasetemp()
        roots = [base, Path(os.environ.get("TESTBED_SCRATCH", SCRATCH_ROOT)), Path(tempfile.gettempdir())]
        return [p for p in roots if p.is_dir()]

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> Iterator:
        if fixturedef.scope == "function":
            return (yield)
        self.pending.update(self.tree.look(self.owned))  # the test's own, judged at its teardown
        try:
            return (yield)
        finally:
            self.owned.update(self.tree.look(self.owned))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Iterator:
        item.stash[_START] = (time.time(), _written(), _used(self.places()))
        try:
            return (yield)
        finally:
            tmp = getattr(item, "funcargs", {}).get("tmp_path")
            item.stash[_TMP] = Path(tmp) if tmp is not None else None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Iterator:
        result = yield
        problems = self._processes() + self._files(item)
        if problems:
            pytest.fail("; ".join(problems), pytrace=False)
        return result

    def _processes(self) -> list[str]:
        new = {**self.pending, **self.tree.look(self.owned)}
        self.pending = {}
        new = {k: v for k, v in new.items() if k not in self.owned}
        end = time.monotonic() + ENDING_S
        while new and time.monotonic() < end:  # a process still ending is not left behind
            new = {k: v for k, v in new.items() if _alive(k)}
            if new:
                time.sleep(0.05)
        for pid, _start in new:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        if not new:
            return []
        names = ", ".join(f"{pid} {comm}" for (pid, _s), comm in sorted(new.items())[:8])
        return [
            f"leak check: the test left {len(new)} process(es) running, now killed: {names} "
            "(end what a test starts, e.g. agent/tests/conftest.py's spawn fixture)"
        ]

    def _files(self, item: pytest.Item) -> list[str]:
        since, written, used = item.stash.get(_START, (time.time(), 0, 0))
        found = big_files(item.stash[_TMP]) if item.stash.get(_TMP, None) else []
        places = self.places()
        if _written() - written >= BIG_FILE or _used(places) - used >= BIG_FILE:
            ours = self.config._tmp_path_factory.getbasetemp()
            ours = ours.parent if ours.name.startswith("popen-gw") else ours  # every lane's
            found += [
                f
                for p in places
                for f in big_files(p, since)
                if f not in found and (f[0].is_relative_to(ours) or "pytest-of-" not in str(f[0]))
            ]  # not another pytest session's files (another checkout's `make test` beside this one)
        if not found:
            return []
        base = self.config._tmp_path_factory.getbasetemp()
        for path, _size in found:
            if path.is_relative_to(base):
                path.unlink(missing_ok=True)
        names = ", ".join(f"{p} ({size / GIB:.1f} GiB)" for p, size in found[:5])
        where = "removed if in pytest's temporary directory"
        return [f"leak check: the test left files over 1 GiB: {names} ({where})"]


_START = pytest.StashKey[tuple[float, int, int]]()
_TMP = pytest.StashKey[Path | None]()


def pytest_configure(config: pytest.Config) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    if soft == resource.RLIM_INFINITY or soft > FILE_LIMIT:
        limit = FILE_LIMIT if hard == resource.RLIM_INFINITY else min(FILE_LIMIT, hard)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    if os.path.isdir("/proc/self"):
        config.pluginmanager.register(LeakCheck(config), "testbed-leak-check")
