"""The emulator-vs-platform verdict, calibrated by a seeded simulation with known ratios.

A simulated report compares M metrics, R executions a side, log-normal values with a known ratio
platform/emulator; each metric's interval is at level 1 - alpha/M (Bonferroni), as ``compare``
sets it, and its verdict comes from the report's decision core. At the tolerance's edge (true
ratio exactly 1 + t or 1 - t) a wrong ``holds`` must be rare, and just inside it a wrong ``does not
hold``: in at most alpha of the reports, checked as a binomial bound at 3 standard errors. Clear
cases must get their verdict.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from testbed_reports.inference import Estimate, Side, estimate
from testbed_reports.platform_check import compare, decide, side_of

ALPHA, TOL, M, SD = 0.05, 25.0, 4, 0.15
REPORTS = 1000


def _side(rng: np.random.Generator, ratio: float, runs: int) -> Side:
    logs = rng.normal(math.log(0.1 * ratio), SD, runs)
    return Side(np.array([runs]), np.array([logs.mean()]), np.array([logs.std(ddof=1)]), 0, runs)


def _verdicts(rng: np.random.Generator, ratio: float, runs: int, count: int) -> np.ndarray:
    """Verdicts of ``count`` simulated comparisons (inference.estimate, then the report's rule)."""
    est = [estimate(_side(rng, ratio, runs), _side(rng, 1.0, runs)) for _ in range(count)]
    return np.array([decide(e, ALPHA / M, TOL)[3] for e in est])


def _rate(ratio: float, verdict: str, seed: int, runs: int = 8) -> float:
    """Share of the simulated reports (M comparisons each) with at least one ``verdict``."""
    found = _verdicts(np.random.default_rng(seed), ratio, runs, REPORTS * M).reshape(REPORTS, M) == verdict
    return float(found.any(axis=1).mean())


def _bound(p: float) -> float:
    return p + 3 * math.sqrt(p * (1 - p) / REPORTS)


def test_a_model_off_by_the_tolerance_rarely_holds():
    assert _rate(1 + TOL / 100, "holds", 1) <= _bound(ALPHA)
    assert _rate(1 - TOL / 100, "holds", 2) <= _bound(ALPHA)


def test_a_model_at_the_edge_from_inside_rarely_fails():
    assert _rate(1 + TOL / 100 - 1e-9, "does not hold", 3) <= _bound(ALPHA)
    assert _rate(1 - TOL / 100 + 1e-9, "does not hold", 4) <= _bound(ALPHA)


def test_clear_cases_get_their_verdict():
    rng = np.random.default_rng(5)
    assert (_verdicts(rng, 1.0, 20, 500) == "holds").mean() >= 0.9
    assert (_verdicts(rng, 2.0, 8, 500) == "does not hold").mean() >= 0.95
    assert (_verdicts(rng, 0.5, 8, 500) == "does not hold").mean() >= 0.95


def test_compare_adjusts_over_every_comparison_of_the_report():
    """compare() on a real frame: one check per (platform, benchmark, metric) seen on both sides,
    with the Bonferroni level over all of them (wider than a single 95 % interval)."""
    rng = np.random.default_rng(6)
    rows = [
        {
            "platform": "aws-lambda",
            "side": side,
            "benchmark": "b",
            "metric": metric,
            "host": side[:4],
            "value": float(np.exp(rng.normal(math.log(0.1), SD))),
            "unit": "s",
        }
        for metric in ("handler_s", "round_trip_s")
        for side in ("platform", "emulator")
        for _ in range(10)
    ]
    rows.append(
        {
            "platform": "aws-lambda",
            "side": "platform",
            "benchmark": "b",
            "metric": "only_real",
            "host": "plat",
            "value": 1.0,
            "unit": "s",
        }
    )
    checks = compare(pd.DataFrame(rows), ALPHA, TOL)
    assert sorted(c.metric for c in checks) == ["handler_s", "round_trip_s"]
    one = checks[0]
    assert one.modelled == (one.metric == "handler_s") and one.n_platform == one.n_emulator == 10
    assert one.lo < one.ratio < one.hi


def test_sides_from_record_parameters():
    assert side_of({"resolved_real": True, "resolved_platform": "aws-lambda"}) == ("platform", "aws-lambda")
    assert side_of(
        {"resolved_real": False, "resolved_platform": "gcf-gen2", "resolved_models": "gcf-gen2"}
    ) == (
        "emulator",
        "gcf-gen2",
    )
    # records written before the drivers: the emulator's profile names the platform it models
    assert side_of({"resolved_platform": "azure-consumption"}) == ("emulator", "azure-functions")
    assert side_of({"resolved_platform": "test-small"}) is None


def test_decide_explains_a_missing_estimate():
    ratio, _, _, verdict, reason = decide(Estimate(reason="too few runs"), ALPHA, TOL)
    assert verdict == "inconclusive" and reason == "too few runs" and math.isnan(ratio)
