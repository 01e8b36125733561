"""Every cell of the serverless study plans against its fidelity manifest (docs/design.md section 10):
the executions `plan show --json` expands (what a run would do) carry the design the manifest
states - S1's sixteen cells and the thesis's own dd commands, its preliminary slot; S3's
research-question configurations, Table I's levels and the profile physics; S0's workloads,
memory tiers and protocol."""

from __future__ import annotations

import importlib.util
import itertools
import json
import subprocess
import sys
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from testbed_services.faas.profiles import load_profile
from testbed_shared.studies import manifest

ROOT = Path(__file__).resolve().parents[2]
PLANS = ROOT / "workloads/plans"


@cache
def executions(plan: str) -> tuple[list[dict], dict, list[dict]]:
    """(executions, summary, deviations) of ``plan show --json``."""
    proc = subprocess.run(
        [sys.executable, "-m", "testbed_agent", "plan", "show", str(PLANS / plan), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    runs = [r for r in rows if "benchmark" in r]
    summary = next(r["summary"] for r in rows if "summary" in r)
    deviations = [r["deviation"] for r in rows if "deviation" in r]
    return runs, summary, deviations


@cache
def _manifest(study: str):
    return manifest(study)


@cache
def _profile(name: str):
    return load_profile(name)


def value(study: str, element: str):
    return _manifest(study).element(element).value


# -- S1 ----------------------------------------------------------------------------------------


def _s1_expected() -> dict[tuple, dict[str, str]]:
    """The sixteen cells of the thesis's design, as (platform, tier, file, io) sequences with their
    commands, from the manifest's values alone."""
    files, ios = value("S1", "design.files"), value("S1", "design.io_sizes")
    count_bytes = ios["count_bytes"]
    expected = {}
    for exp in value("S1", "design.cells"):
        tiers = exp.get("tiers") or [exp["tier"]]
        io_list = exp.get("ios") or [exp["io"]]
        for tier, io in itertools.product(tiers, io_list):
            count = exp["file"] // count_bytes[io]
            for plat in ("aws-lambda", "gcf"):
                key = (plat, tier, exp["file"], io)
                commands = expected.setdefault(key, {})
                for step in value("S1", "design.sequences"):
                    if "command" in step:
                        commands[step["phase"]] = step["command"].format(bs=io, count=count)
                expected[key]["ops"] = expected[key].get("ops", "") + exp["op"]
    assert files["small"] in {k[2] for k in expected} and files["large"] in {k[2] for k in expected}
    return expected


def test_s1_faas_io_runs_the_sixteen_cells_with_the_thesis_commands() -> None:
    runs, summary, deviations = executions("faas-io.yml")
    expected = _s1_expected()
    assert len(expected) == 8 and sum(len(v["ops"]) > 5 for v in expected.values()) == 8  # write + read each
    reps = value("S1", "design.repetitions")
    cells = Counter()
    tiers = value("S1", "design.tiers")
    profiles = {
        "aws-lambda": value("S1", "platform.aws")["profile"],
        "gcf": value("S1", "platform.gcf")["profile"],
    }
    for r in runs:
        p, f = r["params"], r["params"]["factors"]
        key = (f["platform"], f["tier"], f["file_size_bytes"], f["io_bs"])
        assert key in expected, key
        cells[key] += 1
        assert p["profile"] == profiles[f["platform"]] and p["function"] == "dd" and p["mode"] == "sequence"
        assert p["memory_mb"] == tiers[f["tier"]]["memory_mb"]
        prof = _profile(p["profile"])
        vcpus = tiers[f["tier"]]["aws_vcpus" if f["platform"] == "aws-lambda" else "gcf_vcpus"]
        assert prof.vcpus(p["memory_mb"]) == pytest.approx(vcpus, abs=0.001)
        steps = [s for s in p["sequence"] if "phase" in s]
        assert {s["phase"]: s["event"]["command"] for s in steps} == {
            k: v for k, v in expected[key].items() if k != "ops"
        }
        assert [s.get("pause_s") for s in p["sequence"]] == [None, None, 5, None]
    assert set(cells) == set(expected) and set(cells.values()) == {reps}
    assert summary["study"]["id"] == "S1" and {d["id"] for d in deviations} >= {
        "design.order",
        "platform.aws",
    }


def test_s1_io_semantics_are_the_thesis_s() -> None:
    """Writes cached from /dev/urandom without fsync; reads with direct I/O (S1 L637)."""
    runs, _, _ = executions("faas-io.yml")
    write = value("S1", "io.write").split(" bs=")[0]
    for r in runs:
        cmds = {s["phase"]: s["event"]["command"] for s in r["params"]["sequence"] if "phase" in s}
        assert cmds["write"].startswith(write)
        assert "fsync" not in cmds["write"] and "direct" not in cmds["write"]
        assert cmds["read"].startswith("iflag=direct if=/tmp/file1 of=/dev/null")


def test_s1_timeofday_is_the_preliminary_slot() -> None:
    runs, summary, _ = executions("timeofday-dd.yml")
    seq = value("S1", "tod.sequence")
    mem = value("S1", "tod.memory")
    assert [r["benchmark"] for r in runs] == ["tod_gcf", "tod_aws"]  # GCF first, as the orchestrator
    for r in runs:
        p = r["params"]
        cmds = {s["phase"]: s["event"]["command"] for s in p["sequence"]}
        assert cmds == {"write": seq["write"], "read": seq["read"]}
        want = mem["gcf_memory_mb"] if r["benchmark"] == "tod_gcf" else mem["aws_memory_mb"]
        assert p["memory_mb"] == want
    assert runs[1]["params"]["tmp_mb"] == mem["aws_ephemeral_mb"]
    every = value("S1", "tod.schedule")
    head = (PLANS / "timeofday-dd.yml").read_text()
    assert f"--every {every['every']} --for {every['for']}" in head and summary["study"]["id"] == "S1"


# -- S3 ----------------------------------------------------------------------------------------


def _bench(plan: str, name: str) -> dict:
    runs, _, _ = executions(plan)
    return next(r["params"] for r in runs if r["benchmark"] == name)


def test_s3_research_questions_as_the_paper_ran_them() -> None:
    rq1 = value("S3", "rq1.design")
    p = _bench(rq1["plan"], rq1["benchmark"])
    assert p["ladder"] == rq1["ladder"] and p["cold"] == rq1["cold"] == "container"
    assert p["level_pause_s"] == rq1["level_pause_s"] and p["memory_mb"] == rq1["memory_mb"]
    assert p["event"] == {"level": rq1["level"]} and p["mode"] == "scaling"
    rq3 = value("S3", "rq3.design_warm")
    p = _bench(rq3["plan"], rq3["benchmark"])
    assert p["concurrency"] * p["calls"] == rq3["requests"] and p["memory_mb"] == rq3["memory_mb"]
    assert p["event"] == {"level": rq3["level"]} and p["cold"] == "none"
    rq2 = value("S3", "rq2.design")
    runs, _, _ = executions(rq2["plan"])
    assert sorted(r["params"]["event"]["level"] for r in runs) == rq2["levels"]
    for r in runs:
        q = r["params"]
        assert (q["mode"], q["sets"], q["concurrency"], q["set_pause_s"], q["memory_mb"]) == (
            "sets", rq2["sets"], rq2["concurrency"], rq2["set_pause_s"], rq2["memory_mb"],
        )  # fmt: skip
    rq4 = value("S3", "rq4.design")
    (r4,) = executions(rq4["plan"])[0]
    assert r4["params"]["gaps_s"] == rq4["gaps_s"] and r4["params"]["fresh_per_gap"] is rq4["fresh_per_gap"]
    assert r4["params"]["concurrency"] == rq4["concurrency"] and r4["params"]["mode"] == "retention"
    rq5 = value("S3", "rq5.design")
    (r5,) = executions(rq5["plan"])[0]
    q = r5["params"]
    assert q["memory_sweep"] == rq5["memory_sweep"] and (q["sets"], q["batches"]) == (
        rq5["sets"],
        rq5["batches"],
    )
    assert (q["concurrency"], q["set_pause_s"]) == (rq5["concurrency"], rq5["set_pause_s"])
    az = value("S3", "azure.design")
    runs, _, _ = executions(az["plan"])
    cold = next(r["params"] for r in runs if "cold" in r["benchmark"])
    warm = next(r["params"] for r in runs if "warm" in r["benchmark"])
    assert cold["steps"] == warm["steps"] == az["steps"] and cold["step_s"] == [az["cold_step_s"]]
    measured = warm["step_s"][warm["warmup_ramps"] :]
    assert measured == az["warm_step_s"] and len(cold["step_s"]) * 20 * 6 == 120  # two minutes


def test_s3_plans_run_on_the_era_profiles_and_table_i() -> None:
    for plan in manifest("S3").plans:
        for r in executions(plan)[0]:
            assert r["params"]["profile"] in ("aws-lambda-2017", "azure-functions-2017"), (
                plan,
                r["benchmark"],
            )
            assert r["params"]["function"] == "calcs"
    spec = importlib.util.spec_from_file_location("calcs", ROOT / "workloads/faas/functions/calcs/handler.py")
    calcs = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(calcs)
    assert {k: list(v) for k, v in calcs.LEVELS.items()} == value("S3", "function.calcs")
    for level, (n, size, calls) in calcs.LEVELS.items():
        out = calcs.handler({"level": level, "seed": 1}, None) if n <= 20_000 else None
        if out is not None:
            assert (out["calcs"], out["array_size"], out["function_calls"]) == (n, size, calls)


def test_s3_profile_physics_are_the_manifest_s() -> None:
    prof = load_profile("aws-lambda-2017")
    pack = value("S3", "physics.host_packing")
    assert (prof.host_max_containers, prof.host_memory_mb) == (pack["max_containers"], pack["memory_mb"])
    ret = value("S3", "physics.container_retention")
    r = prof.container_retention
    assert (r.model, r.median_s, r.sigma, r.max_s) == (
        ret["model"],
        ret["median_s"],
        ret["sigma"],
        ret["max_s"],
    )
    assert prof.cold_start_s["host"] == value("S3", "physics.cold_paths")["cold_start_s.host"]
    assert prof.host_reclaim_empty_s == value("S3", "physics.host_reclaim")["reclaim_empty_s"]
    cpu = value("S3", "physics.cpu_share")
    assert (prof.mb_per_vcpu, prof.max_vcpus) == (cpu["mb_per_vcpu"], cpu["max_vcpus"])
    az = load_profile("azure-functions-2017")
    scale = value("S3", "physics.azure_scale_out")
    assert (az.scale_out_interval_s, az.host_memory_mb) == (
        scale["scale_out_interval_s"],
        scale["host_memory_mb"],
    )


# -- S0 ----------------------------------------------------------------------------------------


def test_s0_plan_is_the_workloads_by_memory_tiers_with_the_protocol() -> None:
    runs, summary, deviations = executions("faas-crypto-kms.yml")
    workloads, tiers = value("S0", "workloads"), value("S0", "memory_tiers")
    proto, pay = value("S0", "protocol"), value("S0", "payload")
    seen = Counter((r["params"]["event"]["workload"], r["params"]["memory_mb"]) for r in runs)
    assert set(seen) == set(itertools.product(workloads, tiers)) and set(seen.values()) == {1}
    for r in runs:
        p = r["params"]
        assert (p["first"], p["warmup"], p["calls"]) == (proto["first"], proto["warmup"], proto["calls"])
        assert p["payload_bytes"] == pay["payload_bytes"] and p["key_service"] is True
        assert p["function"] == "kms-crypto" and p["profile"] == value("S0", "platform.aws")["profile"]
        assert p["factors"]["arch"] == value("S0", "arch.x86_64") and p["factors"]["language"] == "python"
    assert summary["study"]["fidelity"]["not here"] == 3
    assert {d["id"] for d in deviations} >= {"arch.arm64", "language.others", "platform.azure"}
