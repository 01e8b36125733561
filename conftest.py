"""The two lanes of `make test` (pytest-xdist, ``-n 2 --dist loadscope``), and the leak check every
test passes.

Lanes. The software-emulated guests (tests/kvm, tests/hyperv: one QEMU process holds a core for
most of their 15-20 minutes while the test waits), the Azure dress rehearsal (stand-ins and a
loopback sshd of its own) and two run.yml tests run one after another in the ``guests`` lane;
everything else runs, in collection order, in the ``main`` lane beside it. Inside a lane nothing
runs concurrently, so tests that share cgroups, libvirt or the default node_exporter port never
overlap; what both lanes' run.yml runs share in the checkout (the agent bundle) is built under a
lock. ``--dist loadscope`` is given lanes as its scopes here (xdist's ``loadgroup`` marks cannot do
it under pytest 9: xdist 3.8 renames node ids through an attribute pytest 9 no longer reads).
Without ``-n`` (make test-studies, a plain pytest) nothing changes.

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
  them grew by 1 GiB or more, so the check costs one /proc scan and a few reads per test.

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

#: what the guests lane runs (node id prefixes, relative to the repository)
GUESTS_LANE = (
    "tests/kvm/",
    "tests/hyperv/",
    "tests/azure/test_azure_rehearsal.py",
    # two run.yml tests with their own ports and directories, to even out the lanes (measured: the
    # guests lane took 25 min and the main lane 34 before they moved)
    "tests/test_ansible_local.py",
    "tests/faas/test_faas_platform_runyml.py",
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


def lane(nodeid: str) -> str:
    """The lane of the test *nodeid*."""
    return "guests" if nodeid.startswith(GUESTS_LANE) else "main"


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "loadscope":
        return None  # xdist's own scheduler for any other --dist
    from xdist.scheduler import LoadScopeScheduling  # noqa: PLC0415 - only with pytest-xdist running

    class LaneScheduling(LoadScopeScheduling):
        """loadscope with the two lanes as its scopes."""

        def _split_scope(self, nodeid: str) -> str:
            return lane(nodeid)

    return LaneScheduling(config, log)


# -- the leak check -----------------------------------------------------------------------------

Proc = tuple[int, int]  # (pid, start time in clock ticks): a pid reused later is another process


def descendants(root: int, skip: set[Proc] | frozenset[Proc] = frozenset()) -> dict[Proc, str]:
    """The live (not zombie) descendants of ``root`` with their command names, leaving out the
    subtrees of the processes in ``skip``: one /proc scan."""
    children: dict[int, list[int]] = {}
    info: dict[int, tuple[bytes, int, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{name}/stat", os.O_RDONLY)
        except OSError:
            continue
        try:
            data = os.read(fd, 1024)
        except OSError:
            continue
        finally:
            os.close(fd)
        close = data.rfind(b")")
        fields = data[close + 2 :].split(b" ", 20)
        pid = int(name)
        children.setdefault(int(fields[1]), []).append(pid)
        info[pid] = (fields[0], int(fields[19]), data[data.find(b"(") + 1 : close].decode(errors="replace"))
    out: dict[Proc, str] = {}
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            state, start, comm = info[child]
            if (child, start) in skip:
                continue
            stack.append(child)
            if state not in (b"Z", b"X"):
                out[(child, start)] = comm
    return out


def _written() -> int:
    """Bytes this process and its reaped children caused to be written (/proc/self/io)."""
    try:
        for line in Path("/proc/self/io").read_text().splitlines():
            if line.startswith("write_bytes:"):
                return int(line.split()[1])
    except OSError:
        pass
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
    after ``since`` when given; links are not followed."""
    found = []
    for top, dirs, files in os.walk(root, onerror=lambda _e: None):
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
        self.pid = os.getpid()
        self.known = set(descendants(self.pid))
        self.owned: dict[Proc, str] = {}  # started by fixtures wider than a function

    def places(self) -> list[Path]:
        base = self.config._tmp_path_factory.getbasetemp()
        roots = [base, Path(os.environ.get("TESTBED_SCRATCH", SCRATCH_ROOT)), Path(tempfile.gettempdir())]
        return [p for p in roots if p.is_dir()]

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> Iterator:
        if fixturedef.scope == "function":
            return (yield)
        before = set(descendants(self.pid, set(self.owned)))
        try:
            return (yield)
        finally:
            now = descendants(self.pid, set(self.owned))
            self.owned.update({k: v for k, v in now.items() if k not in before})

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
        end = time.monotonic() + ENDING_S
        while True:
            now = descendants(self.pid, set(self.owned))  # what a wider fixture runs is its own
            new = {k: v for k, v in now.items() if k not in self.known}
            if not new or time.monotonic() > end:
                break
            time.sleep(0.05)
        for pid, _start in new:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        self.known = {k for k in now if k not in new}
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
            found += [f for p in places for f in big_files(p, since) if f not in found]
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
