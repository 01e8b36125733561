"""Online shoppers purchasing intention (UCI): online_shoppers_intention.csv.

One row per session: page counts and durations by page type, Google-Analytics-like bounce, exit
and page values, month, visitor type, weekend, and Revenue (15.5% True), which depends mostly on
PageValues and ExitRates, as in the public data.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from _common import rng, size

FILES = ["online_shoppers_intention.csv"]
MONTHS = ["Feb", "Mar", "May", "June", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
MONTH_SHARE = [0.015, 0.155, 0.273, 0.023, 0.035, 0.035, 0.036, 0.045, 0.243, 0.14]
MONTH_BUY = [0.2, 0.9, 0.7, 0.8, 1.0, 1.1, 1.2, 1.3, 1.6, 0.8]


def generate(out: Path, seed: int, scale: str) -> None:
    r = rng("shoppers", seed)
    n = size(scale, 3_000, 12_330, 120_000)
    month = r.choice(len(MONTHS), n, p=np.array(MONTH_SHARE) / sum(MONTH_SHARE))
    visitor = r.choice(["Returning_Visitor", "New_Visitor", "Other"], n, p=[0.855, 0.138, 0.007])
    engaged = r.gamma(1.3, 1.0, n)
    admin = r.poisson(1.6 * engaged)
    info = r.poisson(0.35 * engaged)
    product = r.poisson(22 * engaged) + 1
    bounce = np.clip(r.beta(0.5, 12, n) * (2.5 / (1 + product / 5)), 0, 0.2)
    exit_rate = np.clip(bounce + r.beta(1.2, 25, n) * 1.5, 0, 0.2)
    logit = (
        -0.15
        + 0.6 * np.log1p(product / 20)
        - 35 * exit_rate
        + np.log(np.array(MONTH_BUY)[month])
        + 0.4 * (visitor == "New_Visitor")
        + r.normal(0, 0.6, n)
    )
    revenue = r.random(n) < 1 / (1 + np.exp(-logit))
    page_values = np.where(revenue, r.gamma(1.3, 22, n), np.where(r.random(n) < 0.1, r.gamma(1.0, 8, n), 0.0))
    special = np.where(np.isin(month, [2, 1]), r.choice([0, 0.2, 0.4, 0.6, 0.8, 1.0], n), 0.0)
    df = pd.DataFrame(
        {
            "Administrative": admin,
            "Administrative_Duration": (admin * r.gamma(1.5, 50, n)).round(6),
            "Informational": info,
            "Informational_Duration": (info * r.gamma(1.2, 70, n)).round(6),
            "ProductRelated": product,
            "ProductRelated_Duration": (product * r.gamma(1.6, 25, n)).round(6),
            "BounceRates": bounce.round(8),
            "ExitRates": exit_rate.round(8),
            "PageValues": page_values.round(6),
            "SpecialDay": special,
            "Month": np.array(MONTHS)[month],
            "OperatingSystems": r.choice(
                [1, 2, 3, 4, 5, 6, 7, 8], n, p=[0.21, 0.535, 0.207, 0.039, 0.001, 0.002, 0.001, 0.005]
            ),
            "Browser": r.choice(
                np.arange(1, 14), n, p=np.array([20, 64, 1, 6, 4, 1, 0.4, 1.1, 0.1, 1.3, 0.1, 0.1, 0.9]) / 100
            ),
            "Region": r.choice(
                np.arange(1, 10), n, p=np.array([39, 9, 19.5, 9.6, 2.6, 6.5, 6.2, 3.5, 4.1]) / 100
            ),
            "TrafficType": r.choice(np.arange(1, 21), n, p=_traffic()),
            "VisitorType": visitor,
            "Weekend": r.random(n) < 0.233,
            "Revenue": revenue,
        }
    )
    df.to_csv(out / "online_shoppers_intention.csv", index=False)


def _traffic() -> np.ndarray:
    w = np.array(
        [
            19.9,
            31.7,
            16.6,
            8.7,
            2.1,
            3.6,
            0.3,
            2.8,
            0.3,
            3.7,
            2.0,
            0.01,
            6.0,
            0.1,
            0.3,
            0.03,
            0.01,
            0.1,
            0.1,
            1.6,
        ]
    )
    return w / w.sum()
