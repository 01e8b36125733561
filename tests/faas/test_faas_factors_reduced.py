"""Issue 17: the factors study's plans end to end at reduced scale (faas-factors-reduced.yml);
its outcomes (containers per host, requests per host sd, the retention curve) come from what the
emulator did: placements on hosts and containers reclaimed after their drawn idle lifetimes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import needs_root

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    needs_root()
    out = tmp_path_factory.mktemp("factors")
    cmd = [
        sys.executable,
        "-m",
        "testbed_agent",
        "run",
        str(ROOT / "workloads/plans/faas-factors-reduced.yml"),
    ]
    cmd += ["--out", str(out), "--host", "faas", "--node-exporter", "", "--no-progress"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    recs = [json.loads(line) for line in (out / "faas.jsonl").read_text().splitlines()]
    assert all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    return {r["benchmark"]: r for r in recs}


def test_concurrency_ladder_outcomes_come_from_placements(records):
    for c in (1, 3, 6):
        r = records[f"faas_factors_conc_{c}"]
        m, calls = r["metrics"], r["samples"]["calls"]
        per_host: dict[str, set] = {}
        for s in calls:
            per_host.setdefault(s["host_id"], set()).add(s["instance_id"])
        assert m["containers_per_host_mean"]["value"] == sum(map(len, per_host.values())) / len(per_host)
        assert m["instances_used"]["value"] <= c and m["requests_per_host_sd"]["value"] >= 0
        assert all(s["host_uptime_s"] >= 0 and s["host_id"] for s in calls)
    six = records["faas_factors_conc_6"]["metrics"]
    assert six["containers_per_host_mean"]["value"] > 1, "8192 MB hosts pack several 1024 MB containers"


def test_retention_curve_from_drawn_lifetimes(records):
    r = records["faas_factors_retention"]
    m = r["metrics"]
    assert m["recycled_fraction_gap_0_5s"]["value"] == 1, "all reused within the 3 s minimum lifetime"
    assert m["recycled_fraction_gap_20s"]["value"] == 0, "all reclaimed after the 18 s maximum"
    assert "keep_alive_s" not in r["params"], "the curve is not a configured keep-alive"


def test_memory_and_stress_cells_run(records):
    for name in ("faas_factors_mem_128", "faas_factors_mem_1536"):
        assert records[name]["metrics"]["calcs_per_s"]["value"] > 0
    cw = records["faas_factors_stress_3"]["metrics"]
    assert cw["cold_fraction"]["value"] == 0.5 and cw["cold_start_s"]["value"] > 0
    kinds = {s["cold_start_kind"] for s in records["faas_factors_stress_3"]["samples"]["calls"]}
    assert kinds & {"provider", "host", "container"}
