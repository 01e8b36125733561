"""The FaaS drivers' pure parts: targets, packages, Lambda's REPORT line, prices and estimates,
the journal and the budget, which benchmark runs where, and a plan's dry run on each platform
(no credentials read, nothing sent)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from testbed_agent import workloads
from testbed_agent.faas_drivers import platforms, target_from
from testbed_agent.faas_drivers.calls import emulator_only, invocations
from testbed_agent.faas_drivers.dryrun import dry_run_plan
from testbed_agent.faas_drivers.ledger import Budget, CostCapExceeded, Journal
from testbed_agent.faas_drivers.platforms.aws_lambda import parse_report
from testbed_agent.faas_drivers.prices import load_pricing
from testbed_agent.faas_drivers.pricing import benchmark_cost, plan_cost
from testbed_agent.faas_drivers.routing import skip_reason
from testbed_agent.plan import load_plan
from testbed_services.faas import package
from testbed_services.faas.functions import default_dirs, find_function
from testbed_shared import errors

ROOT = Path(__file__).resolve().parents[2]


def test_targets_are_checked_field_by_field():
    t = target_from({"platform": "aws-lambda", "architecture": "arm64", "run_id": "r1", "deadline_h": 2})
    assert (t.region, t.runtime) == ("us-east-1", "python3.12")
    profiles = ("aws-lambda-2017", "gcf-gen2", "azure-consumption", "test")
    modelled = {p: platforms.modelled_by(p) for p in profiles}
    assert modelled == {
        "aws-lambda-2017": "aws-lambda",
        "gcf-gen2": "gcf-gen2",
        "azure-consumption": "azure-functions",
        "test": None,
    }
    assert t.tags()["testbed-run"] == "r1" and t.tags()["testbed-owner"] == "testbed"
    assert t.resource_name("calcs-0").startswith("tb-") and len(t.resource_name("x" * 80)) <= 64
    for doc, field in (
        ({"platform": "lambda"}, "platform"),
        ({"platform": "gcf-gen2", "architecture": "arm64"}, "architecture"),
        ({"platform": "aws-lambda", "run_id": "../x"}, "run_id"),
        ({"platform": "aws-lambda", "cost_cap_usd": -1}, "cost_cap_usd"),
        ({"platform": "aws-lambda", "secret": "x"}, "secret"),
    ):
        with pytest.raises(errors.TestbedError, match=f"field '{field}'"):
            target_from(doc, "t.yml")


def test_packages_are_deterministic_and_per_platform():
    code = find_function("crypto", default_dirs())
    lam = platforms.get("aws-lambda").package_files(code)
    assert "handler.py" in lam and any(n.startswith("testbed_crypto/") for n in lam)  # vendored python_path
    assert platforms.get("aws-lambda").package(code) == package.package(code) == package.package(code)
    gcf = platforms.get("gcf-gen2").package_files(code)
    assert {"main.py", "testbed_shim.py", "testbed_shim.json", "requirements.txt"} <= set(gcf)
    azure = platforms.get("azure-functions").package_files(code)
    assert {"function_app.py", "host.json", "requirements.txt"} <= set(azure)
    assert json.loads(azure["testbed_shim.json"]) == {
        "function": "crypto",
        "module": "handler",
        "handler": "handler",
    }
    assert package.match(package.read_zip(package.package(code)), [code]) == code
    bad = io.BytesIO()
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("../evil.py", "x")
    with pytest.raises(ValueError, match="leaves the package"):
        package.read_zip(bad.getvalue())


def test_report_line_is_read_as_lambda_writes_it():
    log = (
        "START RequestId: 6b0e Version: $LATEST\nEND RequestId: 6b0e\n"
        "REPORT RequestId: 6b0e\tDuration: 12.34 ms\tBilled Duration: 163 ms\tMemory Size: 128 MB\t"
        "Max Memory Used: 40 MB\tInit Duration: 150.01 ms\t\n"
    )
    r = parse_report(log)
    assert r["duration_s"] == pytest.approx(0.01234) and r["billed_duration_s"] == pytest.approx(0.163)
    assert (r["memory_size_mb"], r["max_memory_used_mb"]) == (128, 40)
    assert r["init_duration_s"] == pytest.approx(0.15001)
    assert "init_duration_s" not in parse_report(log.replace("\tInit Duration: 150.01 ms", ""))


def test_prices_follow_each_platforms_rules():
    pricing = load_pricing()
    assert pricing.date and all(r["source"] for r in pricing.platforms.values())
    lam, gcf_platform, azure = (platforms.get(p) for p in ("aws-lambda", "gcf-gen2", "azure-functions"))
    # Lambda: GB-s of configured memory, 1 ms steps, arm64 cheaper
    x86 = lam.price(1024, 0.1234, "x86_64", pricing)
    assert x86["gb_seconds"] == pytest.approx(0.124) and x86["price"] == pytest.approx(
        0.124 * 0.0000166667 + 2e-7
    )
    assert lam.price(1024, 0.1234, "arm64", pricing)["price"] < x86["price"]
    # GCF: vCPU-s and GiB-s of the memory's tier, 100 ms steps
    gcf = gcf_platform.price(256, 0.01, "x86_64", pricing)
    assert gcf["price"] == pytest.approx(0.167 * 0.1 * 0.000024 + 0.25 * 0.1 * 0.0000025 + 4e-7)
    # Azure: observed memory rounded up to 128 MB, at least 100 ms
    az = azure.price(77, 0.003, "x86_64", pricing)
    assert az["gb_seconds"] == pytest.approx(128 / 1024 * 0.1)


def test_invocations_and_estimates_per_mode():
    assert invocations({"mode": "warm", "calls": 5}) == (6, 1)
    assert invocations({"mode": "cold_warm", "calls": 3}) == (6, 3)
    assert invocations({"mode": "scaling", "calls": 2, "concurrency": 10}) == (20, 10)
    assert invocations({"mode": "retention", "concurrency": 4, "gaps_s": [1, 2, 3]}) == (24, 12)
    # the study modes
    assert invocations({"mode": "warm", "calls": 20, "warmup": 9, "first": "cold"}) == (30, 1)
    assert invocations({"mode": "scaling", "ladder": [1, 10], "warmup": 1, "cold": "none"}) == (12, 11)
    seq = invocations({"mode": "retention", "concurrency": 4, "gaps_s": [1, 2], "fresh_per_gap": False})
    assert seq == (12, 4)
    sweep = {"mode": "sets", "sets": 3, "warmup_sets": 1, "concurrency": 5, "memory_sweep": [128, 256]}
    assert invocations(sweep | {"batches": 2}) == (80, 20)
    sequence = [{"phase": "w"}, {"pause_s": 1}, {"phase": "r"}]
    assert invocations({"mode": "sequence", "sequence": sequence}) == (2, 1)
    assert invocations({"mode": "ramp", "steps": [1, 4], "step_s": [10]}, one_call_s=2.0) == (25, 4)
    # a ramp of short calls: the caller's round trip bounds its rate
    assert invocations({"mode": "ramp", "steps": [2], "step_s": [1]}, one_call_s=0.001) == (40, 2)
    cost = benchmark_cost(
        {"function": "calcs", "mode": "warm", "calls": 9, "event": {"level": 8}}, 10, "aws-lambda"
    )
    assert cost["invocations"] == 100 and cost["price"] < cost["price_ceiling"]
    assert cost["call_s"] == pytest.approx(3.0, abs=0.01)  # the timeout (3 s) caps 6e6 calcs at 0.07 vCPU


def test_journal_lists_what_is_still_live_and_survives_a_cut_line(tmp_path):
    j = Journal(tmp_path / "j.jsonl")
    j.creating("function", "a")
    j.creating("function", "b")
    j.deleted("function", "a")
    with open(j.path, "a") as fh:
        fh.write('{"op": "create", "kind": "fun')  # a kill in the middle of a line
    assert [e["id"] for e in j.live()] == ["b"]
    Journal(tmp_path / "dry.jsonl", enabled=False).creating("function", "x")
    assert not (tmp_path / "dry.jsonl").exists()


def test_budget_refuses_before_and_stops_after_the_cap(tmp_path):
    b = Budget(0.01, tmp_path / "cost.json")
    b.check(0.009, "first")
    with pytest.raises(CostCapExceeded, match="exceeds the run's cost cap"):
        b.check(0.02, "big")
    b.charge(0.006)
    assert Budget(0.01, tmp_path / "cost.json").spent == pytest.approx(0.006)  # kept across processes
    with pytest.raises(CostCapExceeded, match="over its cost cap"):
        b.charge(0.006)


def _bench(profile: str, architecture: str | None = None, **more: object) -> object:
    return workloads.parse_params(
        "faas", {"function": "calcs", "profile": profile, "architecture": architecture, **more}
    )


def test_benchmarks_run_on_the_platform_their_profile_models():
    aws = target_from({"platform": "aws-lambda"})
    assert skip_reason(aws, _bench("aws-lambda")) is None and skip_reason(aws, _bench("aws-lambda-x")) is None
    assert "gcf-gen2" in skip_reason(aws, _bench("gcf-gen2"))
    assert "arm64" in skip_reason(aws, _bench("aws-lambda", "arm64"))
    assert skip_reason(target_from({"platform": "azure-functions"}), _bench("azure-consumption")) is None
    # the era profiles of the study packs model their platform too; a test profile models none
    assert (
        skip_reason(aws, _bench("aws-lambda-2017")) is None
        and skip_reason(aws, _bench("aws-lambda-2024")) is None
    )
    assert skip_reason(target_from({"platform": "gcf-gen2"}), _bench("gcf-gen2-2024")) is None
    assert skip_reason(target_from({"platform": "azure-functions"}), _bench("azure-functions-2017")) is None
    assert "emulator profile 'aws-lambdax' only" in skip_reason(aws, _bench("aws-lambdax"))
    # a benchmark needing the emulator itself is skipped on a real platform (and not priced)
    assert "time_scale 100" in skip_reason(aws, _bench("aws-lambda", time_scale=100))
    assert "loopback" in skip_reason(aws, _bench("aws-lambda", key_service=True))
    assert emulator_only({"time_scale": 1, "key_service": False}) is None


@pytest.mark.parametrize(
    ("platform", "options", "first_ops"),
    [
        (
            "aws-lambda",
            {"role_arn": "arn:aws:iam::123456789012:role/r"},
            ["logs:CreateLogGroup", "logs:PutRetentionPolicy", "lambda:CreateFunction"],
        ),
        (
            "gcf-gen2",
            {"project": "p", "source_bucket": "b"},
            ["storage", "functions.create", "functions.patch"],
        ),
        (
            "azure-functions",
            {"subscription_id": "00000000-0000-0000-0000-000000000001"},
            ["resourceGroups.createOrUpdate", "storageAccounts.create", "storageAccounts.listKeys"],
        ),
    ],
)
def test_dry_run_prints_every_call_of_a_plan(platform, options, first_ops, tmp_path, monkeypatch):
    for var in ("AWS_PROFILE", "GOOGLE_APPLICATION_CREDENTIALS", "AZURE_CLIENT_ID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")  # boto3 builds clients (it sends nothing here)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    target = target_from(
        {"platform": platform, "run_id": "dry", "options": {**options, "journal": str(tmp_path / "j")}}
    )
    out = io.StringIO()
    counts = dry_run_plan(ROOT / "workloads/plans/faas-smoke.yml", target, out)
    lines = [ln for ln in out.getvalue().splitlines() if ln.startswith("[dry-run]")]
    assert [ln.split()[2] for ln in lines[:3]] == first_ops
    assert sum(counts.values()) == len(lines) and counts
    assert "skipped" in out.getvalue()  # the smoke plan's benchmarks about other platforms
    assert not (tmp_path / "j").exists()  # nothing created, nothing journalled


STUDY_MODES = """
name: modes
defaults: {repetitions: 1}
benchmarks:
- {name: first_cold, type: faas, params: {profile: aws-lambda-2024, function: calcs, first: cold,
   warmup: 2, calls: 3}}
