"""Fixtures of the KVM lab tests."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kvm_helpers import ROOT, SCHEMAS

#: what the kvm_host role starts with -d where no systemd runs: daemons that leave the test's
#: process tree, so the suite's leak check (tests/conftest.py) cannot see them
DAEMONS = ("libvirtd", "virtlogd")


def _pids(name: str) -> set[int]:
    out = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True, check=False).stdout
    return {int(p) for p in out.split()}


@pytest.fixture(autouse=True)
def stop_daemons_the_test_started() -> Iterator[None]:
    """libvirtd and virtlogd a KVM test started (through the role) are stopped after it, SIGTERM then
    SIGKILL after 10 s; ones that ran before the test are left alone."""
    before = {name: _pids(name) for name in DAEMONS}
    yield
    started = [pid for name in DAEMONS for pid in _pids(name) - before[name]]
    for pid in started:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while started and time.monotonic() < deadline:
        started = [pid for pid in started if Path(f"/proc/{pid}").exists()]
        time.sleep(0.1)
    for pid in started:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


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
