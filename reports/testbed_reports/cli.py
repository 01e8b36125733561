"""``testbed-report``: build the comparative report, or analyze a CSV of published results."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from testbed_reports import __version__
from testbed_reports.errors import ReportError
from testbed_shared.errors import cli_main


def main(argv: Sequence[str] | None = None) -> int:
    return cli_main(build_parser(), argv)


def _pairs(specs: list[str], option: str) -> dict[str, str]:
    """``NAME=VALUE`` options (``--csv-map``, ``--margin-for``, ``--where``) as a dict."""
    out = {}
    for spec in specs:
        if "=" not in spec:
            raise ReportError(f"{option} {spec!r}: expected NAME=VALUE")
        k, v = spec.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _margins(specs: list[str]) -> dict[str, float]:
    out = {}
    for bench, val in _pairs(specs, "--margin-for").items():
        try:
            pct = float(val)
        except ValueError:
            pct = float("nan")
        if not 0 < pct < 100:
            raise ReportError(f"--margin-for {bench}={val}: expected a percentage between 0 and 100")
        out[bench] = pct
    return out


DECISIONS = ("slower", "faster", "equivalent", "inconclusive")


def _prior(args: argparse.Namespace) -> object | None:
    """The machine-spread prior of ``build`` (inference.MachineSpread), or None."""
    from testbed_reports.inference import MachineSpread  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    if args.machine_spread is None:
        if args.machine_spread_source or args.machine_spread_df is not None:
            raise ReportError("--machine-spread-source/--machine-spread-df need --machine-spread PCT")
        return None
    if not 0 < args.machine_spread < 100:
        raise ReportError(f"--machine-spread {args.machine_spread}: expected a percentage between 0 and 100")
    if not (args.machine_spread_source or "").strip():
        raise ReportError(
            "--machine-spread needs --machine-spread-source TEXT (where the spread was measured)",
            "the source is printed in every verdict that uses the prior",
        )
    df = args.machine_spread_df
    if df is not None and not df >= 1:
        raise ReportError(f"--machine-spread-df {df}: expected at least 1")
    return MachineSpread(args.machine_spread / 100, args.machine_spread_source.strip(), df or float("inf"))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="testbed-report",
        description=__doc__,
        epilog="Contracts (result schema, report, decisions): docs/design.md; statistics: docs/report.md.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    b = sub.add_parser(
        "build",
        help="build index.html, summary.md, CSV tables and stats.json",
        description="Read result directories (results/<run_id>/<host>.jsonl + sysinfo) and "
        "CSV files of published results; write the comparative report to --out.",
        epilog="Memory: the observations are read from the results store a part of whole benchmarks at a "
        "time, at most $TESTBED_REPORT_PART_ROWS observations a part (default 5000000; one benchmark "
        "with more is a part alone); the records are read whole (docs/report.md, Scale: the build a "
        "part at a time).",
    )
    b.add_argument(
        "results",
        nargs="+",
        type=Path,
        metavar="RESULTS_DIR",
        help="results directory, .jsonl file or .csv file (repeatable)",
    )
    b.add_argument("--out", type=Path, required=True, help="output directory (e.g. reports/out/<run_id>)")
    b.add_argument("--name", help="report name (default: the name of --out)")
    b.add_argument(
        "--compare",
        action="append",
        default=[],
        metavar="A:B",
        help="compare label A against reference label B (repeatable; replaces the automatic "
        "pairs from inventory groups)",
    )
    b.add_argument(
        "--csv-map",
        action="append",
        default=[],
        metavar="FIELD=COLUMN",
        help="CSV inputs: which column holds label, benchmark, metric, value, unit, better, host, "
        "repetition, run_id or groups",
    )
    b.add_argument(
        "--csv-default",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="CSV inputs: constant value of a field the CSV lacks (e.g. better=lower)",
    )
    b.add_argument(
        "--margin",
        type=float,
        default=2.0,
        metavar="PCT",
        help="equivalence margin in percent: differences within +-PCT are 'equivalent' (default 2)",
    )
    b.add_argument(
        "--margin-for",
        action="append",
        default=[],
        metavar="BENCH=PCT",
        help="equivalence margin of one benchmark (repeatable; wins over a record's margin_percent)",
    )
    b.add_argument(
        "--machine-spread",
        type=float,
        metavar="PCT",
        help="a between-machine spread measured elsewhere (sd of machine effects, in %%): with it, a "
        "label with one machine gives type-level intervals (scope types); needs --machine-spread-source",
    )
    b.add_argument(
        "--machine-spread-source",
        metavar="TEXT",
        help="where --machine-spread was measured (printed in every verdict that uses it)",
    )
    b.add_argument(
        "--machine-spread-df",
        type=float,
        metavar="DF",
        help="degrees of freedom of --machine-spread (machines it was measured on - 1; default: known)",
    )
    b.add_argument(
        "--drift-p",
        type=float,
        default=0.05,
        metavar="P",
        help="KPSS level-stability p below which a machine's runs are noted as drifting (a note beside "
        "the verdict: a run-level statement is about the mean over the runs measured; it changes no "
        "interval or decision; default 0.05: docs/report.md, Drift)",
    )
    b.add_argument(
        "--anova-scale",
        choices=("log", "raw"),
        default="log",
        help="scale of the two-way ANOVA (default log: multiplicative effects)",
    )
    b.add_argument(
        "--store",
        type=Path,
        metavar="DIR",
        help="the results store the results directories are read through (default <results>/_store "
        "beside them, or $TESTBED_STORE; docs/report.md, The results store)",
    )
    b.set_defaults(func=_cmd_build)

    e = sub.add_parser(
        "export",
        help="one CSV row per observation, every plan parameter a column",
        description="Write FILE: one row per observation (record fields, telemetry CPU %% and steal %%, "
        "and every plan parameter as a param.<name> column).",
    )
    e.add_argument(
        "results", nargs="+", type=Path, metavar="RESULTS_DIR", help="results directory or .jsonl file"
    )
    e.add_argument("--csv", type=Path, required=True, metavar="FILE", help="CSV file to write")
    e.set_defaults(func=_cmd_export)

    a = sub.add_parser(
        "analyze",
        help="statistics and two-way ANOVA of a CSV (one observation a row)",
        description="Write DIR/stats.json: per group n, mean, median, sd, cv_percent, "
        "ci95_low, ci95_high; with two --by columns a two-way ANOVA with "
        "interaction (df, SS %, F, F critical).",
    )
    a.add_argument("--csv", type=Path, required=True, help="CSV file with a header row")
    a.add_argument("--metric", required=True, metavar="COL", help="numeric column to analyze")
    a.add_argument("--by", required=True, metavar="COL[,COL]", help="one or two factor columns")
    a.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="COL=VAL",
        help="keep only rows whose COL equals VAL (repeatable, all must hold)",
    )
    a.add_argument("--tukey", action="store_true", help="add Tukey HSD pairwise comparisons per factor")
    a.add_argument("--out", type=Path, required=True, metavar="DIR", help="output directory")
    a.set_defaults(func=_cmd_analyze)
    _design_parser(sub)
    _sequential_parser(sub)
    from testbed_reports.audit_cli import add_parser as add_audit  # issue 14  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    add_audit(sub)
    from testbed_reports.timeofday import add_parser as add_timeofday  # issue 17  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    add_timeofday(sub)
    from testbed_reports.store_cli import add_parser as add_store  # issue 36  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    add_store(sub)
    from testbed_reports.study import add_parser as add_study  # study packs (docs/design.md section 10)  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    add_study(sub)
    from testbed_reports.platform_check import add_parser as add_platform_check  # issue 29  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    add_platform_check(sub)
    return parser


def _design_parser(sub: argparse._SubParsersAction) -> None:
    d = sub.add_parser(
        "design",
        help="plan before measuring: the cheapest machines x rotations x runs that reach a power",
        description="The cheapest design (machines per label x rotations x runs) whose power per "
        "affected primary metric, simulated through the report's own analysis (pooled spreads, the "
        "family's simultaneous intervals, decisions), reaches --power at a family-wise error of 5%%. "
        "Spreads from an earlier report (--from) or given (--machine-spread, --run-noise, with "
        "--spread-source); without either, issue 34's auditor assumptions (2%% machine spread, 1%% run "
        "noise), named as assumptions. docs/report.md, Plan before measuring.",
    )
    d.add_argument(
        "--metrics",
        type=int,
        metavar="M",
        help="primary metrics of the comparison (default: --names, or those of --from, or 25)",
    )
    d.add_argument("--names", metavar="A,B,...", help="their names (only shown; sets --metrics)")
    d.add_argument(
        "--effect", type=float, metavar="PCT", help="the true difference to find, in %% (default: the margin)"
    )
    d.add_argument(
        "--affected", type=int, metavar="N", help="metrics with that difference (default: a fifth, >= 1)"
    )
    d.add_argument(
        "--margin",
        type=float,
        default=2.0,
        metavar="PCT",
        help="equivalence margin of the decisions (default 2)",
    )
    d.add_argument(
        "--power",
        type=float,
        default=0.8,
        metavar="P",
        help="power per affected metric to reach (default 0.8)",
    )
    d.add_argument(
        "--from",
        dest="stats",
        type=Path,
        metavar="STATS_JSON",
        help="an earlier report's stats.json: its measured spreads",
    )
    d.add_argument(
        "--machine-spread", type=float, metavar="PCT", help="sd of a machine's level on a metric, %%"
    )
    d.add_argument("--run-noise", type=float, metavar="PCT", help="run-to-run sd, %%")
    d.add_argument("--spread-source", metavar="TEXT", help="where --machine-spread and --run-noise come from")
    d.add_argument(
        "--machine-wide",
        type=float,
        default=0.0,
        metavar="SHARE",
        help="share of the machine variance common to all metrics of a machine (0-1, default 0)",
    )
    d.add_argument(
        "--machine-hour-cost",
        type=float,
        default=1.0,
        metavar="X",
        help="price of a machine-hour (default 1)",
    )
    d.add_argument(
        "--run-cost",
        type=float,
        default=0.0,
        metavar="X",
        help="price of one run of the plan on one machine (default 0)",
    )
    d.add_argument(
        "--run-minutes",
        type=float,
        default=10.0,
        metavar="MIN",
        help="duration of one run of the plan (default 10)",
    )
    d.add_argument(
        "--setup-minutes",
        type=float,
        default=10.0,
        metavar="MIN",
        help="creating or rotating a machine (default 10)",
    )
    d.add_argument(
        "--at-once",
        type=int,
        default=12,
        metavar="N",
        help="machines per label at once (a quota; more come from rotations; default 12)",
    )
    d.add_argument("--sets", type=int, default=400, metavar="N", help="simulated data sets (default 400)")
    d.add_argument("--seed", type=int, default=1, help="seed of the simulation (default 1)")
    d.add_argument("--json", action="store_true", help="print the design as JSON")
    d.set_defaults(func=_cmd_design)


def _sequential_parser(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser(
        "sequential",
        help="after a batch of machines: continue or stop, with a decision (alpha spending)",
        description="A look of a group-sequential comparison over machines: the primary metrics' "
        "repeated confidence intervals at this look (Lan-DeMets O'Brien-Fleming alpha spending over "
        "the information planned by --max-machines; the family's 5%% split over its metrics), the "
        "decisions they give, and whether to add machines. Exit 0 with 'stop' or 'continue' on the "
        "first line. docs/report.md, Sequential over machines.",
    )
    s.add_argument("results", nargs="+", type=Path, metavar="RESULTS_DIR", help="results so far")
    s.add_argument("--compare", required=True, metavar="A:B", help="the comparison (label A against label B)")
    s.add_argument(
        "--looks",
        required=True,
        metavar="K1,K2,...",
        help="machines per label at each look so far, this one last (e.g. 3,6)",
    )
    s.add_argument(
        "--max-machines",
        required=True,
        type=int,
        metavar="N",
        help="machines per label at the cost cap (the last look)",
    )
    s.add_argument("--margin", type=float, default=2.0, metavar="PCT", help="equivalence margin (default 2)")
    s.add_argument("--json", action="store_true", help="print the look as JSON")
    s.set_defaults(func=_cmd_sequential)


def _pct_arg(value: float | None, option: str, lo: float = 0.0, hi: float = 100.0) -> float | None:
    if value is not None and not lo < value < hi:
        raise ReportError(f"{option} {value:g}: expected a number between {lo:g} and {hi:g}")
    return value


def _cmd_design(args: argparse.Namespace) -> int:
    import json  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    from testbed_reports import design  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    _pct_arg(args.margin, "--margin")
    _pct_arg(args.effect, "--effect")
    _pct_arg(args.power, "--power", 0.0, 1.0)
    if not 0 <= args.machine_wide < 1:
        raise ReportError(f"--machine-wide {args.machine_wide:g}: expected a share from 0 to below 1")
    names = [n.strip() for n in (args.names or "").split(",") if n.strip()]
    if args.stats is not None:
        if args.machine_spread is not None or args.run_noise is not None:
            raise ReportError("--from and --machine-spread/--run-noise: give one source of spreads")
        spreads = design.spreads_from_stats(args.stats, args.machine_wide)
    elif args.machine_spread is not None or args.run_noise is not None:
        if args.machine_spread is None or args.run_noise is None or not (args.spread_source or "").strip():
            raise ReportError(
                "--machine-spread and --run-noise go together, with --spread-source TEXT",
                "the source is printed with the design",
            )
        _pct_arg(args.machine_spread, "--machine-spread")
        _pct_arg(args.run_noise, "--run-noise")
        spreads = design.Spreads(
            args.machine_spread / 100,
            args.run_noise / 100,
            args.machine_wide,
            source=args.spread_source.strip(),
        )
    else:
        spreads = design.Spreads(0.02, 0.01, args.machine_wide)
    metrics = args.metrics or len(names) or len(spreads.per_metric) or 25
    for value, option in ((args.sets, "--sets"), (args.at_once, "--at-once"), (metrics, "--metrics")):
        if value < 1:
            raise ReportError(f"{option} {value}: expected at least 1")
    costs = design.Costs(
        args.machine_hour_cost, args.run_cost, 60 * args.run_minutes, 60 * args.setup_minutes, args.at_once
    )
    effect = args.effect if args.effect is not None else args.margin
    best = design.plan(
        spreads, metrics, effect, costs, args.margin, args.power, args.affected, args.sets, args.seed
    )
    if args.json:
        print(json.dumps(best.as_dict() | {"spreads": spreads.source, "metrics": metrics}, indent=1))
        return 0
    print(
        f"design: {best.placements} machines per label ({best.machines} at once x {best.rotations} "
        f"rotation{'s' if best.rotations > 1 else ''}) x {best.runs} runs each; cost {best.cost:,.2f}; "
        f"{best.hours:.1f} h"
    )
    print(
        f"power per affected metric {100 * best.power:.1f}% +- {100 * best.power_se:.1f} for a {effect:g}% "
        f"difference; family-wise error {100 * best.fwer:.1f}% +- {100 * best.fwer_se:.1f} ({best.sets} data "
        f"sets simulated through the report's analysis, {metrics} primary metrics)"
    )
    print(f"spreads: machine {100 * spreads.machine:.2g}%, run {100 * spreads.run:.2g}% ({spreads.source})")
    return 0


def _cmd_sequential(args: argparse.Namespace) -> int:
    import json  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    from testbed_reports import sequential  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    look = sequential.look_at(args.results, args.compare, args.looks, args.max_machines, args.margin)
    if args.json:
        print(json.dumps(look.as_dict(), indent=1))
    else:
        print(look.summary())
        for line in look.lines():
            print(f"  {line}")
    return 0


def _cmd_build(args: argparse.Namespace) -> int:
    from testbed_reports.build import build  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    rep = build(
        args.results,
        args.out,
        name=args.name,
        compare_specs=args.compare,
        csv_mapping=_pairs(args.csv_map, "--csv-map"),
        csv_defaults=_pairs(args.csv_default, "--csv-default"),
        margin=args.margin,
        margins=_margins(args.margin_for),
        anova_log=args.anova_scale == "log",
        prior=_prior(args),
        drift_p=args.drift_p,
        store=args.store,
    )
    for w in rep.warnings:
        print(f"warning: {w}", file=sys.stderr)
    for p in rep.problems:
        print(f"EVIDENCE MISMATCH: {p}", file=sys.stderr)
    cmp = rep.comparisons
    prim = cmp[cmp["primary"].astype(bool)] if len(cmp) else cmp
    parts = []
    for scope in ("types", "machines"):
        part = prim[prim["scope"] == scope] if len(prim) else prim
        if len(part):
            counts = part["decision"].value_counts()
            tally = ", ".join(
                f"{counts.get(d, 0)} {d}" for d in ("slower", "faster", "equivalent", "inconclusive")
            )
            parts.append(f"scope {scope}: {len(part)} primary, {tally}")
    extra = f"; {len(cmp) - len(prim)} secondary, unadjusted" if len(cmp) > len(prim) else ""
    print(
        f"report: {args.out / 'index.html'} ({len(rep.descriptives)} label metrics, "
        f"{len(cmp)} comparisons{': ' if parts else ''}{'; '.join(parts)}{extra})"
    )
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from testbed_reports.export import export_csv  # noqa: PLC0415 - CLI start-up: a command imports what it runs
    from testbed_reports.load import load  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    ds = load(args.results)
    for w in ds.warnings:
        print(f"warning: {w}", file=sys.stderr)
    rows = export_csv(ds, args.csv)
    print(f"export: {args.csv} ({rows} observations)")
    return 0


def _cmd_analyze(args: argparse.Namespace) -> int:
    from testbed_reports.analyze import analyze  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    by = [c.strip() for c in args.by.split(",") if c.strip()]
    where = _pairs(args.where, "--where")
    res = analyze(args.csv, args.metric, by, where, args.out, tukey_factors=by if args.tukey else None)
    print(
        f"stats: {args.out / 'stats.json'} ({len(res['groups'])} groups, {res['n_rows']} rows"
        f"{', two-way ANOVA' if 'anova' in res else ''})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
