"""Read result directories (JSON Lines + sysinfo) and CSV files into tidy pandas tables.

Records are read, checked and chosen through :mod:`testbed_shared.records` (the one record path):
its validation and error words, its rule for which record counts per execution (a retried
execution counts its last attempt) and its notion of a run (files of different runs that share a
run id are kept apart). This module turns the chosen records into columns, fast.
"""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing
import os
import sys
from array import array
from collections.abc import Iterable, Mapping
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from testbed_reports.errors import ReportError, SchemaError
from testbed_shared import records as rec_schema
from testbed_shared.machines import MACHINE_FIELD, machine_id, machine_key
from testbed_shared.records import BETTER, FINAL_STATUSES, MARGIN_FIELD, STATUSES, RecordError

__all__ = ["BETTER", "FINAL_STATUSES", "STATUSES", "Dataset", "load", "read_csv_observations"]
#: pyperformance records carry each benchmark's individual pyperf values in samples[name]["values"]
SAMPLE_TYPES = frozenset({"pyperformance"})
RECORD_COLUMNS = (
    "run_id",
    "host",
    "label",
    "groups",
    "benchmark",
    "type",
    "index",
    "repetition",
    "status",
    "error",
    "started_at",
    "ended_at",
    "margin",
    "digest",
    "attempt",
    "session",
    "block",
    "cpu_percent",
    "steal_percent",
    "process_cpu_percent",
    "params",
    "source",
    "line",
)
OBS_COLUMNS = (
    "run_id",
    "host",
    "label",
    "groups",
    "benchmark",
    "type",
    "metric",
    "unit",
    "better",
    "primary",
    "value",
    "repetition",
    "index",
    "started_at",
    "cc_technology",
    "record",
)
#: total size of result files above which they are parsed in parallel processes
PARALLEL_BYTES = 8 * 1024 * 1024
CATEGORICAL = (
    "run_id",
    "host",
    "label",
    "groups",
    "benchmark",
    "type",
    "metric",
    "unit",
    "better",
    "cc_technology",
)
CSV_FIELDS = (
    "label",
    "benchmark",
    "metric",
    "value",
    "unit",
    "better",
    "host",
    "repetition",
    "run_id",
    "groups",
)


@dataclass
class Dataset:
    """Everything the report reads: observations, record statuses, fingerprints, latency percentiles."""

    obs: pd.DataFrame
    records: pd.DataFrame
    sysinfo: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    percentiles: pd.DataFrame = field(
        default_factory=lambda: pd.DataFrame(
            columns=["run_id", "host", "label", "benchmark", "series", "percentile", "value"]
        )
    )
    sources: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: per benchmark: the equivalence margin (percent) its records declare
    margins: dict[str, float] = field(default_factory=dict)
    #: each record's plan parameters (aligned with ``records``); obs["record"] indexes it
    params: list[dict[str, Any] | None] = field(default_factory=list)
    #: the ok ``crypto`` records that count, whole (their cells: ``crypto_tables``), run ids as in
    #: ``records``; read in the same pass as everything else
    crypto: list[dict[str, Any]] = field(default_factory=list)
    #: what the record selection dropped (its counts and conflicts; ``kept`` left empty), whose
    #: lines are among ``warnings``: a file-by-file store add sums them (``store_stream``)
    selection: rec_schema.Selection = field(default_factory=lambda: rec_schema.Selection(kept=[]))


