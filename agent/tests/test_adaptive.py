"""Issue 13 item 6 (runner): adaptive repetitions - parsing, the stopping rule, the runner loop,
and a seeded simulation of the rule's coverage at stop."""

from __future__ import annotations

import math
import random
import statistics
from pathlib import Path

import pytest
from agenttest import agent

from testbed_agent.adaptive import Adaptive, RepetitionsError, decide, half_width_percent, parse_repetitions
from testbed_agent.results import read_records

RULE = Adaptive(5, 30, 1.0)


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"min": 5, "max": 30}, "repetitions.target_ci_percent"),
        ({"min": 1, "max": 30, "target_ci_percent": 1}, "repetitions.min"),
        ({"min": 5, "max": 4, "target_ci_percent": 1}, "repetitions.max"),
        ({"min": 5, "max": 10**9, "target_ci_percent": 1}, "repetitions.max"),
        ({"min": 5, "max": 30, "target_ci_percent": 0}, "repetitions.target_ci_percent"),
        ({"min": 5, "max": 30, "target_ci_percent": float("nan")}, "repetitions.target_ci_percent"),
        ({"min": 5, "max": 30, "target_ci_percent": True}, "repetitions.target_ci_percent"),
        ({"min": "5", "max": 30, "target_ci_percent": 1}, "repetitions.min"),
        ({"min": 5, "max": 30, "target_ci_percent": 1, "maxx": 3}, "repetitions.maxx"),
    ],
)
def test_bad_adaptive_repetitions_name_the_field(value: dict, field: str) -> None:
    with pytest.raises(RepetitionsError) as err:
        parse_repetitions(value)
    assert err.value.field == field


def test_parse_counts_and_rules() -> None:
    assert parse_repetitions(3) == (3, None)
    assert parse_repetitions({"min": 5, "max": 30, "target_ci_percent": 1}) == (30, RULE)


def test_plan_error_is_one_line_with_file_and_line(tmp_path: Path) -> None:
    plan = tmp_path / "p.yml"
    plan.write_text(
        "benchmarks:\n  - name: dd_x\n    type: dd\n    repetitions: {min: 5, max: 2, target_ci_percent: 1}\n"
    )
    res = agent("validate", str(plan))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"{plan}:4: field 'repetitions.max' must be >= min (5), got 2" in res.stderr


def recs(values: list[float]) -> list[dict]:
    return [{"status": "ok", "metrics": {"write_bw_bytes": {"value": v}, "write_iops": {"value": 1}}}
            for v in values]  # fmt: skip


def test_rule_waits_for_min_stops_at_target_or_max() -> None:
    tight = [100.0, 100.1, 99.9, 100.05, 99.95]
    assert decide(RULE, "fio", recs(tight[:4]), 4)["stop"] is None
    state = decide(RULE, "fio", recs(tight), 5)
    assert state["stop"].startswith("target reached") and state["half_width_percent"] < 1
    noisy = [100.0, 120.0, 80.0, 110.0, 90.0]
    assert decide(RULE, "fio", recs(noisy), 5)["stop"] is None
    assert decide(Adaptive(5, 5, 1.0), "fio", recs(noisy), 5)["stop"].startswith("max reached")
    assert decide(RULE, "sysinfo", [{"status": "ok", "metrics": {"logical_cpus": {"value": 2}}}] * 5, 5)[
        "stop"
    ].startswith("no primary metric")
    assert half_width_percent([1.0, -1.0]) is None and half_width_percent([5.0]) is None


def test_failed_executions_count_towards_max_not_towards_n() -> None:
    records = [*recs([100.0, 100.0, 100.0, 100.0]), {"status": "failed", "metrics": {}}]
    state = decide(RULE, "fio", records, 5)
    assert state["n_ok"] == 4 and state["stop"] is None


def simulate(rng: random.Random, sigma: float, rule: Adaptive) -> tuple[int, bool, str]:
    """One data set: log-normal values around 1000 with log-sd ``sigma``; (n at stop, does the
    t-interval on the log values at stop cover the true geometric mean, stop reason)."""
    values: list[float] = []
    while True:
        values.append(1000.0 * math.exp(rng.gauss(0.0, sigma)))
        state = decide(rule, "fio", recs(values), len(values))
        if state["stop"]:
            break
    hw = math.log1p(half_width_percent(values) / 100)
    centre = statistics.fmean(math.log(v) for v in values)
    return len(values), abs(centre - math.log(1000.0)) <= hw, state["stop"].split(":")[0]


@pytest.mark.slow
def test_simulated_coverage_at_stop() -> None:
    rng = random.Random(20261124)
    rows = [simulate(rng, sigma, RULE) for sigma in (0.005, 0.01, 0.015, 0.02, 0.03) for _ in range(250)]
    coverage = sum(c for _, c, _ in rows) / len(rows)
    runs = statistics.median(n for n, _, _ in rows)
    reached = sum(r == "target reached" for _, _, r in rows) / len(rows)
    print(f"\nadaptive {RULE}: {len(rows)} data sets, coverage at stop {coverage:.1%}, "
          f"median runs {runs}, target reached in {reached:.0%}")  # fmt: skip
    # optional stopping on the interval's own width costs a little coverage; bounded below
    assert 0.90 <= coverage <= 0.98
    assert 5 <= runs <= 30 and reached > 0.5


PLAN = """\
benchmarks:
  - name: systeminfo
    type: sysinfo
    wait_s: 0
    repetitions: {min: 2, max: 6, target_ci_percent: 5}
  - name: dd_hard
    type: dd
    wait_s: 0
    repetitions: {min: 2, max: 4, target_ci_percent: 0.000001}
    params: {bs: 4k, count: 16, source: zero, pause_s: 0}
"""


@pytest.mark.slow
def test_runner_stops_adaptive_benchmarks_and_records_why(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yml"
    plan.write_text(PLAN)
    out = tmp_path / "results" / "r1"
    cmd = ("run", str(plan), "--out", str(out), "--host", "h1", "--node-exporter", "",
           "--scratch", str(tmp_path / "s"))  # fmt: skip
    res = agent(*cmd)
    assert res.returncode == 0, res.stderr
    got = read_records(out / "h1.jsonl")
    sysinfo = [r for r in got if r["benchmark"] == "systeminfo"]
    hard = [r for r in got if r["benchmark"] == "dd_hard"]
    assert len(sysinfo) == 2 and sysinfo[-1]["adaptive"]["stop"].startswith("no primary metric")
    assert [r["adaptive"]["stop"] for r in hard[:-1]] == [None, None, None]
    assert len(hard) == 4 and hard[-1]["adaptive"]["stop"].startswith("max reached")
    assert hard[0]["adaptive"]["target_ci_percent"] == 1e-6 and hard[-1]["adaptive"]["n_ok"] == 4
    again = agent(*cmd)  # resume: the stopped benchmarks stay stopped
    assert again.returncode == 0 and len(read_records(out / "h1.jsonl")) == 6
