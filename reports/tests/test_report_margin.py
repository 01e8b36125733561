"""``margin_percent`` end to end (issue 28; docs/report.md "Decision"): set per benchmark and in the
plan's defaults, carried by every record, used in stats.json and the verdict."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from testbed_agent.plan import load_plan
from testbed_reports.build import build
from testbed_shared.errors import PlanError

PLAN = """\
defaults: {margin_percent: 25, wait_s: 0}
benchmarks:
  - {name: dd_own, type: dd, repetitions: 5, margin_percent: 99,
     params: {bs: 4k, count: 64, source: zero, read: false, conv: ""}}
  - {name: dd_default, type: dd, repetitions: 5,
     params: {bs: 4k, count: 64, source: zero, read: false, conv: ""}}
"""


def _run(plan: Path, out: Path, host: str, label: str) -> None:
    cmd = [
        sys.executable, "-m", "testbed_agent", "run", str(plan), "--out", str(out), "--host", host,
        "--label", label, "--node-exporter", "", "--no-progress", "--scratch", str(out.parent / f"s-{host}"),
    ]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr


def test_margin_from_the_plan_reaches_the_records_stats_and_verdict(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yml"
    plan.write_text(PLAN)
    out = tmp_path / "results" / "r1"
    _run(plan, out, "a1", "A")
    _run(plan, out, "b1", "B")
    for host in ("a1", "b1"):
        recs = [json.loads(line) for line in (out / f"{host}.jsonl").read_text().splitlines()]
        assert {(r["benchmark"], r["margin_percent"]) for r in recs} == {
            ("dd_own", 99.0),
            ("dd_default", 25.0),
        }

    build([out], tmp_path / "report", compare_specs=["A:B"])
    stats = json.loads((tmp_path / "report" / "stats.json").read_text())
    rows = [r for r in stats["comparisons"] if r["metric"] == "write_seconds"]
    assert {r["benchmark"]: r["margin_percent"] for r in rows} == {"dd_own": 99.0, "dd_default": 25.0}
    for row in rows:  # each decision is read against its own benchmark's margin
        m, lo, hi = row["margin_percent"], row["overhead_ci_low"], row["overhead_ci_high"]
        if -m < lo and hi < m:
            assert row["decision"] == "equivalent" and f"within ±{m:g}%" in row["verdict"], row
        elif lo > 0 or hi < 0:
            assert row["decision"] == ("slower" if lo > 0 else "faster"), row
        else:
            assert row["decision"] == "inconclusive" and f"resolve ±{m:g}%" in row["verdict"], row


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ("margin_percent: 0", "must be between 0 and 100"),
        ("margin_percent: 100", "must be between 0 and 100"),
        ("margin_percent: five", "expected a percentage"),
        ("margin_percent: .nan", "expected a percentage"),
        ("margin_percent: true", "expected a percentage"),
    ],
)
def test_a_bad_margin_is_a_one_line_plan_error(tmp_path: Path, entry: str, words: str) -> None:
    plan = tmp_path / "p.yml"
    plan.write_text(f"benchmarks:\n  - name: dd_x\n    type: dd\n    {entry}\n")
    with pytest.raises(PlanError, match=rf"p\.yml:4: field 'margin_percent' {words}"):
        load_plan(plan)


def test_derived_plans_keep_and_override_the_margin(tmp_path: Path) -> None:
    from testbed_agent.plan_derive import derived_plan

    plan = tmp_path / "plan.yml"
    plan.write_text(PLAN)
    kept = derived_plan(plan, ["wait_s=0"])
    assert [b.margin_percent for b in kept.benchmarks] == [99.0, 25.0]
    changed = derived_plan(plan, ["margin_percent=5"])
    assert [b.margin_percent for b in changed.benchmarks] == [5.0, 5.0]
