"""Sentiment140 tweets: training.1600000.processed.noemoticon.csv (no header, latin-1).

Columns target (0 negative, 4 positive, balanced), ids, date, flag (NO_QUERY), user, text.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from _common import rng, size
from _text import tweet

FILES = ["training.1600000.processed.noemoticon.csv"]


def generate(out: Path, seed: int, scale: str) -> None:
    r = rng("tweets", seed)
    n = size(scale, 4_000, 160_000, 1_600_000)
    target = np.repeat([0, 4], [n // 2, n - n // 2])
    start = pd.Timestamp("2009-04-06 22:19:45")
    offsets = np.sort(r.integers(0, 80 * 86_400, n))
    dates = [(start + pd.Timedelta(seconds=int(s))).strftime("%a %b %d %H:%M:%S PDT %Y") for s in offsets]
    df = pd.DataFrame(
        {
            "target": target,
            "ids": 1_467_810_369 + np.arange(n) * 7,
            "date": dates,
            "flag": "NO_QUERY",
            "user": [f"user_{int(u)}" for u in r.integers(1, n // 3 + 2, n)],
            "text": [tweet(r, 1 if t == 4 else 0) for t in target],
        }
    )
    df.to_csv(out / FILES[0], header=False, index=False, encoding="latin-1")
