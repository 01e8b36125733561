"""The unit below the machine: one value per run.

A run is one record (one execution of a benchmark on one host). Most workloads give one value per
metric and run; pyperformance gives its ~60 pyperf values of each benchmark in the record's
``samples`` and the loader keeps them as observations. Those values come from one process tree at
one time: they are not replicates of the run (docs/design.md section 6: "a run, not a value inside it, is
the unit below" the machine). Every statistic and decision therefore starts from :func:`runs`,
which summarises a run's values by their arithmetic mean (what pyperf reports for the run).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from testbed_reports.numerics import group_moments

RUN_KEYS = ["benchmark", "metric", "label", "host"]


def run_codes(obs: pd.DataFrame) -> np.ndarray:
    """A run identifier per observation: the loader's record index, or the row for CSV rows."""
    row = -1 - np.arange(len(obs), dtype=np.int64)  # each CSV row (record -1) is its own run
    if "record" not in obs:
        return row
    rec = pd.to_numeric(obs["record"], errors="coerce").fillna(-1).to_numpy(dtype=np.int64)
    return np.where(rec >= 0, rec, row)


def runs(obs: pd.DataFrame) -> pd.DataFrame:
    """One row per (benchmark, metric, label, host, run) with ``value`` = the mean of the run's values
    and ``values`` = how many there were; other columns keep the run's first value."""
    if obs.empty:
        return obs.assign(values=pd.Series(dtype=np.int64))
    metric = _text_codes(obs["metric"]) if "metric" in obs else np.zeros(len(obs), dtype=np.int64)
    key = run_codes(obs) * (int(metric.max()) + 1) + metric  # one integer per (run, metric)
    if _distinct(key):
        return obs.assign(values=np.ones(len(obs), dtype=np.int64))
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
    """Whether no integer occurs twice (a count per value where the range is small, as a run's
    record numbers times its metrics are; else a hash table)."""
    lo, hi = int(key.min()), int(key.max())
    if lo >= 0 and hi < 4 * len(key) + 1024:
        return int(np.bincount(key, minlength=1).max()) <= 1
    return len(pd.unique(key)) == len(key)
