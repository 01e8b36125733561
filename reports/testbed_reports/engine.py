"""The report's engine over the results store (``store.py``): a run's Parquet files read
directly with pyarrow, embedded DuckDB for queries.

``connect`` opens an in-memory DuckDB with a memory limit and a spill directory inside the store
(``<store>/.spill``), so queries larger than memory go to disk instead of failing (``history``
queries the store with it; DuckDB is imported there, not when a report only reads runs). A run's
observations and records are read from their Parquet files with pyarrow, column by column into
compact columns (``read_observations``, ``read_records``): no SQL sort and no whole-table copy;
the records' text columns the loader makes categorical are categorical here too, and so are their
start and end times, sessions and blocks (``_REC_CODED``); the rest Python objects shared by
equal values. Its hosts and percentiles are small tables, read whole (``_small_table``).
``stored`` gives the report what ``load.load`` gives it from JSON Lines, read from the stored
runs instead: the same records, fingerprints, percentiles, parameters and crypto records, and a
function that reads the same observations in the same order (all, or those of some benchmarks),
so ``build`` computes the same statistics (``tests``: the equivalence tests).
``paths_parts`` is what ``build`` calls: each results directory is added to the store when it is
not there yet or its files changed since, then read from the store a part at a time
(``parts.py``); ``paths_dataset`` reads every observation at once (the other commands).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from testbed_reports.errors import ReportError
from testbed_reports.load import (
    CATEGORICAL,
    OBS_COLUMNS,
    RECORD_COLUMNS,
    Dataset,
    _categorize,
    _margins,
    read_csv_observations,
    text_objects,
)
from testbed_reports.numerics import code_type
from testbed_reports.parts import PART_ROWS, Parts, plan
from testbed_reports.store import STORE_ENV, Manifest, Store, StoreError, default_store, encode, map_distinct

if TYPE_CHECKING:
    import duckdb

#: DuckDB's memory limit unless TESTBED_DUCKDB_MEMORY says otherwise (it spills past it)
MEMORY_LIMIT = "1GB"
MEMORY_ENV = "TESTBED_DUCKDB_MEMORY"


def connect(
    store: Path, memory_limit: str | None = None, threads: int | None = None
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB that spills to ``<store>/.spill`` beyond ``memory_limit``."""
    import duckdb  # noqa: PLC0415 - DuckDB (~30 MiB) loads for queries only, not for a report's read

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


def _small_table(files: Sequence[Path], columns: Sequence[str] | None = None) -> pd.DataFrame:
    """A small table's Parquet files (hosts, percentiles) as one frame, rows in file order: text
    dictionary-encoded on the way and then Python objects, one per distinct value (``_frame``)."""
    parts = []
    for f in files:
        schema = pq.read_schema(f)
        text = [
            x.name for x in schema if pa.types.is_string(x.type) and (columns is None or x.name in columns)
        ]
        parts.append(pq.read_table(f, columns=columns, read_dictionary=text))
    if not parts:
        return pd.DataFrame(columns=list(columns or ()))
    return _frame(pa.concat_tables(parts).unify_dictionaries())


def _frame(tbl: pa.Table, keep: Sequence[str] = ()) -> pd.DataFrame:
    """An Arrow table with dictionary-encoded text as a frame: text as Python objects (one per
    distinct value) except the columns in ``keep``, which stay categorical."""
    df = tbl.to_pandas()
    for c in df.columns:
        if isinstance(df[c].dtype, pd.CategoricalDtype) and c not in keep:
            codes = df[c].cat.codes.to_numpy()
            cats = np.append(df[c].cat.categories.to_numpy(dtype=object), None)
            df[c] = pd.Series(cats[np.where(codes < 0, len(cats) - 1, codes)], dtype=object, index=df.index)
    return df


def stored(
    store: Store, runs: Sequence[tuple[Manifest, Path]]
) -> tuple[Dataset, Callable[[Sequence[str] | None], pd.DataFrame]]:
    """The stored runs as a Dataset without its observations (no rows) and the function that
    reads them: every observation (``None``) or those of the benchmarks given, in the same
    row order (``parts.Parts``)."""
    try:
        return _stored(store, runs)
    finally:
        pa.default_memory_pool().release_unused()