class _Collector:
    """Column lists filled record by record (no per-row DataFrame work).

    A metric's (name, unit, better) is stored once as a key and each observation keeps its key's code,
    so the per-observation work is appends to typed arrays (a code and a float each, not Python
    objects: what bounds the memory of a large file's load). The primary metrics of a record (its
    ``primary`` field, or for a record made before the field the frozen rule of its type:
    :mod:`testbed_shared.records`) are kept as the set of their keys, each distinct set once and
    a number per record; :meth:`close` turns them into a flag per observation.
    """

    def __init__(self) -> None:
        self.rows: list[tuple] = []
        self.rec: dict[str, list[Any]] = {c: [] for c in RECORD_COLUMNS}
        self.obs_pos: list[int] = []
        self.obs_cnt: list[int] = []
        self.obs_rec: Any = []
        self.obs_key: Any = array("i")
        self.obs_value: Any = array("d")
        #: the first observation whose value is not a number a float holds, and that value
        self.odd: tuple[int, Any] | None = None
        self.keys: dict[tuple[str, str, str], int] = {}
        self.groups: dict[tuple[str, ...], str] = {}
        self.texts: dict[str, str] = {}
        self.pct: dict[str, list[Any]] = {"rec": [], "series": [], "percentile": [], "value": []}
        self.crypto: list[tuple[int, dict[str, Any]]] = []  # (record position, ok crypto record)
        #: the distinct sets of primary metric keys, and each record's (one per obs_pos entry)
        self.primary_sets: dict[frozenset[int], int] = {}
        self.obs_prim: Any = array("i")
        self.obs_primary: Any = np.zeros(0, dtype=bool)

    def add(self, rec: dict[str, Any], source: str, line: int, digest: int = 0) -> None:
        pos = len(self.rows)
        g = tuple(rec.get("groups") or ())
        groups = self.groups.get(g)
        if groups is None:
            groups = self.groups[g] = ",".join(sorted(g))
        text = self.texts.setdefault  # one object per distinct name, not one per record
        host = text(rec["host"], rec["host"])
        status = rec["status"]
        label = rec.get("label") or host
        btype = rec.get("type") or ""
        self.rows.append(
            (
                text(rec["run_id"], rec["run_id"]),
                host,
                text(label, label),
                groups,
                text(rec["benchmark"], rec["benchmark"]),
                text(btype, btype),
                rec.get("index", -1),
                rec["repetition"],
                status,
                rec.get("error"),
                rec.get("started_at"),
                rec.get("ended_at"),
                rec.get(MARGIN_FIELD),
                digest,
                rec.get("attempt") or 1,
                rec.get("session"),
                rec.get(rec_schema.BLOCK_FIELD),
                *_telemetry(rec.get("telemetry")),
                rec.get("params") if rec.get("params").__class__ is dict else None,
                source,
                line,
            )
        )
        if status != "ok":
            return
        if rec.get("type") == "crypto":
            self.crypto.append((pos, rec))
        mets = rec["metrics"]
        get = self.keys.get
        try:
            codes = [get((name, m["unit"], m["better"])) for name, m in mets.items()]
            values = [m["value"] for m in mets.values()]
        except (TypeError, KeyError):
            name, entry = next((n, m) for n, m in mets.items() if rec_schema.metric_problem(n, m))
            raise SchemaError(source, line, str(rec_schema.metric_problem(name, entry))) from None
        if None in codes:
            codes = [self._code((name, m["unit"], m["better"]), source, line) for name, m in mets.items()]
        prim = rec.get(rec_schema.PRIMARY_FIELD)
        if prim is None:
            prim = rec_schema.legacy_primary(rec.get("type") or "", tuple(mets))
        prim_keys = frozenset(self.keys[(name, mets[name]["unit"], mets[name]["better"])] for name in prim)
        prim_set = self.primary_sets.setdefault(prim_keys, len(self.primary_sets))
        samples = rec.get("samples")
        if rec.get("type") in SAMPLE_TYPES and samples:
            codes, values = _expand_samples(list(mets), codes, values, samples, source, line)
        self.obs_key.extend(codes)
        self._add_values(values)
        self.obs_prim.append(prim_set)
        self.obs_pos.append(pos)
        self.obs_cnt.append(len(codes))
        if samples:
            self._percentiles(pos, samples)

    def _percentiles(self, pos: int, samples: Mapping[str, Any]) -> None:
        for series, vals in _percentile_series(samples):
            try:
                pairs = [(float(p), float(v)) for p, v in vals.items()]
            except OverflowError:
                continue
            for pct, val in pairs:
                if math.isfinite(pct) and math.isfinite(val):
                    self.pct["rec"].append(pos)
                    self.pct["series"].append(series)
                    self.pct["percentile"].append(pct)
                    self.pct["value"].append(val)

    def _add_values(self, values: list[Any]) -> None:
        """The values as floats; one that is not a number a float holds is kept as NaN, the first
        such one with its position for :meth:`values`' message."""
        if all(v.__class__ is float or v.__class__ is int for v in values):
            with contextlib.suppress(OverflowError):  # an int past a float's range: one by one
                self.obs_value.extend(array("d", values))
                return
        for v in values:
            num = None
            if v.__class__ is float or v.__class__ is int:
                with contextlib.suppress(OverflowError):
                    num = float(v)
            if num is None and self.odd is None:
                self.odd = (len(self.obs_value), v)
            self.obs_value.append(math.nan if num is None else num)

    def _code(self, key: tuple[str, str, str], source: str, line: int) -> int:
        code = self.keys.get(key)
        if code is None:
            _check_key(key, source, line)
            code = self.keys[key] = len(self.keys)
        return code

    def close(self) -> None:
        """Turn the per-record rows into columns and the observation lists into arrays."""
        cols = list(zip(*self.rows, strict=True)) if self.rows else [() for _ in RECORD_COLUMNS]
        self.rec = {c: list(v) for c, v in zip(RECORD_COLUMNS, cols, strict=True)}
        pos, cnt = np.asarray(self.obs_pos, dtype=np.int64), np.asarray(self.obs_cnt, dtype=np.int64)
        self.obs_rec = np.repeat(pos, cnt)
        self.obs_key = np.asarray(self.obs_key, dtype=np.int64)
        table = np.zeros((len(self.primary_sets), max(len(self.keys), 1)), dtype=bool)
        for keys, row in self.primary_sets.items():
            table[row, list(keys)] = True
        sets = np.repeat(np.asarray(self.obs_prim, dtype=np.int64), cnt)
        self.obs_primary = table[sets, self.obs_key] if len(sets) else np.zeros(0, dtype=bool)

    def values(self) -> np.ndarray:
        """The observation values as floats; a non-number names its file and line."""
        vals = np.array(self.obs_value, dtype=float)
        finite = np.isfinite(vals)
        if not finite.all():
            bad = int(np.flatnonzero(~finite)[0])
            raw = self.odd[1] if self.odd is not None and self.odd[0] == bad else float(vals[bad])
            pos = self.obs_rec[bad]
            name = next(k[0] for k, c in self.keys.items() if c == self.obs_key[bad])
            raise SchemaError(
                self.rec["source"][pos],
                self.rec["line"][pos],
                str(rec_schema.metric_problem(name, {"value": raw, "unit": "", "better": "lower"})),
            )
        return vals


