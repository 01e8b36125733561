"""Fixtures of the KVM lab tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from kvm_helpers import ROOT, SCHEMAS


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
