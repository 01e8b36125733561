"""``testbed-report store`` (add runs to the results store, list it) and ``testbed-report history``."""

from __future__ import annotations

import argparse
from pathlib import Path

from testbed_reports.errors import ReportError
from testbed_reports.history import history, table, write
from testbed_reports.store import STORE_ENV, STORE_SCHEMA, Store, default_store


def add_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "store",
        help="the results store: add collected runs (Parquet, Hive layout), list what it holds",
        description="The results store the report reads (with pyarrow; history's queries with DuckDB): "
        "each run's records as plain "
        "Parquet (observations/run=RUN/label=LABEL/HOST.parquet, records/, percentiles/, hosts/), "
        "chosen by the one record path. Default place: <results>/_store beside the run directories "
        f"(or ${STORE_ENV}). docs/report.md, The results store.",
    )
    ssub = s.add_subparsers(dest="store_command", metavar="ACTION", required=True)
    a = ssub.add_parser(
        "add",
        help="add (or refresh) runs from their results directories; idempotent",
        description="Read each results directory's JSON Lines through the record path (retries, "
        "duplicates) and write its runs into the store. A run already stored from the same files is "
        "left as it is; one whose files changed is rewritten; the same files always give the same bytes.",
    )
    a.add_argument(
        "results", nargs="+", type=Path, metavar="RESULTS_DIR", help="results/<run_id> (repeatable)"
    )
    a.add_argument("--store", type=Path, metavar="DIR", help="the store (default <results>/_store)")
    a.set_defaults(func=_cmd_add)
    show = ssub.add_parser("show", help="list the stored runs", description="One line per stored run.")
    show.add_argument("--store", type=Path, metavar="DIR", help="the store (default results/_store)")
    show.set_defaults(func=_cmd_show)

    h = sub.add_parser(
        "history",
        help="the overhead of a label pair on one metric over the stored runs, and whether it changed",
        description="For each stored run that measured both labels: the overhead of A against B on "
        "the metric with its 95%% interval, what changed in the machines' fingerprints (kernel, "
        "microcode, firmware/TCB, VM size), and a calibrated decision: a change point over the window "
        "(runs as units, permutation test) and, with --between, whether the overhead changed from one "
        "run to another. docs/report.md, History across runs.",
    )
    h.add_argument("--compare", required=True, metavar="A:B", help="label A against reference label B")
    h.add_argument("--metric", required=True, metavar="[BENCH.]METRIC", help="the metric")
    h.add_argument("--benchmark", metavar="BENCH", help="its benchmark (when the metric name is on several)")
    h.add_argument("--store", type=Path, metavar="DIR", help="the store (default results/_store)")
    h.add_argument(
        "--window", type=int, metavar="K", help="the change point over the last K runs (default all)"
    )
    h.add_argument(
        "--between", metavar="RUN1:RUN2", help="decide whether the overhead changed from RUN1 to RUN2"
    )
    h.add_argument(
        "--margin", type=float, default=2.0, metavar="PCT", help="unchanged within +-PCT points (default 2)"
    )
    h.add_argument("--seed", type=int, default=1, help="seed of the permutation test (default 1)")
    h.add_argument("--out", type=Path, metavar="DIR", help="write history.json, .csv, .svg and .md here")
    h.set_defaults(func=_cmd_history)


def _store(given: Path | None) -> Store:
    return Store(given or default_store())


def _cmd_add(args: argparse.Namespace) -> int:
    st = Store(args.store or default_store(args.results))
    for p in args.results:
        already = st.version() == STORE_SCHEMA and bool(st.find(p))
        for m in st.add(p):
            if already:
                print(f"store {st.root}: run {m.run} already stored from these files")
                continue
            what = f"{m.records} records, {m.observations} observations, {', '.join(m.labels)}"
            print(f"store {st.root}: run {m.run} ({what})")
            for w in m.warnings:
                print(f"warning: {w}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    st = _store(args.store)
    v = st.version()
    if v is None:
        raise ReportError(
            f"{st.root}: no results store here", "add runs with testbed-report store add RESULTS_DIR"
        )
    for note in st.check():
        print(note)
    ms = st.manifests()
    print(f"store {st.root}: schema {st.version()}, {len(ms)} runs")
    for m in ms:
        what = f"{m.records} records, {m.observations} observations, labels {', '.join(m.labels)}"
        print(f"  {m.run}: {what} ({m.origin})")
    return 0


def _cmd_history(args: argparse.Namespace) -> int:
    if args.window is not None and args.window < 2 * 2:
        raise ReportError(f"--window {args.window}: a change point needs at least 4 runs")
    h = history(
        _store(args.store).root,
        args.compare,
        args.metric,
        args.benchmark,
        args.window,
        args.between,
        args.margin,
        args.seed,
    )
    print(table(h))
    if args.out:
        files = write(h, args.out)
        print(f"history: {', '.join(str(f) for f in files)}")
    return 0