def text_objects(col: pd.Series) -> pd.Series:
    """A record text column (start times, blocks) as the loader holds it (the store reads it as a
    categorical): objects, None when missing."""
    return col.astype(object).where(col.notna(), None)


def _telemetry(tel: Any) -> tuple[float, float, float]:
    """Machine CPU % (all cores, every process), steal % and the benchmark processes' CPU (% of one
    core) of a record's telemetry (NaN when absent or not a finite number)."""
    if tel.__class__ is not dict:
        return math.nan, math.nan, math.nan
    out = []
    for key in ("cpu_percent_mean", "steal_percent", "process_cpu_percent"):
        v = tel.get(key)
        out.append(float(v) if _is_finite_number(v) else math.nan)
    return out[0], out[1], out[2]


def _check_key(key: tuple[Any, Any, Any], source: str, line: int) -> None:
    name, unit, better = key
    bad = rec_schema.metric_problem(name, {"value": 0.0, "unit": unit, "better": better})
    if bad:
        raise SchemaError(source, line, bad)


def _percentile_series(samples: Mapping[str, Any]) -> Iterable[tuple[str, dict[str, float]]]:
    """Percentile tables in a record's samples: {"clat_ns_percentiles": {"99.0": v}} or per direction."""
    for key, val in samples.items():
        if "percentile" not in key or not isinstance(val, dict):
            continue
        if all(_is_number(v) for v in val.values()) and all(_is_number_str(k) for k in val):
            yield key, val
        else:
            for sub, inner in val.items():
                if (
                    isinstance(inner, dict)
                    and all(_is_number(v) for v in inner.values())
                    and all(_is_number_str(k) for k in inner)
                ):
                    yield f"{key}.{sub}", inner


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


_is_finite_number = rec_schema.finite_number


