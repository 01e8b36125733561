"""What ``store add`` needs to write a run file by file: when that is the same as loading it whole,
and the run's warnings put together from each file's.

Loading one result file at a time (:func:`testbed_reports.load.load` of that file) gives the rows
the whole-run load gives for it when no execution and no run crosses files: the record selection
(:func:`testbed_shared.records.select`) groups by ``(run_id, host, index, benchmark, repetition)``
and runs are kept apart (:func:`testbed_shared.records.rename_runs`) only where one (run id, host)
is in several files. :class:`Layout` checks that file by file; :class:`Warnings` rebuilds the
warnings of the whole load: the sysinfo ones in file order, the selection's from each file's
``Dataset.selection`` summed (duplicates counted, conflicts in file order) and the margins' over
all files.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from testbed_reports import load as loader
from testbed_reports.errors import ReportError, SchemaError
from testbed_shared import records as rec_schema

#: files loaded ahead in worker processes on a machine with several CPUs (memory: as many more files)
AHEAD = 2
#: a result file's load takes about this many times its size in memory (measured: 3.6 for an 88 MB
#: file of 78,120 records with 8 metrics each, 315 MiB above the process's own)
LOAD_FACTOR = 4
#: the memory files loaded ahead may take together, estimated as LOAD_FACTOR x their sizes: fewer
#: workers, down to none, for large files (at 10^8 observations a host's file is 888 MB)
AHEAD_MEMORY = 1 << 30


class NotStreamable(Exception):
    """This directory is not written file by file; the whole-run path stores it (says why)."""


def result_files(path: Path) -> list[Path]:
    """The result files the loader reads for ``path``, in its order (a directory's, sorted)."""
    return [path] if path.is_file() else sorted(path.rglob("*.jsonl"))


def load_file(path: Path) -> loader.Dataset:
    """One result file through the loader; a file without records is :class:`NotStreamable`
    (the whole run may still have records), a record that breaks the schema is the loader's error."""
    try:
        return loader.load([path])
    except SchemaError:
        raise
    except ReportError as exc:
        raise NotStreamable(f"{path}: {exc}") from None


def cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def workers_ahead(files: Sequence[Path]) -> int:
    """How many files to load ahead in worker processes: none on one CPU, for one file or for a small
    run; else up to :data:`AHEAD`, as many as :data:`AHEAD_MEMORY` holds at the largest file's
    estimate."""
    sizes = [f.stat().st_size for f in files]
    if len(sizes) < 2 or cpus() < 2 or sum(sizes) < loader.PARALLEL_BYTES:
        return 0
    return min(len(files), cpus(), AHEAD, AHEAD_MEMORY // max(LOAD_FACTOR * max(sizes), 1))


def datasets(files: Sequence[Path]) -> Iterator[tuple[Path, loader.Dataset]]:
    """Each file's load (:func:`load_file`), in order. With several CPUs and enough data the next
    files are loaded in worker processes meanwhile, as many as :func:`workers_ahead` says."""
    workers = workers_ahead(files)
    if not workers:
        for f in files:
            yield f, load_file(f)
        return
    ctx = multiprocessing.get_context("spawn" if sys.platform != "linux" else "fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        rest = iter(files)
        ahead: deque[tuple[Path, Future[loader.Dataset]]] = deque(
            (f, pool.submit(load_file, f)) for f in itertools.islice(rest, workers)
        )
        try:
            while ahead:
                f, job = ahead.popleft()
                ds = job.result()
                ahead.extend((g, pool.submit(load_file, g)) for g in itertools.islice(rest, 1))
                yield f, ds
                del ds
        finally:
            for _, job in ahead:
                job.cancel()


@dataclass
class Layout:
    """Checks that each (run id, host) is in one file only and the loader's record columns do not
    depend on other files (an ``error`` that is not text takes the whole run's column type)."""

    files: Sequence[Path]
    pairs: set[tuple[str, str]] = field(default_factory=set)

    def __post_init__(self) -> None:
        if not self.files:
            raise NotStreamable("no result files")
        stems = [f.name for f in self.files]
        if len(set(stems)) < len(stems):
            raise NotStreamable("one host's records are in several files")

    def check(self, path: Path, ds: loader.Dataset) -> None:
        recs = ds.records
        pairs = set(zip(recs["run_id"].astype(str), recs["host"].astype(str), strict=True))
        if pairs & self.pairs:
            raise NotStreamable(f"{path}: a run and host of an earlier file (kept apart or merged)")
        self.pairs |= pairs
        if not _plain_text(recs["error"]):
            raise NotStreamable(f"{path}: an error field that is not text")


def _plain_text(col: pd.Series) -> bool:
    """Text or missing values only (the column type a whole run's load gives it too)."""
    if isinstance(col.dtype, pd.StringDtype):
        return True
    return col.dtype == object and all(v is None or v.__class__ is str for v in col.tolist())


@dataclass
class Warnings:
    """The warnings of a whole-run load, from each file's load in order."""

    sysinfo: list[str] = field(default_factory=list)
    #: the selection's counts and conflicts summed over the files (each file's ``Dataset.selection``)
    selection: rec_schema.Selection = field(default_factory=lambda: rec_schema.Selection(kept=[]))
    margins: list[pd.DataFrame] = field(default_factory=list)  # distinct (benchmark, margin)
    margin_given: bool = False  # a record declares a margin (the column is numbers, not empty)

    def add(self, path: Path, ds: loader.Dataset) -> None:
        """Take one file's warnings apart: its sysinfo's, the selection's, its margins'."""
        given = ds.records[["benchmark", "margin"]].dropna(subset=["margin"])
        self.margin_given |= len(given) > 0
        own: list[str] = []
        loader._margins(ds.records, own)
        tail = ds.selection.warnings() + own
        head = len(ds.warnings) - len(tail)
        if head < 0 or ds.warnings[head:] != tail:
            raise NotStreamable(f"{path}: warnings not in the loader's order")
        self.sysinfo += ds.warnings[:head]
        self.selection.duplicates += ds.selection.duplicates
        self.selection.conflicts += ds.selection.conflicts  # file order: the whole run's order
        self.margins.append(given.astype({"benchmark": str}).drop_duplicates())

    def all(self) -> list[str]:
        """The warnings the whole run's load gives, in its order."""
        out = self.sysinfo + self.selection.warnings()
        given = [m for m in self.margins if len(m)]
        if given:
            loader._margins(pd.concat(given, ignore_index=True), out)
        return out
