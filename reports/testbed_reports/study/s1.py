"""S1, the serverless local-I/O thesis: Tables 8-11 (time of day) and 13-19 (main experiment) rebuilt.

From the toolkit's records (``build``): the main experiment's cells come from ``faas-io.yml``'s
benchmarks (``faas_io_*``: ``write_latency_s`` and ``read_latency_s`` of each sequence, labelled by
``params.factors``), the preliminary experiment from a ``timeofday-dd.yml`` campaign (``tod_*``:
``write_latency_s`` of each slot, classified by its start in the report machine's local time zone,
set ``TZ`` for another). From the thesis's own published observations (``build_csv``, S1 L1102): the
main experiment's table (its ``pg-docker/start_dump.sql``, or a CSV export of
``final_experiment_data``) or the preliminary ``day-time-dataset.csv``, selected as the thesis's
queries did (the 150 most recent successful observations per cell between 2024-04-10 and
2024-05-11; its large-file means and medians from the 150 most recent per platform across both I/O
sizes, about 75 per cell, which the view prints beside the per-cell ones).

The thesis's analysis, as it computed it (its R scripts): per experiment a two-way ANOVA of raw
latency with interaction, sequential sums of squares (R's ``aov``; the preliminary design has no
weekend business hours, so its interaction is not estimable and dropped as R drops it), SS as a
share of the total, F, and F crit at 0.95; means with t intervals, medians, CVs, ECDFs, histograms.
That ANOVA takes minute-by-minute slots of one campaign as independent; the view prints beside
Tables 8 and 9 a test whose unit is the day (:func:`day_blocked_test`), labelled as not the thesis's.
"""

from __future__ import annotations

import itertools
import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from testbed_reports import svgplot
from testbed_reports.study import StudyError
from testbed_reports.study.faas_helpers import (
    cv_cell,
    img,
    mean_cell,
    median_cell,
    palette,
    paper,
    runs,
    value_cell,
)
from testbed_reports.study.view import Cell, StudyFigure, StudyTable, StudyView
from testbed_shared.studies import Manifest

PLATFORMS = {"aws": "AWS Lambda", "gcf": "GCF"}
PLATFORM_KEYS = tuple(PLATFORMS)
LARGE, SMALL = 1_024_000_000, 10_000
#: the four 2x2 experiments: table, operation, file, second factor, figures (ECDF, CI, CV), unit
EXPERIMENTS = (
    ("Table 13", "write", "large", "io", ("Figure 5", "Figure 6", "Figure 7"), "s"),
    ("Table 15", "write", "small", "tier", ("Figure 8", "Figure 9", "Figure 10"), "ms"),
    ("Table 17", "read", "large", "io", ("Figure 11", "Figure 12", "Figure 13"), "s"),
    ("Table 19", "read", "small", "tier", ("Figure 14", "Figure 15", "Figure 16"), "ms"),
)
LEVELS = {"io": ("512", "128k"), "tier": (1, 5)}
SIZE_NAMES = {"large": "large (1 GB)", "small": "small (10 KB)"}
LEVEL_NAMES = {"512": "512 B", "128k": "128 KB", 1: "Tier 1", 5: "Tier 5"}
FACTOR_NAMES = {"io": "I/O size", "tier": "Resource tier"}
#: the thesis's data window and repetitions (analysis/main-exp/dissert-queries.R)
WINDOW = (pd.Timestamp("2024-04-10"), pd.Timestamp("2024-05-11"))
REPETITIONS = 150
ALPHA = 0.05
#: where each table is printed in the thesis
TABLE_SOURCES = {
    "Table 8": "S1 L741-747",
    "Table 9": "S1 L751-757",
    "Table 10": "S1 L763-769",
    "Table 11": "S1 L773-778",
    "Table 13": "S1 L820-827",
    "Table 15": "S1 L872-879",
    "Table 17": "S1 L924-931",
    "Table 19": "S1 L972-979",
}


# -- the thesis's computations -------------------------------------------------------------------


def thesis_anova(df: pd.DataFrame, value: str, a: str, b: str, alpha: float = ALPHA) -> list[dict[str, Any]]:
    """Two-way ANOVA with interaction as R's ``aov(value ~ a * b)`` computes it: sequential sums of
    squares (a, then b, then a:b), terms aliased with earlier ones dropped (an empty cell leaves
    no interaction), residual, total; SS % of the total corrected SS, F, F crit at 1 - alpha."""
    y = df[value].to_numpy(dtype=float)
    n = len(y)
    ca = pd.Categorical(df[a].astype(str))
    cb = pd.Categorical(df[b].astype(str))
    xa = _dummies(ca.codes, len(ca.categories))
    xb = _dummies(cb.codes, len(cb.categories))
    xab = np.column_stack([xa[:, i] * xb[:, j] for i in range(xa.shape[1]) for j in range(xb.shape[1])])
    x = np.ones((n, 1))
    sst = float(((y - y.mean()) ** 2).sum())
    prev, rank = sst, 1
    terms = []
    for name, cols in ((a, xa), (b, xb), (f"{a}:{b}", xab)):
        trial = np.column_stack([x, cols])
        r = int(np.linalg.matrix_rank(trial))
        if r == rank:
            continue  # aliased with the terms before it: R's aov drops it
        rss = _rss(trial, y)
        terms.append({"source": name, "df": r - rank, "ss": prev - rss})
        x, prev, rank = trial, rss, r
    resid_df = n - rank
    mse = prev / resid_df if resid_df > 0 else math.nan
    rows = []
    for t in terms:
        f = (t["ss"] / t["df"]) / mse if mse and math.isfinite(mse) and mse > 0 else math.nan
        crit = float(sps.f.ppf(1 - alpha, t["df"], resid_df)) if resid_df > 0 else math.nan
        rows.append(
            {
                **t,
                "ss_percent": 100 * t["ss"] / sst if sst else math.nan,
                "F": f,
                "F_crit": crit,
                "p": float(sps.f.sf(f, t["df"], resid_df)) if math.isfinite(f) else math.nan,
            }
        )
    rows.append(
        {"source": "Residuals", "df": resid_df, "ss": prev, "ss_percent": 100 * prev / sst if sst else 0.0}
    )
    rows.append({"source": "Total", "df": n - 1, "ss": sst, "ss_percent": 100.0})
    return rows


