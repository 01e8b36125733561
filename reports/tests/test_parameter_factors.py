"""Which plan parameters are factors of the parameter ANOVA: scalars with 2..12 levels, not list
parameters (JSON text), and not a column that splits the rows exactly as an earlier one does."""

from __future__ import annotations

import pandas as pd

from testbed_reports.export import _factors


def test_lists_and_aliases_are_not_factors():
    part = pd.DataFrame(
        {
            "label": pd.Categorical(["a"] * 4),
            "param.platform": ["aws", "aws", "gcf", "gcf"],
            "param.profile": ["aws-lambda", "aws-lambda", "gcf-gen2", "gcf-gen2"],
            "param.steps": ['["bs=512"]', '["bs=4k"]', '["bs=512"]', '["bs=4k"]'],
            "param.io": [512, 4096, 512, 4096],
            "param.tier": [128, 128, 128, 128],
        }
    )
    assert _factors(part) == ["param.io", "param.platform"]
