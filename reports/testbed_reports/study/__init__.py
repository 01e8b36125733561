"""``testbed-report study ID RESULTS... --out DIR``: a paper's own tables and figures, rebuilt.

Each published study (docs/design.md section 10) has a view module here, ``s0.py`` ... ``s4.py``,
found by its id; adding one needs no edit to this file. A view module provides::

    def build(ds: Dataset, manifest: Manifest) -> StudyView

(``ds`` is what :func:`testbed_reports.load.load` read; ``manifest`` the study's fidelity
manifest) and may provide ``build_csv(path: Path, manifest: Manifest) -> StudyView`` for a CSV
of the paper's own raw observations (``--csv``), and ``build_csvs(paths, manifest)`` when
several of the paper's files make one view (``--csv`` given more than once). It raises
:class:`StudyError` naming the cells the store lacks. This package renders every view the same
way: ``study.html`` (self-contained), ``study.md``, one CSV per table and ``study.json``, with the
paper's published value beside each rebuilt one and whether the rerun's interval contains it.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import math
import os
import stat
from pathlib import Path
from typing import Any

from testbed_reports.errors import ReportError
from testbed_reports.study.view import Cell, StudyFigure, StudyTable, StudyView, render_html, render_md
from testbed_shared.atomic import write_atomically
from testbed_shared.studies import STUDY_IDS, manifest

__all__ = ["Cell", "StudyError", "StudyFigure", "StudyTable", "StudyView", "add_parser", "run_study"]


class StudyError(ReportError):
    """The store cannot give a study's tables (cells missing, wrong study)."""


#: the largest file of a paper's observations read (the S1 thesis's dump is 2 MB)
MAX_INPUT_BYTES = 1 << 30


def read_input(path: Path) -> str:
    """The text of a regular file given with ``--csv``. A FIFO, device, socket or directory is
    refused at once: the file is opened without blocking and checked on the open descriptor
    (no race between the check and the read), so nothing waits for a writer."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise StudyError(f"{path}: cannot read ({exc.strerror})") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) else "not a file"
        raise StudyError(
            f"{path}: not a regular file ({kind}): --csv reads a file of the paper's observations",
            hint="give the downloaded file itself",
        )
    with os.fdopen(fd, "rb") as fh:
        os.set_blocking(fd, True)
        data = fh.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise StudyError(
            f"{path}: larger than {MAX_INPUT_BYTES >> 20} MiB: not a file of the paper's observations"
        )
    return data.decode("utf-8", errors="replace")


def _check_inputs(paths: list[Path]) -> None:
    """Every ``--csv`` path is a regular file (refused at once otherwise, before any work)."""
    for p in paths:
        try:
            mode = os.stat(p).st_mode
        except OSError as exc:
            raise StudyError(f"{p}: cannot read ({exc.strerror})") from None
        if not stat.S_ISREG(mode):
            read_input(p)  # raises with the kind of file


def view_module(study_id: str) -> Any:
    """The view module of ``study_id``; raise :class:`StudyError` naming what is missing."""
    sid = study_id.upper()
    if sid not in STUDY_IDS:
        raise StudyError(f"unknown study {study_id!r}", hint="studies: " + ", ".join(STUDY_IDS))
    name = f"testbed_reports.study.{sid.lower()}"
    if importlib.util.find_spec(name) is None:
        raise StudyError(f"study {sid} has no report view ({name})")
    return importlib.import_module(name)


def run_study(
    study_id: str, results: list[Path], out: Path, csv: Path | list[Path] | None = None
) -> StudyView:
    """Build and write the view of ``study_id`` from result directories (or the paper's CSVs)."""
    man = manifest(study_id)
    mod = view_module(man.id)
    csvs = [csv] if isinstance(csv, Path) else list(csv or [])
    _check_inputs(csvs)
    if csvs:
        if not hasattr(mod, "build_csv"):
            raise StudyError(f"study {man.id} reads no CSV of published observations", hint="give RESULTS")
        if len(csvs) > 1 and not hasattr(mod, "build_csvs"):
            raise StudyError(f"study {man.id} reads one --csv file at a time")
        view = mod.build_csv(csvs[0], man) if len(csvs) == 1 else mod.build_csvs(csvs, man)
    else:
        if not results:
            raise StudyError(f"study {man.id}: give result directories (or --csv FILE)")
        from testbed_reports.engine import paths_dataset  # noqa: PLC0415 - CLI start-up: a command imports what it runs (the store pulls DuckDB)

        view = mod.build(paths_dataset(results), man)  # through the results store (issue 36)
    write_view(view, out)
    return view


def write_view(view: StudyView, out: Path) -> None:
    """``study.html``, ``study.md``, ``study.json`` and ``<table id>.csv`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(out / "study.html", render_html(view), what="study report")
    write_atomically(out / "study.md", render_md(view), what="study summary")
    write_atomically(out / "study.json", json.dumps(view.as_json(), indent=1, default=_json) + "\n")
    for table in view.tables:
        write_atomically(out / f"{table.slug}.csv", table.csv(), what="study table")


def _json(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return str(x)


def add_parser(subparsers: Any) -> None:
    """Register ``study`` on ``testbed-report``."""
    p = subparsers.add_parser(
        "study",
        help="a published study's own tables and figures, rebuilt from results, beside the paper's",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("study", metavar="ID", help="study id: " + ", ".join(STUDY_IDS))
    p.add_argument("results", nargs="*", type=Path, metavar="RESULTS", help="result directories of the rerun")
    p.add_argument(
        "--csv",
        type=Path,
        action="append",
        metavar="FILE",
        help="the paper's own raw observations (where supported; repeat for several of its files)",
    )
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="output directory")
    p.set_defaults(func=_cmd_study)


def _cmd_study(args: argparse.Namespace) -> int:
    view = run_study(args.study, args.results, args.out, args.csv)
    print(
        f"{view.manifest.id}: {len(view.tables)} tables, {len(view.figures)} figures; {summary(view)} "
        f"-> {args.out / 'study.html'}"
    )
    return 0


def summary(view: StudyView) -> str:
    """How the rebuilt values compare: inside, equal, and those without a verdict and why."""
    cells = [c for c in view.cells() if c.paper is not None]
    inside = sum(1 for c in cells if c.contains is True)
    compared = sum(1 for c in cells if c.contains is not None)
    matched = sum(1 for c in cells if c.matches is True)
    pointwise = sum(1 for c in cells if c.matches is not None)
    text = f"{inside} of {compared} published values inside the rerun's interval"
    if pointwise:
        text += f", {matched} of {pointwise} without an interval equal to the printed value"
    kinds = {"not comparable": 0, "fitted": 0, "not compared": 0}
    for c in cells:
        for k in kinds:
            if c.no_verdict.startswith(k):
                kinds[k] += 1
    rest = [f"{n} {k}" for k, n in kinds.items() if n]
    return text + (f"; no verdict: {', '.join(rest)}" if rest else "")