def _dummies(codes: np.ndarray, levels: int) -> np.ndarray:
    return (codes[:, None] == np.arange(1, levels)[None, :]).astype(float)


def _rss(x: np.ndarray, y: np.ndarray) -> float:
    beta, *_ = np.linalg.lstsq(x, y, rcond=None)
    r = y - x @ beta
    return float(r @ r)


def day_blocked_test(tod: pd.DataFrame, factor: str, alpha: float = ALPHA) -> dict[str, Any]:
    """A time-of-day or day-of-week test whose unit is the calendar day (not the slot).

    Slots of one campaign are autocorrelated, so an ANOVA over slots overstates the evidence.
    ``dow``: the statistic is the difference between the mean day-median of weekend days and of
    weekdays, tested by permutation of the day labels. ``tod``: per weekday the difference between
    its business-hours and off-hours medians, tested by sign flips across days. Exact enumeration up
    to :data:`EXACT_LIMIT` arrangements, else that many random ones (seeded; p = (1 + hits) / (1 +
    draws)). Valid under the null whatever the within-day correlation, provided days are
    exchangeable; with few days the smallest attainable p-value (``p_min``) may exceed ``alpha``,
    and the verdict says so instead of deciding. Needs a ``date`` column (local calendar day).
    """
    rng = np.random.default_rng(0)
    day = pd.factorize(tod["date"])[0]
    if factor == "dow":
        frame = pd.DataFrame(
            {"day": day, "v": tod["latency_ms"].to_numpy(), "we": (tod["dow"] == "weekend").to_numpy()}
        )
        days = frame.groupby("day").agg(med=("v", "median"), weekend=("we", "first"))
        weekend = days["weekend"].to_numpy(dtype=bool)
        k, d = int(weekend.sum()), len(days)
        if k in (0, d):
            return {"test": "day permutation", "days": d, "verdict": "needs weekend days and weekdays"}
        med = days["med"].to_numpy(dtype=float)
        if math.comb(d, k) <= EXACT_LIMIT:
            masks = np.zeros((math.comb(d, k), d), dtype=bool)
            for i, pick in enumerate(itertools.combinations(range(d), k)):
                masks[i, list(pick)] = True
        else:
            masks = weekend[np.argsort(rng.random((EXACT_LIMIT, d)), axis=1)]
        res = _permutation(med, weekend, masks, exact=math.comb(d, k) <= EXACT_LIMIT)
        return _verdict({"test": "day permutation", "days": d, **res}, alpha)
    wd = (tod["dow"] == "weekday").to_numpy()
    frame = pd.DataFrame(
        {"day": day[wd], "tod": tod["tod"].to_numpy()[wd], "v": tod["latency_ms"].to_numpy()[wd]}
    )
    med = frame.groupby(["day", "tod"])["v"].median().unstack()
    diffs = (
        (med["business"] - med["off"]).dropna().tolist() if {"business", "off"} <= set(med.columns) else []
    )
    d = len(diffs)
    if d == 0:
        return {"test": "sign flips over weekdays", "days": 0, "verdict": "needs weekdays with both levels"}
    dv = np.asarray(diffs)
    exact = 2**d <= EXACT_LIMIT
    flips = (
        np.array(list(itertools.product((1.0, -1.0), repeat=d)))
        if exact
        else rng.choice((1.0, -1.0), size=(EXACT_LIMIT, d))
    )
    stats_a = np.abs((flips * dv).mean(axis=1))
    obs = abs(float(dv.mean()))
    res = _p_values(stats_a, obs, exact)
    return _verdict(
        {"test": "sign flips over weekdays", "days": d, "effect_ms": float(dv.mean()), **res}, alpha
    )


#: arrangements enumerated exactly up to this many; beyond it, this many random ones
EXACT_LIMIT = 4999


def _permutation(med: np.ndarray, weekend: np.ndarray, masks: np.ndarray, exact: bool) -> dict[str, Any]:
    counts = masks.sum(axis=1)
    mean_in = (masks * med).sum(axis=1) / counts
    mean_out = (~masks * med).sum(axis=1) / (len(med) - counts)
    stats_a = np.abs(mean_in - mean_out)
    obs = float(med[weekend].mean() - med[~weekend].mean())
    return {"effect_ms": obs, **_p_values(stats_a, abs(obs), exact)}


