"""The ``faas`` workload: plan validation and a cut-down experiment run through the agent's runner."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testbed_agent.plan import Benchmark, ParamError, load_plan
from testbed_agent.workloads.faas import FaasWorkload

ROOT = Path(__file__).resolve().parents[2]
PLANS = sorted((ROOT / "workloads" / "plans").glob("faas-*.yml"))


def _bench(**params):
    return Benchmark(name="b", type="faas", index=0, line=1, params=params)


@pytest.mark.parametrize("plan", PLANS, ids=[p.stem for p in PLANS])
def test_shipped_plans_validate(plan):
    loaded = load_plan(plan)
    assert loaded.benchmarks and all(b.type == "faas" for b in loaded.benchmarks)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({}, "params.function"),
        ({"function": "calcs", "mode": "sideways"}, "params.mode"),
        ({"function": "calcs", "calls": 0}, "params.calls"),
        ({"function": "calcs", "endpoint": "ftp://x"}, "params.endpoint"),
        ({"function": "calcs", "mode": "retention"}, "params.gaps_s"),
        ({"function": "calcs", "profile": "gcf-gen2", "memory_mb": 300}, "params.profile"),
        ({"function": "calcs", "profile": "nope"}, "params.profile"),
        ({"function": "calcs", "keep_alive_s": 0}, "params.keep_alive_s"),
    ],
)
def test_check_names_the_bad_field(params, field):
    with pytest.raises(ParamError) as exc:
        FaasWorkload.check(_bench(**params))
    assert exc.value.field == field


@pytest.mark.integration
@pytest.mark.slow
def test_smoke_plan_runs_through_the_agent(tmp_path):
    out = tmp_path / "run"
    cmd = [
        sys.executable,
        "-m",
        "testbed_agent",
        "run",
        str(ROOT / "workloads/plans/faas-smoke.yml"),
        "--out",
        str(out),
        "--host",
        "faas-test",
        "--node-exporter",
        "",
        "--no-progress",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    records = [json.loads(line) for line in (out / "faas-test.jsonl").read_text().splitlines()]
    by_name = {r["benchmark"]: r for r in records}
    assert len(by_name) == 5 and all(r["status"] == "ok" for r in records), [r["error"] for r in records]
    for r in records:
        assert r["params"]["resolved_limits_enforced"] is True
        assert r["metrics"]["round_trip_s"]["unit"] == "s" and r["samples"]["calls"]
    cw = by_name["faas_calcs_cold_warm_gcf_512"]["metrics"]
    assert cw["cold_fraction"]["value"] == 0.5 and "cold_start_s" in cw and "warm_round_trip_s" in cw
    io = by_name["faas_dd_10k_gcf_128"]["metrics"]
    assert io["write_bytes_per_s"]["value"] > 0 and io["read_bytes_per_s"]["value"] > 0
    scale = by_name["faas_scaling_4_aws_256"]["metrics"]
    used = scale["instances_used"]["value"]
    assert 1 <= used <= 4 and used * scale["requests_per_instance_mean"]["value"] == 8
    ret = by_name["faas_retention_azure"]["metrics"]
    # recycled = reused: every instance after a gap within the keep-alive, none after a longer one
    assert ret["recycled_fraction_gap_0_1s"]["value"] == 1 and ret["recycled_fraction_gap_1_2s"]["value"] == 0
    warm = by_name["faas_calcs_warm_aws_1769"]
    assert warm["metrics"]["cold_fraction"]["value"] == 0 and warm["metrics"]["price_per_call"]["value"] > 0
    assert warm["params"]["resolved_platform"] == "aws-lambda"


def test_unreachable_endpoint_is_a_clear_workload_error(tmp_path):
    import time

    from testbed_agent.workloads.base import RunContext
    from testbed_shared.errors import WorkloadError

    bench = _bench(function="calcs", endpoint="http://127.0.0.1:9")
    ctx = RunContext(
        bench=bench, repetition=0, scratch=tmp_path, artifacts=tmp_path, deadline=time.monotonic() + 30
    )
    with pytest.raises(WorkloadError, match="unreachable") as exc:
        FaasWorkload().run(ctx, FaasWorkload.parse(ctx.bench))
    assert "faas serve" in (exc.value.hint or "")
