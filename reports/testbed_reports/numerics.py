"""Grouped moments that stay finite and exact at any scale, and the CV interval.

Values are divided by their group's largest magnitude before the two-pass mean and variance, so
1e155 (whose squares overflow) and 1e-300 (whose squares underflow to 0) give the same relative
answer as values near 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from testbed_reports import dist


@dataclass
class Moments:
    """Per group: count, mean and sample sd (NaN for one value), arrays indexed by group code."""

    n: np.ndarray
    mean: np.ndarray
    sd: np.ndarray


def group_moments(values: np.ndarray, codes: np.ndarray, groups: int) -> Moments:
    """Count, mean and sd of ``values`` per group code (0..groups-1), two-pass on scaled values;
    a batch of whole groups at a time (``group_batches``: each group's sums the same)."""
    n = np.bincount(codes, minlength=groups).astype(float)
    if len(values) == 0:
        nan = np.full(groups, np.nan)
        return Moments(n, nan, nan.copy())
    batches = group_batches(codes)
    if batches is None:
        return _moments(values, codes, n)
    mean, sd = np.full(groups, np.nan), np.full(groups, np.nan)  # NaN: a group past the codes
    for lo, hi in batches:
        rows = batch_rows(codes, lo, hi)
        part = _moments(values[rows], codes[rows], n)
        mean[lo:hi], sd[lo:hi] = part.mean[lo:hi], part.sd[lo:hi]
    return Moments(n, mean, sd)


def _moments(values: np.ndarray, codes: np.ndarray, n: np.ndarray) -> Moments:
    """:func:`group_moments` of every row at once (``n``: the rows per group)."""
    groups = len(n)
    scale = group_max(np.abs(values), codes, groups)
    scale = np.where((scale > 0) & np.isfinite(scale), scale, 1.0)
    y = values / scale[codes]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_y = np.bincount(codes, weights=y, minlength=groups) / n
        d = np.subtract(y, mean_y[codes], out=y)  # in place: the values' rows held twice, not four times
        var_y = np.bincount(codes, weights=np.multiply(d, d, out=d), minlength=groups) / (n - 1)
    var_y = np.where(n > 1, np.maximum(var_y, 0.0), np.nan)
    return Moments(n, mean_y * scale, np.sqrt(var_y) * scale)


#: rows (of whole groups) a grouped statistic takes at a time: its working arrays are this long
GROUP_BATCH = 1 << 20


def group_batches(codes: np.ndarray) -> list[tuple[int, int]] | None:
    """For a grouped statistic computed a batch of whole groups at a time: groups ``lo`` to
    ``hi - 1`` a batch (``group_spans``; ``batch_rows`` gives its rows); None where one batch
    would hold every row or a code is negative (the caller then takes every row at once)."""
    if len(codes) <= GROUP_BATCH or codes.min() < 0:
        return None
    return group_spans(np.cumsum(np.bincount(codes)))


def group_spans(ends: np.ndarray) -> list[tuple[int, int]]:
    """Groups ``lo`` to ``hi - 1`` at a time, about ``GROUP_BATCH`` rows together (at least one
    group), from where each group's rows end among the rows sorted by group (``ends``)."""
    out, lo = [], 0
    while lo < len(ends):
        reach = (int(ends[lo - 1]) if lo else 0) + GROUP_BATCH
        hi = max(min(int(np.searchsorted(ends, reach, side="left")) + 1, len(ends)), lo + 1)
        out.append((lo, hi))
        lo = hi
    return out


def batch_rows(codes: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """The rows of groups ``lo`` to ``hi - 1``, in row order."""
    return np.flatnonzero((codes >= lo) & (codes < hi))


def group_medians(values: np.ndarray, codes: np.ndarray, groups: int) -> np.ndarray:
    """``pd.Series(values).groupby(codes).median()`` for groups 0..groups-1 (NaN for a group
    without values), a batch of whole groups at a time (``group_batches``)."""
    batches = group_batches(codes)
    if batches is None:
        return pd.Series(values).groupby(codes).median().reindex(range(groups)).to_numpy()
    out = np.full(groups, np.nan)
    for lo, hi in batches:
        rows = batch_rows(codes, lo, hi)
        part = pd.Series(values[rows]).groupby(codes[rows]).median()
        out[part.index.to_numpy()] = part.to_numpy()
    return out


def group_max(values: np.ndarray, codes: np.ndarray, groups: int) -> np.ndarray:
    """The largest value per group code (0..groups-1), NaN ignored; -inf for a group without a
    number (pandas' grouped max gives NaN there: both are "no scale" to its callers)."""
    out = np.full(groups, -np.inf)
    np.fmax.at(out, codes, values)
    return out


def cv_ci(cv_percent: np.ndarray, n: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Vangel's modified McKay interval of the CV (percent), vectorised; NaN where undefined.

    It assumes roughly normal values; its coverage is close to nominal from n = 5 on (the
    percentile bootstrap it replaces covered 68 % at n = 5).
    """
    k = np.asarray(cv_percent, dtype=float) / 100.0
    nu = np.asarray(n, dtype=float) - 1
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        u_hi = dist.chi2.ppf(1 - alpha / 2, nu)
        u_lo = dist.chi2.ppf(alpha / 2, nu)

        def bound(u: np.ndarray) -> np.ndarray:
            den = ((u + 2) / (nu + 1) - 1) * k * k + u / nu
            return np.where(den > 0, k / np.sqrt(den), np.inf)

        lo, hi = bound(u_hi), bound(u_lo)
    bad = ~np.isfinite(k) | (nu < 1)
    lo = np.where(bad, np.nan, lo)
    hi = np.where(bad | ~np.isfinite(hi), np.nan, hi)
    return 100 * lo, 100 * hi


def finite_or_nan(x: float) -> float:
    """``x`` as a float, NaN when it is not finite (never printed as a figure)."""
    x = float(x)
    return x if np.isfinite(x) else float("nan")


def key_groups(df: pd.DataFrame, keys: list[str], count: str) -> tuple[pd.DataFrame, np.ndarray]:
    """``df.groupby(keys, observed=True, sort=True)``'s ``size().reset_index(name=count)`` and
    ``ngroup()``; from the categorical codes where every key is a categorical without missing
    values and their combinations are few (a count per combination: no per-key int64 copies of
    the table, no sort), else through pandas."""
    fast = _category_groups(df, keys)
    if fast is None:
        grouped = df.groupby(keys, observed=True, sort=True)
        return grouped.size().reset_index(name=count), grouped.ngroup().to_numpy()
    codes, first = fast
    table = df[keys].iloc[first].reset_index(drop=True)
    table[count] = np.bincount(codes, minlength=len(first)).astype(np.int64)
    return table, codes


def _category_groups(df: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, np.ndarray] | None:
    """Group numbers in the order of the keys' category codes, and each group's first row."""
    space = 1
    for k in keys:
        col = df[k]
        if not isinstance(col.dtype, pd.CategoricalDtype) or (col.cat.codes.to_numpy() < 0).any():
            return None
        space *= max(len(col.cat.categories), 1)
        if space > 4 * len(df) + 65_536:
            return None
    combined = np.zeros(len(df), dtype=code_type(space))
    for k in keys:
        combined *= max(len(df[k].cat.categories), 1)  # in place: one array of n, not one per step
        combined += df[k].cat.codes.to_numpy()
    present = np.bincount(combined, minlength=space) > 0
    number = np.cumsum(present) - 1
    codes = number.astype(code_type(len(number)))[combined]  # 4 bytes a row
    del combined
    return codes, first_rows(codes, int(present.sum()))


def code_type(space: int) -> type[np.integer]:
    """The integer type of codes 0..space-1: 32 bits where they fit (4 bytes a row), else 64."""
    return np.int32 if space <= 2**31 else np.int64


def first_rows(codes: np.ndarray, space: int) -> np.ndarray:
    """Per code 0..space-1: the first row that has it (``len(codes)`` for none); a batch of rows
    at a time, so that no row number array of every row is made."""
    first = np.full(space, len(codes), dtype=np.int64)
    for lo in range(0, len(codes), GROUP_BATCH):
        part = codes[lo : lo + GROUP_BATCH]
        np.minimum.at(first, part, np.arange(lo, lo + len(part), dtype=np.int64))
    return first


def distinct_rows(df: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """``df[cols].drop_duplicates()`` (the first row of each distinct combination, in row order);
    from the categorical codes and booleans where every column is one (a count per code
    combination: no hashing of the rows), else through pandas."""
    widths = []
    for k in cols:
        col = df[k]
        if isinstance(col.dtype, pd.CategoricalDtype):
            widths.append(len(col.cat.categories) + 1)
        elif col.dtype == bool:
            widths.append(2)
        else:
            return df[cols].drop_duplicates()
    space = math.prod(widths)
    if space > 4 * len(df) + 65_536:
        return df[cols].drop_duplicates()
    combined = np.zeros(len(df), dtype=code_type(space))
    for k, width in zip(cols, widths, strict=True):
        col = df[k]
        c = col.cat.codes.to_numpy() if isinstance(col.dtype, pd.CategoricalDtype) else col.to_numpy()
        combined *= width  # in place: one array of n, not one per step
        combined += c
        if c.dtype != bool:
            combined[c < 0] += width  # a missing value (-1): a code of its own, width - 1
    first = first_rows(combined, space)
    return df[cols].iloc[np.sort(first[first < len(df)])]
