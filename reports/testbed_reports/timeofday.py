"""``testbed-report timeofday RESULTS... --metric M``: does a metric depend on the hour of the day or
the day of the week? (the preliminary experiment of the serverless I/O study: a run every minute for
four days, S1 L711-717; docs/campaigns.md).

Estimand: the metric's hour-of-day profile, the same on every day: each hour's geometric mean
relative to the geometric mean over the 24 hours (``hour``), and the ratio of the business hours'
(9-18 h, S1 L666) geometric mean to the other hours', hours weighted equally, in percent
(``business_hours``; with ``--business-days`` read on those days only, the other days having a
profile of their own, as S1's factor has weekends all off-hours). Day-level factors: workdays vs
weekend days (``workday``), differences between weekdays (``weekday``).

Unit of replication (hour, business_hours): the run, with dependent errors. The model is
``log value = block level + hour level + e``: every block (a calendar day in ``--tz``, or
``--block-days`` N days) has a free level, so any shift between days, steady or wandering, drops
out; ``e`` is an AR(1) process in continuous time (``corr = phi ** (gap / step)``, step the median
gap between runs): a run resembles the runs just before it (shared caches, noisy tenants).
Fitted by exact GLS with phi by REML (:mod:`testbed_reports.ar1`); hour levels are read within
blocks, so every hour must be seen in at least 2 blocks (else "not testable": inside one day an hour
pattern cannot be told from drift). Runs at one instant are averaged first; ``--min-per-group``
leaves out (block, hour) cells with fewer runs.

Tests and intervals: ``hour``, Wald F of the 23 hour contrasts; ``business_hours``, t of the
contrast, its interval taken back to percent. The denominator df are Satterthwaite's from the REML
information of (sigma^2, phi), which carries the uncertainty of the estimated phi into the test.
``business_hours`` also prints the power its design had for a ``--power-effect`` (default 15 %)
effect and the effect it finds with 80 % power (non-central t at its own standard error, so at the
fitted noise and phi). Model check: Ljung-Box over 10 lags of the whitened residuals; p < 0.01
prints a warning that the dependence is not AR(1) (the tests' level is then not guaranteed); it
changes no test. ``workday`` and ``weekday`` take the day as the unit (each complete local day's
mean of its hour cells): Welch t of workdays vs weekend days (2 of each needed); one-way ANOVA over
weekdays only when some weekday was seen on two dates (else the weekday is the date).

Error control: each test at ``--alpha``, not adjusted across the four. Calibrated by seeded
simulation (reports/tests/test_calibration_timeofday.py; bench/timeofday_calibration.py;
docs/report.md has the table): four days, 10 % noise, no effect, false "effect" of hour / business
hours at AR(1) phi 0.5 and 0.9 per run within 5 % + Monte Carlo error, every 15 minutes and every
minute; phi 0.99 and a day-level random walk are in the table. A 15 % business-hours effect, four
days every 15 minutes: found in 100 % at phi 0.5 and 0.9 (the last round's lag-1 pretest, which
switched the hour test to Box's F(1, 3): 71 % and 1 %). Not covered: a level step inside a day (a
neighbour arriving at 14:10) is partly an hour effect to this model; docs/report.md says how often.

Cost: about 45 least-squares fits of the runs on (blocks + 23) columns; a four-day minute campaign
(5,760 runs) about 0.5 s on one core.

The thesis's own analysis (:func:`thesis_anova`, S1 Tables 8-11) is printed beside it, labelled as
such: every run an observation, raw scale, business hours x workday two-way ANOVA without
interaction, sequential sums of squares, F against F crit at 0.95, level medians and their
differences. It treats autocorrelated runs as independent.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd
from scipy import optimize, stats

from testbed_reports import ar1, dist
from testbed_reports.anova import sequential_anova
from testbed_reports.errors import ReportError
from testbed_shared.atomic import write_atomically

WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
#: S1's business hours (9 AM to 6 PM, S1 L666) as [start, end) local hours
BUSINESS = (9, 18)
TESTS = ("hour", "business_hours", "weekday", "workday")
#: the effect whose power the business-hours test reports (0.15: 15 %, issue 34)
POWER_EFFECT = 0.15
#: lags of the model check (Ljung-Box on the whitened residuals) and the p below which it warns
LB_LAGS = 10
MODEL_CHECK_P = 0.01


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
    p.add_argument(
        "--business-days",
        default="all",
        metavar="DAYS",
        help="days with business hours: all (default) or weekdays such as Mon-Fri or Mon,Wed; other days "
        "get an hour pattern of their own",
    )
    p.add_argument(
        "--power-effect",
        type=float,
        default=100 * POWER_EFFECT,
        metavar="PERCENT",
        help=f"business-hours effect whose power is reported (default {100 * POWER_EFFECT:g})",
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
        business_days=parse_days(args.business_days),
        power_effect=args.power_effect / 100,
    )
    print(render(res))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(args.json, json.dumps(_clean(res), indent=2) + "\n", what="--json")
    return 0


def parse_days(text: str) -> tuple[int, ...] | None:
    """``all`` (None), or weekdays as ``Mon-Fri``, ``Sat,Sun`` or a mix: the weekday numbers."""
    if text.strip().lower() == "all":
        return None
    names = {w.lower(): i for i, w in enumerate(WEEKDAYS)}
    out: set[int] = set()
    for part in text.split(","):
        ends = [names.get(x.strip().lower()) for x in part.split("-")]
        first, last = ends[0], ends[-1]
        if len(ends) > 2 or first is None or last is None:
            raise ReportError(
                f"--business-days {text!r}: {part.strip()!r} is not a weekday or a range of weekdays",
                "give all, or names such as Mon-Fri or Mon,Tue,Wed",
            )
        out.update(range(first, last + 1) if first <= last else [*range(first, 7), *range(last + 1)])
    return tuple(sorted(out))


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
    """The table with ``t`` (seconds since the epoch), local ``hour``, ``day`` (days since the first
    local date), ``weekday`` (0 = Mon), ``block`` (``day // block_days``), ``value`` and ``logv``."""
    if block_days < 1:
        raise ReportError(f"--block-days {block_days}: must be at least 1")
    utc = pd.to_datetime(table["time"], utc=True)
    t = utc.dt.tz_convert(_zone(tz))
    date = t.dt.tz_localize(None).dt.normalize()
    first = date.min() if len(date) else pd.Timestamp(0)
    day = ((date - first).dt.days).to_numpy(dtype=np.int64) if len(date) else np.zeros(0, dtype=np.int64)
    epoch = (utc - pd.Timestamp(0, tz="UTC")).dt.total_seconds().to_numpy(dtype=float)
    return pd.DataFrame(
        {
            "t": epoch,
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


@dataclass(frozen=True)
class HourModel:
    """``log value = block + hour-of-day pattern (one per day type) + AR(1) errors``, fitted."""

    fit: ar1.Ar1Fit
    #: per day type (0: the tested days; 1: other days), 24 rows mapping beta to that type's hour
    #: pattern (hour levels relative to its first hour seen; NaN rows: hours never seen)
    pattern: tuple[np.ndarray, ...]
    blocks: int
    complete_blocks: int
    runs: int
    ties_averaged: int

    def hour_effects(self) -> np.ndarray:
        """24 x p: each hour's level minus the mean over the 24 hours (day type 0)."""
        h = self.pattern[0]
        return h - h.mean(axis=0, keepdims=True)

    def summary(self) -> dict[str, Any]:
        """The fit's figures every test prints: runs, blocks, phi (with its standard error), step
        and the model check."""
        q, df, p = self.fit.ljung_box(LB_LAGS)
        return {
            "runs": self.runs,
            "blocks": self.blocks,
            "complete_blocks": self.complete_blocks,
            "ties_averaged": self.ties_averaged,
            "phi": self.fit.rho,
            "phi_se": self.fit.rho_se,
            "step_s": self.fit.step_s,
            "df_resid": self.fit.df_resid,
            "model_check": {
                "ljung_box_q": q,
                "lags": LB_LAGS,
                "df": df,
                "p": p,
                "ok": bool(p >= MODEL_CHECK_P),
            },
        }


def _series(f: pd.DataFrame, min_per_cell: int) -> tuple[pd.DataFrame, int]:
    """The runs the model sees, in time order: runs of (block, hour) cells with fewer than
    ``min_per_cell`` runs left out; runs at one instant averaged (log scale) into one."""
    code = f["block"].to_numpy(dtype=np.int64) * 24 + f["hour"].to_numpy(dtype=np.int64)
    counts = pd.Series(code).map(pd.Series(code).value_counts()).to_numpy()
    g = f[counts >= max(min_per_cell, 1)]
    merged = (
        g.groupby("t", sort=True)
        .agg(
            hour=("hour", "first"),
            block=("block", "first"),
            weekday=("weekday", "first"),
            logv=("logv", "mean"),
        )
        .reset_index()
    )
    return merged, len(g) - len(merged)


def _too_few_blocks(g: pd.DataFrame, blocks_seen: int, what: str) -> str | None:
    """The refusal when some hour of ``g`` was seen in fewer than 2 blocks (None: testable)."""
    per_hour = g.groupby("hour")["block"].nunique().reindex(range(24), fill_value=0)
    short = [f"{h:02d}" for h, k in per_hour.items() if k < 2]
    if not short:
        return None
    complete = int((g.groupby("block")["hour"].nunique() == 24).sum())
    return (
        f"{complete} complete block(s) with all 24 hours{what} (of {blocks_seen} seen); hour(s) "
        f"{', '.join(short[:6])}{' ...' if len(short) > 6 else ''} in fewer than 2 blocks: need every hour "
        "in at least 2 blocks - within one block an hour pattern cannot be told apart from drift over the day"
    )


def hour_model(
    f: pd.DataFrame, min_per_cell: int = 1, tested_days: Collection[int] | None = None
) -> HourModel | str:
    """Fit ``log value = block + hour pattern + AR(1) errors`` to a :func:`local_frame`; with
    ``tested_days`` (weekdays, 0 = Mon) days of other weekdays get an hour pattern of their own.
    Returns the refusal (why not testable) instead when some tested hour was seen in fewer than 2
    blocks."""
    g, ties = _series(f, min_per_cell)
    blocks_seen = int(f["block"].nunique())
    kind = np.zeros(len(g), dtype=np.int64)
    if tested_days is not None:
        kind = (~g["weekday"].isin(list(tested_days))).to_numpy().astype(np.int64)
    what = "" if tested_days is None else " on " + _days_name(tested_days)
    refusal = _too_few_blocks(g[kind == 0], blocks_seen, what)
    if refusal:
        return refusal
    block_codes, blocks = pd.factorize(g["block"], sort=True)
    hours = g["hour"].to_numpy(dtype=np.int64)
    cols = [(block_codes == b).astype(float) for b in range(len(blocks))]
    mixed = (pd.Series(kind).groupby(block_codes).nunique() > 1).any()
    if mixed:
        cols.append(kind.astype(float))
    col_of: list[dict[int, int]] = []
    for k in (0, 1):
        seen = sorted(set(hours[kind == k].tolist()))
        col_of.append({})
        for h in seen[1:]:
            col_of[k][h] = len(cols)
            cols.append(((hours == h) & (kind == k)).astype(float))
    x = np.column_stack(cols)
    try:
        fitted = ar1.fit(g["t"].to_numpy(), g["logv"].to_numpy(), x)
    except ValueError as exc:
        return f"the model cannot be fitted to these runs ({exc})"
    patterns = []
    for k in (0, 1):
        h_map = np.full((24, x.shape[1]), np.nan)
        seen = set(hours[kind == k].tolist())
        for h in seen:
            h_map[h] = 0.0
            if h in col_of[k]:
                h_map[h, col_of[k][h]] = 1.0
        patterns.append(h_map)
    complete = int((g[kind == 0].groupby("block")["hour"].nunique() == 24).sum())
    return HourModel(fitted, tuple(patterns), len(blocks), complete, len(g), ties)


def _days_name(days: Collection[int]) -> str:
    s = sorted(set(days))
    if len(s) > 2 and s == list(range(s[0], s[-1] + 1)):
        return f"{WEEKDAYS[s[0]]}-{WEEKDAYS[s[-1]]}"
    return ",".join(WEEKDAYS[d] for d in s)


def _interval(est: float, se: float, df: float, alpha: float) -> tuple[float, float, float]:
    """Percent effect of a log-scale estimate with its t interval."""
    half = float(dist.t.isf(alpha / 2, df)) * se
    return 100 * math.expm1(est), 100 * math.expm1(est - half), 100 * math.expm1(est + half)


def hour_test(
    f: pd.DataFrame, alpha: float = 0.05, min_per_cell: int = 1, model: HourModel | str | None = None
) -> dict[str, Any]:
    """F test of the hour-of-day pattern in the AR(1) GLS model (see the module docstring)."""
    m = hour_model(f, min_per_cell) if model is None else model
    out: dict[str, Any] = {"test": "hour", "blocks_seen": int(f["block"].nunique())}
    if isinstance(m, str):
        out["refused"] = m
        return out
    eff = m.hour_effects()
    f_val, d1, d2, p = m.fit.wald(eff[1:] - eff[0])  # 23 independent differences: all hours equal
    est, se, df = np.array([m.fit.contrast(eff[h]) for h in range(24)]).T
    half = dist.t.isf(alpha / 2, df) * se
    hours = {f"{h:02d}": [100 * math.expm1(est[h] + d) for d in (0.0, -half[h], half[h])] for h in range(24)}
    centre = {k: v[0] for k, v in hours.items()}
    out.update(m.summary())
    out.update(
        {
            "F": f_val,
            "df": [d1, d2],
            "p": p,
            "effect": bool(p < alpha),
            "hour_effect_percent": centre,
            "hour_ci_percent": {k: v[1:] for k, v in hours.items()},
            "lowest_hour": min(centre, key=centre.__getitem__),
            "highest_hour": max(centre, key=centre.__getitem__),
            "range_percent": max(centre.values()) - min(centre.values()),
        }
    )
    return out


def _power(delta: float, se: float, df: float, alpha: float) -> float:
    """Two-sided t test's power at a true log effect ``delta`` with standard error ``se``."""
    crit = float(dist.t.isf(alpha / 2, df))
    total = 0.0
    ncs = (delta / se, -delta / se)  # P(t > crit) + P(t < -crit) = P(t' > crit) at -nc
    tails = stats.nct.sf(crit, df, ncs).tolist()  # both in one call: scipy.stats' cost is per call
    for nc, tail in zip(ncs, tails, strict=True):
        total += tail if math.isfinite(tail) else float(dist.norm.sf(crit - nc))  # scipy's far tail: NaN
    return min(total, 1.0)


def business_test(
    f: pd.DataFrame,
    alpha: float = 0.05,
    business: tuple[int, int] = BUSINESS,
    min_per_cell: int = 1,
    business_days: Collection[int] | None = None,
    power_effect: float = POWER_EFFECT,
    model: HourModel | str | None = None,
) -> dict[str, Any]:
    """Business hours vs off-hours: the contrast (mean of the business hours' levels minus the mean
    of the other hours' levels) of the AR(1) GLS hour pattern, t test, effect in percent with its
    interval; and the power the design had for a ``power_effect`` (0.15 = 15 %) effect."""
    m = hour_model(f, min_per_cell, business_days) if model is None else model
    out: dict[str, Any] = {
        "test": "business_hours",
        "hours": list(business),
        "days": "all" if business_days is None else _days_name(business_days),
        "blocks_seen": int(f["block"].nunique()),
    }
    if isinstance(m, str):
        out["refused"] = m
        return out
    inside = np.array([business[0] <= h < business[1] for h in range(24)])
    if inside.all() or not inside.any():
        out["refused"] = f"business hours {business[0]:02d}-{business[1]:02d} h leave no off-hours or none"
        return out
    h = m.pattern[0]
    est, se, df = m.fit.contrast(h[inside].mean(axis=0) - h[~inside].mean(axis=0))
    centre, lo, hi = _interval(est, se, df, alpha)
    t = est / se
    p = float(2 * dist.t.sf(abs(t), df))
    delta = math.log1p(power_effect)
    out.update(m.summary())
    out.update(
        {
            "t": t,
            "df": df,
            "p": p,
            "effect": bool(p < alpha),
            "effect_percent": centre,
            "ci_percent": [lo, hi],
            "power": {
                "effect_percent": 100 * power_effect,
                "power": _power(delta, se, df, alpha),
                "detectable_percent": 100 * math.expm1(_detectable(se, df, alpha)),
            },
        }
    )
    return out


def _detectable(se: float, df: float, alpha: float, power: float = 0.8) -> float:
    """The log effect found with probability ``power`` at standard error ``se``."""
    hi = 20 * se
    return float(optimize.brentq(lambda d: _power(d, se, df, alpha) - power, 0.0, hi))


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
    business_days: Collection[int] | None = None,
    power_effect: float = POWER_EFFECT,
) -> dict[str, dict[str, Any]]:
    """The calibrated time-of-day tests of a table (``select``): {hour, business_hours, weekday,
    workday} -> a dict with ``effect`` and its statistics, or ``refused`` with the reason.
    ``business_days`` (weekdays, 0 = Mon; None: every day) are the days with business hours: the
    other days get an hour pattern of their own and the business-hours contrast is read on the
    business days' pattern."""
    f = local_frame(table, tz, block_days)
    days = f if block_days == 1 else local_frame(table, tz, 1)
    model = hour_model(f, min_per_cell)
    bmodel = model if business_days is None else None
    return {
        "hour": hour_test(f, alpha, min_per_cell, model),
        "business_hours": business_test(
            f, alpha, business, min_per_cell, business_days, power_effect, bmodel
        ),
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
    business_days: Collection[int] | None = None,
    power_effect: float = POWER_EFFECT,
) -> dict[str, Any]:
    """Everything ``testbed-report timeofday`` prints for one metric's table (from :func:`select`):
    descriptive groups, the calibrated tests (``factors``) and the thesis's ANOVA (``thesis``)."""
    if min_per_group < 1:
        raise ReportError(f"--min-per-group {min_per_group}: must be at least 1")
    if not 0 < power_effect < 10:
        raise ReportError(f"--power-effect {100 * power_effect:g}: must be above 0 and below 1000 (%)")
    times = table["time"]
    desc = groups(table, tz) if len(table) else {"hour": {}, "weekday": {}}
    tests = (
        calibrated(table, tz, block_days, alpha, business, min_per_group, business_days, power_effect)
        if len(table)
        else {}
    )
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
    lines += ["", f"Calibrated tests (alpha {res['alpha']:g}; the module's help says what each assumes):"]
    for name in TESTS:
        lines += _verdict(res["factors"][name])
    lines += ["", *_thesis_lines(res["thesis"])]
    return "\n".join(lines)


def _model_line(fac: dict[str, Any]) -> str:
    step = fac["step_s"]
    step_txt = f"{step / 60:.3g} min" if step >= 60 else f"{step:.3g} s"
    ties = f"; {fac['ties_averaged']} runs at a shared instant averaged" if fac["ties_averaged"] else ""
    return (
        f"{fac['runs']} runs in {fac['blocks']} blocks ({fac['complete_blocks']} with all 24 hours), block "
        f"effects + AR(1) errors, phi {fac['phi']:.3f} (se {fac['phi_se']:.3f}) per {step_txt} step{ties}"
    )


def _check_line(fac: dict[str, Any]) -> list[str]:
    mc = fac["model_check"]
    if mc["ok"]:
        return []
    return [
        f"    model check: whitened residuals still autocorrelated (Ljung-Box over {mc['lags']} lags "
        f"p={mc['p']:.2g} < {MODEL_CHECK_P:g}): the runs' dependence is not AR(1), the test's error rate is "
        "not guaranteed"
    ]


def _verdict(fac: dict[str, Any]) -> list[str]:
    name = fac.get("test", "?")
    if "refused" in fac:
        return [f"  {name}: not testable - {fac['refused']}"]
    word = "EFFECT" if fac["effect"] else "no effect detected"
    if name == "hour":
        df, ci = fac["df"], fac["hour_ci_percent"]
        lo, hi = fac["lowest_hour"], fac["highest_hour"]
        eff = fac["hour_effect_percent"]
        return [
            f"  hour: {word} - F({df[0]},{df[1]:.1f})={fac['F']:.2f} p={fac['p']:.3g}; {_model_line(fac)}",
            f"    hour levels vs the mean of the 24 hours: lowest {lo} h {eff[lo]:+.2f}% "
            f"[{ci[lo][0]:+.2f}, {ci[lo][1]:+.2f}], highest {hi} h {eff[hi]:+.2f}% [{ci[hi][0]:+.2f}, "
            f"{ci[hi][1]:+.2f}]",
            *_check_line(fac),
        ]
    if name == "business_hours":
        lo, hi = fac["ci_percent"]
        pw = fac["power"]
        days = "" if fac["days"] == "all" else f" on {fac['days']}"
        first, last = fac["hours"]
        return [
            f"  business_hours: {word} - business hours ({first:02d}-{last:02d} h{days}) vs off-hours "
            f"{fac['effect_percent']:+.2f}% [{lo:+.2f}, {hi:+.2f}], t={fac['t']:.2f} df={fac['df']:.1f} "
            f"p={fac['p']:.3g}; {_model_line(fac)}",
            f"    power of this design (at its fitted noise and phi) for a {pw['effect_percent']:g}% effect: "
            f"{100 * pw['power']:.0f}%; 80% power at {pw['detectable_percent']:.2g}%",
            *_check_line(fac),
        ]
    if name == "workday":
        lo, hi = fac["ci_percent"]
        return [
            f"  workday: {word} - workdays vs weekends {fac['effect_percent']:+.2f}% [{lo:+.2f}, {hi:+.2f}], "
            f"Welch t={fac['t']:.2f} df={fac['df']:.3g} p={fac['p']:.3g} ({fac['workdays']} vs "
            f"{fac['weekend_days']} days, each day one value)"
        ]
    df = fac["df"]
    return [f"  weekday: {word} - F({df[0]},{df[1]})={fac['F']:.2f} p={fac['p']:.3g} over {fac['days']} days"]


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