def _p_values(stats_a: np.ndarray, obs: float, exact: bool) -> dict[str, Any]:
    """Two-sided p of ``obs`` among the arrangements' statistics, and the smallest attainable p."""
    tol = 1e-12 * max(1.0, obs)
    hits = int(np.sum(stats_a >= obs - tol))
    if exact:
        return {"p": hits / len(stats_a), "p_min": float(np.mean(stats_a >= stats_a.max() - tol))}
    return {"p": (1 + hits) / (1 + len(stats_a)), "p_min": 1 / (1 + len(stats_a))}


def _verdict(res: dict[str, Any], alpha: float) -> dict[str, Any]:
    if res["p_min"] > alpha:
        res["verdict"] = (
            f"cannot be decided from {res['days']} days (smallest attainable p {res['p_min']:.2g})"
        )
    elif res["p"] <= alpha:
        res["verdict"] = "an effect (p <= alpha)"
    else:
        res["verdict"] = "no effect shown (p > alpha)"
    return res


# -- input: toolkit records ----------------------------------------------------------------------


def build(ds: Any, manifest: Manifest) -> StudyView:
    """The thesis's tables and figures from the toolkit's records of its plans."""
    main_runs = runs(ds, ("faas_io_",))
    tod_runs = runs(ds, ("tod_",))
    if not main_runs and not tod_runs:
        raise StudyError(
            "S1: the results hold no records of faas-io.yml (benchmarks faas_io_*) nor of a "
            "timeofday-dd.yml campaign (tod_*)",
            hint="run workloads/plans/faas-io.yml or a derived plan of it, or the campaign",
        )
    view = StudyView(manifest)
    view.provenance.append(
        f"toolkit records: {len(main_runs)} main-experiment sequences, {len(tod_runs)} time-of-day slots "
        f"({len({r.run_id for r in main_runs + tod_runs})} run ids)"
    )
    if main_runs:
        main = _main_from_runs(main_runs)
        _check_cells(main)
        _main_tables(view, main, None, manifest)
    else:
        view.notes.append("Tables 13-19: no faas-io.yml records in these results (run the main experiment).")
    if tod_runs:
        tod = _tod_from_runs(tod_runs)
        _tod_tables(view, tod, manifest, "records' start times in the local time zone " + _tz_name())
    else:
        view.notes.append("Tables 8-11: no timeofday-dd.yml campaign in these results.")
    return view


def _main_from_runs(rs: list[Any]) -> pd.DataFrame:
    rows = []
    for r in rs:
        f = r.params.get("factors") or {}
        plat = "aws" if str(f.get("platform", r.params.get("profile", ""))).startswith("aws") else "gcf"
        for op in ("write", "read"):
            value = r.metrics.get(f"{op}_latency_s")
            if value is None:
                continue
            rows.append(
                {
                    "platform": plat,
                    "tier": int(f.get("tier", 5 if int(r.params.get("memory_mb", 0)) >= 2048 else 1)),
                    "file": int(f.get("file_size_bytes", 0)),
                    "io": str(f.get("io_bs", "512")),
                    "op": op,
                    "latency_s": float(value),
                    "at": r.started_at,
                }
            )
    return pd.DataFrame(rows, columns=["platform", "tier", "file", "io", "op", "latency_s", "at"])


def _tod_from_runs(rs: list[Any]) -> pd.DataFrame:
    rows = []
    for r in rs:
        value = r.metrics.get("write_latency_s")
        if value is None:
            continue
        plat = "aws" if str(r.params.get("profile", "")).startswith("aws") else "gcf"
        local = _to_local(pd.Timestamp(r.started_at))
        rows.append({"platform": plat, "latency_ms": 1000 * float(value), "at": local})
    df = pd.DataFrame(rows, columns=["platform", "latency_ms", "at"])
    return _classify(df)


def _tz_name() -> str:
    return str(pd.Timestamp.now().tz_localize("UTC").tz_convert(_local_tz()).tzname() or "local")


def _local_tz() -> Any:
    return datetime.now().astimezone().tzinfo


def _to_local(ts: pd.Timestamp) -> pd.Timestamp:
    if ts.tzinfo is None:
        ts = ts.tz_localize("UTC")
    return ts.tz_convert(_local_tz()).tz_localize(None)


def _classify(df: pd.DataFrame) -> pd.DataFrame:
    """The thesis's levels (TimeOfDay.java, WeekPeriod.java): weekends are off-hours; on weekdays
    business hours are strictly between 09:00 and 18:00."""
    at = pd.to_datetime(df["at"])
    weekend = at.dt.day_of_week >= 5
    tod_sec = at.dt.hour * 3600 + at.dt.minute * 60 + at.dt.second + at.dt.microsecond / 1e6
    business = ~weekend & (tod_sec > 9 * 3600) & (tod_sec < 18 * 3600)
    out = df.copy()
    out["dow"] = np.where(weekend, "weekend", "weekday")
    out["tod"] = np.where(business, "business", "off")
    out["date"] = at.dt.date
    return out


# -- input: the thesis's own observations ----------------------------------------------------------


