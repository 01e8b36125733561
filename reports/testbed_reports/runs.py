"""The unit below the machine: one value per run.

A run is one record (one execution of a benchmark on one host). Most workloads give one value per
metric and run; pyperformance gives its ~60 pyperf values of each benchmark in the record's
``samples`` and the loader keeps them as observations. Those values come from one process tree at
one time: they are not replicates of the run (docs/design.md section 6: "a run, not a value inside it, is
the unit below" the machine). Every statistic and decision therefore starts from :func:`runs`,
which summarises a run's values by their arithmetic mean (what pyperf reports for the run).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from testbed_reports.load import text_objects
from testbed_reports.numerics import batch_rows, group_batches, group_moments, key_groups

RUN_KEYS = ["benchmark", "metric", "label", "host"]


def run_codes(obs: pd.DataFrame) -> np.ndarray:
    """A run identifier per observation: the loader's record index, or the row for CSV rows."""
    if "record" not in obs:
        return -1 - np.arange(len(obs), dtype=np.int64)  # each CSV row (record -1) is its own run
    rec = pd.to_numeric(obs["record"], errors="coerce").fillna(-1).to_numpy(dtype=np.int64)
    if len(rec) and rec.min() >= 0:  # no CSV row: the records as they are, no second array
        return rec
    return np.where(rec >= 0, rec, -1 - np.arange(len(obs), dtype=np.int64))


def runs(obs: pd.DataFrame) -> pd.DataFrame:
    """One row per (benchmark, metric, label, host, run) with ``value`` = the mean of the run's values
    and ``values`` = how many there were (int8 ones where every run has one value: a byte a row);
    other columns keep the run's first value."""
    if obs.empty:
        return obs.assign(values=pd.Series(dtype=np.int64))
    metric = _text_codes(obs["metric"]) if "metric" in obs else np.zeros(len(obs), dtype=np.int64)
    key = run_codes(obs) * (int(metric.max()) + 1)  # a new array (the records' may be obs's own)
    key += metric  # in place: one integer per (run, metric)
    if _distinct(key):
        return obs.assign(values=np.ones(len(obs), dtype=np.int8))
    group = pd.factorize(key)[0]
    mom = group_moments(obs["value"].to_numpy(dtype=float), group, int(group.max()) + 1)
    first = np.unique(group, return_index=True)[1]
    out = obs.iloc[first].copy()
    out["value"] = mom.mean[group[first]]
    out["values"] = mom.n[group[first]].astype(np.int64)
    return out.reset_index(drop=True)


