"""Calibration of ``testbed-report timeofday`` (issue 27 item 1) on simulated four-day minute
campaigns (S1's preliminary experiment, S1 L711-717) with AR(1) noise of known truth, through the
same ``timeofday.calibrated`` and ``thesis_anova`` the command prints. Seeded; the rates are printed
(run with -s); bench/calibration.py runs the same settings with 1000 campaigns for docs/report.md."""

from __future__ import annotations

import math

import pytest

from report_support.calibration import timeofday_setting

pytestmark = pytest.mark.slow
SETS = 120


def _bound(p: float, n: int) -> float:
    return p + 3 * math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("phi", [0.5, 0.9])
def test_no_effect_is_found_at_the_nominal_rate_under_autocorrelation(phi: float) -> None:
    """Kruskal-Wallis over runs said EFFECT in 98 % (phi 0.5) and 100 % (phi 0.9) of such campaigns."""
    res = timeofday_setting(phi, SETS, seed=int(100 * phi))
    print(f"\n{res}")
    for test in ("hour", "business_hours", "workday"):
        assert res.rates[f"{test} effect"].value <= _bound(0.05, SETS), test
    assert res.rates["weekday not testable"].value == 1.0  # four days: each weekday on one date
    # the thesis's ANOVA (runs as independent observations) is far from calibrated here
    assert res.rates["thesis ANOVA time of day F > F crit"].value > 0.15


def test_a_ten_percent_business_hours_effect_is_found_over_four_days() -> None:
    res = timeofday_setting(0.5, 40, seed=7, effect=0.10)
    print(f"\n{res}")
    assert res.rates["business_hours effect"].value >= 0.8
    assert res.rates["hour effect"].value >= 0.8