def _expand_samples(
    names: list[str], codes: list[int], values: list[Any], samples: Mapping[str, Any], source: str, line: int
) -> tuple[list[int], list[Any]]:
    """Each metric with individual values in ``samples[name]["values"]`` enters as those values."""
    out_codes: list[int] = []
    out_values: list[Any] = []
    for name, code, value in zip(names, codes, values, strict=True):
        entry = samples.get(name)
        vals = entry.get("values") if isinstance(entry, dict) else None
        if isinstance(vals, list) and vals:
            if not all(_is_finite_number(v) for v in vals):
                raise SchemaError(source, line, f"samples '{name}': values must be finite numbers")
            out_codes.extend([code] * len(vals))
            out_values.extend(vals)
        else:
            out_codes.append(code)
            out_values.append(value)
    return out_codes, out_values


def _is_number_str(k: Any) -> bool:
    try:
        float(k)
    except (TypeError, ValueError):
        return False
    return True


def _read_jsonl(path: Path, col: _Collector) -> None:
    """Every record of a result file into ``col``, checked by the record module (metric entries
    column-wise by the collector); its problems as :class:`SchemaError`."""
    try:
        for n, raw, rec in rec_schema.read_lines(path):
            rec_schema.validate(rec, str(path), n, metrics=False)
            col.add(rec, str(path), n, rec_schema.digest(raw))
    except RecordError as exc:
        raise SchemaError(exc.path, exc.line, exc.problem) from None


