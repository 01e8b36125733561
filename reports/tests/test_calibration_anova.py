"""Calibration of the label ANOVA (issue 27 item 5): machine means wherever labels have machines as
replicates; labels with one machine are not separable; all-one-machine designs make no type-level
claim. Null data, protection x vendor, 3 % machine spread, 10 runs a machine; seeded."""

from __future__ import annotations

import math

import pytest
from report_support.calibration import anova_setting

pytestmark = pytest.mark.slow
SETS = 800


@pytest.mark.parametrize("machines", [(1, 2, 2, 2), (1, 1, 2, 2), (2, 2, 2, 2)])
def test_protection_effect_on_null_data_stays_at_the_nominal_rate(machines: tuple[int, ...]) -> None:
    """A one-machine label made the whole table fall back to pooled runs: 42-57 % false effects."""
    res = anova_setting(machines, SETS, seed=41)
    print(f"\n{res}")
    assert res.rates["type-level protection effect"].value <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / SETS)
    assert res.rates["tables on runs (these machines only)"].hits == 0


def test_all_one_machine_labels_make_no_type_level_claim() -> None:
    res = anova_setting((1, 1, 1, 1), 100, seed=42)
    assert res.rates["type-level protection effect"].hits == 0
    assert res.rates["tables on runs (these machines only)"].value == 1.0
