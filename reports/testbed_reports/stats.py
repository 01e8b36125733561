"""Descriptive statistics with confidence intervals, vectorised over all groups.

One descriptive-statistics function, :func:`summaries` (values + group codes -> n, mean, median, sd,
CV % with its interval, geometric mean and the interval of the mean); :func:`describe` applies it to
a report's observations with the units of docs/design.md section 6, and ``analyze`` / the parameter
cells apply it to their groups. The interval is the shared core's
(``testbed_shared.intervals.mean_interval``):

- a positive quantity (every value > 0: times, rates, sizes) gets the t interval of the mean log
  value, transformed back: the interval of the geometric mean, which never crosses zero
  (``ci_scale: log``); anything else the t interval of the arithmetic mean (``ci_scale: raw``);
- unit: the run (a record; pyperf values are first summarised per run, see ``runs.py``) when a
  label has one machine; with several machines the machine is the unit: t over the machine means
  of the log values (k - 1 degrees of freedom);
- a one-machine label's interval (:func:`describe`) is of its *typical run* (estimand: the 20 %
  trimmed geometric mean of its runs, centre ``typical``): the hull of Yuen's interval of the 20 %
  trimmed mean of the log values (winsorized standard error, t on h - 1 df, h runs kept) and the
  geometric mean's t interval. A rare slow mode (1 run in 20 50 % slower) shifts the geometric mean
  by 2 %; a label stopped adaptively after 7 runs has usually not seen it, and the geometric mean's
  interval covered its estimand in 32 %. Yuen's alone covers the typical run in 92-94 % after
  adaptive stopping (the stop selects a small spread), the hull in 97-98.5 % (docs/report.md
  *Calibration*); below 5 runs nothing is trimmed and the hull is the t interval;
- mean and sd: two-pass on values scaled by their group's largest magnitude (finite at any scale);
- CV interval: Vangel's modified McKay interval over the runs (none below ``MIN_N_CV_CI`` runs);
- a share of the machine (CPU % of all cores) gets the t interval of its mean within [0, 100] %
  (``ci_scale: share``; ``testbed_shared.intervals.share_interval``): a share cannot exceed the
  machine, and the log-scale interval of a positive quantity put it above 100 %.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from testbed_reports import dist
from testbed_reports.display import is_machine_share
from testbed_reports.numerics import cv_ci, first_rows, group_medians, group_moments
from testbed_reports.runs import Runs, as_runs
from testbed_shared.intervals import mean_interval, share_interval

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
    "values",
    "mean",
    "median",
    "sd",
    "cv_percent",
    "cv_ci_low",
    "cv_ci_high",
    "geomean",
    "typical",
    "ci95_low",
    "ci95_high",
    "ci_scale",
    "ci_method",
]
#: share trimmed from each end for a one-machine label's typical run
TRIM = 0.2
SUMMARY_COLUMNS = [
    "n",
    "mean",
    "median",
    "sd",
    "cv_percent",
    "cv_ci_low",
    "cv_ci_high",
    "geomean",
    "ci95_low",
    "ci95_high",
    "ci_scale",
]


def _finite(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    return np.where(np.isfinite(x), x, np.nan)


def _log_moments(values: np.ndarray, codes: np.ndarray, groups: int) -> tuple[np.ndarray, object]:
    """Per group: whether every value is positive, and the moments of the log values."""
    positive = values > 0
    bad = np.bincount(codes[~positive], minlength=groups) > 0  # the few rows not positive
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(positive, values, 1.0)
        logs = np.log(logs, out=logs)  # in place: one array of n
    return ~bad, group_moments(logs, codes, groups)


def summaries(values: np.ndarray, codes: np.ndarray, groups: int, level: float = 0.95) -> pd.DataFrame:
    """The descriptive statistics of each group (codes 0..groups-1), one row per group.

    The interval is of the geometric mean (log scale) where every value of the group is positive,
    else of the arithmetic mean; ``ci_scale`` says which.
    """
    values = np.asarray(values, dtype=float)
    mom = group_moments(values, codes, groups)
    positive, lmom = _log_moments(values, codes, groups)
    geo, glo, ghi = mean_interval(lmom.n, lmom.mean, lmom.sd, level, log=True)
    _, rlo, rhi = mean_interval(mom.n, mom.mean, mom.sd, level)
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = _finite(np.where(mom.mean != 0, 100 * (mom.sd / np.abs(mom.mean)), np.nan))
    lo, hi = cv_ci(cv, mom.n)
    few = mom.n < MIN_N_CV_CI
    median = group_medians(values, codes, groups)
    return pd.DataFrame(
        {
            "n": mom.n.astype(np.int64),
            "mean": mom.mean,
            "median": median,
            "sd": mom.sd,
            "cv_percent": cv,
            "cv_ci_low": np.where(few, np.nan, lo),
            "cv_ci_high": np.where(few, np.nan, hi),
            "geomean": _finite(np.where(positive, geo, np.nan)),
            "ci95_low": _finite(np.where(positive, glo, rlo)),
            "ci95_high": _finite(np.where(positive, ghi, rhi)),
            "ci_scale": np.where(positive, "log", "raw"),
        }
    )


def _machine_interval(rs: Runs, codes: np.ndarray, groups: int, log: np.ndarray) -> tuple:
    """Geometric mean (or mean) and its t interval over the machine means of each group."""
    r, hcode = rs.frame, rs.machines()[1]
    parent = np.zeros(int(hcode.max()) + 1, dtype=np.int64)
    parent[hcode] = codes
    values = r["value"].to_numpy(dtype=float)
    y = np.where(values > 0, values, 1.0)
    np.log(y, out=y)  # in place, as the raw values below: one array of n
    np.copyto(y, values, where=~log[codes])
    hm = group_moments(y, hcode, len(parent))
    mm = group_moments(hm.mean, parent, groups)
    centre_log, lo_log, hi_log = mean_interval(mm.n, mm.mean, mm.sd, log=True)
    _, lo_raw, hi_raw = mean_interval(mm.n, mm.mean, mm.sd)
    return (
        np.where(log, centre_log, np.nan),
        np.where(log, lo_log, lo_raw),
        np.where(log, hi_log, hi_raw),
    )


def _label_groups(rs: Runs) -> tuple[pd.DataFrame, np.ndarray]:
    """Per (benchmark, metric, label), sorted: machines, unit, better and values (the pyperf values
    and the like), and each run's group; from the runs' machine groups (``Runs.machines``) when
    every run has one, else through pandas."""
    r = rs.frame
    hosts, hcode = rs.machines()
    if len(hcode) and hcode.min() >= 0:
        parent = hosts.groupby(KEY, observed=True, sort=True).ngroup().to_numpy()
        codes = parent[hcode]
        first = np.full(int(parent.max()) + 1, len(parent), dtype=np.int64)
        np.minimum.at(first, parent, np.arange(len(parent), dtype=np.int64))
        table = hosts[KEY].iloc[first].reset_index(drop=True)
        table["machines"] = np.bincount(parent, minlength=len(first)).astype(np.int64)
        for c, col in _firsts(r, codes, len(first)).items():
            table[c] = col
        per_run = r["values"].to_numpy(dtype=float)
        table["values"] = np.bincount(codes, weights=per_run, minlength=len(first)).astype(np.int64)
        return table, codes
    grouped = r.groupby(KEY, observed=True, sort=True)
    table = grouped.agg(
        machines=("host", "nunique"),
        unit=("unit", "first"),
        better=("better", "first"),
        values=("values", "sum"),
    ).reset_index()
    return table, grouped.ngroup().to_numpy()


def _firsts(r: pd.DataFrame, codes: np.ndarray, groups: int) -> dict[str, pd.Series]:
    """Per group (every one with a run): the first unit and better, as ``groupby(codes)``'s
    ``first`` gives them: the group's first row's where no value is missing (no grouping of
    every row), else through pandas (its first value that is not missing)."""
    cols = ["unit", "better"]
    whole = all(isinstance(r[c].dtype, pd.CategoricalDtype) and r[c].cat.codes.min() >= 0 for c in cols)
    if whole:
        at = first_rows(codes, groups)
        return {c: r[c].iloc[at].reset_index(drop=True) for c in cols}
    more = r[cols].groupby(codes).agg(unit=("unit", "first"), better=("better", "first"))
    return {c: more[c].reset_index(drop=True) for c in cols}


def describe(obs: pd.DataFrame, shared: Runs | None = None) -> pd.DataFrame:
    """Per (benchmark, metric, label): machines, runs (``n``), values, the statistics of
    :func:`summaries` over the runs, and the interval with the label's unit of replication
    (``shared``: the runs of ``obs`` when the caller has them, ``runs.Runs``)."""
    if obs.empty:
        return pd.DataFrame(columns=DESCRIBE_COLUMNS)
    rs = as_runs(obs, shared)
    r = rs.frame
    table, codes = _label_groups(rs)
    table = pd.concat([table, summaries(r["value"].to_numpy(dtype=float), codes, len(table))], axis=1)
    log = (table["ci_scale"] == "log").to_numpy()
    table["ci_method"] = np.where(log, "geometric mean, t on log values over runs", "mean, t over runs")
    several = table["machines"].to_numpy() >= 2
    if several.any():
        geo, lo, hi = _machine_interval(rs, codes, len(table), log)
        table.loc[several, "geomean"] = _finite(geo)[several]
        table.loc[several, "ci95_low"] = _finite(lo)[several]
        table.loc[several, "ci95_high"] = _finite(hi)[several]
        table.loc[several, "ci_method"] = np.where(
            log[several],
            "geometric mean, t on log values over machine means",
            "mean, t over machine means",
        )
    table["typical"] = table["geomean"]
    one = (table["machines"].to_numpy() == 1) & log
    if one.any():
        centre, lo, hi = _typical_run(r, codes, len(table), one)
        geo_lo, geo_hi = table["ci95_low"].to_numpy(float), table["ci95_high"].to_numpy(float)
        table.loc[one, "typical"] = _finite(centre)[one]
        table.loc[one, "ci95_low"] = _finite(np.fmin(lo, geo_lo))[one]
        table.loc[one, "ci95_high"] = _finite(np.fmax(hi, geo_hi))[one]
        table.loc[one, "ci_method"] = (
            "typical run (20% trimmed geometric mean): hull of Yuen's t and the geometric mean's t, over runs"
        )
    _bounded_shares(r, codes, table)
    table["values"] = table["values"].astype(np.int64)
    return table[DESCRIBE_COLUMNS]


def _bounded_shares(r: pd.DataFrame, codes: np.ndarray, table: pd.DataFrame) -> None:
    """Shares of the machine (CPU % of all cores: ``display.is_machine_share``) get the interval of
    their mean within [0, 100] % (``testbed_shared.intervals.share_interval``), over runs or, with
    several machines, over machine means; in place."""
    pairs = zip(table["metric"], table["unit"], strict=True)
    rows = [k for k, (m, u) in enumerate(pairs) if is_machine_share(str(m), str(u))]
    for k in rows:
        part = r[codes == k]
        several = int(table.at[k, "machines"]) >= 2
        vals = part.groupby("host", observed=True)["value"].mean() if several else part["value"]
        _, lo, hi, method = share_interval(vals.to_numpy(dtype=float).tolist())
        table.loc[k, ["geomean", "ci95_low", "ci95_high", "ci_scale"]] = [np.nan, lo, hi, "share"]
        if "typical" in table:
            table.loc[k, "typical"] = np.nan
        table.loc[k, "ci_method"] = f"{method} % over {'machine means' if several else 'runs'}"


def _typical_run(
    r: pd.DataFrame, codes: np.ndarray, groups: int, use: np.ndarray, level: float = 0.95
) -> tuple:
    """Per group (where ``use``): the 20 % trimmed mean of the log values, transformed back, and
    Yuen's interval: winsorized variance s_w^2, se = sqrt((n - 1) s_w^2 / (h (h - 1))), t on h - 1 df
    (h = n - 2g values kept, g = floor(0.2 n))."""
    values = r["value"].to_numpy(dtype=float)
    keep = use[codes] & (values > 0)
    c, y = codes[keep], np.log(values[keep])
    idx = np.lexsort((y, c))
    c, y = c[idx], y[idx]
    n = np.bincount(c, minlength=groups).astype(float)
    start = np.concatenate(([0], np.cumsum(n)[:-1])).astype(np.int64)
    rank = np.arange(len(y)) - start[c]
    g = np.floor(TRIM * n).astype(np.int64)
    h = n - 2 * g
    inner = (rank >= g[c]) & (rank < (n - g)[c])
    with np.errstate(divide="ignore", invalid="ignore"):
        tm = np.bincount(c, weights=np.where(inner, y, 0.0), minlength=groups) / h
        last = np.maximum(start + n.astype(np.int64) - 1, 0)
        low = y[np.minimum(start + g, len(y) - 1)] if len(y) else np.zeros(groups)
        high = y[np.minimum(last - g, len(y) - 1)] if len(y) else np.zeros(groups)
        w = np.clip(y, low[c], high[c])
        wm = np.bincount(c, weights=w, minlength=groups) / n
        sw2 = np.bincount(c, weights=(w - wm[c]) ** 2, minlength=groups) / (n - 1)
        se = np.sqrt((n - 1) * sw2 / (h * (h - 1)))
        q = dist.t.ppf(0.5 + level / 2, np.where(h > 1, h - 1, 1))
    ok = h > 1
    with np.errstate(over="ignore"):  # a bound past the float range is +inf: no bound, said as such
        return (
            np.where(h > 0, np.exp(tm), np.nan),
            np.where(ok, np.exp(tm - q * se), np.nan),
            np.where(ok, np.exp(tm + q * se), np.nan),
        )


def group_table(df: pd.DataFrame, by: list[str], value: str) -> list[dict]:
    """:func:`summaries` of ``df[value]`` per group of the ``by`` columns (in sorted order), as dicts
    with the group's key under ``group`` (``analyze``'s groups)."""
    grouped = df.groupby(by, sort=True)
    codes = grouped.ngroup().to_numpy()
    table = summaries(df[value].to_numpy(dtype=float), codes, grouped.ngroups)
    out = []
    for raw, row in zip(grouped.size().index, table.to_dict(orient="records"), strict=True):
        key = raw if isinstance(raw, tuple) else (raw,)
        out.append({"group": {c: _plain(k) for c, k in zip(by, key, strict=True)}, **row})
    return out


def _plain(x: object) -> object:
    return x.item() if isinstance(x, np.generic) else x
