"""Credit-card transactions (the European cardholders set): creditcard.csv.

Columns Time, V1..V28 (PCA-like components with decreasing variance), Amount, Class; 0.17% of
the rows are frauds, separated from the rest mostly along V10, V12, V14 and V17 as in the
public data, with overlap so that the classes are not trivially separable.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from _common import rng, size

FILES = ["creditcard.csv"]
FRAUD_RATE = 0.001727
#: mean shift of the fraud class per component (in units of that component's sd)
FRAUD_SHIFT = {
    1: -1.5,
    2: 1.2,
    3: -2.2,
    4: 2.0,
    5: -1.0,
    6: -0.6,
    7: -1.8,
    9: -1.2,
    10: -2.6,
    11: 2.0,
    12: -2.7,
    14: -3.0,
    16: -2.0,
    17: -2.4,
    18: -1.2,
    19: 0.5,
    21: 0.4,
}


def generate(out: Path, seed: int, scale: str) -> None:
    r = rng("creditcard", seed)
    n = size(scale, 20_000, 284_807, 1_000_000)
    n_fraud = max(25, round(n * FRAUD_RATE))
    y = np.zeros(n, dtype=int)
    y[r.choice(n, n_fraud, replace=False)] = 1
    sd = np.linspace(1.95, 0.33, 28)
    v = r.standard_t(6, (n, 28)) * sd * 0.8
    # a quarter of the frauds look like ordinary transactions; the rest are shifted and wider
    strength = np.where(r.random(n_fraud) < 0.25, 0.0, r.uniform(0.3, 1.1, n_fraud))
    for k, shift in FRAUD_SHIFT.items():
        v[y == 1, k - 1] = r.normal(shift * sd[k - 1] * strength, sd[k - 1] * 1.6)
    # two days of seconds with fewer transactions at night
    hours = r.choice(48, n, p=_hour_weights())
    t = np.sort(hours * 3600 + r.integers(0, 3600, n)).astype(float)
    amount = np.where(y == 1, r.choice([1.0, 0.0], n) + r.lognormal(3.0, 1.8, n), r.lognormal(3.1, 1.35, n))
    df = pd.DataFrame(v.round(6), columns=[f"V{i}" for i in range(1, 29)])
    df.insert(0, "Time", t)
    df["Amount"] = amount.clip(0, 25_000).round(2)
    df["Class"] = y
    df.to_csv(out / "creditcard.csv", index=False)


def _hour_weights() -> np.ndarray:
    day = np.array(
        [
            0.4,
            0.25,
            0.2,
            0.15,
            0.15,
            0.25,
            0.5,
            0.9,
            1.3,
            1.5,
            1.6,
            1.6,
            1.6,
            1.5,
            1.5,
            1.5,
            1.5,
            1.6,
            1.6,
            1.6,
            1.4,
            1.3,
            1.0,
            0.7,
        ]
    )
    w = np.concatenate([day, day])
    return w / w.sum()