def build_csv(path: Path, manifest: Manifest) -> StudyView:
    """The thesis's tables from its published observations (a user's copy; see the module doc)."""
    p = Path(path)
    try:
        head = p.read_text(encoding="utf-8", errors="replace")[:4096]
    except OSError as exc:
        raise StudyError(f"{p}: cannot read ({exc.strerror})") from None
    view = StudyView(manifest)
    if "INSERT INTO" in head or p.suffix == ".sql":
        main = _read_dump(p)
        kind = "main"
    else:
        table = _read_csv(p)
        cols = {c.lower() for c in table.columns}
        if {"collected_at", "system_name", "latency_seconds", "time_of_day", "week_period"} <= cols:
            kind = "tod"
        elif {"system_name", "resource_tier", "io_size_bytes", "file_size_bytes", "latency_seconds"} <= cols:
            kind = "main"
        else:
            raise StudyError(
                f"{p}: not one of the thesis's tables (need the columns of final_experiment_data or of "
                "day-time-dataset.csv)",
                hint="found: " + ", ".join(sorted(cols))[:200],
            )
        main = _main_from_table(table, p) if kind == "main" else None
    if kind == "main" and main is not None:
        cells, sel75 = _thesis_selection(main)
        _check_cells(cells, source=str(p))
        view.provenance.append(
            f"the thesis's observations ({p.name}): {len(main)} rows; selected as its queries did: "
            f"the {REPETITIONS} most recent successful ones per cell between {WINDOW[0].date()} and "
            f"{WINDOW[1].date()} ({len(cells)} observations)"
        )
        _main_tables(view, cells, sel75, manifest)
        view.notes.append(
            "Tables 8-11: give the thesis's day-time-dataset.csv with --csv for the preliminary experiment."
        )
    else:
        tod = _tod_from_table(table, p)
        view.provenance.append(
            f"the thesis's preliminary observations ({p.name}): {len(tod)} writes, "
            "levels as the thesis recorded them"
        )
        _tod_tables(view, tod, manifest, "the thesis's own TIME_OF_DAY and WEEK_PERIOD columns (UTC-3)")
    return view


def build_csvs(paths: list[Path], manifest: Manifest) -> StudyView:
    """One view from several of the thesis's files (its main table and its preliminary CSV)."""
    view = StudyView(manifest)
    parts = [build_csv(p, manifest) for p in paths]
    for part in parts:
        view.tables += part.tables
        view.figures += part.figures
        view.provenance += part.provenance
    have = {t.id for t in view.tables}
    for part in parts:
        for note in part.notes:
            if ("Tables 8-11" in note and "Table 8" in have) or (
                "Tables 13-19" in note and "Table 13" in have
            ):
                continue
            view.notes.append(note)
    return view


