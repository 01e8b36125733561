"""Issue 12 high 4: a kill, or a SIGTERM, during fio's layout must not leave a file the resumed run
refuses as foreign; the resumed run lays out again and measures."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testbed_agent.results import dedupe, read_records

PLAN = """\
benchmarks:
  - {name: fio_4k_randwrite, type: fio, wait_s: 0, params: {size: 128M, runtime_s: 1, ramp_s: 0}}
"""


def layout_running(out: Path) -> bool:
    """fio's layout of this run (it writes /proc/self/fd/N, its JSON into the run's artifacts)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"--name=layout" in cmd and str(out).encode() in cmd:
            return True
    return False


@pytest.mark.slow
@pytest.mark.parametrize("how", ["sigterm", "sigkill-group"])
def test_kill_during_layout_then_resume(tmp_path: Path, how: str, spawn) -> None:
    plan = tmp_path / "plan.yml"
    plan.write_text(PLAN)
    out, scratch = tmp_path / "results" / "r1", tmp_path / "scratch"
    cmd = [sys.executable, "-m", "testbed_agent", "run", str(plan), "--out", str(out), "--host", "h1",
           "--scratch", str(scratch), "--node-exporter", ""]  # fmt: skip
    proc = spawn(cmd, stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while not layout_running(out):
        assert time.monotonic() < deadline and proc.poll() is None, "the layout started"
        time.sleep(0.01)
    time.sleep(0.2)
    if how == "sigterm":
        proc.send_signal(signal.SIGTERM)
    else:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    kept = dedupe(read_records(out / "h1.jsonl")).kept
    assert [(r["status"], r["error"]) for r in kept] == [("ok", None)]
    assert not scratch.exists()