def _stored(
    store: Store, runs: Sequence[tuple[Manifest, Path]]
) -> tuple[Dataset, Callable[[Sequence[str] | None], pd.DataFrame]]:
    rec_parts, pct_parts = [], []
    obs_runs: list[tuple[str, list[Path], int]] = []  # (run, observation files, first record)
    sysinfo: dict[tuple[str, str], dict[str, Any]] = {}
    params: list[Any] = []
    crypto: list[dict[str, Any]] = []
    sources: list[str] = []
    warnings: list[str] = []
    offset = 0
    for m, given in runs:
        root = given if given.is_dir() else given.parent
        files = sorted(Path(store.root).glob(_rel_glob("records", m.run)))
        recs = read_records(files, m.run, categorical=_REC_CATEGORICAL + _REC_CODED)
        recs["run_id"] = pd.Categorical.from_codes(np.zeros(len(recs), dtype=np.int8), categories=[m.run])
        named = map_distinct(recs["source"], lambda s, g=given, r=root: _source(g, r, s))
        recs["source"] = pd.Series(named, dtype=object, index=recs.index)
        params += map_distinct(recs.pop("params"), _params)
        for c in recs.pop("crypto"):
            if isinstance(c, str):
                crypto.append({**json.loads(c), "run_id": m.run})
        rec_parts.append(recs)
        if m.observations:
            obs_files = sorted(Path(store.root).glob(_rel_glob("observations", m.run, True)))
            obs_runs.append((m.run, obs_files, offset))
        hosts = _small_table(sorted(Path(store.root).glob(_rel_glob("hosts", m.run))), ["host", "sysinfo"])
        for host, info in zip(hosts["host"], hosts["sysinfo"], strict=True):
            if isinstance(info, str):
                sysinfo[(m.run, str(host))] = json.loads(info)
        pct_files = sorted(Path(store.root).glob(_rel_glob("percentiles", m.run)))
        if pct_files:
            pct = _small_table(pct_files)
            pct["run_id"] = m.run
            pct_parts.append(pct)
        sources += [_source(given, root, s.rel) for s in m.sources if s.rel.endswith(".jsonl")]
        warnings += m.warnings
        offset += len(recs)
    records = _joined_records(rec_parts)
    cols = ["run_id", "host", "label", "benchmark", "series", "percentile", "value"]
    pct = pd.concat(pct_parts, ignore_index=True)[cols] if pct_parts else pd.DataFrame(columns=cols)
    margin_warnings: list[str] = []
    margins = _margins(records, margin_warnings)

    def read(benchmarks: Sequence[str] | None) -> pd.DataFrame:
        keep = None if benchmarks is None else set(benchmarks)
        parts = []
        for run, obs_files, first in obs_runs:
            obs = read_observations(obs_files, keep)
            if first:
                obs["record"] = small_ints(obs["record"].to_numpy().astype(np.int64) + first)
            obs["run_id"] = pd.Categorical.from_codes(np.zeros(len(obs), dtype=np.int8), categories=[run])
            parts.append(obs)
        try:
            return _typed(_joined(parts), single=len(parts) == 1)
        finally:
            pa.default_memory_pool().release_unused()

    ds = Dataset(
        obs=pd.DataFrame(columns=list(OBS_COLUMNS)),
        records=records,
        sysinfo=sysinfo,
        percentiles=pct,
        sources=sources,
        warnings=[w for w in warnings if w not in margin_warnings] + margin_warnings,
        margins=margins,
        params=params,
        crypto=crypto,
    )
    return ds, read


def benchmark_counts(store: Store, runs: Sequence[tuple[Manifest, Path]]) -> dict[str, int]:
    """Observations per benchmark of the stored runs (one column read, file by file)."""
    out: dict[str, int] = {}
    for m, _given in runs:
        if not m.observations:
            continue
        for f in sorted(Path(store.root).glob(_rel_glob("observations", m.run, True))):
            col = pq.read_table(f, columns=["benchmark"], read_dictionary=["benchmark"])["benchmark"]
            for chunk in col.chunks:
                names = chunk.dictionary.to_pylist()
                counts = np.bincount(chunk.indices.fill_null(len(names)).to_numpy(), minlength=len(names) + 1)
                for name, n in zip([*names, None], counts, strict=True):
                    if n:
                        out[str(name)] = out.get(str(name), 0) + int(n)
    return out


