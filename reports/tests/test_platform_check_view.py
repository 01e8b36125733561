"""testbed-report platform-check end to end: result records of a real platform and of the emulator
profile that models it, read by the loader, compared per benchmark and metric, written as
platform-check.md/.json/.csv; a store with one side only is refused in one line."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

from testbed_shared import records


def _write(results: Path, host: str, real: bool, handler: float, cold: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    ident = {
        "run_id": "run-1",
        "host": host,
        "groups": ("faas",),
        "plan_sha256": "0" * 64,
        "plan": "faas-test",
    }
    params = {
        "profile": "aws-lambda",
        "function": "calcs",
        "resolved_real": real,
        "resolved_platform": "aws-lambda",
        **({} if real else {"resolved_models": "aws-lambda"}),
    }
    lines = []
    for rep in range(10):
        metrics = {
            "handler_s": {
                "value": float(handler * math.exp(rng.normal(0, 0.05))),
                "unit": "s",
                "better": "lower",
            },
            "cold_start_s": {
                "value": float(cold * math.exp(rng.normal(0, 0.05))),
                "unit": "s",
                "better": "lower",
            },
        }
        rec = records.make(
            **ident,
            benchmark="faas_calcs",
            btype="faas",
            index=0,
            repetition=rep,
            params=params,
            started_at="2026-11-26T08:00:00Z",
            ended_at="2026-11-26T08:00:01Z",
            status="ok",
            metrics=metrics,
        )
        lines.append(json.dumps(rec))
    (results / "run-1").mkdir(parents=True, exist_ok=True)
    (results / "run-1" / f"{host}.jsonl").write_text("\n".join(lines) + "\n")


def test_platform_check_writes_ratios_and_verdicts(tmp_path: Path) -> None:
    _write(tmp_path / "real", "lambda-x86", True, handler=0.100, cold=0.300, seed=1)
    _write(tmp_path / "emu", "emulator", False, handler=0.100, cold=0.100, seed=2)
    out = tmp_path / "out"
    cmd = [
        sys.executable,
        "-m",
        "testbed_reports",
        "platform-check",
        str(tmp_path / "real"),
        str(tmp_path / "emu"),
    ]
    done = subprocess.run([*cmd, "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    checks = {c["metric"]: c for c in json.loads((out / "platform-check.json").read_text())["checks"]}
    assert checks["handler_s"]["verdict"] == "holds"
    assert 0.9 < checks["handler_s"]["ratio"] < 1.1
    assert (
        checks["cold_start_s"]["verdict"] == "does not hold" and 2.5 < checks["cold_start_s"]["ratio"] < 3.5
    )
    assert checks["cold_start_s"]["lo"] < checks["cold_start_s"]["ratio"] < checks["cold_start_s"]["hi"]
    md = (out / "platform-check.md").read_text()
    assert "| aws-lambda | faas_calcs | cold_start_s* |" in md and "does not hold" in md
    assert (out / "platform-check.csv").read_text().startswith("platform,benchmark,metric")


def test_one_side_only_is_refused_in_one_line(tmp_path: Path) -> None:
    _write(tmp_path / "emu", "emulator", False, handler=0.1, cold=0.1, seed=3)
    cmd = [
        sys.executable,
        "-m",
        "testbed_reports",
        "platform-check",
        str(tmp_path / "emu"),
        "--out",
        str(tmp_path / "o"),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "missing: platform" in done.stderr and "Traceback" not in done.stderr
