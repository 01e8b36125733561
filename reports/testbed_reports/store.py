"""The results store: each collected run's chosen records as plain Parquet in the Hive layout.

The agent's JSON Lines stay the source of truth (crash-safe, on the target and in
``results/<run_id>/``); the store is what the controller's engine reads, written when a run is
collected (``testbed-report store add``, the collect role) and refreshed by ``build`` when a run's
files changed since. Layout (``results/_store`` unless ``--store`` or ``TESTBED_STORE`` says
otherwise; ``_`` cannot start a run id, so no run directory collides with it)::

    _store/store.json                                      store schema version, tables, writer
    _store/observations/run=<run>/label=<label>/<host>.parquet   one row per observation
    _store/records/run=<run>/<host>.parquet                one row per record that counts
    _store/percentiles/run=<run>/<host>.parquet            latency percentiles of the records
    _store/hosts/run=<run>/<host>.parquet                  the fingerprint (sysinfo) of each host
    _store/manifests/<run>.json                            sources (size, mtime, SHA-256), warnings

Partition values are percent-encoded (``label=fio%20via%20agent``), as Spark, Trino, BigQuery,
DuckDB and Arrow decode them; the partition columns live in the paths only. Every file carries
the store schema version in its key-value metadata (``testbed.store_schema``).

The one record path applies on the way in: the records are read, checked and chosen by
:mod:`testbed_reports.load` (:mod:`testbed_shared.records`: retries, duplicates, runs that share a
run id kept apart). Writing is deterministic (rows in load order, fixed writer options), so adding
a run twice leaves the same bytes; a run id already in the store from a different run (no agent
session and no record in common) is stored as ``run_id@2`` with a warning, as the loader does.

``add`` streams: it loads and writes one result file (one host) at a time, so its memory is one
host's file, not the run's (:mod:`testbed_reports.store_stream`). The selection never crosses a
(run id, host), so this gives the whole-run load's bytes when each (run id, host) is in one file:
record positions and ``seq`` continue from the files before, the manifest's counts and warnings
are summed over the files (the selection's and the margins' as the whole load words them), and a
run's missing margins become NaN once any file declares one. Where the layout needs the whole run
(one host's records in several files, e.g. a run fetched twice into subdirectories; runs that
share a run id and host, kept apart as ``run_id@2``; an ``error`` field that is not text; a file
without records) it falls back to loading the run whole, as before (memory: the whole run). Either
way each run is written into a temporary directory and renamed into place at the end, so a killed
add leaves the store as it was.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from testbed_reports import __version__
from testbed_reports.errors import ReportError
from testbed_reports.load import Dataset, load
from testbed_reports.store_stream import Layout, NotStreamable, Warnings, datasets, result_files
from testbed_shared.atomic import write_atomically

#: version of the store layout; files and store.json carry it (``testbed.store_schema``)
STORE_SCHEMA = 1
SCHEMA_KEY = b"testbed.store_schema"
#: the store's directory inside a results directory, and the variable that names another place
STORE_DIR = "_store"
STORE_ENV = "TESTBED_STORE"
TABLES = ("observations", "records", "percentiles", "hosts")

OBS_SCHEMA = pa.schema(
    [
        ("host", pa.string()),
        ("groups", pa.string()),
        ("benchmark", pa.string()),
        ("type", pa.string()),
        ("metric", pa.string()),
        ("unit", pa.string()),
        ("better", pa.string()),
        ("primary", pa.bool_()),
        ("value", pa.float64()),
        ("repetition", pa.int64()),
        ("index", pa.int64()),
        ("started_at", pa.string()),
        ("cc_technology", pa.string()),
        ("record", pa.int64()),
        ("seq", pa.int64()),
    ]
)
REC_SCHEMA = pa.schema(
    [
        ("record", pa.int64()),
        ("host", pa.string()),
        ("machine", pa.string()),
        ("label", pa.string()),
        ("groups", pa.string()),
        ("benchmark", pa.string()),
        ("type", pa.string()),
        ("index", pa.int64()),
        ("repetition", pa.int64()),
        ("status", pa.string()),
        ("error", pa.string()),
        ("started_at", pa.string()),
        ("ended_at", pa.string()),
        ("margin", pa.float64()),
        ("digest", pa.int64()),
        ("attempt", pa.int64()),
        ("session", pa.string()),
        ("block", pa.string()),
        ("cpu_percent", pa.float64()),
        ("steal_percent", pa.float64()),
        ("process_cpu_percent", pa.float64()),
        ("params", pa.string()),
        ("source", pa.string()),
        ("line", pa.int64()),
        ("cc_technology", pa.string()),
        ("crypto", pa.string()),
    ]
)
PCT_SCHEMA = pa.schema(
    [
        ("host", pa.string()),
        ("label", pa.string()),
        ("benchmark", pa.string()),
        ("series", pa.string()),
        ("percentile", pa.float64()),
        ("value", pa.float64()),
    ]
)
HOST_SCHEMA = pa.schema(
    [
        ("host", pa.string()),
        ("label", pa.string()),
        ("groups", pa.string()),
        ("kernel", pa.string()),
        ("microcode", pa.string()),
        ("cpu_model", pa.string()),
        ("vm_size", pa.string()),
        ("tcb", pa.string()),
        ("cc_technology", pa.string()),
        ("first_started_at", pa.string()),
        ("sysinfo", pa.string()),
    ]
)
SCHEMAS = {"observations": OBS_SCHEMA, "records": REC_SCHEMA, "percentiles": PCT_SCHEMA, "hosts": HOST_SCHEMA}


class StoreError(ReportError):
    """A store that cannot be read or written as it is (names the store and what to do)."""


def default_store(paths: Iterable[Path] = ()) -> Path:
    """The store for these results: ``$TESTBED_STORE``, else ``<results>/_store`` beside the first
    run directory given (``results/RUN`` -> ``results/_store``), else ``results/_store``."""
    env = os.environ.get(STORE_ENV)
    if env:
        return Path(env).expanduser()
    for given in paths:
        p = Path(given)
        run_dir = p if p.is_dir() else p.parent
        return run_dir.resolve().parent / STORE_DIR
    return Path("results") / STORE_DIR


def encode(value: str) -> str:
    """A partition value as Hive writes it: every character but letters, digits and ``._-``
    percent-encoded (so ``/``, ``=`` and spaces never split a path)."""
    return quote(value, safe="._-") or "%00"


# -- the sources of a run ----------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """One file a stored run was read from: its path relative to the run directory, size, mtime."""

    rel: str
    size: int
    mtime_ns: int
    sha256: str = ""

    def key(self) -> tuple[str, int, int]:
        return (self.rel, self.size, self.mtime_ns)


def run_files(path: Path) -> tuple[Path, list[Path]]:
    """(the run directory, its result and sysinfo files) of a results directory or one .jsonl."""
    if path.is_dir():
        files = sorted(path.rglob("*.jsonl"))
        files += sorted(f for f in path.rglob("*.sysinfo.json"))
        return path, files
    si = path.with_name(path.name[: -len(".jsonl")] + ".sysinfo.json")
    return path.parent, [path, *([si] if si.exists() else [])]


def sources(path: Path, digest: bool = False) -> list[Source]:
    """The sources of a results path as they are now (``digest``: with their SHA-256)."""
    root, files = run_files(path)
    out = []
    for f in files:
        st = f.stat()
        sha = _sha256(f) if digest else ""
        out.append(Source(f.relative_to(root).as_posix(), st.st_size, st.st_mtime_ns, sha))
    return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# -- the store ----------------------------------------------------------------------------------


@dataclass
class Manifest:
    """What one stored run was made of (``manifests/<run>.json``)."""

    run: str
    run_id: str  # the run id its records carry (``run`` differs when it was kept apart: run_id@2)
    origin: str  # the run directory it was read from, absolute
    sources: list[Source]
    warnings: list[str] = field(default_factory=list)
    records: int = 0
    observations: int = 0
    hosts: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    sessions: list[str] = field(default_factory=list)
    schema: int = STORE_SCHEMA

    def as_dict(self) -> dict[str, Any]:
        d = self.__dict__ | {"sources": [s.__dict__ for s in self.sources]}
        return {"store_schema": d.pop("schema"), **d}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Manifest:
        d = dict(d)
        schema = d.pop("store_schema", 0)
        srcs = [Source(**s) for s in d.pop("sources", [])]
        return cls(sources=srcs, schema=int(schema), **d)


@dataclass
class Tally:
    """What the parts of one run written so far hold (its manifest's counts and names)."""

    records: int = 0
    observations: int = 0
    hosts: set[str] = field(default_factory=set)
    labels: set[str] = field(default_factory=set)
    sessions: set[str] = field(default_factory=set)

    def manifest(
        self, run: str, run_id: str, root: Path, srcs: list[Source], warnings: list[str]
    ) -> Manifest:
        return Manifest(
            run=run,
            run_id=run_id,
            origin=str(root.resolve()),
            sources=srcs,
            warnings=warnings,
            records=self.records,
            observations=self.observations,
            hosts=sorted(self.hosts),
            labels=sorted(self.labels),
            sessions=sorted(self.sessions),
        )


class Store:
    """A results store at ``root`` (created on first write)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    # reading --------------------------------------------------------------------------------

    def version(self) -> int | None:
        """The schema version of the store (None: no store yet)."""
        meta = self.root / "store.json"
        if not meta.exists():
            return None
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
            return int(data["store_schema"])
        except (ValueError, KeyError, TypeError, OSError) as exc:
            raise StoreError(
                f"{meta}: not a store description ({exc})",
                "remove the store; build re-creates it from results",
            ) from None

    def check(self) -> list[str]:
        """Refuse a store newer than this reader; migrate an older one. Returns what was done."""
        v = self.version()
        if v is None or v == STORE_SCHEMA:
            return []
        if v > STORE_SCHEMA:
            raise StoreError(
                f"{self.root}: store schema {v} is newer than this testbed-report reads ({STORE_SCHEMA})",
                "upgrade testbed-report, or use --store DIR for a store of this version",
            )
        return self.migrate(v)

    def migrate(self, old: int) -> list[str]:
        """Bring a store of an older schema to :data:`STORE_SCHEMA`: each run is read again from
        its JSON Lines (the source of truth, listed in its manifest); a run whose sources are gone
        is an error naming them (nothing is deleted)."""
        done = []
        manifests = self.manifests()
        missing = [
            (m.run, str(Path(m.origin) / s.rel))
            for m in manifests
            for s in m.sources
            if not (Path(m.origin) / s.rel).exists()
        ]
        if missing:
            run, path = missing[0]
            raise StoreError(
                f"{self.root}: store schema {old} is older than {STORE_SCHEMA} and run {run} cannot be "
                f"re-read ({path} is gone)",
                "give the results directories again with testbed-report store add, or use a new --store",
            )
        for m in manifests:
            origin = Path(m.origin)
            self._remove_run(m.run)
            self._add(origin, run_hint=m.run)
            done.append(
                f"store {self.root}: run {m.run} migrated from store schema {old} to {STORE_SCHEMA} "
                f"(re-read from {origin})"
            )
        self._write_meta()
        return done

    def manifests(self) -> list[Manifest]:
        out = []
        for f in sorted((self.root / "manifests").glob("*.json")):
            try:
                out.append(Manifest.from_dict(json.loads(f.read_text(encoding="utf-8"))))
            except (ValueError, TypeError, KeyError) as exc:
                raise StoreError(
                    f"{f}: not a run manifest ({exc})", "remove it and add the run again"
                ) from None
        return out

    def manifest(self, run: str) -> Manifest | None:
        f = self.root / "manifests" / f"{run}.json"
        if not f.exists():
            return None
        return Manifest.from_dict(json.loads(f.read_text(encoding="utf-8")))

    def find(self, path: Path) -> list[Manifest]:
        """The stored runs read from this results path with the files it has now (empty: not
        stored, or its files changed since)."""
        root, _ = run_files(path)
        origin = str(root.resolve())
        now = {s.key() for s in sources(path)}
        return [m for m in self.manifests() if m.origin == origin and {s.key() for s in m.sources} == now]

    # writing --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """The store's writer lock (``.lock``, flock): one writer at a time, readers of a run see
        it whole (a run's partitions are renamed into place)."""
        self._ensure_root()
        with (self.root / ".lock").open("a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def add(self, path: Path, run_hint: str | None = None) -> list[Manifest]:
        """Read one results directory (or .jsonl file) through the record path and store each of
        its runs; returns their manifests. Adding the same files again rewrites the same bytes."""
        path = Path(path)
        if not path.exists():
            raise ReportError(f"{path}: no such file or directory", "give results/<run_id> directories")
        with self.locked():
            found = [] if run_hint else self.find(path)
            return found or self._add(path, run_hint)

    def _add(self, path: Path, run_hint: str | None) -> list[Manifest]:
        v = self.version()
        if v is not None and v != STORE_SCHEMA:
            self.check()
        root, _ = run_files(path)
        srcs = sources(path, digest=True)
        try:
            out = self._add_streaming(path, root, srcs, run_hint)
        except NotStreamable:
            out = self._add_whole(path, root, srcs, run_hint)
        self._write_meta()
        return out

    def _add_whole(self, path: Path, root: Path, srcs: list[Source], run_hint: str | None) -> list[Manifest]:
        """The whole run loaded at once, then written run by run (a layout not stored file by file)."""
        ds = load([path])
        out = []
        for run_id in sorted(ds.records["run_id"].unique()):
            mine = ds.records[ds.records["run_id"] == run_id]
            sessions = set(mine["session"].dropna().astype(str))
            run = run_hint or self._run_name(run_id, sessions, lambda m=mine: m["digest"].to_numpy(np.int64))
            out.append(self._write_run(run, run_id, ds, root, srcs))
        return out

    def _add_streaming(
        self, path: Path, root: Path, srcs: list[Source], run_hint: str | None
    ) -> list[Manifest]:
        """Each result file loaded and written on its own (one host's records in memory at a time;
        ``store_stream.datasets``), each run into its temporary directory, moved into place at the
        end: the whole-run path's bytes. :class:`NotStreamable` when the layout needs the whole run
        (nothing is in place yet then)."""
        files = result_files(path)
        layout, log = Layout(files), Warnings()
        parts: dict[str, tuple[Path, Tally]] = {}
        seq = 0
        try:
            for f, ds in datasets(files):
                layout.check(f, ds)
                log.add(f, ds)
                for run_id in sorted(ds.records["run_id"].unique()):
                    if run_id not in parts:
                        parts[run_id] = (self._tmp(), Tally())
                    self._write_part(parts[run_id][0], ds, run_id, root, parts[run_id][1], seq)
                seq += len(ds.obs)
                del ds
            if log.margin_given:
                for tmp, _ in parts.values():
                    _fill_margins(tmp)
            warnings = log.all()
            out = []
            for run_id in sorted(parts):
                tmp, tally = parts[run_id]
                digests = functools.partial(_table_digests, tmp / "records")
                run = run_hint or self._run_name(run_id, tally.sessions, digests)
                out.append(self._place(run, tmp, tally.manifest(run, run_id, root, srcs, warnings)))
            return out
        finally:
            for tmp, _ in parts.values():
                shutil.rmtree(tmp, ignore_errors=True)

    def _run_name(self, run_id: str, sessions: set[str], digests: Callable[[], np.ndarray]) -> str:
        """``run_id``, or ``run_id@N`` when the store holds a different run with that id (no agent
        session and no record in common: :func:`testbed_shared.records.runs`' rule); ``digests``
        gives the run's record digests when they are needed."""
        base = run_id.split("@", 1)[0] if "@" in run_id else run_id
        n = 1
        while True:
            name = base if n == 1 else f"{base}@{n}"
            m = self.manifest(name)
            if m is None or sessions & set(m.sessions) or _common(digests(), self._digests(name)):
                return name
            n += 1

    def _digests(self, run: str) -> np.ndarray:
        return _table_digests(self.root / "records" / f"run={encode(run)}")

    def _tmp(self) -> Path:
        return Path(tempfile.mkdtemp(prefix=".adding-", dir=self._ensure_root()))

    def _write_run(self, run: str, run_id: str, ds: Dataset, root: Path, srcs: list[Source]) -> Manifest:
        tmp = self._tmp()
        try:
            tally = Tally()
            self._write_part(tmp, ds, run_id, root, tally, 0)
            return self._place(run, tmp, tally.manifest(run, run_id, root, srcs, list(ds.warnings)))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _write_part(self, tmp: Path, ds: Dataset, run_id: str, root: Path, tally: Tally, seq0: int) -> None:
        """The records of ``run_id`` in ``ds`` into ``tmp``, host by host, as the part of the run after
        ``tally`` (record positions from ``tally.records``, observation ``seq`` from ``seq0``)."""
        rec_mask = (ds.records["run_id"] == run_id).to_numpy()
        recs = ds.records[rec_mask]
        positions = np.flatnonzero(rec_mask)
        new_pos = np.full(len(ds.records), -1, dtype=np.int64)
        new_pos[positions] = np.arange(len(positions)) + tally.records
        obs = _rows(ds.obs, run_id)
        # an observation's host is its machine (load.py); its file is its record's VM host's
        vm = (
            ds.records["host"].astype(str).to_numpy()[obs["record"].to_numpy()]
            if len(obs)
            else np.zeros(0, str)
        )
        params = [ds.params[i] for i in positions]
        crypto = {}
        for c in ds.crypto:
            if c.get("run_id") == run_id:
                crypto[(c["host"], c.get("index", -1), c["benchmark"], c["repetition"])] = c
        hosts = sorted(recs["host"].astype(str).unique())
        for host in hosts:
            hmask = (recs["host"].astype(str) == host).to_numpy()
            self._write_records(
                tmp, host, recs[hmask], new_pos[positions[hmask]], params, positions, hmask, root, crypto
            )
            self._write_obs(tmp, host, obs[vm == host], new_pos, seq0)
            self._write_pct(tmp, host, ds.percentiles, run_id)
            self._write_host(tmp, host, recs[hmask], ds.sysinfo.get((run_id, host)))
        tally.records += len(recs)
        tally.observations += len(obs)
        tally.hosts.update(hosts)
        tally.labels.update(recs["label"].astype(str).unique())
        tally.sessions.update(recs["session"].dropna().astype(str).unique())

    def _place(self, run: str, tmp: Path, manifest: Manifest) -> Manifest:
        """A run's tables written in ``tmp`` moved into place (the run stored before removed), then
        its manifest."""
        self._remove_run(run)
        for table in TABLES:
            src = tmp / table
            if src.exists():
                dest = self.root / table / f"run={encode(run)}"
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(src, dest)
        (self.root / "manifests").mkdir(exist_ok=True)
        write_atomically(
            self.root / "manifests" / f"{run}.json",
            json.dumps(manifest.as_dict(), indent=1, sort_keys=True) + "\n",
            what="store",
        )
        return manifest

    def _ensure_root(self) -> Path:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"{self.root}: cannot create the results store ({exc.strerror})",
                f"name a writable place with --store DIR or {STORE_ENV}",
            ) from None
        return self.root

    def _remove_run(self, run: str) -> None:
        for table in TABLES:
            shutil.rmtree(self.root / table / f"run={encode(run)}", ignore_errors=True)
        (self.root / "manifests" / f"{run}.json").unlink(missing_ok=True)

    def _write_meta(self) -> None:
        meta = {
            "store_schema": STORE_SCHEMA,
            "tables": list(TABLES),
            "layout": "hive",
            "writer": f"testbed-report {__version__}",
        }
        write_atomically(self.root / "store.json", json.dumps(meta, indent=1) + "\n", what="store")

    # one table of one host ------------------------------------------------------------------

    @staticmethod
    def _write(table: str, tmp: Path, rel: str, data: dict[str, Any]) -> None:
        schema = SCHEMAS[table]
        cols = {}
        for f in schema:
            vals = data[f.name]
            if isinstance(vals, pa.Array):  # built column-wise (_column)
                cols[f.name] = vals
                continue
            if f.type == pa.string():
                vals = [
                    None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v) for v in vals
                ]
            cols[f.name] = pa.array(vals, type=f.type)
        tbl = pa.table(cols, schema=schema)
        tbl = tbl.replace_schema_metadata({SCHEMA_KEY: str(STORE_SCHEMA).encode()})
        dest = tmp / table / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(tbl, dest, compression="zstd", use_dictionary=True, write_statistics=True)

    def _write_records(
        self,
        tmp: Path,
        host: str,
        recs: pd.DataFrame,
        pos: np.ndarray,
        params: list,
        positions: np.ndarray,
        hmask: np.ndarray,
        root: Path,
        crypto: dict,
    ) -> None:
        prm = [params[i] for i in np.flatnonzero(hmask)]
        data = {c: _column(recs, c, REC_SCHEMA.field(c).type) for c in REC_SCHEMA.names if c in recs}
        data["record"] = pos
        data["params"] = [None if p is None else json.dumps(p, sort_keys=True) for p in prm]
        data["source"] = map_distinct(recs["source"], lambda s: _rel(s, root))  # a few files a host
        keys = zip(recs["host"], recs["index"], recs["benchmark"], recs["repetition"], strict=True)
        data["crypto"] = (
            [json.dumps(crypto[k], sort_keys=True) if k in crypto else None for k in keys]
            if crypto
            else [None] * len(recs)
        )
        self._write("records", tmp, f"{_file(host)}.parquet", data)

    def _write_obs(self, tmp: Path, host: str, obs: pd.DataFrame, new_pos: np.ndarray, seq0: int) -> None:
        if obs.empty:
            return
        seq = obs.index.to_numpy() + seq0
        labels = _text_values(obs["label"])
        for label in sorted(set(labels)):
            m = labels == label
            part = obs[m]
            data = {c: _column(part, c, OBS_SCHEMA.field(c).type) for c in OBS_SCHEMA.names if c in part}
            data["record"] = new_pos[part["record"].to_numpy()]
            data["seq"] = seq[m]
            self._write("observations", tmp, f"label={encode(label)}/{_file(host)}.parquet", data)

    def _write_pct(self, tmp: Path, host: str, pct: pd.DataFrame, run_id: str) -> None:
        if pct.empty:
            return
        m = ((pct["run_id"].astype(str) == run_id) & (pct["host"].astype(str) == host)).to_numpy()
        if not m.any():
            return
        part = pct[m]
        self._write(
            "percentiles", tmp, f"{_file(host)}.parquet", {c: _column(part, c) for c in PCT_SCHEMA.names}
        )

    def _write_host(self, tmp: Path, host: str, recs: pd.DataFrame, info: dict[str, Any] | None) -> None:
        fp = fingerprint_fields(info)
        starts = recs["started_at"].dropna().astype(str)
        data = {
            "host": [host],
            "label": [str(recs["label"].iloc[0])],
            "groups": [str(recs["groups"].iloc[0])],
            **{k: [v] for k, v in fp.items()},
            "cc_technology": [str(recs["cc_technology"].iloc[0])],
            "first_started_at": [min(starts.unique()) if len(starts) else None],
            "sysinfo": [None if info is None else json.dumps(info, sort_keys=True)],
        }
        self._write("hosts", tmp, f"{_file(host)}.parquet", data)


def _table_digests(d: Path) -> np.ndarray:
    """The record digests of a run's ``records`` partition (empty when there is none)."""
    files = sorted(d.glob("*.parquet")) if d.exists() else []
    cols = [pq.read_table(f, columns=["digest"])["digest"].to_numpy() for f in files]
    return np.concatenate(cols).astype(np.int64) if cols else np.zeros(0, np.int64)


def _common(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(len(a) and len(b) and np.isin(a, b).any())


def _fill_margins(tmp: Path) -> None:
    """Missing margins in the records written in ``tmp`` as NaN: once any record loaded declares a
    margin, the whole-run load's margin column is floats, where a missing margin is NaN (a file whose
    records declare none gives nulls alone)."""
    for f in sorted((tmp / "records").glob("*.parquet")):
        tbl = pq.read_table(f)
        if tbl["margin"].null_count == 0:
            continue
        data = {c: tbl[c].combine_chunks() for c in tbl.column_names}
        data["margin"] = pc.fill_null(data["margin"], math.nan)
        Store._write("records", tmp, f.name, data)


def map_distinct(col: pd.Series, fn: Callable[[Any], Any]) -> list[Any]:
    """``[fn(v) for v in col]`` with ``fn`` called once per distinct value (a few source files or
    parameter sets over many records; equal values share one result)."""
    vals = col.to_numpy(dtype=object)
    codes, uniq = pd.factorize(vals, use_na_sentinel=True)
    out = np.empty(len(uniq) + 1, dtype=object)
    out[: len(uniq)] = [fn(v) for v in uniq]
    if (codes < 0).any():
        out[-1] = fn(vals[int(np.flatnonzero(codes < 0)[0])])
    return out[codes].tolist()


def _file(host: str) -> str:
    return encode(host)


def _rel(source: Any, root: Path) -> str:
    try:
        return Path(str(source)).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(source)


def _rows(obs: pd.DataFrame, run_id: str) -> pd.DataFrame:
    """The observations of one run that have a record (no copy when they all are)."""
    if not len(obs):
        return obs
    keep = obs["record"].to_numpy() >= 0
    keep &= _text_values(obs["run_id"]) == run_id
    return obs if keep.all() else obs[keep]


def _text_values(col: pd.Series) -> np.ndarray:
    """``col.astype(str)`` as a numpy object array, a categorical through its categories (one
    string per category, not one per row; a missing value stays missing)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        cats = np.asarray([str(x) for x in col.cat.categories] + [None], dtype=object)
        codes = col.cat.codes.to_numpy()
        return cats[np.where(codes < 0, len(cats) - 1, codes)]
    return col.astype(str).to_numpy(dtype=object)


def _column(df: pd.DataFrame, c: str, kind: pa.DataType | None = None) -> list[Any] | pa.Array:
    """A column as the store writes it: an Arrow array of ``kind`` built column-wise where the
    values allow it (numbers, text categories), else a list for :meth:`Store._write`."""
    col = df[c]
    fast = _arrow_column(col, kind) if kind is not None else None
    if fast is not None:
        return fast
    if isinstance(col.dtype, pd.CategoricalDtype):
        col = col.astype(object)
    vals = col.to_numpy(dtype=object) if col.dtype == object else col.to_numpy()
    out = vals.tolist()
    if col.dtype == object:
        out = [None if (v is None or (isinstance(v, float) and math.isnan(v))) else v for v in out]
    return out


def _arrow_column(col: pd.Series, kind: pa.DataType) -> pa.Array | None:
    """``col`` as an Arrow array of ``kind`` with the values the list path gives (None: use it)."""
    if kind == pa.string():
        if isinstance(col.dtype, pd.CategoricalDtype):
            cats = col.cat.categories
            if len(cats) and not all(type(x) is str for x in cats):
                return None
            codes = col.cat.codes.to_numpy()
            dictionary = pa.array(list(cats), type=pa.string())
            return pa.DictionaryArray.from_arrays(
                pa.array(codes, mask=codes < 0), dictionary
            ).dictionary_decode()
        if isinstance(col.dtype, pd.StringDtype) and col.dtype.storage == "pyarrow":
            return pa.array(col).cast(pa.string())  # missing -> null, as the list path
        return None
    vals = col.to_numpy() if col.dtype.kind in "fib" else None
    want = {pa.float64(): "f", pa.int64(): "i", pa.bool_(): "b"}.get(kind)
    if vals is None or want is None or vals.dtype.kind != want:
        return None
    return pa.array(vals, type=kind)


def _find(obj: Any, want: Sequence[str], depth: int = 0) -> Any:
    """The first value under a key whose name contains one of ``want`` (depth-first, bounded)."""
    if depth > 6:
        return None
    if isinstance(obj, dict):
        for k, v in obj.items():
            if any(w in str(k).lower() for w in want) and v not in (None, "", {}, []):
                return v
        for v in obj.values():
            hit = _find(v, want, depth + 1)
            if hit is not None:
                return hit
    elif isinstance(obj, list):
        for v in obj[:32]:
            hit = _find(v, want, depth + 1)
            if hit is not None:
                return hit
    return None


def _text(v: Any) -> str | None:
    if v is None:
        return None
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def fingerprint_fields(info: dict[str, Any] | None) -> dict[str, str | None]:
    """What history shows beside a change: kernel release, CPU microcode and model, the cloud VM
    size, the firmware/TCB version from the attestation evidence (``cc.attestation``)."""
    info = info or {}

    def sect(name: str) -> dict[str, Any]:
        v = info.get(name)
        return v if isinstance(v, dict) else {}

    cc = sect("cc")
    return {
        "kernel": _text(sect("kernel").get("release")),
        "microcode": _text(sect("cpu").get("microcode")),
        "cpu_model": _text(sect("cpu").get("model")),
        "vm_size": _text(_find(sect("cloud"), ("vm_size", "instance_type", "machine_type"))),
        "tcb": _text(_find(cc.get("attestation") or {}, ("tcb",))),
    }
