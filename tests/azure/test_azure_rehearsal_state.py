"""What an earlier rehearsal left is not trusted (issue 30): stale stand-ins are stopped only when
their pid is still theirs, stale files are removed, and one work directory takes one rehearsal."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from repotest import ROOT

spec = importlib.util.spec_from_file_location("rehearsal", ROOT / "tests/azure/rehearsal.py")
rehearsal = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rehearsal)


def _sleeper(*marker: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", *marker])


def test_stale_stand_ins_are_stopped_and_their_files_removed(tmp_path: Path) -> None:
    (tmp_path / "arm").mkdir()
    (tmp_path / "ssh").mkdir()
    (tmp_path / "arm/endpoint.json").write_text("{}")
    (tmp_path / "tasks.jsonl").write_text('{"old": 1}\n')
    (tmp_path / "ssh/id_ed25519").write_text("key")  # the keys are kept
    ours, other = _sleeper(str(tmp_path / "arm")), _sleeper("somewhere-else")
    try:
        (tmp_path / "arm/server.pid").write_text(f"{ours.pid}\n")
        (tmp_path / "ssh/sshd.pid").write_text(f"{other.pid}\n")  # a pid now used by another program
        notes = rehearsal.clear_stale(tmp_path)
        assert notes == [f"stopped a stale server of an earlier rehearsal (pid {ours.pid})"]
        assert ours.wait(timeout=10) is not None and other.poll() is None
        assert not (tmp_path / "arm").exists() and not (tmp_path / "tasks.jsonl").exists()
        assert not (tmp_path / "ssh/sshd.pid").exists() and (tmp_path / "ssh/id_ed25519").exists()
    finally:
        ours.kill()
        other.kill()


def test_one_rehearsal_per_work_directory(tmp_path: Path) -> None:
    refused = pytest.raises(SystemExit, match="another rehearsal is running")
    with rehearsal.exclusive(tmp_path), refused, rehearsal.exclusive(tmp_path):
        pass


def test_missing_vtpm_parts_stop_the_rehearsal(tmp_path: Path) -> None:
    inv = ROOT / "inventory/azure.yml"
    missing = pytest.raises(SystemExit, match=r"HCL report .* is missing")
    with missing, rehearsal.vtpms(tmp_path, tmp_path / "x", inv):
        pass
    assert rehearsal.HCL_REPORT.is_file() and ROOT in rehearsal.HCL_REPORT.parents
