"""Checks printed beside each verdict: run-order drift, outliers, bimodality, too few runs, time windows.

All are computed per machine (a label's machines are never mixed) and vectorised over every group.
Nothing is removed: an outlier is flagged and kept.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

#: robust z (distance from the median in MADs x 1.4826) beyond which a run is flagged an outlier,
#: checked from OUTLIER_MIN_N runs (normal data, 10 runs: 3.5 % of machines get a false flag; 3.5 gave 12 %)
OUTLIER_Z = 5.0
OUTLIER_MIN_N = 8
#: drift: Spearman correlation of value with run order, at least this many runs, p below DRIFT_P
DRIFT_MIN_N = 6
DRIFT_P = 0.01
#: bimodality coefficient above which (with at least BIMODAL_MIN_N runs) a sample looks bimodal
BIMODAL_BC = 0.555
BIMODAL_MIN_N = 20
MIN_RUNS = 5
KEYS = ["benchmark", "metric", "label", "host"]


def _host_table(obs: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    grouped = obs.groupby(KEYS, observed=True, sort=True)
    return grouped.size().reset_index(name="n"), grouped.ngroup().to_numpy()


def _sums(codes: np.ndarray, w: np.ndarray, g: int) -> np.ndarray:
    return np.bincount(codes, weights=w, minlength=g)


def _drift(obs: pd.DataFrame, codes: np.ndarray, n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spearman rho of value with run order (repetition) per group, and its p."""
    key = obs["repetition"].to_numpy(dtype=float)
    rv = pd.Series(obs["value"].to_numpy(dtype=float)).groupby(codes).rank().to_numpy()
    ro = pd.Series(key).groupby(codes).rank().to_numpy()
    g = len(n)
    mv, mo = _sums(codes, rv, g) / n, _sums(codes, ro, g) / n
    dv, do = rv - mv[codes], ro - mo[codes]
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = _sums(codes, dv * do, g) / np.sqrt(_sums(codes, dv * dv, g) * _sums(codes, do * do, g))
        t = rho * np.sqrt((n - 2) / np.maximum(1 - rho * rho, 1e-12))
    p = 2 * sps.t.sf(np.abs(t), np.maximum(n - 2, 1))
    return rho, np.where(np.isfinite(rho) & (n >= DRIFT_MIN_N), p, 1.0)


def _outliers(values: np.ndarray, codes: np.ndarray, g: int) -> np.ndarray:
    """Count per group of runs more than OUTLIER_Z robust z-scores from the group median."""
    s = pd.Series(values).groupby(codes)
    med = s.transform("median").to_numpy()
    with np.errstate(all="ignore"):
        dev = np.abs(values - med)
        mad = pd.Series(dev).groupby(codes).transform("median").to_numpy() * 1.4826
        z = np.where(mad > 0, dev / mad, 0.0)
    return np.bincount(codes, weights=(z > OUTLIER_Z).astype(float), minlength=g)


def _bimodality(values: np.ndarray, codes: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Sarle's bimodality coefficient per group from the bias-corrected skewness and kurtosis of the
    log values (so a lognormal tail is not mistaken for a second mode); NaN below BIMODAL_MIN_N runs
    or with zero spread. Normal data, 20 runs: 0.7 % flagged; two modes 5 sd apart: 42 % (70 % at 30)."""
    g = len(n)
    with np.errstate(all="ignore"):
        values = np.where(values > 0, np.log(np.where(values > 0, values, 1.0)), values)
    scale = pd.Series(np.abs(values)).groupby(codes).max().reindex(range(g)).to_numpy()
    scale = np.where(scale > 0, scale, 1.0)
    y = values / scale[codes]
    d = y - (_sums(codes, y, g) / n)[codes]
    m2, m3, m4 = (_sums(codes, d**k, g) / n for k in (2, 3, 4))
    with np.errstate(all="ignore"):
        g1, g2 = m3 / m2**1.5, m4 / m2**2 - 3
        skew = g1 * np.sqrt(n * (n - 1)) / (n - 2)
        kurt = ((n + 1) * g2 + 6) * (n - 1) / ((n - 2) * (n - 3))
        bc = (skew**2 + 1) / (kurt + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))
    return np.where((n >= BIMODAL_MIN_N) & (m2 > 0), bc, np.nan)


def diagnostics(obs: pd.DataFrame) -> dict[tuple[str, str, str], list[str]]:
    """Per (benchmark, metric, label): readable findings (empty list when nothing to say)."""
    if obs.empty:
        return {}
    table, codes = _host_table(obs)
    n = table["n"].to_numpy(dtype=float)
    values = obs["value"].to_numpy(dtype=float)
    rho, p = _drift(obs, codes, n)
    outl = _outliers(values, codes, len(n))
    bc = _bimodality(values, codes, n)
    out: dict[tuple[str, str, str], list[str]] = {}
    for i, (bench, metric, label, host) in enumerate(table[KEYS].astype(str).itertuples(index=False)):
        notes = out.setdefault((bench, metric, label), [])
        if n[i] < MIN_RUNS:
            notes.append(f"{host}: only {int(n[i])} runs (fewer than {MIN_RUNS}: weak test, wide interval)")
        if p[i] < DRIFT_P:
            way = "rise" if rho[i] > 0 else "fall"
            notes.append(
                f"{host}: values {way} with run order (drift, Spearman rho={rho[i]:+.2f}, p={p[i]:.2g})"
            )
        if outl[i] and n[i] >= OUTLIER_MIN_N:
            notes.append(f"{host}: {int(outl[i])} outlier(s) beyond robust z {OUTLIER_Z:g} (flagged, kept)")
        if np.isfinite(bc[i]) and bc[i] > BIMODAL_BC:
            notes.append(f"{host}: looks bimodal (bimodality coefficient {bc[i]:.2f} > {BIMODAL_BC})")
    return out


def windows(records: pd.DataFrame) -> dict[str, tuple[pd.Timestamp, pd.Timestamp]]:
    """Per label: the first start and the last end (or start) of its records, UTC."""
    if records.empty:
        return {}
    start = pd.to_datetime(records["started_at"], utc=True, errors="coerce", format="ISO8601")
    end_col = records["ended_at"] if "ended_at" in records else records["started_at"]
    end = pd.to_datetime(end_col, utc=True, errors="coerce", format="ISO8601").fillna(start)
    df = pd.DataFrame({"label": records["label"].astype(str), "start": start, "end": end}).dropna()
    agg = df.groupby("label").agg(start=("start", "min"), end=("end", "max"))
    return {str(k): (r.start, r.end) for k, r in agg.iterrows()}


def overlap_note(a: str, b: str, win: dict[str, tuple[pd.Timestamp, pd.Timestamp]]) -> str:
    """'' when a's and b's time windows overlap; otherwise a note that time is confounded."""
    if a not in win or b not in win:
        return f"time windows unknown for {a if a not in win else b} (no start times)"
    (sa, ea), (sb, eb) = win[a], win[b]
    if sa <= eb and sb <= ea:
        return ""
    first, second = (a, b) if ea < sb else (b, a)
    gap = (max(sa, sb) - min(ea, eb)).total_seconds()
    return (
        f"not measured at the same time: {first} ran before {second} ({_duration(gap)} apart); "
        "time effects are confounded with the labels"
    )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
