"""Calibration of a decision's scope (issue 27 item 2): one machine per label never gives a
type-level decision; machines as replicates cover the type-level truth; one-machine sides cover
these machines' truth; a right machine-spread prior covers the type-level truth. Seeded simulations
through describe -> diagnostics -> compare (what build does), printed with -s; the big runs are in
bench/calibration.py and docs/report.md. Also end to end through ``build`` on a written store."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from report_support.calibration import scope_setting
from report_support.synth import Machine, write_run

from testbed_reports.build import build
from testbed_reports.inference import MachineSpread

pytestmark = pytest.mark.slow


def _within(rate: float, n: int, p: float = 0.95) -> bool:
    return abs(rate - p) <= 3 * math.sqrt(p * (1 - p) / n)


def _at_least(rate: float, n: int, p: float = 0.95) -> bool:
    """Nominal or above (Welch with 2-3 machines a side is conservative: 97-98 %)."""
    return p - 3 * math.sqrt(p * (1 - p) / n) <= rate <= 0.995


def test_one_machine_per_label_never_makes_a_type_level_decision() -> None:
    """With a 2-5 % machine spread, 37-70 % of null metrics were decided slower/faster as if about
    VM types, and every null 25-metric report had a false decision."""
    res = scope_setting((1, 1), 0.05, sets=25, seed=11)
    print(f"\n{res}")
    assert res.rates["type-level slower/faster"].hits == 0
    assert res.rates["reports with a false type-level decision"].hits == 0
    # these machines do differ (the machine spread): a machine-scope decision says so, truthfully
    assert res.rates["machine-level slower/faster"].value > 0.2


@pytest.mark.parametrize(("machines", "seed"), [((1, 1), 12), ((1, 3), 13)])
def test_machine_scope_intervals_cover_these_machines(machines: tuple[int, int], seed: int) -> None:
    res = scope_setting(machines, 0.03, sets=80, seed=seed, family=False)
    print(f"\n{res}")
    rate = res.rates["coverage of these machines' truth (scope machines)"]
    assert _within(rate.value, rate.total)


@pytest.mark.parametrize(("machines", "spread", "seed"), [((2, 2), 0.05, 14), ((3, 5), 0.02, 15)])
def test_type_scope_intervals_cover_the_type_truth(
    machines: tuple[int, int], spread: float, seed: int
) -> None:
    res = scope_setting(machines, spread, sets=80, seed=seed, family=False)
    print(f"\n{res}")
    rate = res.rates["coverage of the type truth (scope types)"]
    assert _at_least(rate.value, rate.total)


def test_a_right_machine_spread_prior_covers_the_type_truth() -> None:
    right = scope_setting(
        (1, 1), 0.03, sets=24, seed=16, prior=MachineSpread(0.03, "simulation"), family=False
    )
    print(f"\n{right}")
    rate = right.rates["coverage of the type truth (scope types)"]
    assert _within(rate.value, rate.total)


def test_a_wrong_machine_spread_prior_does_not() -> None:
    """The prior is a claim the report cannot check: a 1 % prior on a 5 % spread covers far less."""
    wrong = scope_setting(
        (1, 1), 0.05, sets=10, seed=17, prior=MachineSpread(0.01, "simulation"), family=False
    )
    print(f"\n{wrong}")
    assert wrong.rates["coverage of the type truth (scope types)"].value < 0.85


def test_scope_through_build_stats_json_and_summary(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    machines = [Machine("sev-0", "SEV", ["sev"], factor=1.1, technology="sev-snp")]
    machines += [Machine(f"base-{i}", "Base", ["amd_baseline"], factor=float(np.exp(rng.normal(0, 0.03))))
                 for i in range(3)]  # fmt: skip
    results = write_run(tmp_path / "results", "mixed", machines, ["b"], reps=10, seed=3)
    build([results], tmp_path / "out")
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    for c in stats["comparisons"]:
        assert c["scope"] == "machines" and c["decision"] in (
            "slower",
            "faster",
            "equivalent",
            "inconclusive",
        )
        assert isinstance(c["primary"], bool) and c["adjusted"] == c["primary"]
        assert c["machines_needed"] >= 2  # from the 3 baseline machines' spread
        assert "these machines (sev-0 vs base-0, base-1, base-2)" in c["verdict"]
        assert "a type-level decision needs about" in c["verdict"]
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "### Primary metrics, scope machines: these machines" in summary
    assert "secondary metrics (unadjusted, not counted above)" in summary
    assert "scope types" not in summary.split("## Per label")[0]
    prior = build([results], tmp_path / "p", prior=MachineSpread(0.03, "S2 calibration campaign", 9))
    assert set(prior.comparisons["scope"]) == {"types"}
    assert "machine-spread prior 3.0% (S2 calibration campaign, 9 df)" in prior.comparisons["verdict"].iloc[0]
    html = (tmp_path / "p" / "index.html").read_text()
    assert "scope types" in html
