"""Calibration of the report's decisions on simulated data of known truth (issue 13, "Done when").

Seeded; each scenario draws its data sets directly as per-machine log moments and runs them through
the same ``estimate``/``decide`` code the report uses. The measured figures are printed (run with -s)
and quoted in docs/report.md.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from testbed_reports.inference import Side, decide, estimate, family_alpha, to_overhead

pytestmark = pytest.mark.slow

SIGMA = 0.03  # run-to-run spread (lognormal sd) of the simulated benchmarks
DATASETS = 2000
MARGIN = 2.0


def _side(rng: np.random.Generator, machines: int, runs: int, log_shift: float, machine_sd: float) -> Side:
    """One label: ``machines`` machines with random offsets, ``runs`` lognormal runs each."""
    offsets = rng.normal(0.0, machine_sd, size=machines) + log_shift
    x = offsets[:, None] + rng.normal(0.0, SIGMA, size=(machines, runs))
    return Side(np.full(machines, float(runs)), x.mean(axis=1), x.std(axis=1, ddof=1), 0, machines * runs)


def _run(
    seed: int,
    machines: int,
    runs: int,
    truth: float,
    machine_sd: float = 0.0,
    family: int = 1,
    n: int = DATASETS,
) -> tuple[float, dict[str, float]]:
    """Coverage of the true overhead and the share of each decision over ``n`` data sets."""
    rng = np.random.default_rng(seed)
    shift = math.log1p(truth / 100)
    alpha = family_alpha(family)
    covered = 0
    counts = dict.fromkeys(("slower", "faster", "equivalent", "inconclusive"), 0)
    for _ in range(n):
        a = _side(rng, machines, runs, shift, machine_sd)
        b = _side(rng, machines, runs, 0.0, machine_sd)
        dec = decide(estimate(a, b), "lower", alpha, MARGIN)
        covered += dec.lo <= truth <= dec.hi
        counts[dec.decision] += 1
    return covered / n, {k: v / n for k, v in counts.items()}


@pytest.mark.parametrize("runs", [5, 10, 30])
def test_overhead_interval_covers_at_nominal_rate_on_one_machine_per_label(runs: int) -> None:
    cov, _ = _run(seed=100 + runs, machines=1, runs=runs, truth=10.0)
    print(f"coverage, 1 machine per label, n={runs}: {100 * cov:.1f}%")
    assert 0.93 <= cov <= 0.97


@pytest.mark.parametrize("machines", [5, 8])
def test_overhead_interval_covers_at_nominal_rate_with_several_machines(machines: int) -> None:
    cov, _ = _run(seed=200 + machines, machines=machines, runs=10, truth=10.0, machine_sd=0.03)
    print(f"coverage, {machines} machines per label x 10 runs, 3% machine spread: {100 * cov:.1f}%")
    assert 0.93 <= cov <= 0.97


def test_family_wise_false_decisions_stay_below_five_percent_on_null_data() -> None:
    """2 machines per label x 10 runs, 3 % machine spread, 20 primary metrics a data set."""
    rng = np.random.default_rng(300)
    metrics, sets = 20, 500
    alpha = family_alpha(metrics)
    any_false = 0
    for _ in range(sets):
        decisions = [
            decide(
                estimate(_side(rng, 2, 10, 0.0, 0.03), _side(rng, 2, 10, 0.0, 0.03)), "lower", alpha, MARGIN
            )
            for _ in range(metrics)
        ]
        any_false += any(d.decision in ("slower", "faster") for d in decisions)
    fwer = any_false / sets
    print(f"family-wise false slower/faster, null, 2 machines x 10 runs, 20 metrics: {100 * fwer:.1f}%")
    assert fwer <= 0.05


@pytest.mark.parametrize(("runs", "family"), [(5, 1), (10, 10)])
def test_ten_percent_overhead_with_three_percent_noise_is_decided_slower(runs: int, family: int) -> None:
    """Power after adaptive stopping, with the rule really stopping: test_calibration_adaptive.py."""
    n = runs
    _, share = _run(seed=401, machines=1, runs=n, truth=10.0, family=family, n=1000)
    print(f"power, 10% overhead, 3% noise, n={n}, family of {family}: {100 * share['slower']:.1f}% slower")
    assert share["slower"] >= 0.80


def test_a_a_comparison_is_never_slower_or_faster_beyond_the_nominal_rate() -> None:
    """The same machine measured twice (one machine per label, identical distribution, n=10)."""
    _, share = _run(seed=500, machines=1, runs=10, truth=0.0)
    false = share["slower"] + share["faster"]
    print(f"A/A: {100 * false:.1f}% slower/faster, {100 * share['equivalent']:.1f}% equivalent")
    assert false <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / DATASETS)


def test_overhead_transform_is_symmetric_for_both_directions() -> None:
    assert to_overhead(math.log(1.1), "lower") == pytest.approx(10.0)
    assert to_overhead(-math.log(1.1), "higher") == pytest.approx(10.0)


def test_label_anova_finds_no_protection_effect_on_null_data_beyond_nominal() -> None:
    """Null data, protection x vendor, 2 machines per label (3 % machine spread) x 10 runs: the
    pooled-run ANOVA found a 'protection' effect in 39 of 100 data sets; machine means fix it."""
    from testbed_reports.build import _one_anova

    rng = np.random.default_rng(600)
    code_a, code_b = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])  # 4 labels: protection x vendor
    lab = np.repeat(np.arange(4), 20)
    host = np.repeat(np.arange(8), 10)
    sets, hits = 400, 0
    for _ in range(sets):
        machine = rng.normal(0, 0.03, size=8)[host]
        v = np.exp(machine + rng.normal(0, SIGMA, size=80))
        table, scale, unit = _one_anova(v, lab, host, code_a, code_b, True, ("protection", "vendor"))
        assert unit == "machine mean" and scale == "log"
        hits += table[0]["F"] > table[0]["F_crit"]
    rate = hits / sets
    print(
        f"label ANOVA, null data, 2 machines per label: protection effect in {100 * rate:.1f}% of data sets"
    )
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / sets)