#: the record columns that are categoricals with sorted categories, as the loader's
_REC_CATEGORICAL = ("run_id", "host", "machine", "label", "groups", "benchmark", "type", "cc_technology")
#: record text columns the loader holds as objects, categoricals here too (a code a record, not an
#: object pointer; their missing values are missing, as the loader's None)
_REC_CODED = ("started_at", "ended_at", "session", "block")


def _joined_records(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The runs' records as one frame in the loader's columns (no copy for one run); the text
    columns the loader makes categorical are so here, with sorted categories, and so are those of
    ``_REC_CODED``; the integers of ``REC_INT_COLUMNS`` in the narrowest type that holds them
    (``small_ints``)."""
    if not parts:
        return pd.DataFrame()
    records = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    keep = [c for c in RECORD_COLUMNS if c != "params"] + ["cc_technology", "machine"]
    records = records[[c for c in keep if c in records]]
    for c in _REC_CATEGORICAL + _REC_CODED:
        col = records[c]
        if not isinstance(col.dtype, pd.CategoricalDtype):  # runs' categories differ: joined as text
            records[c] = col.astype("category")
    for c in REC_INT_COLUMNS:
        if c in records and records[c].dtype.kind == "i":
            records[c] = small_ints(records[c].to_numpy())
    return records


def _typed(obs: pd.DataFrame, single: bool) -> pd.DataFrame:
    """The loader's dtypes but for the integers and one run's start times: sorted categories,
    float, bool, start times as one run's read gives them (a categorical, 4 bytes a row, not an
    object pointer each) or else as objects with None, integers in the narrowest type that holds
    them (``small_ints``; a column of integers already, as one run's read gives it, is left as it
    is: no copy)."""
    for c in CATEGORICAL:  # sorted categories, as the loader's (groupby orders by them)
        cat = obs[c] if isinstance(obs[c].dtype, pd.CategoricalDtype) else obs[c].astype(object)
        cat = cat.astype("category") if not isinstance(cat.dtype, pd.CategoricalDtype) else cat
        want = sorted(str(x) for x in cat.cat.categories)
        if cat.dtype != obs[c].dtype or list(cat.cat.categories) != want:
            obs[c] = cat.cat.set_categories(want)
    for c in INT_COLUMNS:
        if obs[c].dtype.kind != "i":
            obs[c] = small_ints(obs[c].to_numpy(dtype=np.int64))
    if obs["value"].dtype != float:
        obs["value"] = obs["value"].astype(float)
    if obs["primary"].dtype != bool:
        obs["primary"] = obs["primary"].astype(bool)
    start = obs["started_at"]
    keep = single and (start.dtype == object or isinstance(start.dtype, pd.CategoricalDtype))
    if not keep:
        obs["started_at"] = text_objects(start)
    return obs


def read_records(files: Sequence[Path], run: str, categorical: Sequence[str] = ()) -> pd.DataFrame:
    """One stored run's record files in record order, read column by column (never the whole
    table at once, nor a copy of it): text as the Parquet dictionaries hold it, as Python
    objects (one per distinct value; None when missing) except the columns in ``categorical``,
    which are categoricals with sorted categories, as the loader's; numbers as Arrow gives them
    to pandas."""
    if not files:
        raise StoreError(f"the results store has no record files of run {run}", "add the run again")
    schema = pq.read_schema(files[0])
    text = {f.name for f in schema if pa.types.is_string(f.type)}

    def column(name: str) -> pa.ChunkedArray:
        read = [
            pq.read_table(f, columns=[name], read_dictionary=[name] if name in text else None) for f in files
        ]
        return pa.chunked_array(
            [c for t in read for c in t[name].chunks], type=read[0].schema.field(name).type
        )

    rec = column("record").to_numpy()
    # the files hold runs of records: in record order already unless a file's records interleave
    order = None if len(rec) < 2 or bool((rec[1:] > rec[:-1]).all()) else np.argsort(rec, kind="stable")
    frame: dict[str, Any] = {}
    for name in schema.names:
        col = column(name)
        if name in text:
            codes, known = _dictionary_codes(col)
            codes = codes if order is None else codes[order]
            frame[name] = _categorical(codes, known, objects=name not in categorical)
        else:
            vals = col.to_pandas().to_numpy()
            frame[name] = vals if order is None else vals[order]
    return pd.DataFrame(frame, copy=False)


def _dictionary_codes(col: pa.ChunkedArray) -> tuple[np.ndarray, dict[str, int]]:
    """A dictionary-encoded column's codes (-1: missing) and its values numbered by first sight."""
    known: dict[str, int] = {}
    parts = [_global_codes(chunk, known) for chunk in col.chunks]
    return (np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)), known