def _text_codes(col: pd.Series) -> np.ndarray:
    """An integer per row, equal where ``col.astype(str)`` is equal (a categorical through its
    categories: one string per category, not one per row)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        text = [str(x) for x in col.cat.categories] + [None]  # a missing value: one group of its own
        per_cat = pd.factorize(np.asarray(text, dtype=object), use_na_sentinel=False)[0]
        codes = col.cat.codes.to_numpy()
        return per_cat[np.where(codes < 0, len(text) - 1, codes)].astype(np.int64)
    return pd.factorize(col.astype(str).to_numpy(dtype=object), use_na_sentinel=False)[0].astype(np.int64)


def _distinct(key: np.ndarray) -> bool:
    """Whether no integer occurs twice (a mark per value where the range is small, as a run's
    record numbers times its metrics are: as many marked as integers; else a hash table)."""
    lo, hi = int(key.min()), int(key.max())
    if lo >= 0 and hi < 4 * len(key) + 1024:  # a byte per value in the range, not a count
        seen = np.zeros(hi + 1, dtype=bool)
        seen[key] = True
        return int(np.count_nonzero(seen)) == len(key)
    return len(pd.unique(key)) == len(key)


def run_order(obs: pd.DataFrame) -> np.ndarray:
    """A global order of the rows: start time (ISO 8601 text sorts in time), then repetition."""
    perm = _in_run_order(obs)
    place = np.empty(len(perm), dtype=np.int64)  # the inverse permutation: perm.argsort() in one pass
    place[perm] = np.arange(len(perm), dtype=np.int64)
    return place


def _in_run_order(obs: pd.DataFrame) -> np.ndarray:
    """The rows in run order (start time, then repetition; ties in row order)."""
    start = _start_ranks(obs["started_at"]) if "started_at" in obs else np.zeros(len(obs), dtype=np.int64)
    rep = pd.to_numeric(obs["repetition"], errors="coerce").fillna(0).to_numpy() if "repetition" in obs else 0
    return np.lexsort((np.broadcast_to(rep, len(obs)), start))


def _start_ranks(col: pd.Series) -> np.ndarray:
    """Integers that sort as ``col.astype(str)`` sorts: the rank of each distinct start time
    (sorted once, not compared row by row as Python strings). A categorical's codes when its
    categories are sorted text and none is missing (the store's start times), else as objects."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy()
        cats = col.cat.categories
        if all(type(u) is str for u in cats) and cats.is_monotonic_increasing and (codes >= 0).all():
            return codes
        col = text_objects(col)
    vals = col.to_numpy(dtype=object)
    codes, uniq = pd.factorize(vals, sort=True, use_na_sentinel=False)
    if all(type(u) is str for u in uniq):
        return codes
    # a missing or non-text start (a record may leave started_at out): sorted as its text, "None"
    # after every RFC 3339 time (pandas 3's astype(str) keeps a missing value missing instead)
    text = np.array([str(u) for u in uniq], dtype=object)
    return pd.factorize(text, sort=True)[0].astype(np.int64)[codes]


@dataclass
class Runs:
    """A report's observations summarised per run (:func:`runs`) with the groupings every statistic
    starts from, each computed once on first use and shared by ``stats.describe``,
    ``diagnostics.findings``, ``inference.sides`` and ``build.factorial``."""

    frame: pd.DataFrame
    _machines: tuple[pd.DataFrame, np.ndarray] | None = field(default=None, repr=False)
    _sequence: np.ndarray | None = field(default=None, repr=False)

    @classmethod
    def of(cls, obs: pd.DataFrame) -> Runs:
        """The runs of ``obs``."""
        return cls(runs(obs))

    def machines(self) -> tuple[pd.DataFrame, np.ndarray]:
        """One row per (benchmark, metric, label, host) with its run count ``n`` (sorted, as
        ``groupby(RUN_KEYS, observed=True, sort=True)``), and each run's row in it. The table is
        shared: copy it before adding columns."""
        if self._machines is None:
            self._machines = key_groups(self.frame, RUN_KEYS, "n")
        return self._machines

    def sequence(self) -> np.ndarray:
        """The runs' rows by machine group (``machines``), in run order (:func:`run_order`) within
        each: ``np.lexsort((order, codes))`` by a stable sort of the codes of the rows in run order
        (held as 32-bit positions where they fit)."""
        if self._sequence is None:
            in_order, codes = positions(_in_run_order(self.frame)), self.machines()[1]
            self._sequence = in_order[stable_order(codes[in_order])]
        return self._sequence


def positions(rows: np.ndarray) -> np.ndarray:
    """Row positions as 32-bit integers where every one fits (half the memory), else as given."""
    return rows.astype(np.int32) if len(rows) and int(rows.max()) < 2**31 else rows


def as_runs(obs: pd.DataFrame, shared: Runs | None = None) -> Runs:
    """``shared`` (the runs of ``obs``, computed by the caller) or the runs of ``obs``."""
    return shared if shared is not None else Runs.of(obs)


def group_sort(keys: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Row positions sorted by group code, then by key within a group (rows of equal code and key
    in any order): a stable counting sort of the codes and a sort of the keys (of each group's
    keys where the groups are few and large), not a lexsort."""
    n = len(keys)
    by_code = stable_order(codes)
    c = codes[by_code]
    bounds = np.flatnonzero(c[1:] != c[:-1]) + 1
    if len(bounds) >= max(64, n // 4096):  # many small groups: one sort of all the keys
        by_key = np.argsort(keys)
        return by_key[stable_order(codes[by_key])]
    k = keys[by_code]
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, n], strict=True):  # a few large groups: each sorted
        by_code[lo:hi] = by_code[lo:hi][np.argsort(k[lo:hi])]
    return by_code


def stable_order(codes: np.ndarray) -> np.ndarray:
    """``np.argsort(codes, kind="stable")``; as 16-bit integers where the codes fit (numpy sorts
    those by radix, in linear time)."""
    small = len(codes) and codes.min() >= 0 and codes.max() < 2**15
    return np.argsort(codes.astype(np.int16) if small else codes, kind="stable")


def ranks_in_sequence(sequence: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Each row's 1-based place within its group, as floats, for rows ``sequence`` sorted by group
    then by a key without ties (``Runs.sequence``): ``group_ranks`` of that key."""
    _, start = _group_starts(codes[sequence])
    place = np.arange(1, len(sequence) + 1, dtype=np.int64)
    place -= start  # in place: one array of n besides ``start``
    del start
    out = np.empty(len(sequence), dtype=float)
    out[sequence] = place
    return out


def _group_starts(sorted_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For codes sorted so that each group's rows are together: whether each row begins its group,
    and the position where its group begins."""
    new_group = np.ones(len(sorted_codes), dtype=bool)
    np.not_equal(sorted_codes[1:], sorted_codes[:-1], out=new_group[1:])
    start = np.arange(len(sorted_codes), dtype=np.int64)
    start[~new_group] = 0
    return new_group, np.maximum.accumulate(start, out=start)  # in place: one array of n


def group_ranks(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """``pd.Series(values).groupby(codes).rank()`` (average ranks of ties, within each group; NaN
    stays NaN) by one sort (:func:`group_sort`) instead of pandas' grouped rank; a batch of
    whole groups at a time (``numerics.group_batches``: the same ranks, the sort's working
    arrays of a batch, not of every row)."""
    values = np.asarray(values, dtype=float)
    if np.isnan(values).any():
        return pd.Series(values).groupby(codes).rank().to_numpy(copy=True)  # writable: callers reuse it
    batches = group_batches(codes)
    if batches is None:
        return _ranks(values, codes)
    out = np.empty(len(values), dtype=float)
    for lo, hi in batches:
        rows = batch_rows(codes, lo, hi)
        out[rows] = _ranks(values[rows], codes[rows])
    return out


def _ranks(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """:func:`group_ranks` of values without NaN, every row at once."""
    n = len(values)
    idx = group_sort(values, codes)
    new_tie, group_start = _group_starts(codes[idx])  # a group's first row begins a run of ties
    v = values[idx]
    new_tie[1:] |= v[1:] != v[:-1]  # and so does a new value: runs of equal (group, value)
    del v
    tie_first = np.flatnonzero(new_tie).astype(np.int64, copy=False)
    tie_id = np.cumsum(new_tie, dtype=np.int64)
    tie_id -= 1
    del new_tie
    tie_last = np.append(tie_first[1:], n) - 1
    # ranks low..high (1-based within the group) share (low + high) / 2, exact in binary; the
    # integer sum built in place (each array of n freed once used)
    twice = tie_first[tie_id]
    twice += tie_last[tie_id]
    del tie_first, tie_last, tie_id
    group_start *= 2
    twice -= group_start
    del group_start
    twice += 2
    out = np.empty(n, dtype=float)
    out[idx] = twice / 2
    return out
