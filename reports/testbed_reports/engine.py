"""The report's engine: embedded DuckDB over the results store (``store.py``), out of core.

``connect`` opens an in-memory DuckDB with a memory limit and a spill directory inside the store
(``<store>/.spill``), so queries larger than memory go to disk instead of failing. ``dataset``
gives the report what ``load.load`` gives it from JSON Lines, read from the stored runs instead:
the same observations, records, fingerprints, percentiles, parameters and crypto records, in the
same order, so ``build`` computes the same statistics (``tests``: the equivalence test).
``paths_dataset`` is what ``build`` calls: each results directory is added to the store when it is
not there yet or its files changed since, then read from the store.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from testbed_reports.errors import ReportError
from testbed_reports.load import (
    CATEGORICAL,
    OBS_COLUMNS,
    RECORD_COLUMNS,
    Dataset,
    _categorize,
    _margins,
    read_csv_observations,
)
from testbed_reports.store import STORE_ENV, Manifest, Store, StoreError, default_store, encode

#: DuckDB's memory limit unless TESTBED_DUCKDB_MEMORY says otherwise (it spills past it)
MEMORY_LIMIT = "1GB"
MEMORY_ENV = "TESTBED_DUCKDB_MEMORY"
#: rows a query hands over at a time (its text columns dictionary-encoded batch by batch)
BATCH_ROWS = 262_144


def connect(
    store: Path, memory_limit: str | None = None, threads: int | None = None
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB that spills to ``<store>/.spill`` beyond ``memory_limit``."""
    spill = Path(store) / ".spill"
    spill.mkdir(parents=True, exist_ok=True)
    config = {
        "memory_limit": memory_limit or os.environ.get(MEMORY_ENV) or MEMORY_LIMIT,
        "temp_directory": str(spill),
        "preserve_insertion_order": False,
        "threads": int(threads or os.cpu_count() or 1),
    }
    try:
        return duckdb.connect(":memory:", config=config)
    except duckdb.Error as exc:
        raise ReportError(f"DuckDB: {exc}", f"check {MEMORY_ENV} (e.g. 1GB)") from None


def _glob(store: Path, table: str, run: str, deep: bool = False) -> str:
    base = Path(store) / table / f"run={encode(run)}"
    return str(base / ("*/*.parquet" if deep else "*.parquet"))


def _read(con: duckdb.DuckDBPyConnection, sql: str, *params: Any, keep: Sequence[str] = ()) -> pd.DataFrame:
    """A query's result through Arrow: text columns dictionary-encoded on the way (a repeated
    value is one Python string, not one per row), as Python objects except those in ``keep``,
    which stay categorical."""
    reader = con.sql(sql, params=list(params)).to_arrow_reader(BATCH_ROWS)
    parts = []
    for batch in reader:  # one batch of plain strings at a time, never the whole table
        cols = [
            pc.dictionary_encode(col)
            if pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
            else col
            for col in batch.columns
        ]
        parts.append(pa.table(cols, names=batch.schema.names))
    tbl = pa.concat_tables(parts).unify_dictionaries() if parts else reader.schema.empty_table()
    df = tbl.to_pandas()
    for c in df.columns:
        if isinstance(df[c].dtype, pd.CategoricalDtype) and c not in keep:
            codes = df[c].cat.codes.to_numpy()
            cats = np.append(df[c].cat.categories.to_numpy(dtype=object), None)
            df[c] = pd.Series(cats[np.where(codes < 0, len(cats) - 1, codes)], dtype=object, index=df.index)
    return df


def dataset(
    store: Store, runs: Sequence[tuple[Manifest, Path]], con: duckdb.DuckDBPyConnection | None = None
) -> Dataset:
    """The stored runs (each with the path it was given as, for its sources' names) as a Dataset."""
    own = con is None
    con = con or connect(store.root)
    try:
        return _dataset(store, runs, con)
    finally:
        if own:
            con.close()