def _read_text(path: Path) -> str:
    """A file's UTF-8 text; bytes that are not UTF-8 are an error naming the line."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SchemaError(str(path), line, "not UTF-8 text (results are UTF-8 JSON Lines)") from None


def _read_sysinfo(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise SchemaError(str(path), exc.lineno, f"not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise SchemaError(str(path), None, "JSON nested too deeply") from None
    if not isinstance(data, dict):
        raise SchemaError(str(path), None, "sysinfo must be a JSON object")
    return data


#: sysinfo sections the report reads; each must be a JSON object
SYSINFO_OBJECTS = ("cc", "cpu", "kernel", "hypervisor", "host", MACHINE_FIELD)


def _checked_sysinfo(data: dict[str, Any], path: Path, warnings: list[str]) -> dict[str, Any]:
    """``data`` without the sections that are not objects (each dropped with a warning)."""
    bad = [k for k in SYSINFO_OBJECTS if k in data and data[k] is not None and not isinstance(data[k], dict)]
    for k in bad:
        warnings.append(f"{path}: sysinfo field '{k}' is not an object; ignored")
    if bad:
        data = {k: v for k, v in data.items() if k not in bad}
    cc = data.get("cc")
    if isinstance(cc, dict) and "technology" in cc and not isinstance(cc["technology"], str):
        warnings.append(f"{path}: sysinfo field 'cc.technology' is not a string; ignored")
        data["cc"] = {k: v for k, v in cc.items() if k != "technology"}
    _, problem = machine_id(data)
    if problem:
        warnings.append(f"{path}: sysinfo field {problem}; ignored (the VM counts as its own machine)")
    return data


def _finish(
    col: _Collector, sysinfo: dict[tuple[str, str], dict[str, Any]], extra_obs: list[pd.DataFrame]
) -> Dataset:
    values = np.asarray(col.obs_value, dtype=float)
    records = pd.DataFrame(col.rec, columns=list(RECORD_COLUMNS))
    records["index"] = records["index"].astype("int64")
    records["repetition"] = records["repetition"].astype("int64")
    cc = {k: _cc_technology(v) for k, v in sysinfo.items()}
    pair_codes, pairs = pd.factorize(pd.MultiIndex.from_arrays([records["run_id"], records["host"]]))
    tech = np.asarray([cc.get(k, "unknown") for k in pairs], dtype=object)
    records["cc_technology"] = tech[pair_codes] if len(records) else []
    # the unit of replication: the physical host the fingerprint names, else the VM (machines.py)
    machine = np.asarray([machine_key(sysinfo.get(k), str(k[1])) for k in pairs], dtype=object)
    records["machine"] = machine[pair_codes] if len(records) else []
    cat_cols = ("run_id", "host", "machine", "label", "groups", "benchmark", "type", "cc_technology")
    for c in cat_cols:
        records[c] = records[c].astype("category")
    kept, chosen = _choose(records)
    warnings = chosen.warnings()
    rec_pos = np.asarray(col.obs_rec, dtype=np.int64)
    alive = np.zeros(len(records), dtype=bool)
    alive[kept.index.to_numpy()] = True
    mask = alive[rec_pos] if len(rec_pos) else np.zeros(0, dtype=bool)
    pos = rec_pos[mask]
    data: dict[str, Any] = {}
    for c in cat_cols:
        cat = records[c].cat
        data[c] = pd.Categorical.from_codes(cat.codes.to_numpy()[pos], categories=cat.categories)
    data["host"] = data.pop("machine")  # an observation's host is its machine (docs/design.md section 4)
    key_list = sorted(col.keys, key=col.keys.__getitem__)
    key_codes = np.asarray(col.obs_key, dtype=np.int64)[mask]
    for i, field_name in enumerate(("metric", "unit", "better")):
        names = [k[i] for k in key_list]
        uniq = sorted(set(names))
        lookup = np.asarray([uniq.index(n) for n in names], dtype=np.int64)
        data[field_name] = pd.Categorical.from_codes(
            lookup[key_codes] if len(key_codes) else key_codes, categories=uniq
        )
    data["primary"] = np.asarray(col.obs_primary, dtype=bool)[mask]
    data["value"] = values[mask] if len(values) else np.zeros(0)
    for c in ("repetition", "index", "started_at"):
        data[c] = records[c].to_numpy()[pos]
    new_pos = np.full(len(records), -1, dtype=np.int64)
    new_pos[kept.index.to_numpy()] = np.arange(len(kept))
    data["record"] = new_pos[pos]
    obs = pd.DataFrame(data, columns=list(OBS_COLUMNS))
    if extra_obs:
        obs = _categorize(
            pd.concat([obs.astype({c: object for c in CATEGORICAL}), *extra_obs], ignore_index=True)
        )
    records = kept
    pct = _percentiles(col, records)
    counted = set(kept.index.tolist())
    run_ids = col.rec["run_id"]  # after _keep_runs_apart: a later run's records carry run_id@N
    crypto = [
        rec if rec["run_id"] == run_ids[pos] else {**rec, "run_id": run_ids[pos]}
        for pos, rec in col.crypto
        if pos in counted
    ]
    records = records.reset_index(drop=True)
    params = records.pop("params").tolist()
    for c in cat_cols:
        records[c] = records[c].astype(str)
    return Dataset(
        obs=obs,
        records=records,
        sysinfo=sysinfo,
        percentiles=pct,
        warnings=warnings,
        margins=_margins(records, warnings),
        selection=replace(chosen, kept=[]),
        params=params,
        crypto=crypto,
    )


def _margins(records: pd.DataFrame, warnings: list[str]) -> dict[str, float]:
    """Per benchmark: the margin its records declare (the largest, with a warning, when they differ)."""
    given = records[["benchmark", "margin"]].dropna(subset=["margin"])
    out: dict[str, float] = {}
    for bench, part in given.groupby("benchmark", sort=True):
        vals = sorted(set(part["margin"].astype(float)))
        if len(vals) > 1:
            warnings.append(f"{bench}: records declare different margins {vals}; using {vals[-1]:g}%")
        out[str(bench)] = vals[-1]
    return out


def _choose(records: pd.DataFrame) -> tuple[pd.DataFrame, rec_schema.Selection]:
    """The record that counts for each execution, and what the selection dropped
    (:func:`testbed_shared.records.select`)."""
    cols = [records[c].tolist() for c in ("run_id", "host", "index", "benchmark", "repetition")]
    entries = [
        rec_schema.Entry(key, attempt, status, digest, f"{source}:{line}")
        for key, attempt, status, digest, source, line in zip(
            zip(*cols, strict=True),
            records["attempt"].tolist(),
            records["status"].tolist(),
            records["digest"].tolist(),
            records["source"].tolist(),
            records["line"].tolist(),
            strict=True,
        )
    ]
    chosen = rec_schema.select(entries)
    return records.iloc[chosen.kept], chosen


def _percentiles(col: _Collector, records: pd.DataFrame) -> pd.DataFrame:
    cols = ["run_id", "host", "label", "benchmark", "series", "percentile", "value"]
    if not col.pct["rec"]:
        return pd.DataFrame(columns=cols)
    rec = np.asarray(col.pct["rec"], dtype=np.int64)
    mask = np.isin(rec, records.index.to_numpy())
    base = records.loc[rec[mask]]
    return pd.DataFrame(
        {
            "run_id": base["run_id"].to_numpy(),
            "host": base["host"].to_numpy(),
            "label": base["label"].to_numpy(),
            "benchmark": base["benchmark"].to_numpy(),
            "series": np.asarray(col.pct["series"], dtype=object)[mask],
            "percentile": np.asarray(col.pct["percentile"], dtype=float)[mask],
            "value": np.asarray(col.pct["value"], dtype=float)[mask],
        },
        columns=cols,
    )


def _categorize(obs: pd.DataFrame) -> pd.DataFrame:
    for c in CATEGORICAL:
        obs[c] = obs[c].astype(str).astype("category")
    return obs


def _cc_technology(info: dict[str, Any]) -> str:
    cc = info.get("cc")
    if isinstance(cc, dict) and isinstance(cc.get("technology"), str):
        return cc["technology"]
    return "unknown"


def read_csv_observations(
    path: Path, mapping: Mapping[str, str] | None = None, defaults: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """A CSV of published results (one observation a row) as observation rows.

    ``mapping`` maps our field names (label, benchmark, metric, value, unit, better, host, repetition,
    run_id, groups) to the CSV's column names; ``defaults`` gives constant values for missing fields.
    """
    mapping = dict(mapping or {})
    defaults = dict(defaults or {})
    try:
        df = pd.read_csv(path)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ReportError(f"{path}: cannot read CSV ({exc})") from None
    out = pd.DataFrame(index=df.index)
    for name in CSV_FIELDS:
        col = mapping.get(name, name)
        if col in df.columns:
            out[name] = df[col]
        elif name in defaults:
            out[name] = defaults[name]
    for need in ("label", "benchmark", "value"):
        if need not in out:
            raise ReportError(
                f"{path}: no column for '{need}' (columns: {', '.join(map(str, df.columns))})",
                f"map it with --csv-map {need}=COLUMN",
            )
    values = pd.to_numeric(out["value"], errors="coerce")
    bad = values.isna() & out["value"].notna() | ~np.isfinite(values.fillna(0))
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0]) + 2  # header is line 1
        raise ReportError(f"{path}:{row}: value {out['value'].iloc[row - 2]!r} is not a number")
    out["value"] = values
    out = out.dropna(subset=["value"])
    out["metric"] = out.get("metric", "value")
    out["unit"] = out.get("unit", "")
    out["better"] = out.get("better", "lower")
    wrong = ~out["better"].isin(BETTER)
    if wrong.any():
        row = int(np.flatnonzero(wrong.to_numpy())[0]) + 2
        raise ReportError(
            f"{path}:{row}: better must be 'higher' or 'lower'",
            "set it with --csv-default better=lower (or higher)",
        )
    out["host"] = out["host"].astype(str) if "host" in out else out["label"].astype(str)
    out["repetition"] = out["repetition"] if "repetition" in out else np.arange(len(out))
    out["run_id"] = out.get("run_id", path.stem)
    out["groups"] = out.get("groups", "")
    out["type"] = "csv"
    out["primary"] = False
    out["index"] = -1
    out["started_at"] = None
    out["cc_technology"] = "unknown"
    out["record"] = -1
    for c in ("label", "benchmark", "metric", "unit", "run_id", "groups"):
        out[c] = out[c].astype(str)
    return out[list(OBS_COLUMNS)].reset_index(drop=True)


def _parse_file(path: str) -> dict[str, Any]:
    """One result file as column lists and arrays (runs in a worker process for large inputs)."""
    col = _Collector()
    _read_jsonl(Path(path), col)
    col.close()
    return {
        "rec": col.rec,
        "obs_rec": col.obs_rec,
        "obs_key": col.obs_key,
        "values": col.values(),
        "keys": sorted(col.keys, key=col.keys.__getitem__),
        "pct": col.pct,
        "crypto": col.crypto,
        "primary": col.obs_primary,
    }


def _parse_all(files: list[Path]) -> list[dict[str, Any]]:
    """Parse files, in parallel processes when there is enough data for it to pay off."""
    names = [str(f) for f in files]
    total = sum(f.stat().st_size for f in files)
    workers = min(len(files), os.cpu_count() or 1, 4)
    if workers < 2 or total < PARALLEL_BYTES:
        return [_parse_file(n) for n in names]
    ctx = multiprocessing.get_context("spawn" if sys.platform != "linux" else "fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        return list(pool.map(_parse_file, names))


def _merge(parts: list[dict[str, Any]]) -> _Collector:
    """One collector from per-file results (record positions offset, metric keys re-coded)."""
    col = _Collector()
    obs_rec, obs_key, values, primary = [], [], [], []
    for part in parts:
        offset = len(col.rec["run_id"])
        for c in RECORD_COLUMNS:
            col.rec[c].extend(part["rec"][c])
        remap = np.asarray([col.keys.setdefault(k, len(col.keys)) for k in part["keys"]], dtype=np.int64)
        obs_rec.append(part["obs_rec"] + offset)
        obs_key.append(remap[part["obs_key"]] if len(part["obs_key"]) else part["obs_key"])
        values.append(part["values"])
        for k in col.pct:
            col.pct[k].extend([v + offset for v in part["pct"][k]] if k == "rec" else part["pct"][k])
        col.crypto.extend((pos + offset, rec) for pos, rec in part["crypto"])
        primary.append(part["primary"])
    col.obs_rec = np.concatenate(obs_rec) if obs_rec else np.zeros(0, dtype=np.int64)  # type: ignore[assignment]
    col.obs_key = np.concatenate(obs_key) if obs_key else np.zeros(0, dtype=np.int64)  # type: ignore[assignment]
    col.obs_value = np.concatenate(values) if values else np.zeros(0)  # type: ignore[assignment]
    col.obs_primary = np.concatenate(primary) if primary else np.zeros(0, dtype=bool)
    return col


def _keep_runs_apart(files: list[Path], parts: list[dict[str, Any]]) -> list[str]:
    """Different runs that carry the same run id and host stay apart (records.runs): the records
    of the later ones get ``run_id@N`` (in place); the warnings say which files."""
    markers = [rec_schema.markers(zip(p["rec"]["session"], p["rec"]["digest"], strict=True)) for p in parts]
    pairs = [set(zip(part["rec"]["run_id"], part["rec"]["host"], strict=True)) for part in parts]
    renamed, warnings = rec_schema.rename_runs(files, rec_schema.runs(markers), pairs)
    for (i, old), new in renamed.items():
        ids = parts[i]["rec"]["run_id"]
        parts[i]["rec"]["run_id"] = [new if r == old else r for r in ids]
    return warnings


def load(
    paths: Iterable[Path],
    csv_mapping: Mapping[str, str] | None = None,
    csv_defaults: Mapping[str, str] | None = None,
) -> Dataset:
    """Load result directories, single .jsonl files and .csv files into one Dataset."""
    sysinfo: dict[tuple[str, str], dict[str, Any]] = {}
    extra: list[pd.DataFrame] = []
    sources: list[str] = []
    files: list[Path] = []
    for given in paths:
        p = Path(given)
        if not p.exists():
            raise ReportError(f"{p}: no such file or directory", "give results/<run_id> directories")
        if p.is_file() and p.suffix == ".csv":
            extra.append(read_csv_observations(p, csv_mapping, csv_defaults))
            sources.append(str(p))
            continue
        found = [p] if p.is_file() else sorted(p.rglob("*.jsonl"))
        if not found:
            raise ReportError(
                f"{p}: no result files (*.jsonl) found", "the runner writes results/<run_id>/<host>.jsonl"
            )
        files.extend(found)
    parts = _parse_all(files)
    warnings = _keep_runs_apart(files, parts)
    for f, part in zip(files, parts, strict=True):
        sources.append(str(f))
        si = f.with_name(f.name[: -len(".jsonl")] + ".sysinfo.json")
        if si.exists():
            info = _checked_sysinfo(_read_sysinfo(si), si, warnings)
            for run_id, host in set(zip(part["rec"]["run_id"], part["rec"]["host"], strict=True)):
                sysinfo[(run_id, host)] = info
    ds = _finish(_merge(parts), sysinfo, extra)
    ds.sources = sources
    ds.warnings = warnings + ds.warnings
    if ds.records.empty and ds.obs.empty:
        raise ReportError("no result records in the given paths", "did the run write any records?")
    return ds
