"""Plan parameters as factors: one row per observation with every parameter a column, and the
two-way ANOVA / per-cell tables over them (issue 17 item 5)."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from testbed_reports import svgplot
from testbed_reports.anova import anova_codes, tukey
from testbed_reports.errors import ReportError
from testbed_reports.inference import primary_set
from testbed_reports.load import OBS_COLUMNS, Dataset, text_objects
from testbed_reports.runs import run_codes, runs
from testbed_reports.stats import summaries
from testbed_shared.safecsv import write_frame

PARAM_PREFIX = "param."
#: a parameter (or the label) is a factor of a metric when it takes 2..MAX_LEVELS values there
MAX_LEVELS = 12
#: the observation columns written first, in the loader's order (without its internal ``record`` link
#: and ``primary`` flag)
EXPORT_COLUMNS = [c for c in OBS_COLUMNS if c not in ("record", "primary")]


def _flatten(params: Any, prefix: str = PARAM_PREFIX) -> dict[str, Any]:
    """Nested parameters as ``param.a.b`` columns; lists as JSON text."""
    out: dict[str, Any] = {}
    if not isinstance(params, dict):
        return out
    for k, v in params.items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        elif isinstance(v, (list, tuple)):
            out[f"{prefix}{k}"] = json.dumps(v, sort_keys=True)
        else:
            out[f"{prefix}{k}"] = v
    return out


def observations(ds: Dataset) -> pd.DataFrame:
    """One row per observation: the record fields, telemetry and every plan parameter as a column."""
    obs = ds.obs
    table = obs[[c for c in EXPORT_COLUMNS if c in obs]].copy()
    if "started_at" in table:  # the store's categorical: written as the loader's objects
        table["started_at"] = text_objects(table["started_at"])
    rec = obs["record"].to_numpy() if "record" in obs else np.full(len(obs), -1)
    valid = rec >= 0
    if len(ds.records):
        for col in ("cpu_percent", "steal_percent"):
            vals = (
                ds.records[col].to_numpy(dtype=float)
                if col in ds.records
                else np.full(len(ds.records), np.nan)
            )
            table[col] = np.where(valid, vals[np.where(valid, rec, 0)], np.nan)
    flat = pd.DataFrame([_flatten(p) for p in ds.params]) if ds.params else pd.DataFrame()
    for col in sorted(flat.columns):
        vals = flat[col].to_numpy(dtype=object)
        table[col] = np.where(valid, vals[np.where(valid, rec, 0)], None)
    return table


def export_csv(ds: Dataset, path: Path) -> int:
    """Write the observation table as CSV; returns the number of rows."""
    table = observations(ds)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_frame(table, path, what="export")  # safe CSV cells, atomic (issue 26)
    except OSError as exc:
        raise ReportError(f"{path}: cannot write CSV ({exc.strerror})") from None
    return len(table)


def _factors(part: pd.DataFrame) -> list[str]:
    """Columns of one metric's rows that vary over 2..MAX_LEVELS scalar values (label included).

    List parameters (JSON text, e.g. a dd step list) are not factors, and a column that splits the
    rows exactly as an earlier one does (``profile`` and a ``platform`` label) is left out.
    """
    out, seen = [], set()
    for col in ["label", *sorted(c for c in part.columns if c.startswith(PARAM_PREFIX))]:
        vals = part[col]
        text = vals.astype(str)
        if vals.isna().any() or text.str.startswith("[").any():
            continue
        codes, levels = pd.factorize(text)
        partition = tuple(pd.factorize(codes)[0])
        if 2 <= len(levels) <= MAX_LEVELS and partition not in seen:
            seen.add(partition)
            out.append(col)
    return out


def cells(y: np.ndarray, keys: pd.DataFrame) -> list[dict[str, Any]]:
    """Per cell: n, mean, sd, CV % and the 95% CI (stats.summaries: of the geometric mean when the
    values are positive)."""
    codes, uniq = pd.factorize(pd.MultiIndex.from_frame(keys.astype(str)), sort=True)
    table = summaries(y, codes, len(uniq))
    cols = ["n", "mean", "sd", "cv_percent", "geomean", "ci95_low", "ci95_high", "ci_scale"]
    return [
        {**dict(zip(keys.columns, key, strict=True)), **row}
        for key, row in zip(uniq, table[cols].to_dict(orient="records"), strict=True)
    ]


def primary_mask(obs: pd.DataFrame) -> np.ndarray:
    """True for the observations of primary metrics (vectorised over (benchmark, metric) groups)."""
    primary = primary_set(obs)
    grouped = obs.groupby(["benchmark", "metric"], observed=True, sort=True)
    keys = [(str(b), str(m)) in primary for b, m in grouped.size().index]
    return np.asarray(keys, dtype=bool)[grouped.ngroup().to_numpy()]


def parameter_anova(ds: Dataset, log: bool = True, max_pairs: int = 10) -> list[dict[str, Any]]:
    """Two-way ANOVA over each fully crossed pair of factors (plan parameters, label) of every
    primary metric of a workload type, with the per-cell table."""
    return parameter_anova_of([parameter_runs(ds)], log, max_pairs)


def parameter_runs(ds: Dataset) -> pd.DataFrame | None:
    """The runs of the primary metrics with their parameters as columns (a run is the unit), in
    row order; None without parameters. ``record`` is the run's record (< 0: a CSV row)."""
    if ds.obs.empty or not any(ds.params):
        return None
    table = observations(ds).assign(record=run_codes(ds.obs))
    return runs(table[primary_mask(ds.obs)]).drop(columns=["values"])


