"""``testbed-report timeofday RESULTS... --metric M``: does a metric depend on the hour of the day or
the day of the week? (the preliminary experiment of the serverless I/O study: a run every minute for
four days, see docs/campaigns.md).

Times are the runs' start times in UTC. The unit is a run (its observations of the metric are
summarised by their geometric mean), or each observation with ``--unit observation``. Per factor
(hour 0-23, weekday Mon-Sun): runs per group, geometric mean, median, CV; Kruskal-Wallis (the
verdict) and one-way ANOVA on log values with eta-squared (the share of log variance the factor
explains). A factor with fewer than two groups of ``--min-per-group`` runs is refused with the reason.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from testbed_reports.errors import ReportError
from testbed_shared.atomic import write_atomically

FACTORS = ("hour", "weekday")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def add_parser(subparsers: Any) -> None:
    """Register ``timeofday`` on ``testbed-report``."""
    p = subparsers.add_parser(
        "timeofday",
        help="hour-of-day / day-of-week effect on a metric (Kruskal-Wallis, ANOVA on logs)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", nargs="+", type=Path, metavar="RESULTS", help="campaign store or run dirs")
    p.add_argument("--metric", help="metric name (default: the only one there is)")
    p.add_argument("--benchmark", help="benchmark name (default: the only one with the metric)")
    p.add_argument("--label", help="only this label")
    p.add_argument("--unit", choices=("run", "observation"), default="run", help="unit of replication")
    p.add_argument(
        "--min-per-group",
        type=int,
        default=5,
        help="runs a group needs to be kept (>= 2; Kruskal-Wallis is conservative below 5)",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of the verdict")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the analysis as JSON")
    p.set_defaults(func=_cmd_timeofday)


def _cmd_timeofday(args: argparse.Namespace) -> int:
    from testbed_reports.load import load

    ds = load(args.results)
    table = select(ds.obs, args.metric, args.benchmark, args.label, args.unit)
    res = analyze(table, min_per_group=args.min_per_group, alpha=args.alpha)
    print(render(res))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(args.json, json.dumps(res, indent=2) + "\n", what="--json")
    return 0


def _only(values: pd.Series, what: str, option: str) -> str:
    names = sorted(set(map(str, values)))
    if len(names) != 1:
        raise ReportError(f"{len(names)} {what}s in the results ({', '.join(names[:8])}): choose one", option)
    return names[0]


def select(
    obs: pd.DataFrame, metric: str | None, benchmark: str | None, label: str | None, unit: str = "run"
) -> pd.DataFrame:
    """Rows ``time`` (UTC), ``value`` and meta columns for one benchmark metric, one row per unit."""
    df = obs.astype({c: str for c in ("metric", "benchmark", "label", "run_id", "host")})
    if label:
        df = df[df["label"] == label]
    if metric is None:
        metric = _only(df["metric"], "metric", "give --metric")
    df = df[df["metric"] == metric]
    if benchmark is None and not df.empty:
        benchmark = _only(df["benchmark"], "benchmark", "give --benchmark")
    df = df[df["benchmark"] == benchmark]
    if df.empty:
        raise ReportError(f"no observations of metric {metric!r} (benchmark {benchmark}, label {label})")
    vals = pd.to_numeric(df["value"], errors="coerce")
    if not (vals > 0).all():
        raise ReportError(f"metric {metric!r} has zero, negative or missing values: no log scale")
    df = df.assign(value=vals, time=pd.to_datetime(df["started_at"], utc=True, format="ISO8601"))
    if unit == "run":
        df = (
            df.assign(logv=np.log(df["value"]))
            .groupby(["run_id", "host"], observed=True)
            .agg(time=("time", "min"), logv=("logv", "mean"))
            .reset_index()
        )
        df["value"] = np.exp(df["logv"])
    out = df[["time", "value"]].reset_index(drop=True)
    out.attrs.update(metric=metric, benchmark=benchmark, label=label or "", unit=unit)
    return out


def one_way(groups: dict[str, np.ndarray], alpha: float) -> dict[str, Any]:
    """Kruskal-Wallis and one-way ANOVA on log values (with eta-squared) over the groups."""
    logs = {g: np.log(v) for g, v in groups.items()}
    allv = np.concatenate(list(logs.values()))
    grand = allv.mean()
    ss_total = float(((allv - grand) ** 2).sum())
    ss_between = float(sum(len(v) * (v.mean() - grand) ** 2 for v in logs.values()))
    k, n = len(logs), len(allv)
    if ss_total - ss_between <= 0:
        return {"refused": "no variation within the groups"}
    f = (ss_between / (k - 1)) / ((ss_total - ss_between) / (n - k))
    try:
        h, p_kw = stats.kruskal(*logs.values())
    except ValueError as exc:  # all values identical
        return {"refused": str(exc)}
    p_f = float(stats.f.sf(f, k - 1, n - k))
    return {
        "groups_tested": k,
        "runs": n,
        "kruskal_h": float(h),
        "kruskal_p": float(p_kw),
        "anova_f": float(f),
        "anova_df": [k - 1, n - k],
        "anova_p": p_f,
        "eta_squared": ss_between / ss_total if ss_total else 0.0,
        "effect": bool(p_kw < alpha),
    }


def _factor(table: pd.DataFrame, factor: str) -> pd.Series:
    t = table["time"].dt
    if factor == "hour":
        return t.hour.astype(str).str.zfill(2)
    return t.day_of_week.map(lambda d: f"{d + 1}-{WEEKDAYS[d]}")


def _describe(v: np.ndarray) -> dict[str, Any]:
    sd = float(np.std(v, ddof=1)) if len(v) > 1 else math.nan
    return {
        "n": len(v),
        "geomean": float(np.exp(np.log(v).mean())),
        "median": float(np.median(v)),
        "cv_percent": 100 * sd / float(v.mean()) if len(v) > 1 else None,
    }


def analyze_factor(table: pd.DataFrame, factor: str, min_per_group: int, alpha: float) -> dict[str, Any]:
    """Describe each group of the factor and test it; ``refused`` says why a test was not run."""
    keys = _factor(table, factor)
    groups = {str(g): table["value"][keys == g].to_numpy(dtype=float) for g in sorted(set(keys))}
    out: dict[str, Any] = {"factor": factor, "groups": {g: _describe(v) for g, v in groups.items()}}
    kept = {g: v for g, v in groups.items() if len(v) >= min_per_group}
    out["dropped"] = sorted(set(groups) - set(kept))
    if factor == "weekday":
        dates = table["time"].dt.date.groupby(keys).nunique()
        out["dates_per_group"] = {str(g): int(n) for g, n in dates.items()}
    if len(kept) < 2:
        out["refused"] = (
            f"{len(kept)} {factor} group(s) with >= {min_per_group} runs (of {len(groups)} seen, "
            f"{len(table)} runs): need at least 2"
        )
        return out
    out.update(one_way(kept, alpha))
    return out


def analyze(table: pd.DataFrame, min_per_group: int = 5, alpha: float = 0.05) -> dict[str, Any]:
    """Both factors of one metric's table (from :func:`select`)."""
    if min_per_group < 2:
        raise ReportError(f"--min-per-group {min_per_group}: must be at least 2")
    times = table["time"]
    return {
        **table.attrs,
        "timezone": "UTC",
        "alpha": alpha,
        "min_per_group": min_per_group,
        "runs": len(table),
        "first": times.min().isoformat() if len(table) else None,
        "last": times.max().isoformat() if len(table) else None,
        "factors": {f: analyze_factor(table, f, min_per_group, alpha) for f in FACTORS},
    }


