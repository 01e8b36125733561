"""``testbed-report timeofday RESULTS... --metric M``: does a metric depend on the hour of the day or
the day of the week? (the preliminary experiment of the serverless I/O study: a run every minute for
four days, S1 L711-717; docs/campaigns.md).

Estimand: the pattern of the metric's geometric mean over the hours of a day (and over weekdays),
repeated from day to day. Campaign data are autocorrelated (a run every minute sees the same
neighbours, caches and noisy tenants as the run before): runs are not the unit of replication.

Unit of replication: the **block**, a calendar day in ``--tz`` (or ``--block-days`` N days). Within a
block the runs are summarised per hour (mean log value of the hour's runs: one cell); blocks are
assumed independent of one another, runs inside a block need not be.

Tests (:func:`calibrated`), each valid under any dependence inside a block:

- ``hour`` (24 levels): randomized-block F on the (block x hour) cells, blocks complete in all 24
  hours; the error term is the block x hour interaction, so it holds whatever each day's own wander
  is, provided hour cells are not correlated across hours (checked: the lag-1 correlation of the
  residuals between consecutive hours; when it is significant the conservative Box df (1, B - 1)
  are used). Fewer than 2 complete blocks: "not testable", with the reason (hour and drift inside
  one day cannot be told apart).
- ``business_hours`` (9-18 h vs the rest, S1 L666): per block the difference of the mean log value
  of business-hour cells and off-hour cells; one-sample t over blocks (B - 1 df); the effect is
  shown as a percentage with its interval.
- ``weekday`` (7 levels): one-way ANOVA over day means; testable only when some weekday was seen on
  two dates (otherwise the weekday is the date, and a weekday effect is a day-to-day difference).
- ``workday`` (Mon-Fri vs Sat-Sun): Welch t over day means (needs 2 days of each).

Error control: each test at ``--alpha``. Measured by seeded simulation of four-day minute
campaigns with AR(1) noise and no effect (reports/tests/test_calibration_timeofday.py; figures in
docs/report.md): every test's false "effect" rate stays within 5 % + Monte Carlo error at phi 0.5
and 0.9, where Kruskal-Wallis over runs said "effect" in 98 % and 100 %.

The thesis's own analysis (:func:`thesis_anova`, S1 Tables 8-11) is printed beside it, labelled as
such: every run an observation, raw scale, business hours x workday two-way ANOVA without
interaction, sequential sums of squares, F against F crit at 0.95, level medians and their
differences. It treats autocorrelated runs as independent.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd
from scipy import stats

from testbed_reports.anova import sequential_anova
from testbed_reports.errors import ReportError
from testbed_shared.atomic import write_atomically
from testbed_shared.intervals import mean_interval

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
#: S1's business hours (9 AM to 6 PM, S1 L666) as [start, end) local hours
BUSINESS = (9, 18)
TESTS = ("hour", "business_hours", "weekday", "workday")


def add_parser(subparsers: Any) -> None:
    """Register ``timeofday`` on ``testbed-report``."""
    p = subparsers.add_parser(
        "timeofday",
        help="hour-of-day / day-of-week effect on a metric (days as blocks; and S1's own ANOVA)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", nargs="+", type=Path, metavar="RESULTS", help="campaign store or run dirs")
    p.add_argument("--metric", help="metric name (default: the only one there is)")
    p.add_argument("--benchmark", help="benchmark name (default: the only one with the metric)")
    p.add_argument("--label", help="only this label")
    p.add_argument("--unit", choices=("run", "observation"), default="run", help="a row of the table")
    p.add_argument("--tz", default="UTC", help="time zone of hours and days (IANA name; default UTC)")
    p.add_argument(
        "--block-days",
        type=int,
        default=1,
        metavar="N",
        help="the block (unit of replication): N consecutive days (default 1: a calendar day)",
    )
    p.add_argument("--alpha", type=float, default=0.05, help="significance level of every test")
    p.add_argument("--min-per-group", type=int, default=1, help="runs an hour cell needs (default 1)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write the analysis as JSON")
    p.set_defaults(func=_cmd_timeofday)


def _cmd_timeofday(args: argparse.Namespace) -> int:
    from testbed_reports.load import load  # noqa: PLC0415 - CLI start-up: a command imports what it runs (the loader pulls pandas)

    ds = load(args.results)
    table = select(ds.obs, args.metric, args.benchmark, args.label, args.unit)
    res = analyze(
        table,
        min_per_group=args.min_per_group,
        alpha=args.alpha,
        tz=args.tz,
        block_days=args.block_days,
    )
    print(render(res))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(args.json, json.dumps(_clean(res), indent=2) + "\n", what="--json")
    return 0


def _only(values: pd.Series, what: str, option: str) -> str:
    names = sorted(set(map(str, values)))
    if len(names) != 1:
        raise ReportError(f"{len(names)} {what}s in the results ({', '.join(names[:8])}): choose one", option)
    return names[0]


def select(
    obs: pd.DataFrame, metric: str | None, benchmark: str | None, label: str | None, unit: str = "run"
) -> pd.DataFrame:
    """Rows ``time`` (UTC) and ``value`` for one benchmark metric, one row per run (its values'
    geometric mean) or per observation."""
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
            .sort_values("time", kind="stable")
        )
        df["value"] = np.exp(df["logv"])
    out = df[["time", "value"]].reset_index(drop=True)
    out.attrs.update(metric=metric, benchmark=benchmark, label=label or "", unit=unit)
    return out


def _zone(tz: str) -> ZoneInfo:
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise ReportError(
            f"--tz {tz!r}: unknown time zone", "give an IANA name, e.g. UTC or America/Sao_Paulo"
        ) from None


def local_frame(table: pd.DataFrame, tz: str = "UTC", block_days: int = 1) -> pd.DataFrame:
    """The table with local ``hour``, ``day`` (days since the first local date), ``weekday``
    (0 = Mon), ``block`` (``day // block_days``), ``value`` and ``logv``."""
    if block_days < 1:
        raise ReportError(f"--block-days {block_days}: must be at least 1")
    t = pd.to_datetime(table["time"], utc=True).dt.tz_convert(_zone(tz))
    date = t.dt.tz_localize(None).dt.normalize()
    first = date.min() if len(date) else pd.Timestamp(0)
    day = ((date - first).dt.days).to_numpy(dtype=np.int64) if len(date) else np.zeros(0, dtype=np.int64)
    return pd.DataFrame(
        {
            "hour": t.dt.hour.to_numpy(),
            "day": day,
            "weekday": t.dt.day_of_week.to_numpy(),
            "block": day // block_days,
            "value": table["value"].to_numpy(dtype=float),
            "logv": np.log(table["value"].to_numpy(dtype=float)),
        }
    )


def _cells(f: pd.DataFrame, min_per_cell: int, by: str = "block") -> pd.DataFrame:
    """Mean log value per (``by``, hour) cell with at least ``min_per_cell`` runs (NaN otherwise):
    rows the blocks (or days), columns the 24 hours."""
    rows = f[by].to_numpy(dtype=np.int64)
    nrows = int(rows.max()) + 1 if len(rows) else 0
    code = rows * 24 + f["hour"].to_numpy(dtype=np.int64)
    cnt = np.bincount(code, minlength=nrows * 24)
    tot = np.bincount(code, weights=f["logv"].to_numpy(dtype=float), minlength=nrows * 24)
    with np.errstate(divide="ignore", invalid="ignore"):
        means = np.where(cnt >= max(min_per_cell, 1), tot / cnt, np.nan)
    out = pd.DataFrame(means.reshape(nrows, 24), columns=range(24))
    seen = np.bincount(rows, minlength=nrows) > 0
    return out[seen]


def hour_test(f: pd.DataFrame, alpha: float = 0.05, min_per_cell: int = 1) -> dict[str, Any]:
    """Randomized-block F of the hour of the day over complete blocks (see the module docstring)."""
    complete = _cells(f, min_per_cell).dropna()
    out: dict[str, Any] = {
        "test": "hour",
        "blocks": len(complete),
        "blocks_seen": int(f["block"].nunique()),
    }
    if len(complete) < 2:
        out["refused"] = (
            f"{len(complete)} complete block(s) with all 24 hours (of {out['blocks_seen']} seen): need at "
            "least 2 - within one block an hour pattern cannot be told apart from drift over the day"
        )
        return out
    y = complete.to_numpy()
    b, h = y.shape
    g = y.mean()
    bm, hm = y.mean(axis=1, keepdims=True), y.mean(axis=0, keepdims=True)
    resid = y - bm - hm + g
    ss_hour, ss_res = float(b * ((hm - g) ** 2).sum()), float((resid**2).sum())
    df_h, df_r = h - 1, (b - 1) * (h - 1)
    r1 = float((resid[:, 1:] * resid[:, :-1]).sum() / ss_res) if ss_res > 0 else 0.0
    # residual lag-1 correlation under independence is about -1/(h-1); a clearly positive one means
    # hour cells are correlated across hours: Box's conservative df then
    correlated = r1 > 2.0 / math.sqrt(b * (h - 1))
    if ss_res <= 0:
        out["refused"] = "no variation left after blocks and hours"
        return out
    f_val = (ss_hour / df_h) / (ss_res / df_r)
    d1, d2 = (1, b - 1) if correlated else (df_h, df_r)
    p = float(stats.f.sf(f_val, d1, d2))
    effects = 100 * np.expm1(hm.ravel() - g)
    out.update(
        {
            "F": float(f_val),
            "df": [d1, d2],
            "p": p,
            "effect": bool(p < alpha),
            "residual_lag1": r1,
            "conservative_df": bool(correlated),
            "hour_effect_percent": {f"{k:02d}": float(e) for k, e in enumerate(effects)},
            "range_percent": float(effects.max() - effects.min()),
            "dropped_blocks": int(out["blocks_seen"] - len(complete)),
        }
    )
    return out


def business_test(
    f: pd.DataFrame, alpha: float = 0.05, business: tuple[int, int] = BUSINESS, min_per_cell: int = 1
) -> dict[str, Any]:
    """Business hours vs off-hours: per block the difference of the two levels' mean hour-cell log
    values, t over blocks; effect in percent with its interval."""
    cells = _cells(f, min_per_cell)
    inside = [c for c in cells.columns if business[0] <= c < business[1]]
    outside = [c for c in cells.columns if c not in inside]
    d = (
        (cells[inside].mean(axis=1) - cells[outside].mean(axis=1)).dropna()
        if inside and outside
        else pd.Series()
    )
    out: dict[str, Any] = {"test": "business_hours", "hours": list(business), "blocks": len(d)}
    if len(d) < 2:
        out["refused"] = (
            f"{len(d)} block(s) with both business-hour ({business[0]:02d}-{business[1]:02d} h) and "
            "off-hour runs: need at least 2 (the block is the unit of replication)"
        )
        return out
    n, mean, sd = len(d), float(d.mean()), float(d.std(ddof=1))
    if sd == 0:
        out["refused"] = "no variation between blocks"
        return out
    t = mean / (sd / math.sqrt(n))
    p = float(2 * stats.t.sf(abs(t), n - 1))
    centre, lo, hi = mean_interval(n, mean, sd, 1 - alpha, log=True)
    out.update(
        {
            "t": float(t),
            "df": n - 1,
            "p": p,
            "effect": bool(p < alpha),
            "effect_percent": 100 * (centre - 1),
            "ci_percent": [100 * (lo - 1), 100 * (hi - 1)],
        }
    )
    return out


def _day_means(f: pd.DataFrame, min_per_cell: int) -> pd.DataFrame:
    """Per local date with all 24 hours: the mean of its hour-cell log values and its weekday."""
    cells = _cells(f, min_per_cell, by="day").dropna()
    weekday = pd.Series(f["weekday"].to_numpy(), index=f["day"].to_numpy())
    weekday = weekday[~weekday.index.duplicated()]
    return pd.DataFrame({"logv": cells.mean(axis=1), "weekday": weekday.reindex(cells.index).to_numpy()})


def weekday_test(f: pd.DataFrame, alpha: float = 0.05, min_per_cell: int = 1) -> dict[str, Any]:
    """One-way ANOVA of the day means over weekdays (days as units)."""
    days = _day_means(f, min_per_cell)
    per = days.groupby("weekday")["logv"]
    k, n = per.ngroups, len(days)
    out: dict[str, Any] = {
        "test": "weekday",
        "days": n,
        "dates_per_weekday": {WEEKDAYS[int(w)]: int(c) for w, c in per.size().items()},
    }
    if k < 2 or n - k < 1:
        out["refused"] = (
            f"{n} complete day(s) on {k} weekday(s): each weekday seen on one date at most, so a weekday "
            "effect is a difference between dates (confounded with the date); needs some weekday on 2 dates"
        )
        return out
    grand = days["logv"].mean()
    ss_b = float((per.size() * (per.mean() - grand) ** 2).sum())
    ss_w = float(((days["logv"] - per.transform("mean")) ** 2).sum())
    if ss_w <= 0:
        out["refused"] = "no variation between dates of one weekday"
        return out
    f_val = (ss_b / (k - 1)) / (ss_w / (n - k))
    p = float(stats.f.sf(f_val, k - 1, n - k))
    out.update({"F": float(f_val), "df": [k - 1, n - k], "p": p, "effect": bool(p < alpha)})
    return out


def workday_test(f: pd.DataFrame, alpha: float = 0.05, min_per_cell: int = 1) -> dict[str, Any]:
    """Workdays (Mon-Fri) vs weekends: Welch t over day means, effect in percent with its interval."""
    days = _day_means(f, min_per_cell)
    work = days[days["weekday"] < 5]["logv"].to_numpy()
    rest = days[days["weekday"] >= 5]["logv"].to_numpy()
    out: dict[str, Any] = {"test": "workday", "workdays": len(work), "weekend_days": len(rest)}
    if len(work) < 2 or len(rest) < 2:
        out["refused"] = (
            f"{len(work)} complete workday(s) and {len(rest)} weekend day(s): need 2 of each "
            "(the day is the unit)"
        )
        return out
    res = stats.ttest_ind(work, rest, equal_var=False)
    if not np.isfinite(res.pvalue):
        out["refused"] = "no variation between days"
        return out
    ci = res.confidence_interval(1 - alpha)
    out.update(
        {
            "t": float(res.statistic),
            "df": float(res.df),
            "p": float(res.pvalue),
            "effect": bool(res.pvalue < alpha),
            "effect_percent": float(100 * np.expm1(work.mean() - rest.mean())),
            "ci_percent": [float(100 * np.expm1(ci.low)), float(100 * np.expm1(ci.high))],
        }
    )
    return out


def calibrated(
    table: pd.DataFrame,
    tz: str = "UTC",
    block_days: int = 1,
    alpha: float = 0.05,
    business: tuple[int, int] = BUSINESS,
    min_per_cell: int = 1,
) -> dict[str, dict[str, Any]]:
    """The calibrated time-of-day tests of a table (``select``): {hour, business_hours, weekday,
    workday} -> a dict with ``effect`` and its statistics, or ``refused`` with the reason."""
    f = local_frame(table, tz, block_days)
    days = f if block_days == 1 else local_frame(table, tz, 1)
    return {
        "hour": hour_test(f, alpha, min_per_cell),
        "business_hours": business_test(f, alpha, business, min_per_cell),
        "weekday": weekday_test(days, alpha, min_per_cell),
        "workday": workday_test(days, alpha, min_per_cell),
    }


def thesis_levels(local: pd.Series, business: tuple[int, int] = BUSINESS) -> tuple[np.ndarray, np.ndarray]:
    """(time of day, day of week) of local times as the thesis's orchestrator classified them
    (its TimeOfDay.java and WeekPeriod.java, S1 L1102): weekends (Saturday, Sunday) are always
    off-hours; on workdays business hours are strictly after ``business[0]`` o'clock and strictly
    before ``business[1]`` (09:00:00 itself is off-hours)."""
    t = pd.to_datetime(local)
    weekend = (t.dt.day_of_week >= 5).to_numpy()
    sec = (t.dt.hour * 3600 + t.dt.minute * 60 + t.dt.second + t.dt.microsecond / 1e6).to_numpy()
    inside = (sec > business[0] * 3600) & (sec < business[1] * 3600)
    tod = np.where(~weekend & inside, "business hours", "off-hours")
    dow = np.where(weekend, "weekends", "workdays")
    return tod, dow


def thesis_anova(
    table: pd.DataFrame, tz: str = "UTC", business: tuple[int, int] = BUSINESS, alpha: float = 0.05
) -> dict[str, Any]:
    """S1's analysis of its preliminary experiment (Tables 8-11), computed as the thesis did.

    Every run is one observation on the raw scale; factors time of day and day of week classified
    as the thesis's code did (:func:`thesis_levels`: weekends always off-hours, S1 L666-667); two-way
    ANOVA without interaction (weekends have no business hours, so R's aov drops the aliased
    interaction: 1 + 1 + 2847 = 2849 df), sequential sums of squares in the thesis's order (time of
    day, then day of week), SS % of the total, F against F crit(0.95); level medians (Table 10) and
    the difference between level medians, (business / off - 1) and (workdays / weekends - 1) in %,
    absolute (Table 11). It treats autocorrelated runs as independent: read it beside
    :func:`calibrated`.
    """
    local = pd.to_datetime(table["time"], utc=True).dt.tz_convert(_zone(tz)).dt.tz_localize(None)
    tod, dow = thesis_levels(local, business)
    df = pd.DataFrame({"value": table["value"].to_numpy(dtype=float), "time of day": tod, "day of week": dow})
    out: dict[str, Any] = {
        "label": "S1's analysis (thesis Tables 8-11): every run an observation, raw scale, "
        "time of day + day of week (weekends off-hours), no interaction, sequential SS; assumes "
        "independent runs",
        "observations": len(df),
        "business_hours": list(business),
        "timezone": tz,
    }
    try:
        out["anova"] = sequential_anova(
            df, "value", "time of day", "day of week", interaction=False, alpha=alpha
        )
    except ReportError as exc:
        out["refused"] = str(exc)
    medians: dict[str, dict[str, float]] = {}
    diffs: dict[str, float | None] = {}
    for factor, (first, second) in (
        ("time of day", ("business hours", "off-hours")),
        ("day of week", ("workdays", "weekends")),
    ):
        med = df.groupby(factor)["value"].median()
        medians[factor] = {k: float(v) for k, v in med.items()}
        if first in med and second in med:
            diffs[factor] = float(100 * abs(med[first] / med[second] - 1))
        else:
            diffs[factor] = None
    out["medians"] = medians
    out["median_difference_percent"] = diffs
    return out


def _describe(v: np.ndarray) -> dict[str, Any]:
    sd = float(np.std(v, ddof=1)) if len(v) > 1 else math.nan
    return {
        "n": len(v),
        "geomean": float(np.exp(np.log(v).mean())),
        "median": float(np.median(v)),
        "cv_percent": 100 * sd / float(v.mean()) if len(v) > 1 else None,
    }


def groups(table: pd.DataFrame, tz: str = "UTC") -> dict[str, dict[str, dict[str, Any]]]:
    """Descriptive tables: runs, geometric mean, median and CV per local hour and per weekday."""
    f = local_frame(table, tz, 1)
    hours = {f"{h:02d}": _describe(part["value"].to_numpy()) for h, part in f.groupby("hour")}
    days = {f"{w + 1}-{WEEKDAYS[w]}": _describe(part["value"].to_numpy()) for w, part in f.groupby("weekday")}
    return {"hour": hours, "weekday": days}


def analyze(
    table: pd.DataFrame,
    min_per_group: int = 1,
    alpha: float = 0.05,
    tz: str = "UTC",
    block_days: int = 1,
    business: tuple[int, int] = BUSINESS,
) -> dict[str, Any]:
    """Everything ``testbed-report timeofday`` prints for one metric's table (from :func:`select`):
    descriptive groups, the calibrated tests (``factors``) and the thesis's ANOVA (``thesis``)."""
    if min_per_group < 1:
        raise ReportError(f"--min-per-group {min_per_group}: must be at least 1")
    times = table["time"]
    desc = groups(table, tz) if len(table) else {"hour": {}, "weekday": {}}
    tests = calibrated(table, tz, block_days, alpha, business, min_per_group) if len(table) else {}
    factors = {
        name: {**tests.get(name, {"refused": "no runs"}), "groups": desc.get(name, {})} for name in TESTS
    }
    return {
        **table.attrs,
        "timezone": tz,
        "block_days": block_days,
        "alpha": alpha,
        "min_per_group": min_per_group,
        "runs": len(table),
        "first": times.min().isoformat() if len(table) else None,
        "last": times.max().isoformat() if len(table) else None,
        "factors": factors,
        "thesis": thesis_anova(table, tz, business, alpha) if len(table) else {"refused": "no runs"},
    }


def _fmt(x: float | None, spec: str = ".4g") -> str:
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else format(x, spec)


def render(res: dict[str, Any]) -> str:
    """The plain-text tables ``testbed-report timeofday`` prints."""
    lines = [
        f"{res['benchmark']} {res['metric']} ({res['unit']}s: {res['runs']}, "
        f"{res['first']} .. {res['last']}; times in {res['timezone']}; block: {res['block_days']} day(s))"
    ]
    for name in ("hour", "weekday"):
        fac = res["factors"][name]
        lines += ["", f"{name:>9}  {'n':>5}  {'geomean':>11}  {'median':>11}  {'CV %':>7}"]
        for g, d in fac["groups"].items():
            cv = _fmt(d["cv_percent"], ".1f")
            lines.append(f"{g:>9}  {d['n']:>5}  {_fmt(d['geomean']):>11}  {_fmt(d['median']):>11}  {cv:>7}")
    lines += ["", f"Calibrated tests (the block is the unit; alpha {res['alpha']:g}):"]
    lines += [_verdict(res["factors"][name]) for name in TESTS]
    lines += ["", *_thesis_lines(res["thesis"])]
    return "\n".join(lines)


def _verdict(fac: dict[str, Any]) -> str:
    name = fac.get("test", "?")
    if "refused" in fac:
        return f"  {name}: not testable - {fac['refused']}"
    word = "EFFECT" if fac["effect"] else "no effect detected"
    if name == "hour":
        df = fac["df"]
        extra = " (hour cells correlated across hours: conservative Box df)" if fac["conservative_df"] else ""
        return (
            f"  hour: {word} - randomized-block F({df[0]},{df[1]})={fac['F']:.2f} p={fac['p']:.3g} over "
            f"{fac['blocks']} complete blocks; hour effects span {fac['range_percent']:.1f}%{extra}"
        )
    if name in ("business_hours", "workday"):
        lo, hi = fac["ci_percent"]
        what = "business hours vs off-hours" if name == "business_hours" else "workdays vs weekends"
        units = (
            f"{fac['blocks']} blocks"
            if name == "business_hours"
            else (f"{fac['workdays']} vs {fac['weekend_days']} days")
        )
        return (
            f"  {name}: {word} - {what} {fac['effect_percent']:+.2f}% [{lo:+.2f}, {hi:+.2f}], "
            f"t={fac['t']:.2f} df={fac['df']:.3g} p={fac['p']:.3g} ({units})"
        )
    df = fac["df"]
    return f"  weekday: {word} - F({df[0]},{df[1]})={fac['F']:.2f} p={fac['p']:.3g} over {fac['days']} days"


def _thesis_lines(th: dict[str, Any]) -> list[str]:
    if "anova" not in th:
        return [f"S1's analysis: not computed - {th.get('refused', '')}"]
    lines = [f"{th['label']} ({th['observations']} observations):"]
    lines.append(f"  {'source':<12} {'df':>6} {'SS %':>8} {'F':>10} {'F crit':>8}")
    for r in th["anova"]:
        f_val = "-" if r["F"] is None else f"{r['F']:.2f}"
        crit = "-" if r["F_crit"] is None else f"{r['F_crit']:.2f}"
        lines.append(f"  {r['source']:<12} {r['df']:>6} {r['ss_percent']:>8.2f} {f_val:>10} {crit:>8}")
    for factor, med in th["medians"].items():
        parts = ", ".join(f"{k} {v:.4g}" for k, v in med.items())
        diff = th["median_difference_percent"][factor]
        lines.append(f"  medians, {factor}: {parts}; difference {_fmt(diff, '.2f')}%")
    return lines


def _clean(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if isinstance(x, np.generic):
        return _clean(x.item())
    return x