def _rel_glob(table: str, run: str, deep: bool = False) -> str:
    return f"{table}/run={encode(run)}/" + ("*/*.parquet" if deep else "*.parquet")


def _params(p: Any) -> dict[str, Any] | None:
    return json.loads(p) if isinstance(p, str) else None


#: the observation columns read from a stored run's files (label comes from the partition path)
_OBS_TEXT = ("host", "groups", "benchmark", "type", "metric", "unit", "better", "started_at", "cc_technology")
_OBS_NUMBERS = {"primary": np.bool_, "value": np.float64}
#: the observations' integer columns: in the narrowest type that holds them (``small_ints``: a
#: repetition or an index in 1 or 2 bytes a row, a record number in 4, not 8)
INT_COLUMNS = ("repetition", "index", "record")
#: the records' integer columns held likewise (the digest keeps its 64 bits)
REC_INT_COLUMNS = ("index", "repetition", "attempt", "line")
_INT32 = np.iinfo(np.int32)


def read_observations(files: Sequence[Path], keep: set[str] | None = None) -> pd.DataFrame:
    """One stored run's observation files as compact columns in the loader's order (``seq``):
    text as categoricals with sorted categories (``started_at`` too: ``text_objects`` gives
    the loader's objects),
    numbers as numpy arrays. Read column by column, each file's part put in place, so no
    whole-table copy (of strings or of the frame) is made and one column's codes at a time are
    held wider than the categorical's. ``keep``: only the rows of these benchmarks (a file's
    column is read whole, then filtered, one column at a time)."""
    masks = [None if keep is None else _benchmark_mask(f, keep) for f in files]
    seqs = [
        _kept(pq.read_table(f, columns=["seq"])["seq"], k).to_numpy()
        for f, k in zip(files, masks, strict=True)
    ]
    seq = np.sort(np.concatenate(seqs)) if seqs else np.zeros(0, dtype=np.int64)
    n = len(seq)
    if n > 1 and (seq[1:] == seq[:-1]).any():  # each row is put at its seq's place: one row a place
        raise StoreError(f"{files[0].parents[1]}: observations share a seq", "add the run again")
    places = [_place(seq, s) for s in seqs]
    del seq, seqs
    frame: dict[str, Any] = {}
    for c in OBS_COLUMNS:
        if c == "label":  # from the partition path
            known: dict[str, int] = {}
            codes = np.full(n, -1, dtype=np.int32)
            for f, at in zip(files, places, strict=True):
                codes[at] = known.setdefault(unquote(f.parent.name.split("=", 1)[1]), len(known))
            frame[c] = _categorical(codes, known)
        elif c in _OBS_TEXT:
            known = {}
            codes = np.full(n, -1, dtype=np.int32)
            for f, at, mask in zip(files, places, masks, strict=True):
                col = _kept(pq.read_table(f, columns=[c], read_dictionary=[c])[c], mask)
                for k, chunk in _chunks(col):
                    codes[_part(at, k, len(chunk))] = _global_codes(chunk, known)
            frame[c] = _categorical(codes, known)
        elif c in _OBS_NUMBERS or c in INT_COLUMNS:
            arr = np.empty(n, dtype=_OBS_NUMBERS.get(c, np.int32))
            for f, at, mask in zip(files, places, masks, strict=True):
                col = _kept(pq.read_table(f, columns=[c])[c], mask)
                for k, chunk in _chunks(col):
                    vals = chunk.to_numpy(zero_copy_only=False)
                    if arr.dtype == np.int32 and not _fits_int32(vals):
                        arr = arr.astype(np.int64)  # a value past int32: the whole column int64
                    arr[_part(at, k, len(chunk))] = vals
            frame[c] = small_ints(arr) if c in INT_COLUMNS else arr
    return pd.DataFrame(frame, copy=False)


