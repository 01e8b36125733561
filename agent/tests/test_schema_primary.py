"""Primary metrics: each workload type's rule (its module's own), written into every record the agent
makes (the ``primary`` field, docs/design.md section 4), and the frozen rules that read records
made before the field (``testbed_shared.records.LEGACY_PRIMARY``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agenttest import agent

from testbed_agent import workloads
from testbed_agent.benchmark import Benchmark
from testbed_agent.plan import load_plan
from testbed_agent.results import Identity, Outcome, metric, read_records
from testbed_agent.runner import Runner
from testbed_shared import records

ROOT = Path(__file__).resolve().parents[2]
PLANS = ROOT / "workloads" / "plans"
#: metric names of each type, some primary and some not (every tier of each rule)
NAMES = {
    "fio": ["read_bw_bytes", "read_iops", "write_bw_bytes", "read_clat_p99_s", "write_lat_mean_s"],
    "dd": ["write_bytes", "write_seconds", "write_bw_bytes", "read_seconds", "read_bw_bytes"],
    "kaggle_notebook": ["wall_s", "kernel_start_s", "cell_1_s"],
    "pyperformance": ["nbody", "float"],
    "crypto": ["py.aes.4096.throughput", "py.aes.4096.time_per_op", "py.ecdsa.time_per_op", "py.aes.cpu"],
    "faas": ["write_latency_s", "read_latency_s", "direct_write_latency_s", "round_trip_p50_s"],
    "sysinfo": ["logical_cpus", "memory_bytes"],
}
#: the types and aliases there were when records began to name their primary metrics (issue 35)
TYPES_AT_THE_FREEZE = {"crypto", "dd", "faas", "fio", "kaggle_notebook", "pyperformance", "sysinfo"}


def test_fio_primary_is_bandwidth_per_direction() -> None:
    names = ["read_bw_bytes", "read_iops", "write_bw_bytes", "read_clat_p99_s"]
    assert workloads.primary_metrics("fio", names) == ["read_bw_bytes", "write_bw_bytes"]


def test_dd_primary_is_latency() -> None:
    assert workloads.primary_metrics("dd", ["write_bytes", "write_seconds", "write_bw_bytes"]) == [
        "write_seconds"
    ]


def test_crypto_throughput_or_time_per_op_per_cell() -> None:
    names = [
        "py.aes.4096.throughput",
        "py.aes.4096.cpu_percent",
        "py.ecdsa.time_per_op",
        "py.aes.4096.time_per_op",
    ]
    assert workloads.primary_metrics("crypto", names) == ["py.aes.4096.throughput", "py.ecdsa.time_per_op"]


def test_types_without_rule_have_none() -> None:
    assert workloads.primary_metrics("sysinfo", ["logical_cpus"]) == []
    assert workloads.primary_metrics("pyperformance", ["nbody", "float"]) == ["float", "nbody"]


def _one_benchmark_per_type() -> dict[str, Benchmark]:
    """A benchmark of each type as the shipped plans write it."""
    out: dict[str, Benchmark] = {}
    for name in ("quick.yml", "faas-smoke.yml", "standard.txt"):
        for bench in load_plan(PLANS / name).benchmarks:
            out.setdefault(bench.type, bench)
    return out


@pytest.mark.parametrize("btype", sorted(workloads.registry()))
def test_every_type_s_records_name_their_primary_metrics(
    btype: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runner makes every record; the record says which metrics are primary by its type's rule."""
    bench = _one_benchmark_per_type().get(btype)
    assert bench is not None, f"no shipped plan runs {btype}: name one in _one_benchmark_per_type"
    cls = workloads.registry()[btype]
    names = NAMES.get(btype, ["x_s", "y_s"])
    measured = {n: metric(1.0, "s", "lower") for n in names}
    monkeypatch.setattr(cls, "run", lambda self, ctx, params: Outcome(metrics=measured))
    plan = load_plan(PLANS / "quick.yml")
    runner = Runner(plan, tmp_path / "out", Identity("r1", "h1", "h1", (), plan.sha256), progress=False)
    rec = runner.execute(bench, 0)
    assert rec["status"] == "ok", rec["error"]
    assert rec["primary"] == cls.primary_metrics(names)
    assert records.validate(json.loads(json.dumps(rec)), "r", 1)["primary"] == rec["primary"]
    assert rec["primary"] or btype == "sysinfo"
    assert records.primary_metrics(rec) == rec["primary"]


def test_a_failed_execution_names_no_primary_metric(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cls = workloads.registry()["dd"]
    monkeypatch.setattr(cls, "run", lambda self, ctx, params: 1 / 0)
    plan = load_plan(PLANS / "quick.yml")
    runner = Runner(plan, tmp_path / "out", Identity("r1", "h1", "h1", (), plan.sha256), progress=False)
    rec = runner.execute(_one_benchmark_per_type()["dd"], 0)
    assert rec["status"] == "failed" and rec["primary"] == []


def test_a_real_run_writes_the_field(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yml"
    plan.write_text(
        "benchmarks:\n"
        "  - {name: systeminfo, type: sysinfo}\n"
        "  - {name: d, type: dd, repetitions: 2, params: {bs: 4k, count: 16, source: zero, pause_s: 0}}\n"
        "  - {name: fio_4k_randread, type: fio, params: {size: 4M, runtime_s: 1, ramp_s: 0}}\n"
    )
    out = tmp_path / "results" / "r1"
    argv = ["run", str(plan), "--out", str(out), "--host", "h1", "--node-exporter", "", "--no-progress"]
    res = agent(*argv, "--scratch", str(tmp_path / "scratch"))
    assert res.returncode == 0, res.stderr
    got = {(r["benchmark"], tuple(r["primary"])) for r in read_records(out / "h1.jsonl")}
    assert got == {
        ("systeminfo", ()),
        ("d", ("read_seconds", "write_seconds")),
        ("fio_4k_randread", ("read_bw_bytes",)),
    }


def test_the_frozen_rules_were_the_types_rules_when_they_froze() -> None:
    """``LEGACY_PRIMARY`` holds each type's rule as it stood when records began to carry the field,
    aliases included. It never changes: when a type's rule changes later, its new records carry the
    new result, and this test pins the old one for that type instead of asking the registry."""
    for btype in TYPES_AT_THE_FREEZE:
        cls = workloads.registry()[btype]
        for name in (btype, *cls.aliases):
            assert records.legacy_primary(name, tuple(NAMES[btype])) == tuple(
                cls.primary_metrics(NAMES[btype])
            )
    stored = ROOT / "reports" / "tests" / "data"
    for path in stored.rglob("*.jsonl"):
        for rec in read_records(path):
            assert "primary" not in rec, f"{path} holds records made before the field"
            if rec["status"] == "ok":
                rule = workloads.get(rec["type"])
                assert records.primary_metrics(rec) == rule.primary_metrics(rec["metrics"]), path