def parameter_anova_of(
    tables: Sequence[pd.DataFrame | None], log: bool = True, max_pairs: int = 10
) -> list[dict[str, Any]]:
    """:func:`parameter_anova` over the runs of several parts of one dataset (``parameter_runs``
    of each part, parts of whole benchmarks), put back in the whole dataset's order: by record,
    the CSV rows (no record, no parameters) after them in part order."""
    given = [t for t in tables if t is not None]
    if not given:
        return []
    table = given[0] if len(given) == 1 else pd.concat(given, ignore_index=True)
    if len(given) > 1:
        rec = table["record"].to_numpy(dtype=np.int64)
        table = table.iloc[np.argsort(np.where(rec >= 0, rec, np.iinfo(np.int64).max), kind="stable")]
    table = table.drop(columns=["record"]).reset_index(drop=True)
    out: list[dict[str, Any]] = []
    for (btype, metric), part in table.groupby(["type", "metric"], observed=True, sort=True):
        entries = (
            _one(part, str(btype), str(metric), fa, fb, log)
            for fa, fb in itertools.combinations(_factors(part), 2)
        )
        out.extend(itertools.islice((e for e in entries if e), max_pairs))
    return out


def _one(part: pd.DataFrame, btype: str, metric: str, fa: str, fb: str, log: bool) -> dict[str, Any] | None:
    v = part["value"].to_numpy(dtype=float)
    scale = "log" if log and (v > 0).all() else "raw"
    y = np.log(v) if scale == "log" else v
    a, b = part[fa].astype(str), part[fb].astype(str)
    la, lb = sorted(a.unique()), sorted(b.unique())
    ca = pd.Categorical(a, categories=la).codes.astype(np.int64)
    cb = pd.Categorical(b, categories=lb).codes.astype(np.int64)
    try:
        table = anova_codes(y, ca, cb, len(la), len(lb), fa, fb)
    except ReportError:
        return None
    keys = part[fa].astype(str) + " · " + part[fb].astype(str)
    per_cell = {str(k): v[idx] for k, idx in sorted(keys.groupby(keys.to_numpy()).indices.items())}
    return {
        "type": btype,
        "metric": metric,
        "factors": [fa, fb],
        "scale": scale,
        "table": table,
        "cells": cells(v, part[[fa, fb]]),
        "histogram": svgplot.histograms(per_cell, str(part["unit"].iloc[0])),
        "tukey": _tukey(y, keys, scale),
    }


def _tukey(y: np.ndarray, cell: pd.Series, scale: str) -> list[dict[str, Any]]:
    """Tukey HSD between all cells (on the ANOVA's scale); [] when a cell has a single value."""
    if cell.value_counts().min() < 2 or cell.nunique() > MAX_LEVELS * 2:
        return []
    rows = tukey(pd.DataFrame({"y": y, "cell": cell.to_numpy()}), "y", "cell")
    return [{**r, "scale": scale} for r in rows]