- {name: ladder, type: faas, params: {profile: aws-lambda-2017, function: calcs, mode: scaling,
   ladder: [1, 3], warmup: 1, cold: container}}
- {name: retention, type: faas, params: {profile: aws-lambda-2017, function: calcs, mode: retention,
   concurrency: 2, gaps_s: [60, 120], fresh_per_gap: false}}
- {name: sweep, type: faas, params: {profile: aws-lambda-2017, function: calcs, mode: sets, sets: 2,
   warmup_sets: 1, concurrency: 2, memory_sweep: [128, 256], batches: 1}}
- {name: sequence, type: faas, params: {profile: aws-lambda-2024, function: dd, mode: sequence,
   sequence: [{phase: write, event: {}}, {pause_s: 5}, {phase: read, event: {}}]}}
- {name: ramp, type: faas, params: {profile: aws-lambda-2017, function: calcs, mode: ramp, steps: [1, 2],
   step_s: [0.2]}}
- {name: keys, type: faas, params: {profile: aws-lambda-2024, function: calcs, key_service: true}}
- {name: fast_clock, type: faas, params: {profile: aws-lambda-2017, function: calcs, time_scale: 100}}
"""


def test_study_modes_run_through_the_driver_as_the_estimate_counts(tmp_path, monkeypatch):
    """Every study mode's calls go through the platform's driver (here Lambda's, dry): the invokes
    and configuration changes each benchmark makes are those the cost estimate counts."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "x")
    plan = tmp_path / "modes.yml"
    plan.write_text(STUDY_MODES)
    target = target_from(
        {"platform": "aws-lambda", "run_id": "dry", "options": {"role_arn": "arn:aws:iam::1:role/r"}}
    )
    out = io.StringIO()
    dry_run_plan(plan, target, out)
    per_bench: dict[str, list[str]] = {}
    bench = ""
    for line in out.getvalue().splitlines():
        if line.startswith("# "):
            bench = line[2:].split(",")[0].split(":")[0]
            per_bench.setdefault(bench, [])
        elif line.startswith("[dry-run]"):
            per_bench[bench].append(line.split()[2])
    expected = {"first_cold": 6, "ladder": 5, "retention": 6, "sweep": 12, "sequence": 2, "ramp": 3}
    for name, n in expected.items():
        assert per_bench[name].count("lambda:Invoke") == n, (name, per_bench[name])
    assert per_bench["ladder"].count("lambda:UpdateFunctionConfiguration") == 2  # container-cold per level
    # the memory sweep's second size is a configuration change of the same function, not a new one
    assert per_bench["sweep"].count("lambda:CreateFunction") == 1
    assert per_bench["sweep"].count("lambda:UpdateFunctionConfiguration") == 2  # 128 MB, then 256 MB
    assert per_bench["keys"] == [] and per_bench["fast_clock"] == []
    assert "key_service" in out.getvalue() and "time_scale 100" in out.getvalue()
    benches = {b.name: b for b in load_plan(plan).benchmarks}
    for name, n in expected.items():
        if name != "ramp":  # a ramp's calls depend on their speed
            assert invocations(benches[name].params)[0] == n, name
    cost = plan_cost(list(benches.values()))["aws-lambda"]
    assert cost["emulator_only"] == 2 and cost["benchmarks"] == 6
