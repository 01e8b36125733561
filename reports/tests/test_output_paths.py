"""Every file the toolkit writes goes only over a regular file or to a new path (issue 26): reports,
CSVs, stats.json, exports, sysinfo and URL files refuse a symbolic link (never writing through it),
a FIFO, a device, a directory and a kernel pseudo-filesystem, with a one-line error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from report_helpers import record, run_cli, write_jsonl

VICTIM = b"not the toolkit's\n"


def _results(tmp: Path) -> Path:
    recs = [
        record(
            repetition=r, metrics={"write_seconds": {"value": 1.0 + r / 10, "unit": "s", "better": "lower"}}
        )
        for r in range(3)
    ]
    return write_jsonl(tmp / "r1" / "h1.jsonl", recs).parent


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    v = tmp_path / "victim.txt"
    v.write_bytes(VICTIM)
    return v


@pytest.mark.parametrize("name", ["index.html", "status.csv", "stats.json", "summary.md", "descriptives.csv"])
def test_build_refuses_a_symlink_among_its_outputs(tmp_path: Path, victim: Path, name: str) -> None:
    out = tmp_path / "report"
    out.mkdir()
    (out / name).symlink_to(victim)
    proc = run_cli("build", str(_results(tmp_path)), "--out", str(out))
    assert proc.returncode != 0 and "symbolic link" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 2, proc.stderr
    assert victim.read_bytes() == VICTIM and (out / name).is_symlink()


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory", "procfs", "device"])
def test_export_csv_refuses_special_targets(tmp_path: Path, victim: Path, kind: str) -> None:
    target = tmp_path / "export.csv"
    if kind == "symlink":
        target.symlink_to(victim)
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    elif kind == "procfs":
        target = Path("/proc/self/comm")
    else:
        target = Path("/dev/null")
    proc = run_cli("export", str(_results(tmp_path)), "--csv", str(target))
    assert proc.returncode != 0 and proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
    assert victim.read_bytes() == VICTIM
    if kind == "fifo":
        assert target.exists() and not target.is_file()  # still a FIFO, not replaced by a file


def test_agent_sysinfo_out_refuses_a_symlink(tmp_path: Path, victim: Path) -> None:
    link = tmp_path / "sysinfo.json"
    link.symlink_to(victim)
    proc = subprocess.run(
        [sys.executable, "-m", "testbed_agent", "sysinfo", "--out", str(link)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode != 0 and "symbolic link" in proc.stderr and "Traceback" not in proc.stderr
    assert victim.read_bytes() == VICTIM