def _read_csv(p: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(p, dtype=str, keep_default_na=False)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise StudyError(f"{p}: not a readable CSV ({' '.join(str(exc).split())[:160]})") from None


#: the columns of the thesis's final_experiment_data table, in its dump's INSERT order
DUMP_COLUMNS = (
    "id",
    "command",
    "day_of_week",
    "file_size_bytes",
    "io_size_bytes",
    "occurred_at",
    "operation_type",
    "resource_tier",
    "status",
    "system_name",
    "time_of_day",
    "week_period",
    "experiment_name",
    "experiment_id",
    "latency_seconds",
)
_INSERT = re.compile(
    r"INSERT INTO public\.final_experiment_data \(([^)]*)\) VALUES "
    r"\((\d+), '([^']*)', '(\w*)', (\d+), (\d+), "
    r"'([^']*)', '(\w*)', '(\w*)', '(\w*)', '(\w*)', '(\w*)', '(\w*)', '(\w*)', (\d+), ([^,]+),"
)


def _read_dump(p: Path) -> pd.DataFrame:
    """The rows of the thesis's ``start_dump.sql`` (pg_dump --column-inserts of final_experiment_data)."""
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise StudyError(f"{p}: cannot read ({exc.strerror})") from None
    rows = [m.groups()[1:] for m in _INSERT.finditer(text)]
    if not rows:
        raise StudyError(
            f"{p}: no INSERT INTO public.final_experiment_data rows (the thesis's pg-docker/start_dump.sql)"
        )
    return _main_from_table(pd.DataFrame(rows, columns=list(DUMP_COLUMNS)), p)


def _main_from_table(table: pd.DataFrame, p: Path) -> pd.DataFrame:
    t = table.rename(columns=str.lower)
    try:
        lat = pd.to_numeric(t["latency_seconds"], errors="coerce")
        out = pd.DataFrame(
            {
                "platform": t["system_name"].map({"LAMBDA_DD": "aws", "GCF_DD": "gcf"}),
                "tier": t["resource_tier"].str.extract(r"(\d+)$")[0].astype(float),
                "file": pd.to_numeric(t["file_size_bytes"], errors="coerce"),
                "io": pd.to_numeric(t["io_size_bytes"], errors="coerce").map({512: "512", 128000: "128k"}),
                "op": t["operation_type"].str.lower(),
                "experiment": t.get("experiment_name", pd.Series("", index=t.index)),
                "status": t.get("status", pd.Series("SUCCESS", index=t.index)),
                "latency_s": lat,
                "at": pd.to_datetime(t["occurred_at"], errors="coerce"),
            }
        )
    except KeyError as exc:
        raise StudyError(f"{p}: column {exc.args[0]} missing (final_experiment_data's columns)") from None
    return out


def _thesis_selection(main: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per cell: the 150 most recent in the window; large files: the 150 most recent per platform
    and operation across both I/O sizes, the selection of the thesis's text means and medians)."""
    m = main[
        (main["status"] == "SUCCESS")
        & (main["at"] >= WINDOW[0])
        & (main["at"] <= WINDOW[1])
        & (
            ((main["op"] == "write") & (main["experiment"] == "URANDOM_WRITE"))
            | ((main["op"] == "read") & (main["experiment"] == "DIRECT_READ"))
        )
    ].dropna(subset=["platform", "tier", "file", "io", "latency_s", "at"])
    m = m.astype({"tier": int, "file": int}).sort_values("at", ascending=False)
    cells = m.groupby(["op", "platform", "tier", "file", "io"], sort=False).head(REPETITIONS)
    large = m[(m["file"] == LARGE) & (m["tier"] == 5)]
    sel75 = large.groupby(["op", "platform", "tier"], sort=False).head(REPETITIONS)
    cols = ["platform", "tier", "file", "io", "op", "latency_s", "at"]
    return cells[cols].reset_index(drop=True), sel75[cols].reset_index(drop=True)


def _tod_from_table(table: pd.DataFrame, p: Path) -> pd.DataFrame:
    t = table.rename(columns=str.upper)
    t = t[t["OPERATION_TYPE"].str.upper() == "WRITE"]
    at = pd.to_datetime(t["COLLECTED_AT"], errors="coerce")
    out = pd.DataFrame(
        {
            "platform": t["SYSTEM_NAME"].map({"LAMBDA_DD": "aws", "GCF_DD": "gcf"}),
            "latency_ms": 1000 * pd.to_numeric(t["LATENCY_SECONDS"], errors="coerce"),
            "at": at,
            "dow": t["WEEK_PERIOD"].map({"WEEKDAY": "weekday", "WEEKEND": "weekend"}),
            "tod": t["TIME_OF_DAY"].map({"BUSINESS_HOUR": "business", "OFF_HOUR": "off"}),
            "date": at.dt.date,
        }
    ).dropna()
    if out.empty:
        raise StudyError(f"{p}: no WRITE rows with SYSTEM_NAME LAMBDA_DD or GCF_DD and a latency")
    return out.reset_index(drop=True)


# -- checks --------------------------------------------------------------------------------------


def _experiment(df: pd.DataFrame, op: str, size: str) -> pd.DataFrame:
    if size == "large":
        return df[(df["op"] == op) & (df["file"] >= 999_000_000) & (df["tier"] == 5)]
    return df[(df["op"] == op) & (df["file"] == SMALL) & (df["io"] == "512")]


def _check_cells(df: pd.DataFrame, source: str = "the results") -> None:
    """Every one of the sixteen cells has at least two observations, else a one-line error naming them."""
    missing = []
    for table, op, size, factor, _, _ in EXPERIMENTS:
        part = _experiment(df, op, size)
        for plat in PLATFORM_KEYS:
            for level in LEVELS[factor]:
                n = int(((part["platform"] == plat) & (part[factor] == level)).sum())
                if n < 2:
                    missing.append(f"{table} {PLATFORMS[plat]} {LEVEL_NAMES[level]} {op} ({n} obs)")
    if missing:
        raise StudyError(
            f"S1: {source} lack {len(missing)} of the 16 cells of the thesis's design: "
            + "; ".join(missing[:6])
            + (" ..." if len(missing) > 6 else ""),
            hint="run every benchmark of workloads/plans/faas-io.yml (a derived plan keeps them all)",
        )


# -- the main experiment's tables and figures --------------------------------------------------------


def _pid(table: str, *parts: Any) -> str:
    return ".".join(["t" + table.rsplit(maxsplit=1)[-1], *map(str, parts)])


def _level_id(level: Any) -> str:
    return {1: "t1", 5: "t5"}.get(level, str(level))


def _main_tables(view: StudyView, df: pd.DataFrame, sel75: pd.DataFrame | None, m: Manifest) -> None:
    for table, op, size, factor, figs, unit in EXPERIMENTS:
        part = _experiment(df, op, size).copy()
        scale = 1000.0 if unit == "ms" else 1.0
        part["platform_name"] = part["platform"].map(PLATFORMS)
        part["level"] = part[factor].map(LEVEL_NAMES)
        rows = thesis_anova(part, "latency_s", "platform_name", "level")
        names = {
            "platform_name": "Platform",
            "level": FACTOR_NAMES[factor],
            "platform_name:level": f"Platform:{FACTOR_NAMES[factor]}",
        }
        keys = {"platform_name": "platform", "level": factor, "platform_name:level": "interaction"}
        out = []
        for r in rows:
            src = r["source"]
            key = keys.get(src, src.lower().rstrip("s") if src != "Total" else "total")
            out.append(
                {
                    "Source of variation": names.get(src, src),
                    "Degrees of freedom": r["df"],
                    "Sum of squares (%)": value_cell(r["ss_percent"], paper(m, _pid(table, key, "ss_pct"))),
                    "F value": value_cell(r.get("F"), paper(m, _pid(table, key, "F"))) if "F" in r else "",
                    "F crit": value_cell(r.get("F_crit"), paper(m, _pid(table, "F_crit")))
                    if "F" in r
                    else "",
                }
            )
        resid = rows[-2]["df"]
        ac = _lag1(part)
        view.tables.append(
            StudyTable(
                table,
                f"two-way ANOVA for {op} operations on {SIZE_NAMES[size]} files",
                ["Source of variation", "Degrees of freedom", "Sum of squares (%)", "F value", "F crit"],
                out,
                source=TABLE_SOURCES[table],
                note=_anova_note(resid, ac),
            )
        )
        view.tables.append(_cells_table(table, op, size, factor, figs, unit, part, sel75, m, scale))
        view.figures += _main_figures(table, op, size, factor, figs, unit, part, scale)


def _anova_note(resid: int, ac: float) -> str:
    note = (
        "raw latency in seconds, sequential SS as R's aov (the thesis's dissert-anova.R); "
        f"F crit[0.95, 1, {resid}]"
    )
    if math.isfinite(ac):
        note += f". Not the thesis's: lag-1 autocorrelation of the residuals in time order {ac:+.2f}"
    return note


def _lag1(part: pd.DataFrame) -> float:
    """Lag-1 autocorrelation of the cell residuals in time order (pooled over cells)."""
    res = []
    for _, g in part.sort_values("at").groupby(["platform", "level"]):
        v = g["latency_s"].to_numpy(dtype=float)
        if len(v) > 2:
            d = v - v.mean()
            res.append((float((d[1:] * d[:-1]).sum()), float((d * d).sum())))
    num, den = sum(r[0] for r in res), sum(r[1] for r in res)
    return num / den if den > 0 else math.nan


def _cells_table(
    table: str,
    op: str,
    size: str,
    factor: str,
    figs: tuple[str, str, str],
    unit: str,
    part: pd.DataFrame,
    sel75: pd.DataFrame | None,
    m: Manifest,
    scale: float,
) -> StudyTable:
    rows = []
    cvs: dict[tuple[str, Any], float] = {}
    for level in LEVELS[factor]:
        for plat in PLATFORM_KEYS:
            v = part[(part["platform"] == plat) & (part[factor] == level)]["latency_s"].to_numpy(dtype=float)
            lid = _level_id(level)
            row = {
                "Platform": PLATFORMS[plat],
                FACTOR_NAMES[factor]: LEVEL_NAMES[level],
                "n": len(v),
                f"Median ({unit})": median_cell(v, paper(m, _pid(table, plat, lid, "median")), scale),
                f"Mean ({unit})": mean_cell(v, paper(m, _pid(table, plat, lid, "mean")), scale),
                "CV (%)": cv_cell(v, paper(m, _pid(table, plat, lid, "cv"))),
            }
            cv = row["CV (%)"]
            cvs[(plat, level)] = cv.rerun if isinstance(cv, Cell) and cv.rerun is not None else math.nan
            if sel75 is not None and size == "large":
                w = sel75[(sel75["op"] == op) & (sel75["platform"] == plat) & (sel75["io"] == level)][
                    "latency_s"
                ]
                w = w.to_numpy(dtype=float)
                note = "the thesis's text selection: 150 most recent per platform across both I/O sizes"
                row[f"Median, text selection ({unit})"] = median_cell(
                    w, paper(m, _pid(table, plat, lid, "median")), scale, note
                )
                row[f"Mean, text selection ({unit})"] = mean_cell(
                    w, paper(m, _pid(table, plat, lid, "mean")), scale, note
                )
                row[f"Median ({unit})"] = median_cell(v, None, scale)
                row[f"Mean ({unit})"] = mean_cell(v, None, scale)
            rows.append(row)
    for level in LEVELS[factor]:
        diff = abs(cvs[("aws", level)] - cvs[("gcf", level)])
        rows.append(
            {
                "Platform": "|CV AWS - CV GCF| (pp)",
                FACTOR_NAMES[factor]: LEVEL_NAMES[level],
                "CV (%)": value_cell(
                    diff, paper(m, _pid(table, "cv_diff", _level_id(level))), "percentage points"
                ),
            }
        )
    cols = ["Platform", FACTOR_NAMES[factor], "n", f"Median ({unit})", f"Mean ({unit})"]
    if sel75 is not None and size == "large":
        cols += [f"Median, text selection ({unit})", f"Mean, text selection ({unit})"]
    cols.append("CV (%)")
    return StudyTable(
        f"{table} cells",
        f"{op} latency per cell ({figs[0]} medians, {figs[1]} means with 95 % CI, {figs[2]} CVs)",
        cols,
        rows,
        note="intervals take each cell's observations as independent, as the thesis did",
    )


def _main_figures(
    table: str,
    op: str,
    size: str,
    factor: str,
    figs: tuple[str, str, str],
    unit: str,
    part: pd.DataFrame,
    scale: float,
) -> list[StudyFigure]:
    labels = list(PLATFORMS.values())
    pal = palette(labels)
    values, ci, cvb, hist = {}, {}, {}, {}
    for level in LEVELS[factor]:
        for plat, name in PLATFORMS.items():
            v = (
                part[(part["platform"] == plat) & (part[factor] == level)]["latency_s"].to_numpy(dtype=float)
                * scale
            )
            if not len(v):
                continue
            values[(LEVEL_NAMES[level], name)] = v
            c = mean_cell(v, None)
            ci[(LEVEL_NAMES[level], name)] = (c.rerun or math.nan, c.low or math.nan, c.high or math.nan)
            cv = cv_cell(v, None)
            cvb[(LEVEL_NAMES[level], name)] = (cv.rerun or math.nan, cv.low or math.nan, cv.high or math.nan)
            hist[f"{name} {LEVEL_NAMES[level]}"] = v
    metrics = [LEVEL_NAMES[lv] for lv in LEVELS[factor]]
    what = f"{op} latency, {'1 GB' if size == 'large' else '10 KB'} file"
    appendix = {
        "Table 13": "Figure 17",
        "Table 15": "Figure 18",
        "Table 17": "Figure 19",
        "Table 19": "Figure 20",
    }[table]
    return [
        StudyFigure(
            figs[0],
            f"ECDF of {what}",
            img(svgplot.ecdf(values, metrics, dict.fromkeys(metrics, unit), pal), figs[0]),
            table,
        ),
        StudyFigure(
            figs[1],
            f"mean {what} with 95 % CI",
            img(svgplot.grouped_bars(ci, pal, f"{what} ({unit})", "mean, t 95 % CI"), figs[1]),
            table,
        ),
        StudyFigure(
            figs[2],
            f"CV of {what}",
            img(svgplot.grouped_bars(cvb, pal, "CV (%)", "Vangel 95 % CI"), figs[2]),
            table,
        ),
        StudyFigure(appendix, f"histograms of {what}", img(svgplot.histograms(hist, unit), appendix), table),
    ]


# -- the preliminary experiment ----------------------------------------------------------------------


def _tod_tables(view: StudyView, tod: pd.DataFrame, m: Manifest, clock: str) -> None:
    missing = [
        f"{PLATFORMS[p]} {lvl}"
        for p in PLATFORM_KEYS
        for col, lvl in (("tod", "business"), ("tod", "off"), ("dow", "weekday"), ("dow", "weekend"))
        if not ((tod["platform"] == p) & (tod[col] == lvl)).any()
    ]
    if missing:
        raise StudyError(
            "S1 Tables 8-11: the campaign lacks " + ", ".join(missing),
            hint="run timeofday-dd.yml as a campaign over weekdays and a weekend (--for 4d from a Saturday)",
        )
    sig = _tod_anova(view, tod, m, clock)
    _tod_calibrated(view, tod)
    _tod_medians(view, tod, m, sig)
    _tod_figures(view, tod, m)


def _tod_anova(view: StudyView, tod: pd.DataFrame, m: Manifest, clock: str) -> dict[tuple[str, str], bool]:
    """Tables 8 and 9; returns which factors the thesis's F test calls significant per platform."""
    sig: dict[tuple[str, str], bool] = {}
    for plat, tid in (("aws", "Table 8"), ("gcf", "Table 9")):
        rows = thesis_anova(tod[tod["platform"] == plat], "latency_ms", "tod", "dow")
        out = []
        for r in rows:
            key = {"tod": "tod", "dow": "dow", "Residuals": "residual", "Total": "total"}.get(
                r["source"], "interaction"
            )
            tested = "F" in r
            if tested:
                sig[(plat, key)] = bool(r["F"] > r["F_crit"])
            out.append(
                {
                    "Source of variation": {"tod": "Time of day", "dow": "Day of week"}.get(
                        r["source"], r["source"]
                    ),
                    "Degrees of freedom": value_cell(r["df"], paper(m, _pid(tid, key, "df"))),
                    "Sum of squares (%)": value_cell(r["ss_percent"], paper(m, _pid(tid, key, "ss_pct"))),
                    "F value": value_cell(r.get("F"), paper(m, _pid(tid, key, "F"))) if tested else "",
                    "F crit": value_cell(r.get("F_crit"), paper(m, _pid(tid, "F_crit"))) if tested else "",
                }
            )
        view.tables.append(
            StudyTable(
                tid,
                f"two-way ANOVA of write latency (ms) in {PLATFORMS[plat]}, preliminary experiment",
                ["Source of variation", "Degrees of freedom", "Sum of squares (%)", "F value", "F crit"],
                out,
                source=TABLE_SOURCES[tid],
                note=(
                    "sequential SS (time of day, then day of week) as R's aov in the thesis's Rmd; the "
                    "weekend x business-hours cell is empty, so there is no interaction term; "
                    f"F crit[0.95, 1, {rows[-2]['df']}]; levels from {clock}"
                ),
            )
        )
    return sig


def _tod_calibrated(view: StudyView, tod: pd.DataFrame) -> None:
    rows = []
    for plat in PLATFORM_KEYS:
        for factor in ("tod", "dow"):
            res = day_blocked_test(tod[tod["platform"] == plat], factor)
            rows.append(
                {
                    "Platform": PLATFORMS[plat],
                    "Factor": {"tod": "Time of day", "dow": "Day of week"}[factor],
                    "Test (unit: day)": res["test"],
                    "Days": res.get("days", 0),
                    "Effect (ms)": res.get("effect_ms"),
                    "p": res.get("p"),
                    "Smallest attainable p": res.get("p_min"),
                    "Verdict": res["verdict"],
                }
            )
    view.tables.append(
        StudyTable(
            "Tables 8-9, calibrated",
            "time of day and day of week tested with the day as the unit (NOT the thesis's analysis)",
            [
                "Platform",
                "Factor",
                "Test (unit: day)",
                "Days",
                "Effect (ms)",
                "p",
                "Smallest attainable p",
                "Verdict",
            ],
            rows,
            note=(
                "slots of one campaign are autocorrelated, so the thesis's F tests over slots overstate the "
                "evidence; these exact permutation tests treat days as the independent units (calibrated by "
                "simulation in reports/tests/test_study_s1.py)"
            ),
        )
    )


TOD_LEVELS = (("tod", ("business", "off"), "Time of day"), ("dow", ("weekday", "weekend"), "Day of week"))


def _tod_medians(view: StudyView, tod: pd.DataFrame, m: Manifest, sig: dict[tuple[str, str], bool]) -> None:
    """Tables 10 and 11."""
    medians: dict[tuple[str, str], float] = {}
    for factor, levels, label in TOD_LEVELS:
        row: dict[str, Any] = {"Factor": label}
        for plat in PLATFORM_KEYS:
            for lvl in levels:
                v = tod[(tod["platform"] == plat) & (tod[factor] == lvl)]["latency_ms"].to_numpy(dtype=float)
                medians[(plat, lvl)] = float(np.median(v))
                row[f"{PLATFORMS[plat]} {lvl}"] = median_cell(v, paper(m, f"t10.{plat}.{lvl}"))
        view.tables.append(
            StudyTable(
                "Table 10" if factor == "tod" else "Table 10 (day of week)",
                "level medians of write latency (ms)",
                ["Factor", *[f"{PLATFORMS[p]} {lvl}" for p in PLATFORM_KEYS for lvl in levels]],
                [row],
                source=TABLE_SOURCES["Table 10"],
                note="medians with order-statistic 95 % intervals (slots taken as independent)",
            )
        )
    rows = []
    for factor, (a, b), label in TOD_LEVELS:
        row = {"Factor": label}
        for plat in PLATFORM_KEYS:
            row[f"{PLATFORMS[plat]} significant"] = value_cell(
                float(sig.get((plat, factor), False)),
                paper(m, f"t11.{factor}.{plat}.significant"),
                "1 = F > F crit",
            )
            diff = 100 * (medians[(plat, a)] / medians[(plat, b)] - 1)
            row[f"{PLATFORMS[plat]} median difference (%)"] = value_cell(
                abs(diff),
                paper(m, f"t11.{factor}.{plat}.diff_pct"),
                f"({a} / {b} - 1) x 100, signed {diff:+.2f}",
            )
        rows.append(row)
    view.tables.append(
        StudyTable(
            "Table 11",
            "factor significance (thesis's ANOVA) and difference between level medians",
            [
                "Factor",
                *[
                    f"{PLATFORMS[p]} {w}"
                    for p in PLATFORM_KEYS
                    for w in ("significant", "median difference (%)")
                ],
            ],
            rows,
            source=TABLE_SOURCES["Table 11"],
        )
    )


def _tod_figures(view: StudyView, tod: pd.DataFrame, m: Manifest) -> None:
    summary = []
    for plat in PLATFORM_KEYS:
        v = tod[tod["platform"] == plat]["latency_ms"].to_numpy(dtype=float)
        summary.append(
            {"Platform": PLATFORMS[plat], "Writes": len(v), "CV (%)": cv_cell(v, paper(m, f"tod.{plat}.cv"))}
        )
    summary.append({"Platform": "both", "Writes": value_cell(float(len(tod)), paper(m, "tod.measurements"))})
    view.tables.append(
        StudyTable(
            "Figure 3 data",
            "preliminary writes per platform and their CV",
            ["Platform", "Writes", "CV (%)"],
            summary,
        )
    )
    hist = {
        PLATFORMS[p]: tod[tod["platform"] == p]["latency_ms"].to_numpy(dtype=float) for p in PLATFORM_KEYS
    }
    view.figures.append(
        StudyFigure(
            "Figure 3",
            "histograms of write latency, preliminary experiment",
            img(svgplot.histograms(hist, "ms"), "Figure 3"),
        )
    )
    ci = {}
    for factor, levels, _ in TOD_LEVELS:
        for lvl in levels:
            for plat in PLATFORM_KEYS:
                v = tod[(tod["platform"] == plat) & (tod[factor] == lvl)]["latency_ms"].to_numpy(dtype=float)
                c = mean_cell(v, None)
                ci[(lvl, PLATFORMS[plat])] = (c.rerun or math.nan, c.low or math.nan, c.high or math.nan)
    bars = svgplot.grouped_bars(ci, palette(PLATFORMS.values()), "write latency (ms)", "mean, t 95 % CI")
    view.figures.append(
        StudyFigure("Figure 4", "mean write latency per level with 95 % CI", img(bars, "Figure 4"))
    )