def _benchmark_mask(f: Path, keep: set[str]) -> pa.ChunkedArray:
    """Which rows of an observation file belong to the benchmarks in ``keep`` (a test per
    dictionary value, not per row; a missing benchmark counts as the text "None")."""
    col = pq.read_table(f, columns=["benchmark"], read_dictionary=["benchmark"])["benchmark"]
    chunks = []
    for chunk in col.chunks:
        hit = np.asarray([str(v) in keep for v in chunk.dictionary.to_pylist()] + ["None" in keep])
        idx = chunk.indices.fill_null(len(hit) - 1).to_numpy(zero_copy_only=False)
        chunks.append(pa.array(hit[idx]))
    return pa.chunked_array(chunks, type=pa.bool_())


def _kept(col: pa.ChunkedArray, mask: pa.ChunkedArray | None) -> pa.ChunkedArray:
    return col if mask is None else col.filter(mask)


def _fits_int32(vals: np.ndarray) -> bool:
    return not len(vals) or (_INT32.min <= int(vals.min()) and int(vals.max()) <= _INT32.max)


def small_ints(vals: np.ndarray) -> np.ndarray:
    """Integers in the narrowest of int8, int16, int32 and int64 that holds every one (no copy
    when they are so already)."""
    lo, hi = (int(vals.min()), int(vals.max())) if len(vals) else (0, 0)
    for kind in (np.int8, np.int16, np.int32):
        if np.iinfo(kind).min <= lo and hi <= np.iinfo(kind).max:
            return vals.astype(kind, copy=False)
    return vals.astype(np.int64, copy=False)


def _place(seq: np.ndarray, part: np.ndarray) -> slice | np.ndarray:
    """Where a file's rows go among the sorted ``seq``: a slice when they are one run of it."""
    at = np.searchsorted(seq, part)
    if len(at) and at[-1] - at[0] == len(at) - 1 and bool((at[1:] > at[:-1]).all()):
        return slice(int(at[0]), int(at[-1]) + 1)
    return at


def _part(at: slice | np.ndarray, start: int, size: int) -> slice | np.ndarray:
    """The places of a file's rows ``start`` to ``start + size``."""
    if isinstance(at, slice):
        return slice(at.start + start, at.start + start + size)
    return at[start : start + size]


def _chunks(col: pa.ChunkedArray) -> list[tuple[int, pa.Array]]:
    """A column's chunks, each with its first row's number."""
    out, k = [], 0
    for chunk in col.chunks:
        out.append((k, chunk))
        k += len(chunk)
    return out


def _global_codes(col: pa.Array, known: dict[str, int]) -> np.ndarray:
    """A dictionary-encoded batch column's codes in ``known``'s numbering (grown; -1: missing)."""
    if not pa.types.is_dictionary(col.type):
        col = pc.dictionary_encode(col)
    lookup = np.asarray([known.setdefault(v, len(known)) for v in col.dictionary.to_pylist()] + [-1])
    idx = col.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return lookup[idx] if len(lookup) > 1 else np.full(len(idx), -1)


def _categorical(codes: np.ndarray, known: dict[str, int], objects: bool = False) -> Any:
    """Codes numbered in first-seen order as a categorical with sorted categories (or, with
    ``objects``, as an object array with None for a missing value)."""
    names = sorted(known)
    remap = np.empty(len(known) + 1, dtype=code_type(len(known) + 1))
    remap[[known[x] for x in names]] = np.arange(len(names))
    remap[-1] = -1
    new = remap[codes]
    if objects:  # an object Series: pandas would make an object array of text its own str column
        return pd.Series(np.asarray([*names, None], dtype=object)[new], dtype=object, copy=False)
    return pd.Categorical.from_codes(new, categories=names)


