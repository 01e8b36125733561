"""Checks printed beside each verdict: run-order drift, outliers, bimodality, too few runs, time windows.

All are computed per machine (a label's machines are never mixed) over its runs (``runs.py``: a
pyperformance run's values are one run) in run order (start time, then repetition), vectorised over
every group. Nothing is removed: an outlier is flagged and kept.

Drift has two checks; when either fires on a machine, its run-level verdicts say that the level
moved and that the statement is about the mean over the runs measured (``compare.drift_note``; the
run noise of such comparisons comes from successive differences, which drift hardly inflates):

- trend: Spearman correlation of value with run order, p < DRIFT_P, from DRIFT_MIN_N runs;
- level stability: the KPSS statistic of the (log) values about their mean, eta =
  sum(S_t^2) / (n^2 s^2) with S_t the partial sums (the locally best test against a random-walk
  level), p from its limiting Cramer-von Mises law (Anderson & Darling 1952), below STABLE_P from
  STABLE_MIN_N runs (its size at 8-30 normal runs: 4.7-5.2 %, seeded simulation).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import special as spf

from testbed_reports import dist
from testbed_reports.numerics import batch_rows, group_batches, group_max, group_spans
from testbed_reports.runs import (
    Runs,
    as_runs,
    group_ranks,
    group_sort,
    ranks_in_sequence,
    run_order,
)

#: robust z (distance from the median in MADs x 1.4826) beyond which a run is flagged an outlier,
#: checked from OUTLIER_MIN_N runs (normal data, 10 runs: 3.5 % of machines get a false flag; 3.5 gave 12 %)
OUTLIER_Z = 5.0
OUTLIER_MIN_N = 8
#: drift: Spearman correlation of value with run order, at least this many runs, p below DRIFT_P
DRIFT_MIN_N = 6
DRIFT_P = 0.01
#: bimodality coefficient above which (with at least BIMODAL_MIN_N runs) a sample looks bimodal
BIMODAL_BC = 0.555
#: level stability (KPSS): p below STABLE_P, from STABLE_MIN_N runs
STABLE_P = 0.05
STABLE_MIN_N = 8
BIMODAL_MIN_N = 20
MIN_RUNS = 5
KEYS = ["benchmark", "metric", "label", "host"]


def _sums(codes: np.ndarray, w: np.ndarray, g: int) -> np.ndarray:
    return np.bincount(codes, weights=w, minlength=g)


def _drift(
    obs: pd.DataFrame,
    codes: np.ndarray,
    n: np.ndarray,
    sequence: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Spearman rho of value with run order per group, and its p (``sequence``: the rows by group
    in run order, ``runs.Runs.sequence``, a span of whole groups at a time; from ``run_order``
    when not given)."""
    values = obs["value"].to_numpy(dtype=float)
    if sequence is None:
        rho = _rank_correlation(group_ranks(values, codes), group_ranks(run_order(obs), codes), codes, n)
    else:
        rho = np.empty(len(n))
        ends = np.cumsum(np.bincount(codes, minlength=len(n)))  # the groups' ends in ``sequence``
        for lo, hi in group_spans(ends):
            seg = sequence[(int(ends[lo - 1]) if lo else 0) : int(ends[hi - 1])]
            rows = np.sort(seg)  # the span's rows in row order, as a whole-array sum adds them
            c = codes[rows]
            ro = ranks_in_sequence(np.searchsorted(rows, seg), c)
            rho[lo:hi] = _rank_correlation(group_ranks(values[rows], c), ro, c, n)[lo:hi]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = rho * np.sqrt((n - 2) / np.maximum(1 - rho * rho, 1e-12))
    p = 2 * dist.t.sf(np.abs(t), np.maximum(n - 2, 1))
    return rho, np.where(np.isfinite(rho) & (n >= DRIFT_MIN_N), p, 1.0)


