"""The local-I/O full factorial (faas-io-factorial.yml; not the thesis's design, which is faas-io.yml:
tests/studies/test_serverless_plans.py), checked through ``plan show --json``: 2 platforms x 2 tiers
x 2 file sizes x 2 I/O sizes x write/read, 150 observations per cell, and its dd command shapes
(writes synced, reads O_DIRECT after an unmeasured setup write)."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "workloads/plans/faas-io-factorial.yml"
PLATFORMS = {"aws-lambda", "gcf-gen2"}
TIERS = {128, 2048}
FILES = {10 * 1024, 1 << 30}
IOS = {512, 128 * 1024}
OPS = {"write", "read"}


def _executions() -> list[dict]:
    proc = subprocess.run(
        [sys.executable, "-m", "testbed_agent", "plan", "show", str(PLAN), "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return [r for r in map(json.loads, proc.stdout.splitlines()) if "benchmark" in r]


def _cell(params: dict) -> tuple:
    f = params["factors"]
    return params["profile"], params["memory_mb"], f["file_size_bytes"], f["io_size_bytes"], f["op"]


def test_full_factorial_with_150_observations_per_cell() -> None:
    runs = _executions()
    cells = Counter(_cell(r["params"]) for r in runs)
    assert set(cells) == set(itertools.product(PLATFORMS, TIERS, FILES, IOS, OPS))
    assert set(cells.values()) == {150} and len(runs) == 32 * 150
    assert all(r["params"]["function"] == "dd" and r["params"]["calls"] == 1 for r in runs)


def test_dd_command_shapes_are_the_studys() -> None:
    seen = {}
    for r in _executions():
        seen[_cell(r["params"])] = r["params"]["event"]["steps"]
    for (_, _, size, io_size, op), steps in seen.items():
        io = min(io_size, size)  # the plan's header: bs is capped at the file size (10 KB at 128 KB: one I/O)
        count = f"count={size // io}"
        write = ["if=/dev/urandom", "of=f", f"bs={io}", count, "conv=fsync"]
        measured = [s for s in steps if s.get("measure")]
        assert len(measured) == 1 and measured[0]["name"] == op
        if op == "write":
            assert steps == [{"name": "write", "args": write, "measure": True}]
        else:  # an unmeasured setup write of the file, then the O_DIRECT read
            assert steps[0] == {"name": "setup", "args": write}
            assert measured[0]["args"] == ["if=f", "of=/dev/null", f"bs={io}", count, "iflag=direct"]
    assert seen[("aws-lambda", 128, 10 * 1024, 512, "write")][0]["args"][3] == "count=20"  # 20 x 512 B
