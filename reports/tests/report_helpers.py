"""Helpers of the report tests (a uniquely named module: several conftest.py exist in the repository)."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

from testbed_reports.cli import main

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
    return subprocess.run(
        [sys.executable, "-m", "testbed_reports", *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def record(**over: object) -> dict:
    """A valid schema-1 record; keyword arguments override fields."""
    rec = {
        "schema": 1,
        "run_id": "r1",
        "host": "h1",
        "label": "Local",
        "groups": ["local"],
        "plan_sha256": "0" * 64,
        "plan": "t",
        "benchmark": "b1",
        "type": "dd",
        "index": 0,
        "params": {},
        "repetition": 0,
        "started_at": "2026-01-01T00:00:00Z",
        "ended_at": "2026-01-01T00:00:01Z",
        "status": "ok",
        "error": None,
        "metrics": {"bw_bytes": {"value": 100.0, "unit": "B/s", "better": "higher"}},
        "samples": {},
        "telemetry": {},
        "tool": {},
        "artifacts": [],
    }
    rec.update(over)
    return rec