def _fmt(x: float | None, spec: str = ".4g") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def render(res: dict[str, Any]) -> str:
    """The plain-text tables ``testbed-report timeofday`` prints."""
    lines = [
        f"{res['benchmark']} {res['metric']} ({res['unit']}s: {res['runs']}, "
        f"{res['first']} .. {res['last']}; times in UTC)"
    ]
    for fac in res["factors"].values():
        lines += ["", f"{fac['factor']:>9}  {'n':>5}  {'geomean':>11}  {'median':>11}  {'CV %':>7}"]
        for g, d in fac["groups"].items():
            mark = "  (dropped: too few)" if g in fac["dropped"] else ""
            cv = _fmt(d["cv_percent"], ".1f")
            lines.append(
                f"{g:>9}  {d['n']:>5}  {_fmt(d['geomean']):>11}  {_fmt(d['median']):>11}  {cv:>7}{mark}"
            )
        lines.append(_verdict(fac, res["alpha"]))
    return "\n".join(lines)


def _verdict(fac: dict[str, Any], alpha: float) -> str:
    name = fac["factor"]
    if "refused" in fac:
        return f"{name}: not tested - {fac['refused']}"
    word = "EFFECT" if fac["effect"] else "no effect detected"
    text = (
        f"{name}: {word} at alpha {alpha:g} - Kruskal-Wallis H={fac['kruskal_h']:.2f} "
        f"p={fac['kruskal_p']:.3g}; ANOVA on log values F({fac['anova_df'][0]},{fac['anova_df'][1]})="
        f"{fac['anova_f']:.2f} p={fac['anova_p']:.3g}, eta^2={fac['eta_squared']:.3f}; "
        f"{fac['groups_tested']} groups, {fac['runs']} runs"
    )
    single = [g for g, n in fac.get("dates_per_group", {}).items() if n < 2]
    if single and name == "weekday":
        text += (
            f"\n  note: {len(single)} weekday(s) seen on one date only: weekday is confounded with the date"
        )
    return text
