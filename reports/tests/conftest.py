"""Fixtures of the report tests: synthetic result directories with known properties."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from testbed_reports.cli import main
from testbed_reports.synth import Machine, write_run

BENCHMARKS = ["fio_4k_randwrite", "dd_write"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``testbed-report ARGS`` in this process (the console script's ``main``), output captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse --help / usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    return subprocess.CompletedProcess(["testbed-report", *args], code, out.getvalue(), err.getvalue())


def run_module(*args: str) -> subprocess.CompletedProcess:
    """``python -m testbed_reports ARGS`` in a new process."""
    return subprocess.run([sys.executable, "-m", "testbed_reports", *args], capture_output=True, text=True,
                          timeout=600, check=False)


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def record(**over: object) -> dict:
    """A valid schema-1 record; keyword arguments override fields."""
    rec = {"schema": 1, "run_id": "r1", "host": "h1", "label": "Local", "groups": ["local"],
           "plan_sha256": "0" * 64, "plan": "t", "benchmark": "b1", "type": "dd", "index": 0, "params": {},
           "repetition": 0, "started_at": "2026-01-01T00:00:00Z", "ended_at": "2026-01-01T00:00:01Z",
           "status": "ok", "error": None,
           "metrics": {"bw_bytes": {"value": 100.0, "unit": "B/s", "better": "higher"}},
           "samples": {}, "telemetry": {}, "tool": {}, "artifacts": []}
    rec.update(over)
    return rec


@pytest.fixture
def slowdown_run(tmp_path: Path) -> Path:
    """SEV 8% slower than its baseline (both metrics), 30 repetitions, 3% lognormal noise."""
    machines = [Machine("sev-1", "SEV-SNP", ["sev"], factor=1.08, technology="sev-snp"),
                Machine("base-1", "AMD-Baseline", ["amd_baseline"], factor=1.0)]
    return write_run(tmp_path / "results", "slow", machines, BENCHMARKS, reps=30, seed=7)


@pytest.fixture
def same_run(tmp_path: Path) -> Path:
    """TDX and its baseline drawn from the same distribution."""
    machines = [Machine("tdx-1", "TDX", ["tdx"], factor=1.0, technology="tdx", cpu_model="Intel Xeon"),
                Machine("intel-1", "Intel-Baseline", ["intel_baseline"], factor=1.0, cpu_model="Intel Xeon")]
    return write_run(tmp_path / "results", "same", machines, BENCHMARKS, reps=30, seed=11)
