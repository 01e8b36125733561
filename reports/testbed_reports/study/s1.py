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
share of the total, F, and F crit at 0.95; means with t intervals, medians, CVs, ECDFs, histograms
(the view gives each mean the interval of faas_helpers.mean_cell instead, which never crosses zero).
That ANOVA takes minute-by-minute slots of one campaign as independent; the view prints beside
Tables 8 and 9 the calibrated tests of :func:`testbed_reports.timeofday.calibrated` (the day as the
unit; business hours on weekdays only, as the thesis's factor), labelled as not the thesis's, each
read against the thesis's difference ("not enough days to tell" where its interval holds both no
effect and the thesis's number). From a rerun's records, the ANOVA figures (SS %, F, df) and the
significance flags are the rerun's own sample's and stand beside the thesis's without a verdict;
from the thesis's own observations (``--csv``) they are compared. ``--csv`` reads regular files
only: a FIFO or device is refused at once (:func:`testbed_reports.study.read_input`).
"""

from __future__ import annotations

import io
import math
import os
import re
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np
import pandas as pd

from testbed_reports import svgplot
from testbed_reports.anova import sequential_anova
from testbed_reports.study import StudyError, read_input
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
from testbed_reports.timeofday import calibrated, thesis_levels
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
#: the clock the thesis's orchestrator classified by (S1 L717: its local time)
THESIS_TZ = "America/Sao_Paulo"
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
#
# Its two-way ANOVAs are anova.sequential_anova (raw scale, sequential SS as R's aov): Tables 13-19
# with interaction; Tables 8-9 without, since weekends are always off-hours (the thesis's
# TimeOfDay.java) and R's aov drops the aliased interaction. The calibrated tests beside Tables 8
# and 9 are timeofday.calibrated (the day as the unit; calibrated by simulation there).


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
        _main_tables(view, main, None, manifest, SAMPLE_STATISTIC)
    else:
        view.notes.append("Tables 13-19: no faas-io.yml records in these results (run the main experiment).")
    if tod_runs:
        tod = _tod_from_runs(tod_runs)
        _tod_tables(
            view,
            tod,
            manifest,
            "records' start times in the local time zone " + tod.attrs["tz"],
            SAMPLE_STATISTIC,
        )
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
        utc = pd.Timestamp(r.started_at)
        utc = utc.tz_localize("UTC") if utc.tzinfo is None else utc.tz_convert("UTC")
        rows.append({"platform": plat, "latency_ms": 1000 * float(value), "at_utc": utc})
    df = pd.DataFrame(rows, columns=["platform", "latency_ms", "at_utc"])
    tz = local_zone()
    df["at"] = pd.to_datetime(df["at_utc"], utc=True).dt.tz_convert(tz).dt.tz_localize(None)
    df = _classify(df)
    df.attrs["tz"] = tz
    return df


def local_zone() -> str:
    """The IANA name of the report machine's time zone: $TZ, else /etc/localtime's target, else UTC."""
    name = os.environ.get("TZ", "").lstrip(":")
    if not name:
        try:
            target = os.path.realpath("/etc/localtime")
            name = target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else ""
        except OSError:
            name = ""
    try:
        ZoneInfo(name or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        return "UTC"
    return name or "UTC"


def _classify(df: pd.DataFrame) -> pd.DataFrame:
    """The thesis's levels of each slot's local time (:func:`testbed_reports.timeofday.thesis_levels`:
    weekends are off-hours; on weekdays business hours are strictly between 09:00 and 18:00)."""
    at = pd.to_datetime(df["at"])
    tod, dow = thesis_levels(at)
    out = df.copy()
    out["dow"] = np.where(dow == "weekends", "weekend", "weekday")
    out["tod"] = np.where(tod == "business hours", "business", "off")
    out["date"] = at.dt.date
    return out


# -- input: the thesis's own observations ----------------------------------------------------------


def build_csv(path: Path, manifest: Manifest) -> StudyView:
    """The thesis's tables from its published observations (a user's copy; see the module doc)."""
    p = Path(path)
    text = read_input(p)
    view = StudyView(manifest)
    if "INSERT INTO" in text[:4096] or p.suffix == ".sql":
        main = _read_dump(p, text)
        kind = "main"
    else:
        table = _read_csv(p, text)
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


def _read_csv(p: Path, text: str) -> pd.DataFrame:
    try:
        return pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (ValueError, pd.errors.ParserError) as exc:
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


def _read_dump(p: Path, text: str) -> pd.DataFrame:
    """The rows of the thesis's ``start_dump.sql`` (pg_dump --column-inserts of final_experiment_data)."""
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