def _rank_correlation(rv: np.ndarray, ro: np.ndarray, codes: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Per group: the correlation of the ranks ``rv`` and ``ro`` (both overwritten)."""
    g = len(n)
    mv, mo = _sums(codes, rv, g) / n, _sums(codes, ro, g) / n
    dv = np.subtract(rv, mv[codes], out=rv)  # in place: the rank arrays become the deviations
    do = np.subtract(ro, mo[codes], out=ro)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _sums(codes, dv * do, g) / np.sqrt(_sums(codes, dv * dv, g) * _sums(codes, do * do, g))


def cvm_sf(x: np.ndarray) -> np.ndarray:
    """Upper tail of the limiting Cramer-von Mises law (the KPSS level statistic's), vectorised."""
    x = np.asarray(x, dtype=float)
    ok = np.isfinite(x) & (x > 0)
    xs = np.where(ok, x, 1.0)
    tot = np.zeros_like(xs)
    for k in range(200):
        y = 4 * k + 1
        q = y * y / (16 * xs)
        term = np.exp(spf.gammaln(k + 0.5) - spf.gammaln(k + 1)) / (np.pi**1.5 * np.sqrt(xs))
        term = term * np.sqrt(y) * spf.kve(0.25, q)  # kve = kv * exp(q): exp(-q) * kv = kve * exp(-2q)
        term = term * np.exp(-2 * q)
        tot += term
        if np.all(np.abs(term) < 1e-12):
            break
    return np.where(ok, np.clip(1.0 - tot, 0.0, 1.0), np.where(x == 0, 1.0, np.nan))


def _stability(y: np.ndarray, codes: np.ndarray, n: np.ndarray, sequence: np.ndarray) -> np.ndarray:
    """KPSS level-stability p per group (values in run order: ``sequence``, the rows by group in
    run order, ``runs.Runs.sequence``, a span of whole groups at a time); 1.0 below
    STABLE_MIN_N runs."""
    g = len(n)
    ends = np.cumsum(np.bincount(codes, minlength=g))  # the groups' ends in ``sequence``
    sq, ee = np.zeros(g), np.zeros(g)
    carry: float | None = None
    for lo, hi in group_spans(ends):
        seg = sequence[(int(ends[lo - 1]) if lo else 0) : int(ends[hi - 1])]
        part_sq, part_ee, carry = _kpss_sums(y, codes, n, seg, carry)
        sq[lo:hi], ee[lo:hi] = part_sq[lo:hi], part_ee[lo:hi]
    with np.errstate(all="ignore"):
        eta = sq / (n * ee)
    p = cvm_sf(eta)
    return np.where((n >= STABLE_MIN_N) & np.isfinite(p), p, 1.0)


def _kpss_sums(
    y: np.ndarray,
    codes: np.ndarray,
    n: np.ndarray,
    idx: np.ndarray,
    carry: float | None,
) -> tuple[np.ndarray, np.ndarray, float | None]:
    """For the rows ``idx`` (whole groups, in run order): per group the sums of the squared
    partial sums and of the squared deviations, and the running sum at the end. ``carry``: the
    running sum before these rows (None: none), so that it runs on as over every row at once."""
    g = len(n)
    if not len(idx):
        return np.zeros(g), np.zeros(g), carry
    c, v = codes[idx], y[idx]
    scale = group_max(np.abs(v), c, g)
    v /= np.where((scale > 0) & np.isfinite(scale), scale, 1.0)[c]  # eta is scale-free
    e = np.subtract(v, (_sums(c, v, g) / n)[c], out=v)  # each step in place: a few arrays of n
    csum = np.cumsum(e) if carry is None else np.cumsum(np.concatenate(([carry], e)))[1:]
    last = float(csum[-1])
    start = np.concatenate(([0], np.cumsum(np.bincount(c, minlength=g))[:-1]))
    before = np.where(start > 0, csum[np.maximum(start - 1, 0)], 0.0 if carry is None else carry)
    partial = np.subtract(csum, before[c], out=csum)
    sq = _sums(c, np.multiply(partial, partial, out=partial), g)
    return sq, _sums(c, np.multiply(e, e, out=e), g), last


def _outliers(values: np.ndarray, codes: np.ndarray, g: int) -> np.ndarray:
    """Count per group of runs more than OUTLIER_Z robust z-scores from the group median, a
    batch of whole groups at a time (``numerics.group_batches``)."""
    batches = group_batches(codes)
    if batches is None:
        return _flagged(values, codes, g)
    out = np.zeros(g)
    for lo, hi in batches:
        rows = batch_rows(codes, lo, hi)
        out[lo:hi] = _flagged(values[rows], codes[rows], g)[lo:hi]
    return out


def _flagged(values: np.ndarray, codes: np.ndarray, g: int) -> np.ndarray:
    """:func:`_outliers` of every row at once."""
    with np.errstate(all="ignore"):
        dev = _row_medians(values, codes, g)
        dev = np.abs(np.subtract(values, dev, out=dev), out=dev)  # in place, as each step below
        mad = _row_medians(dev, codes, g)
        mad *= 1.4826
        z = np.divide(dev, mad, out=dev)  # z where mad > 0; 0 (not an outlier) elsewhere
        flagged = (z > OUTLIER_Z) & (mad > 0)
    return np.bincount(codes[flagged], minlength=g).astype(float)  # the few flagged rows' codes


def _row_medians(values: np.ndarray, codes: np.ndarray, g: int) -> np.ndarray:
    """Each row's group median, ``pd.Series(values).groupby(codes).transform("median")``: from one
    sort of the rows by group and value (``runs.group_sort``), a group's middle value or the mean
    of its two middle ones, as pandas takes them (with a NaN, pandas' own; a zero median may differ
    in its sign, which the distances from it do not see); a batch of whole groups at a time
    (``numerics.group_batches``)."""
    if np.isnan(values).any():
        return pd.Series(values).groupby(codes).transform("median").to_numpy(copy=True)  # writable
    batches = group_batches(codes)
    if batches is None:
        return _sorted_medians(values, codes, g)
    out = np.empty(len(values), dtype=float)
    for lo, hi in batches:
        rows = batch_rows(codes, lo, hi)
        out[rows] = _sorted_medians(values[rows], codes[rows], g)
    return out


def _sorted_medians(values: np.ndarray, codes: np.ndarray, g: int) -> np.ndarray:
    """:func:`_row_medians` of values without NaN, every row at once."""
    counts = np.bincount(codes, minlength=g)
    start = np.cumsum(counts) - counts
    last = max(len(values) - 1, 0)
    sorted_values = values[group_sort(values, codes)]
    lo = sorted_values[np.minimum(start + np.maximum(counts - 1, 0) // 2, last)]
    hi = sorted_values[np.minimum(start + counts // 2, last)]
    del sorted_values
    med = np.where(counts % 2 == 1, lo, (lo + hi) / 2)
    return np.where(counts > 0, med, np.nan)[codes]


def _bimodality(values: np.ndarray, codes: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Sarle's bimodality coefficient per group from the bias-corrected skewness and kurtosis of the
    log values (so a lognormal tail is not mistaken for a second mode); NaN below BIMODAL_MIN_N runs
    or with zero spread. Normal data, 20 runs: 0.7 % flagged; two modes 5 sd apart: 42 % (70 % at 30).
    A batch of whole groups at a time (``numerics.group_batches``)."""
    batches = group_batches(codes)
    if batches is None:
        return _coefficients(values, codes, n)
    out = np.full(len(n), np.nan)  # NaN: a group past the codes, as without runs
    for lo, hi in batches:
        rows = batch_rows(codes, lo, hi)
        out[lo:hi] = _coefficients(values[rows], codes[rows], n)[lo:hi]
    return out


def _coefficients(values: np.ndarray, codes: np.ndarray, n: np.ndarray) -> np.ndarray:
    """:func:`_bimodality` of every row at once."""
    g = len(n)
    with np.errstate(all="ignore"):
        values = np.where(values > 0, np.log(np.where(values > 0, values, 1.0)), values)
    scale = group_max(np.abs(values), codes, g)
    scale = np.where(scale > 0, scale, 1.0)
    y = np.divide(values, scale[codes], out=values)  # in place: one array of n (and a term)
    d = np.subtract(y, (_sums(codes, y, g) / n)[codes], out=y)
    m2, m3, m4 = (_sums(codes, d**k, g) / n for k in (2, 3, 4))
    with np.errstate(all="ignore"):
        g1, g2 = m3 / m2**1.5, m4 / m2**2 - 3
        skew = g1 * np.sqrt(n * (n - 1)) / (n - 2)
        kurt = ((n + 1) * g2 + 6) * (n - 1) / ((n - 2) * (n - 3))
        bc = (skew**2 + 1) / (kurt + 3 * (n - 1) ** 2 / ((n - 2) * (n - 3)))
    return np.where((n >= BIMODAL_MIN_N) & (m2 > 0), bc, np.nan)


def _logs(values: np.ndarray, codes: np.ndarray, g: int) -> np.ndarray:
    """Log values for groups whose values are all positive, raw values elsewhere."""
    positive = np.bincount(codes[values <= 0], minlength=g) == 0
    with np.errstate(all="ignore"):
        return np.where(positive[codes], np.log(np.where(values > 0, values, 1.0)), values)


@dataclass(frozen=True)
class Drift:
    """A machine whose runs drift, and why."""

    host: str
    text: str


def findings(
    obs: pd.DataFrame, stable_p: float = STABLE_P, shared: Runs | None = None
) -> tuple[dict[tuple[str, str, str], list[str]], dict[tuple[str, str, str], list[Drift]]]:
    """Per (benchmark, metric, label): readable notes, and the machines whose runs drift.

    ``stable_p``: the KPSS level-stability p below which a machine counts as drifting (``build
    --drift-p``; a note, it changes no interval or decision: docs/report.md *Drift*); ``shared``:
    the runs of ``obs`` when the caller has them (``runs.Runs``).
    """
    if obs.empty:
        return {}, {}
    rs = as_runs(obs, shared)
    obs = rs.frame
    table, codes = rs.machines()
    n = table["n"].to_numpy(dtype=float)
    values = obs["value"].to_numpy(dtype=float)
    sequence = rs.sequence()
    rho, p = _drift(obs, codes, n, sequence)
    stable = _stability(_logs(values, codes, len(n)), codes, n, sequence)  # the logs freed after
    outl = _outliers(values, codes, len(n))
    bc = _bimodality(values, codes, n)
    out: dict[tuple[str, str, str], list[str]] = {}
    drift: dict[tuple[str, str, str], list[Drift]] = {}
    for i, (bench, metric, label, host) in enumerate(table[KEYS].astype(str).itertuples(index=False)):
        notes = out.setdefault((bench, metric, label), [])
        if n[i] < MIN_RUNS:
            notes.append(f"{host}: only {int(n[i])} runs (fewer than {MIN_RUNS}: weak test, wide interval)")
        if p[i] < DRIFT_P:
            way = "rise" if rho[i] > 0 else "fall"
            text = f"{host}: values {way} with run order (drift, Spearman rho={rho[i]:+.2f}, p={p[i]:.2g})"
        elif stable[i] < stable_p:
            text = f"{host}: level not stable over the runs (drift, KPSS p={stable[i]:.2g})"
        else:
            text = ""
        if text:
            notes.append(text)
            drift.setdefault((bench, metric, label), []).append(Drift(host, text))
        if outl[i] and n[i] >= OUTLIER_MIN_N:
            notes.append(f"{host}: {int(outl[i])} outlier(s) beyond robust z {OUTLIER_Z:g} (flagged, kept)")
        if np.isfinite(bc[i]) and bc[i] > BIMODAL_BC:
            notes.append(f"{host}: looks bimodal (bimodality coefficient {bc[i]:.2f} > {BIMODAL_BC})")
    return out, drift


#: records whose times ``windows`` parses at a time (parsing all of a large run at once costs ~190 MiB)
WINDOW_CHUNK = 200_000


def windows(records: pd.DataFrame) -> dict[str, tuple[pd.Timestamp, pd.Timestamp]]:
    """Per label: the first start and the last end (or start) of its records, UTC."""
    if records.empty:
        return {}
    parts = [_window_part(records.iloc[i : i + WINDOW_CHUNK]) for i in range(0, len(records), WINDOW_CHUNK)]
    df = pd.concat(parts)
    if df.empty:
        return {}
    agg = df.groupby("label").agg(start=("start", "min"), end=("end", "max"))
    return {str(k): (r.start, r.end) for k, r in agg.iterrows()}


def _window_part(records: pd.DataFrame) -> pd.DataFrame:
    """Per label of these records: their first start and last end (or start), UTC."""
    start = _utc(records["started_at"])
    end_col = records["ended_at"] if "ended_at" in records else records["started_at"]
    end = _utc(end_col).fillna(start)
    df = pd.DataFrame({"label": records["label"].astype(str), "start": start, "end": end}).dropna()
    return df.groupby("label").agg(start=("start", "min"), end=("end", "max")).reset_index()


def _utc(col: pd.Series) -> pd.Series:
    """RFC 3339 text as UTC times in nanoseconds (a text without a fraction would parse to seconds,
    and filling one unit's gaps from another's is deprecated in pandas); unparsable: NaT. The
    store's categorical is parsed as text (a chunk's values, not all of its categories)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        col = col.astype(object)
    return pd.to_datetime(col, utc=True, errors="coerce", format="ISO8601").dt.as_unit("ns")


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
