"""Descriptive statistics with confidence intervals (vectorised over all groups).

Method (also printed in the report):
- mean and sd: two-pass on values scaled by their group's largest magnitude (finite at any scale).
- CI of the mean: Student t over runs for a label measured on one machine; with several machines
  the machine is the unit: t over the machine means (k - 1 degrees of freedom).
- CV CI: Vangel's modified McKay interval over the runs (no interval below ``MIN_N_CV_CI`` runs).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from testbed_reports.numerics import cv_ci, group_moments

#: fewer runs than this give no CV interval
MIN_N_CV_CI = 5
KEY = ["benchmark", "metric", "label"]

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


def _machine_ci(obs: pd.DataFrame, codes: np.ndarray, groups: int) -> tuple[np.ndarray, np.ndarray]:
    """t interval over machine means per group (NaN where a group has one machine)."""
    hosts = obs.groupby([*KEY, "host"], observed=True, sort=True)
    hcode = hosts.ngroup().to_numpy()
    hm = group_moments(obs["value"].to_numpy(dtype=float), hcode, int(hcode.max()) + 1)
    parent = np.zeros(len(hm.n), dtype=np.int64)
    parent[hcode] = codes
    mm = group_moments(hm.mean, parent, groups)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        half = sps.t.ppf(0.975, mm.n - 1) * mm.sd / np.sqrt(mm.n)
    with np.errstate(over="ignore", invalid="ignore"):
        return mm.mean - half, mm.mean + half


def describe(obs: pd.DataFrame) -> pd.DataFrame:
    """Per (benchmark, metric, label): n, machines, mean, median, sd, CV % and their CIs."""
    if obs.empty:
        return pd.DataFrame(columns=DESCRIBE_COLUMNS)
    grouped = obs.groupby(KEY, observed=True, sort=True)
    codes = grouped.ngroup().to_numpy()
    table = grouped.agg(
        median=("value", "median"),
        machines=("host", "nunique"),
        unit=("unit", "first"),
        better=("better", "first"),
    ).reset_index()
    mom = group_moments(obs["value"].to_numpy(dtype=float), codes, len(table))
    table["n"], table["mean"], table["sd"] = mom.n.astype(np.int64), mom.mean, mom.sd
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        half = sps.t.ppf(0.975, mom.n - 1) * mom.sd / np.sqrt(mom.n)
        cv = np.where(mom.mean != 0, 100 * (mom.sd / np.abs(mom.mean)), np.nan)
    table["cv_percent"] = np.where(np.isfinite(cv), cv, np.nan)
    lo, hi = cv_ci(table["cv_percent"].to_numpy(), mom.n)
    few = mom.n < MIN_N_CV_CI
    table["cv_ci_low"], table["cv_ci_high"] = np.where(few, np.nan, lo), np.where(few, np.nan, hi)
    with np.errstate(over="ignore", invalid="ignore"):
        table["ci95_low"], table["ci95_high"] = mom.mean - half, mom.mean + half
    table["ci_method"] = "t over runs"
    several = table["machines"].to_numpy() >= 2
    if several.any():
        mlo, mhi = _machine_ci(obs, codes, len(table))
        table.loc[several, "ci95_low"] = mlo[several]  # non-finite ends become NaN below
        table.loc[several, "ci95_high"] = mhi[several]
        table.loc[several, "ci_method"] = "t over machine means"
    for c in ("ci95_low", "ci95_high"):
        v = table[c].to_numpy(dtype=float)
        table[c] = np.where(np.isfinite(v), v, np.nan)
    return table[DESCRIBE_COLUMNS]


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
