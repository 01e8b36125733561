"""``testbed-agent plan show`` (issue 16 item 3): executions, estimates, adaptive ranges."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed_agent.cli import main
from testbed_agent.plan import Benchmark, load_plan
from testbed_agent.plan_show import estimate_s, expand, human, repetition_range, totals

PLAN = """name: show
defaults: {wait_s: 2}
benchmarks:
  - {name: fio_4k_randread, type: fio, repetitions: 2, params: {size: 64M, runtime_s: 30, ramp_s: 5}}
  - {name: dd_w, type: dd, params: {bs: 1m, count: 200, pause_s: 1}}
  - {name: SimplePrime.ipynb, type: kaggle_notebook, params: {scale: quick}, timeout_s: 10}
  - {name: pyperformance, params: {benchmarks: [float, nbody], mode: fast}}
"""


def _bench(name: str, btype: str, reps: object = 1, **params: object) -> Benchmark:
    return Benchmark(name=name, type=btype, index=0, line=1, repetitions=reps, params=params)  # type: ignore[arg-type]


def test_json_lines_list_every_execution(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "show.yml"
    plan.write_text(PLAN)
    assert main(["plan", "show", str(plan), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    rows, summary = lines[:-1], lines[-1]["summary"]
    assert [(r["benchmark"], r["repetition"]) for r in rows] == [
        ("fio_4k_randread", 0),
        ("fio_4k_randread", 1),
        ("dd_w", 0),
        ("SimplePrime.ipynb", 0),
        ("pyperformance", 0),
    ]
    fio, _, dd, nb, pyperf = rows
    assert fio["params"] == {"size": "64M", "runtime_s": 30, "ramp_s": 5} and fio["type"] == "fio"
    # fio: wait + runtime + ramp and a little; dd: 200 MiB written and read back; the notebook's
    # estimate is capped by its 10 s timeout; pyperformance: two benchmarks in fast mode
    assert 37 <= fio["estimated_s"] <= 45
    assert dd["estimated_s"] > 2 + 1 + 2 * 200 * 2**20 / 200e6
    assert nb["estimated_s"] == 2 + 10
    assert pyperf["estimated_s"] == 2 + 2 * 20
    assert summary["executions"] == 5
    assert summary["estimated_s"] == pytest.approx(sum(r["estimated_s"] for r in rows), abs=0.1)


def test_table_names_the_total(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "show.yml"
    plan.write_text(PLAN)
    assert main(["plan", "show", str(plan)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["#", "benchmark", "type", "rep", "wait_s", "est", "params"]
    assert len(out) == 1 + 5 + 1
    assert out[-1].startswith("plan show: 4 benchmarks, 5 executions, estimated ")


def test_bad_plan_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "bad.yml"
    plan.write_text("benchmarks:\n  - {name: dd_w, type: dd, params: {bs: 1kB}}\n")
    assert main(["plan", "show", str(plan)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {plan}:2: field 'params.bs' ambiguous size")


def test_adaptive_repetitions_show_a_range(tmp_path: Path) -> None:
    """The mapping form of ``repetitions``, parsed by the plan loader into ``Benchmark.adaptive``."""
    path = tmp_path / "a.yml"
    path.write_text(
        "name: a\nbenchmarks:\n  - {name: fio_4k_randread, type: fio, params: {size: 64M, runtime_s: 10,"
        " ramp_s: 0}, repetitions: {min: 3, max: 10, target_ci_percent: 2}}\n"
    )
    plan = load_plan(path)
    assert repetition_range(plan.benchmarks[0]) == (3, 10)
    rows = expand(plan)
    assert len(rows) == 10 and [r.adaptive for r in rows] == [False] * 3 + [True] * 7
    t = totals(rows)
    assert (t["executions"], t["executions_max"]) == (3, 10)
    assert t["estimated_max_s"] == pytest.approx(t["estimated_s"] * 10 / 3, abs=0.2)


def test_estimates_never_exceed_the_timeout() -> None:
    assert estimate_s(_bench("x", "kaggle_notebook", scale="large")) == 1800
    slow = Benchmark("x", "pyperformance", 0, 1, timeout_s=60.0, params={"benchmarks": "all"})
    assert estimate_s(slow) == 60
    assert estimate_s(_bench("f", "faas", 1, function="calcs", mode="retention", gaps_s=[10, 20])) >= 30


def test_human_durations() -> None:
    assert [human(s) for s in (5, 65, 3600 * 2 + 61)] == ["5s", "1m 05s", "2h 01m"]
