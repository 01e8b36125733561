"""Fixtures of the KVM lab tests."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kvm_helpers import DAEMON_USERS, ROOT, SCHEMAS

#: what the kvm_host role starts with -d where no systemd runs: daemons that leave the test's
#: process tree, so the suite's leak check (tests/conftest.py) cannot see them
DAEMONS = ("libvirtd", "virtlogd")


def _pids(name: str) -> set[int]:
    out = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True, check=False).stdout
    return {int(p) for p in out.split()}


def _alive_daemons(pids: set[int]) -> set[int]:
    """The pids of ``pids`` that are still a libvirtd or virtlogd."""
    alive = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            if Path(f"/proc/{pid}/comm").read_text().strip() in DAEMONS:
                alive.add(pid)
    return alive


def _stop(pids: set[int]) -> None:
    """SIGTERM, then SIGKILL after 10 s."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    left, deadline = set(pids), time.monotonic() + 10
    while left and time.monotonic() < deadline:
        left = {pid for pid in left if Path(f"/proc/{pid}").exists()}
        time.sleep(0.1)
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(autouse=True)
def stop_daemons_the_test_started() -> Iterator[None]:
    """libvirtd and virtlogd a KVM test started (through the role) are stopped once no KVM test
    uses them any more, SIGTERM then SIGKILL after 10 s; ones that ran before are left alone.

    Another checkout's tests may run at the same time (two `make test` on one machine) and use the
    same daemons: every KVM test holds ``DAEMON_USERS`` shared, and the daemons are stopped only by
    the test that can take it exclusively. The daemons a test started but could not stop are
    written beside it (``.started``) for the last one to stop."""
    DAEMON_USERS.parent.mkdir(parents=True, exist_ok=True)
    pending_file = DAEMON_USERS.with_suffix(".started")
    with DAEMON_USERS.open("a") as users:
        fcntl.flock(users, fcntl.LOCK_SH)
        before = {name: _pids(name) for name in DAEMONS}
        yield
        started = {pid for name in DAEMONS for pid in _pids(name) - before[name]}
        with pending_file.open("a+") as pending:
            fcntl.flock(pending, fcntl.LOCK_EX)
            pending.seek(0)
            pids = _alive_daemons(started | {int(p) for p in pending.read().split() if p.isdigit()})
            try:
                fcntl.flock(users, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another KVM test still uses them: the last one stops them
                pass
            else:
                _stop(pids)
                pids = set()
            pending.seek(0)
            pending.truncate()
            pending.write("".join(f"{pid}\n" for pid in sorted(pids)))


@pytest.fixture(scope="session")
def new_schemas() -> Path:
    """libvirt schemas that know sev-snp and tdx (fetched from Debian's libvirt-common by mk/kvm.mk)."""
    if not (SCHEMAS / "domaincommon.rng").exists():
        proc = subprocess.run(
            [str(ROOT / "tests/kvm/fetch-libvirt-schemas.sh"), str(SCHEMAS.parent)],
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert proc.returncode == 0, f"fetching libvirt schemas failed:\n{proc.stderr}"
    return SCHEMAS