#: the columns of the thesis's day-time-dataset.csv the view reads
TOD_COLUMNS = (
    "COLLECTED_AT",
    "SYSTEM_NAME",
    "LATENCY_SECONDS",
    "OPERATION_TYPE",
    "TIME_OF_DAY",
    "WEEK_PERIOD",
)


def _tod_from_table(table: pd.DataFrame, p: Path) -> pd.DataFrame:
    t = table.rename(columns=str.upper)
    missing = [c for c in TOD_COLUMNS if c not in t.columns]
    if missing:
        raise StudyError(
            f"{p}: column {', '.join(missing)} missing (day-time-dataset.csv's columns)",
            hint="the thesis's analysis/preliminary-exp/day-time-dataset.csv has " + ", ".join(TOD_COLUMNS),
        )
    t = t[t["OPERATION_TYPE"].str.upper() == "WRITE"]
    at = pd.to_datetime(t["COLLECTED_AT"], errors="coerce")
    out = pd.DataFrame(
        {
            "platform": t["SYSTEM_NAME"].map({"LAMBDA_DD": "aws", "GCF_DD": "gcf"}),
            "latency_ms": 1000 * pd.to_numeric(t["LATENCY_SECONDS"], errors="coerce"),
            "at": at,
            # the orchestrator's clock: local time in Brazil (UTC-3, no daylight saving in 2023)
            "at_utc": at.dt.tz_localize(THESIS_TZ, nonexistent="shift_forward", ambiguous="NaT"),
            "dow": t["WEEK_PERIOD"].map({"WEEKDAY": "weekday", "WEEKEND": "weekend"}),
            "tod": t["TIME_OF_DAY"].map({"BUSINESS_HOUR": "business", "OFF_HOUR": "off"}),
            "date": at.dt.date,
        }
    ).dropna()
    if out.empty:
        raise StudyError(f"{p}: no WRITE rows with SYSTEM_NAME LAMBDA_DD or GCF_DD and a latency")
    out = out.reset_index(drop=True)
    out.attrs["tz"] = THESIS_TZ
    return out


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


#: why a rerun's ANOVA figures and test outcomes stand beside the thesis's without a verdict
SAMPLE_STATISTIC = (
    "a statistic of the rerun's own sample (its size, its ANOVA), not an estimate of the thesis's number; "
    "a test outcome of the thesis's slot-by-slot ANOVA (the calibrated tests beside Tables 8-9 answer it)"
)