def _joined(parts: list[pd.DataFrame]) -> pd.DataFrame:
    """The runs' observations as one frame (no copy for one run)."""
    if not parts:
        return pd.DataFrame(columns=list(OBS_COLUMNS))
    if len(parts) == 1:
        return parts[0][list(OBS_COLUMNS)]
    return pd.concat([p.astype({c: object for c in CATEGORICAL}) for p in parts], ignore_index=True)[
        list(OBS_COLUMNS)
    ]


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
    """Every results path through the store (added when missing or changed), CSV files of
    published results beside them, as one Dataset (every observation in memory)."""
    parts = paths_parts(paths, csv_mapping, csv_defaults, store, part_limit=None)
    return dataclasses.replace(parts.ds, obs=parts.read(None))


def paths_parts(
    paths: Sequence[Path],
    csv_mapping: Mapping[str, str] | None = None,
    csv_defaults: Mapping[str, str] | None = None,
    store: Path | None = None,
    part_limit: int | None = PART_ROWS,
) -> Parts:
    """``build``'s input: every results path through the store (added when missing or changed),
    CSV files of published results beside them, with the observations read a part of at most
    ``part_limit`` observations at a time (``parts.py``; ``None``: one part, whatever its size)."""
    given = [Path(p) for p in paths]
    for p in given:
        if not p.exists():
            raise ReportError(f"{p}: no such file or directory", "give results/<run_id> directories")
    jsonl = [p for p in given if not (p.is_file() and p.suffix == ".csv")]
    csvs = [p for p in given if p.is_file() and p.suffix == ".csv"]
    runs: list[tuple[Manifest, Path]] = []
    notes: list[str] = []
    st = None
    if jsonl:  # CSV files alone open no store (none is made in the working directory for them)
        st = Store(store or default_store(jsonl))
        with st.locked():
            notes = st.check()
        for p in jsonl:
            if p.is_dir() and not any(p.rglob("*.jsonl")):
                raise ReportError(
                    f"{p}: no result files (*.jsonl) found", "the runner writes results/<run_id>/<host>.jsonl"
                )
            runs += [(m, p) for m in st.find(p) or _add(st, p)]
    ds, read_stored = stored(st, runs) if st and runs else (_empty(), None)
    ds.warnings = notes + ds.warnings
    extra = [read_csv_observations(c, csv_mapping, csv_defaults) for c in csvs]
    csv = pd.concat(extra, ignore_index=True) if extra else pd.DataFrame(columns=list(OBS_COLUMNS))
    ds.sources = [str(c) for c in csvs] + ds.sources
    stored_rows = sum(m.observations for m, _ in runs)
    if ds.records.empty and not stored_rows and csv.empty:
        raise ReportError("no result records in the given paths", "did the run write any records?")

    def read(benchmarks: Sequence[str] | None) -> pd.DataFrame:
        obs = read_stored(benchmarks) if read_stored else pd.DataFrame(columns=list(OBS_COLUMNS))
        if not extra:
            return obs
        more = (
            [e[e["benchmark"].astype(str).isin(benchmarks)] for e in extra]
            if benchmarks is not None
            else extra
        )
        obs = obs.astype({c: object for c in CATEGORICAL})
        return _categorize(
            pd.concat([obs, *more], ignore_index=True) if len(obs) else pd.concat(more, ignore_index=True)
        )

    groups: list[list[str] | None] = [None]
    if part_limit is not None and stored_rows + len(csv) > part_limit:
        counts = benchmark_counts(st, runs) if st else {}
        for b, n in csv["benchmark"].astype(str).value_counts().items():
            counts[str(b)] = counts.get(str(b), 0) + int(n)
        groups = list(plan(counts, part_limit))
    labels = {
        unquote(f.parent.name.split("=", 1)[1])
        for m, _ in runs
        if st and m.observations
        for f in Path(st.root).glob(_rel_glob("observations", m.run, True))
    }
    labels |= {str(x) for x in csv["label"].unique()}
    return Parts(ds, groups, read, labels, stored_rows + len(csv), _categorize(csv.copy()) if extra else csv)


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
