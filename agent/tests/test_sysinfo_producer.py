"""One producer of the machine fingerprint (issue 28): the runner's ``<host>.sysinfo.json``, the
``sysinfo`` workload's record and ``testbed-agent sysinfo`` are made alike from the run's options.
Regression: the workload dropped ``--disk-encryption`` (the inventory's declaration), so its
fingerprint said less than the runner's."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_the_workloads_fingerprint_has_the_runs_options(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yml"
    plan.write_text("benchmarks:\n  - {name: sysinfo, type: sysinfo}\n")
    out = tmp_path / "results" / "r1"
    cmd = [
        sys.executable, "-m", "testbed_agent", "run", str(plan), "--out", str(out), "--host", "h1",
        "--node-exporter", "", "--no-progress", "--scratch", str(tmp_path / "scratch"),
        "--disk-encryption", "true",
    ]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    runner = json.loads((out / "h1.sysinfo.json").read_text())
    record = json.loads((out / "h1.jsonl").read_text().splitlines()[0])
    artifact = next(a for a in record["artifacts"] if a.endswith("sysinfo.json"))
    workload = json.loads((out / artifact).read_text())
    assert runner["cc"]["disk_encryption"]["declared"] is True
    assert workload["cc"]["disk_encryption"] == runner["cc"]["disk_encryption"]
    assert workload["cloud"] == runner["cloud"] == {"provider": "none"}


def test_the_sysinfo_command_takes_the_same_options(tmp_path: Path) -> None:
    out = tmp_path / "si.json"
    cmd = [sys.executable, "-m", "testbed_agent", "sysinfo", "--out", str(out), "--disk-encryption", "false"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    disk = json.loads(out.read_text())["cc"]["disk_encryption"]
    assert disk["declared"] is False