def _dataset(store: Store, runs: Sequence[tuple[Manifest, Path]], con: duckdb.DuckDBPyConnection) -> Dataset:
    rec_parts, obs_parts, pct_parts = [], [], []
    sysinfo: dict[tuple[str, str], dict[str, Any]] = {}
    params: list[Any] = []
    crypto: list[dict[str, Any]] = []
    sources: list[str] = []
    warnings: list[str] = []
    offset = 0
    for m, given in runs:
        root = given if given.is_dir() else given.parent
        recs = _read(
            con, "SELECT * FROM read_parquet(?) ORDER BY record", _glob(store.root, "records", m.run)
        )
        recs["run_id"] = m.run
        recs["source"] = [_source(given, root, s) for s in recs["source"]]
        params += [json.loads(p) if isinstance(p, str) else None for p in recs.pop("params")]
        for c in recs.pop("crypto"):
            if isinstance(c, str):
                crypto.append({**json.loads(c), "run_id": m.run})
        rec_parts.append(recs)
        if m.observations:
            obs = _read(
                con,
                "SELECT * EXCLUDE (run) FROM read_parquet(?, hive_partitioning = true, "
                "hive_types = {'run': VARCHAR, 'label': VARCHAR})",
                _glob(store.root, "observations", m.run, deep=True),
                keep=CATEGORICAL,
            )
            order = np.argsort(obs["seq"].to_numpy(), kind="stable")  # the loader's order
            obs = obs.take(order).reset_index(drop=True)
            obs["record"] = obs["record"] + offset
            obs["run_id"] = m.run
            obs_parts.append(obs)
        hosts = _read(con, "SELECT host, sysinfo FROM read_parquet(?)", _glob(store.root, "hosts", m.run))
        for host, info in zip(hosts["host"], hosts["sysinfo"], strict=True):
            if isinstance(info, str):
                sysinfo[(m.run, str(host))] = json.loads(info)
        if (store.root / "percentiles" / f"run={encode(m.run)}").exists():
            pct = _read(con, "SELECT * FROM read_parquet(?)", _glob(store.root, "percentiles", m.run))
            pct["run_id"] = m.run
            pct_parts.append(pct)
        sources += [_source(given, root, s.rel) for s in m.sources if s.rel.endswith(".jsonl")]
        warnings += m.warnings
        offset += len(recs)
    records = pd.concat(rec_parts, ignore_index=True) if rec_parts else pd.DataFrame()
    keep = [c for c in RECORD_COLUMNS if c != "params"] + ["cc_technology", "machine"]
    records = records[[c for c in keep if c in records]]
    for c in ("run_id", "host", "label", "groups", "benchmark", "type", "cc_technology", "machine"):
        records[c] = records[c].astype(str)
    obs = pd.concat(obs_parts, ignore_index=True) if obs_parts else pd.DataFrame(columns=list(OBS_COLUMNS))
    obs = obs[list(OBS_COLUMNS)]
    for c in CATEGORICAL:  # sorted categories, as the loader's (groupby orders by them)
        cat = obs[c] if isinstance(obs[c].dtype, pd.CategoricalDtype) else obs[c].astype(object)
        cat = cat.astype("category") if not isinstance(cat.dtype, pd.CategoricalDtype) else cat
        obs[c] = cat.cat.set_categories(sorted(str(x) for x in cat.cat.categories))
    for c in ("repetition", "index", "record"):
        obs[c] = obs[c].astype(np.int64)
    obs["value"] = obs["value"].astype(float)
    obs["primary"] = obs["primary"].astype(bool)
    obs["started_at"] = obs["started_at"].astype(object).where(obs["started_at"].notna(), None)
    cols = ["run_id", "host", "label", "benchmark", "series", "percentile", "value"]
    pct = pd.concat(pct_parts, ignore_index=True)[cols] if pct_parts else pd.DataFrame(columns=cols)
    margin_warnings: list[str] = []
    margins = _margins(records, margin_warnings)
    return Dataset(
        obs=obs,
        records=records,
        sysinfo=sysinfo,
        percentiles=pct,
        sources=sources,
        warnings=[w for w in warnings if w not in margin_warnings] + margin_warnings,
        margins=margins,
        params=params,
        crypto=crypto,
    )


def _source(given: Path, root: Path, rel: str) -> str:
    """A source file's name as the loader would print it for this given path."""
    if not given.is_dir():
        return str(given) if Path(rel).name == given.name else str(root / rel)
    return str(given / rel)


def paths_dataset(
    paths: Sequence[Path],
    csv_mapping: Mapping[str, str] | None = None,
    csv_defaults: Mapping[str, str] | None = None,
    store: Path | None = None,
) -> Dataset:
    """``build``'s input: every results path through the store (added when missing or changed),
    CSV files of published results beside them, as one Dataset."""
    given = [Path(p) for p in paths]
    for p in given:
        if not p.exists():
            raise ReportError(f"{p}: no such file or directory", "give results/<run_id> directories")
    jsonl = [p for p in given if not (p.is_file() and p.suffix == ".csv")]
    csvs = [p for p in given if p.is_file() and p.suffix == ".csv"]
    st = Store(store or default_store(jsonl))
    with st.locked():
        notes = st.check()
    runs: list[tuple[Manifest, Path]] = []
    for p in jsonl:
        if p.is_dir() and not any(p.rglob("*.jsonl")):
            raise ReportError(
                f"{p}: no result files (*.jsonl) found", "the runner writes results/<run_id>/<host>.jsonl"
            )
        runs += [(m, p) for m in st.find(p) or _add(st, p)]
    ds = dataset(st, runs) if runs else _empty()
    ds.warnings = notes + ds.warnings
    if csvs:
        extra = [read_csv_observations(c, csv_mapping, csv_defaults) for c in csvs]
        obs = ds.obs.astype({c: object for c in CATEGORICAL})
        ds.obs = _categorize(
            pd.concat([obs, *extra], ignore_index=True) if len(obs) else pd.concat(extra, ignore_index=True)
        )
        ds.sources = [str(c) for c in csvs] + ds.sources
    if ds.records.empty and ds.obs.empty:
        raise ReportError("no result records in the given paths", "did the run write any records?")
    return ds


def _add(st: Store, p: Path) -> list[Manifest]:
    try:
        return st.add(p)
    except StoreError:
        raise
    except OSError as exc:
        raise StoreError(
            f"{st.root}: cannot write the results store ({exc.strerror})",
            f"name a writable place with --store DIR or {STORE_ENV}",
        ) from None


def _empty() -> Dataset:
    return Dataset(
        obs=pd.DataFrame(columns=list(OBS_COLUMNS)), records=pd.DataFrame(columns=list(RECORD_COLUMNS))
    )