def _main_tables(
    view: StudyView, df: pd.DataFrame, sel75: pd.DataFrame | None, m: Manifest, withheld: str = ""
) -> None:
    """Tables 13-19; ``withheld``: why the ANOVA figures get no verdict (a rerun's), "" to compare
    them (the thesis's own observations must give its numbers)."""
    for table, op, size, factor, figs, unit in EXPERIMENTS:
        part = _experiment(df, op, size).copy()
        scale = 1000.0 if unit == "ms" else 1.0
        part["platform_name"] = part["platform"].map(PLATFORMS)
        part["level"] = part[factor].map(LEVEL_NAMES)
        rows = sequential_anova(part, "latency_s", "platform_name", "level")
        names = {
            "platform_name": "Platform",
            "level": FACTOR_NAMES[factor],
            "platform_name:level": f"Platform:{FACTOR_NAMES[factor]}",
        }
        keys = {"platform_name": "platform", "level": factor, "platform_name:level": "interaction"}
        out = []
        for r in rows:
            src = r["source"]
            key = keys.get(src, src)
            out.append(
                {
                    "Source of variation": names.get(
                        src, src.capitalize() + ("s" if src == "residual" else "")
                    ),
                    "Degrees of freedom": r["df"],
                    "Sum of squares (%)": value_cell(
                        r["ss_percent"], paper(m, _pid(table, key, "ss_pct")), withheld=withheld
                    ),
                    "F value": value_cell(r["F"], paper(m, _pid(table, key, "F")), withheld=withheld)
                    if r["F"] is not None
                    else "",
                    "F crit": (
                        value_cell(r["F_crit"], paper(m, _pid(table, "F_crit")), withheld=withheld)
                        if r["F"] is not None
                        else ""
                    ),
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
            img(svgplot.grouped_bars(ci, pal, f"{what} ({unit})", "mean with 95 % CI (Cox-t hull)"), figs[1]),
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


def _tod_tables(view: StudyView, tod: pd.DataFrame, m: Manifest, clock: str, withheld: str = "") -> None:
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
    sig = _tod_anova(view, tod, m, clock, withheld)
    _tod_calibrated(view, tod, m)
    _tod_medians(view, tod, m, sig, withheld)
    _tod_figures(view, tod, m, withheld)


def _tod_anova(
    view: StudyView, tod: pd.DataFrame, m: Manifest, clock: str, withheld: str = ""
) -> dict[tuple[str, str], bool]:
    """Tables 8 and 9; returns which factors the thesis's F test calls significant per platform."""
    sig: dict[tuple[str, str], bool] = {}
    for plat, tid in (("aws", "Table 8"), ("gcf", "Table 9")):
        rows = sequential_anova(tod[tod["platform"] == plat], "latency_ms", "tod", "dow", interaction=False)
        out = []
        for r in rows:
            key = r["source"]
            tested = r["F"] is not None
            if tested:
                sig[(plat, key)] = bool(r["F"] > r["F_crit"])
            out.append(
                {
                    "Source of variation": {
                        "tod": "Time of day",
                        "dow": "Day of week",
                        "residual": "Residuals",
                        "total": "Total",
                    }[r["source"]],
                    "Degrees of freedom": value_cell(
                        r["df"], paper(m, _pid(tid, key, "df")), withheld=withheld
                    ),
                    "Sum of squares (%)": value_cell(
                        r["ss_percent"], paper(m, _pid(tid, key, "ss_pct")), withheld=withheld
                    ),
                    "F value": value_cell(r.get("F"), paper(m, _pid(tid, key, "F")), withheld=withheld)
                    if tested
                    else "",
                    "F crit": value_cell(r.get("F_crit"), paper(m, _pid(tid, "F_crit")), withheld=withheld)
                    if tested
                    else "",
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


def _tod_calibrated(view: StudyView, tod: pd.DataFrame, m: Manifest) -> None:
    """timeofday.calibrated per platform: the day (or block) as the unit of replication. Business
    hours as the thesis's factor counts them (S1 L666, its TimeOfDay.java): 9-18 h on weekdays
    only, so that test reads the weekdays' slots; the others read every slot."""
    tz = str(tod.attrs.get("tz", "UTC"))
    rows = []
    for plat in PLATFORM_KEYS:
        part = tod[tod["platform"] == plat]
        weekdays = part[part["dow"] == "weekday"]
        results = calibrated(_series(part), tz=tz)
        results["business_hours"] = calibrated(_series(weekdays), tz=tz)["business_hours"]
        for name, res in results.items():
            thesis = _thesis_difference(m, plat, name)
            ci = res.get("ci_percent")
            used = weekdays if name == "business_hours" else part
            rows.append(
                {
                    "Platform": PLATFORMS[plat],
                    "Test": name.replace("_", " ") + (" (weekdays)" if name == "business_hours" else ""),
                    "Days": int(pd.to_datetime(used["at"]).dt.date.nunique()),
                    "Effect (%)": res.get("effect_percent"),
                    "95 % CI (%)": f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "",
                    "p": res.get("p"),
                    "Thesis (Table 11)": "" if thesis is None else f"{thesis:+.2f} %",
                    "Verdict": tod_verdict(res, thesis),
                }
            )
    view.tables.append(
        StudyTable(
            "Tables 8-9, calibrated",
            "time of day and day of week with the day as the unit of replication (NOT the thesis's analysis)",
            ["Platform", "Test", "Days", "Effect (%)", "95 % CI (%)", "p", "Thesis (Table 11)", "Verdict"],
            rows,
            note=(
                "slots of one campaign are autocorrelated, so the thesis's F tests over slots overstate the "
                f"evidence; testbed_reports.timeofday.calibrated (time zone {tz}; business hours 9-18 h on "
                "weekdays, as the thesis's factor, S1 L666, read on the weekdays' slots; the day the unit; "
                "calibrated by seeded simulation in its tests). The thesis's difference (Table 11's, signed "
                "as Table 10's medians) is read against the interval: inside it together with no effect, "
                "the days measured cannot tell the two apart"
            ),
        )
    )


def _series(part: pd.DataFrame) -> pd.DataFrame:
    """The (time, value) table timeofday.calibrated reads, from the view's slots."""
    return pd.DataFrame({"time": part["at_utc"].to_numpy(), "value": part["latency_ms"].to_numpy()})


#: calibrated test -> the thesis's factor of Table 11 and its two levels in Table 10
_THESIS_FACTOR = {"business_hours": ("tod", "business", "off"), "workday": ("dow", "weekday", "weekend")}


def _thesis_difference(m: Manifest, plat: str, test: str) -> float | None:
    """The thesis's difference between level medians for a calibrated test's factor (Table 11's
    magnitude, signed as Table 10's medians: + when business hours / workdays are slower)."""
    if test not in _THESIS_FACTOR:
        return None
    factor, a, b = _THESIS_FACTOR[test]
    diff, ma, mb = (
        paper(m, f"t11.{factor}.{plat}.diff_pct"),
        paper(m, f"t10.{plat}.{a}"),
        paper(m, f"t10.{plat}.{b}"),
    )
    if diff is None or ma is None or mb is None:
        return None
    return math.copysign(float(diff.value), float(ma.value) - float(mb.value))


def tod_verdict(res: dict[str, Any], thesis: float | None) -> str:
    """What a calibrated test says, read against the thesis's difference: an effect; not enough
    days to tell (no effect shown, but the interval holds the thesis's difference too); no effect
    shown and the thesis's difference outside the interval; or not testable, with why."""
    if "refused" in res:
        lead = "not enough days to tell: " if thesis is not None else ""
        return f"{lead}not testable: {res['refused']}"
    ci = res.get("ci_percent")
    if res.get("effect"):
        return "an effect" + (
            f" ({res.get('effect_percent'):+.2f} % [{ci[0]:.2f}, {ci[1]:.2f}])" if ci else ""
        )
    if thesis is None or not ci:
        return "no effect shown"
    if ci[0] <= thesis <= ci[1]:
        found = (res.get("power") or {}).get("detectable_percent")
        more = f"; an effect of {found:.1f} % would be found 80 % of the time" if found else ""
        both = f"the interval holds both no effect and the thesis's {thesis:+.2f} %"
        return f"not enough days to tell: {both}{more}"
    return f"no effect shown, and the thesis's {thesis:+.2f} % lies outside the interval"


TOD_LEVELS = (("tod", ("business", "off"), "Time of day"), ("dow", ("weekday", "weekend"), "Day of week"))


def _tod_medians(
    view: StudyView, tod: pd.DataFrame, m: Manifest, sig: dict[tuple[str, str], bool], withheld: str = ""
) -> None:
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
                withheld=withheld,
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


def _tod_figures(view: StudyView, tod: pd.DataFrame, m: Manifest, withheld: str = "") -> None:
    summary = []
    for plat in PLATFORM_KEYS:
        v = tod[tod["platform"] == plat]["latency_ms"].to_numpy(dtype=float)
        summary.append(
            {"Platform": PLATFORMS[plat], "Writes": len(v), "CV (%)": cv_cell(v, paper(m, f"tod.{plat}.cv"))}
        )
    summary.append(
        {
            "Platform": "both",
            "Writes": value_cell(
                float(len(tod)),
                paper(m, "tod.measurements"),
                withheld="the number of slots this campaign ran" if withheld else "",
            ),
        }
    )
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
    bars = svgplot.grouped_bars(
        ci, palette(PLATFORMS.values()), "write latency (ms)", "mean with 95 % CI (Cox-t hull)"
    )
    view.figures.append(
        StudyFigure("Figure 4", "mean write latency per level with 95 % CI", img(bars, "Figure 4"))
    )
