"""Descriptive statistics with confidence intervals, and bootstrap draws shared by the comparisons.

Method (also printed in the report):
- CI of the mean: Student t interval for a label measured on one machine; with several machines
  the repetitions are nested in machines, so the label is resampled at the machine level (cluster
  bootstrap, percentile interval).
- CV CI and overhead CI: percentile bootstrap with ``B`` seeded resamples (machine level when a label
  has several machines). For one machine with more than ``BOOT_MAX_N`` observations, the bootstrap is
  replaced by its large-sample limit: normal draws of the mean and the distribution-free delta-method
  interval of the CV (uses the sample skewness and kurtosis).
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

B = 2000
BOOT_MAX_N = 1000
#: fewer runs than this on one machine give no CV interval (a bootstrap of 2-4 values is meaningless)
MIN_N_CV_CI = 5
Z975 = float(sps.norm.ppf(0.975))
KEY = ["benchmark", "metric", "label"]


@dataclass
class Draws:
    """Bootstrap draws of one sample's mean (and sd when resampled)."""

    means: np.ndarray
    sds: np.ndarray | None
    level: str  # "machine", "observation" or "normal"


def seed_for(*parts: object) -> int:
    """A stable seed per group, so the same input gives the same report."""
    return zlib.crc32("\x1f".join(map(str, parts)).encode())


def draws(values: np.ndarray, host_codes: np.ndarray, rng: np.random.Generator) -> Draws | None:
    """Resampled means (and sds) of one group; None when fewer than two observations."""
    n = len(values)
    if n < 2:
        return None
    hosts, inv = np.unique(host_codes, return_inverse=True)
    if len(hosts) >= 2:
        s1 = np.bincount(inv, weights=values)
        s2 = np.bincount(inv, weights=values * values)
        cnt = np.bincount(inv).astype(float)
        idx = rng.integers(0, len(hosts), size=(B, len(hosts)))
        c = cnt[idx].sum(axis=1)
        m = s1[idx].sum(axis=1) / c
        var = (s2[idx].sum(axis=1) - c * m * m) / np.maximum(c - 1, 1)
        return Draws(m, np.sqrt(np.maximum(var, 0)), "machine")
    if n <= BOOT_MAX_N:
        x = values[rng.integers(0, n, size=(B, n))]
        return Draws(x.mean(axis=1), x.std(axis=1, ddof=1), "observation")
    sd = float(values.std(ddof=1))
    return Draws(rng.normal(float(values.mean()), sd / np.sqrt(n), size=B), None, "normal")


def cv_delta_ci(values: np.ndarray) -> tuple[float, float]:
    """Large-sample (delta method) 95% CI of the CV in percent; no normality assumed."""
    n = len(values)
    m = values.mean()
    d = values - m
    v = float((d * d).sum() / (n - 1))
    if m == 0 or v == 0:
        return (np.nan, np.nan) if m == 0 else (0.0, 0.0)
    mu3 = float((d**3).mean())
    mu4 = float((d**4).mean())
    g = np.sqrt(v) / abs(m)
    var_g = g * g / n * (v / m**2 + (mu4 - v * v) / (4 * v * v) - mu3 / (m * v))
    se = np.sqrt(max(var_g, 0.0))
    return (100 * max(g - Z975 * se, 0.0), 100 * (g + Z975 * se))


DESCRIBE_COLUMNS = [
    "benchmark",
    "metric",
    "label",
    "unit",
    "better",
    "machines",
    "n",
    "mean",
    "median",
    "sd",
    "cv_percent",
    "cv_ci_low",
    "cv_ci_high",
    "ci95_low",
    "ci95_high",
    "ci_method",
]


def describe(obs: pd.DataFrame) -> tuple[pd.DataFrame, dict[tuple[str, str, str], Draws | None]]:
    """Per (benchmark, metric, label): n, machines, mean, median, sd, CV % and CIs; plus the draws."""
    if obs.empty:
        return pd.DataFrame(columns=DESCRIBE_COLUMNS), {}
    g = obs.groupby(KEY, observed=True, sort=True)["value"]
    table = g.agg(n="count", mean="mean", median="median", sd="std").reset_index()
    meta = (
        obs.groupby(KEY, observed=True, sort=True)
        .agg(machines=("host", "nunique"), unit=("unit", "first"), better=("better", "first"))
        .reset_index()
    )
    table = table.merge(meta, on=KEY)
    n = table["n"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        half = sps.t.ppf(0.975, n - 1) * table["sd"].to_numpy() / np.sqrt(n)
        table["cv_percent"] = 100 * table["sd"] / table["mean"].abs()
    table["ci95_low"] = table["mean"] - half
    table["ci95_high"] = table["mean"] + half
    table["cv_ci_low"] = np.nan
    table["cv_ci_high"] = np.nan
    table["ci_method"] = "t"
    values = obs["value"].to_numpy()
    host_codes = (
        obs["host"].cat.codes.to_numpy() if hasattr(obs["host"], "cat") else pd.factorize(obs["host"])[0]
    )
    indices = obs.groupby(KEY, observed=True, sort=True).indices
    all_draws: dict[tuple[str, str, str], Draws | None] = {}
    cv_lo = table["cv_ci_low"].to_numpy().copy()
    cv_hi = table["cv_ci_high"].to_numpy().copy()
    lo = table["ci95_low"].to_numpy().copy()
    hi = table["ci95_high"].to_numpy().copy()
    method = table["ci_method"].to_numpy().copy()
    for i, key in enumerate(zip(table["benchmark"], table["metric"], table["label"], strict=False)):
        rows = indices[key]
        v = values[rows]
        d = draws(v, host_codes[rows], np.random.default_rng(seed_for(*key)))
        all_draws[key] = d
        if d is None:
            continue
        if d.level == "machine":
            lo[i], hi[i] = np.percentile(d.means, [2.5, 97.5])
            method[i] = "machine bootstrap"
        if d.sds is not None and (len(v) >= MIN_N_CV_CI or d.level == "machine"):
            with np.errstate(divide="ignore", invalid="ignore"):
                cv = 100 * d.sds / np.abs(d.means)
            cv = cv[np.isfinite(cv)]
            if len(cv):
                cv_lo[i], cv_hi[i] = np.percentile(cv, [2.5, 97.5])
        elif d.sds is None:
            cv_lo[i], cv_hi[i] = cv_delta_ci(v)
    table["ci95_low"], table["ci95_high"], table["ci_method"] = lo, hi, method
    table["cv_ci_low"], table["cv_ci_high"] = cv_lo, cv_hi
    return table[DESCRIBE_COLUMNS], all_draws


def group_stats(values: np.ndarray) -> dict[str, float]:
    """n, mean, median, sd, cv_percent and the t-based 95% CI of the mean of one sample."""
    n = len(values)
    mean = float(values.mean()) if n else float("nan")
    sd = float(values.std(ddof=1)) if n > 1 else float("nan")
    half = float(sps.t.ppf(0.975, n - 1) * sd / np.sqrt(n)) if n > 1 else float("nan")
    return {
        "n": n,
        "mean": mean,
        "median": float(np.median(values)) if n else float("nan"),
        "sd": sd,
        "cv_percent": 100 * sd / abs(mean) if n > 1 and mean != 0 else float("nan"),
        "ci95_low": mean - half,
        "ci95_high": mean + half,
    }
