"""S1 view (testbed-report study S1): the thesis's tables computed as it computed them, from the
toolkit's records and from files in the format of the thesis's published observations (synthetic
rows here: the thesis's data carry no licence and are not in the repository); the day-blocked
time-of-day test calibrated by seeded simulation; bad input as one-line errors naming what lacks."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from faas_records import faas_record

from testbed_reports.anova import sequential_anova
from testbed_reports.study import StudyError, run_study
from testbed_reports.study.s1 import _classify
from testbed_reports.study.view import Cell, printed_half_unit
from testbed_shared.studies import Published, manifest

RNG_SEED = 20240410


def _balanced(rng: np.random.Generator, n: int = 40) -> pd.DataFrame:
    rows = []
    for a, b, mu in (("x", "p", 1.0), ("x", "q", 2.0), ("y", "p", 1.5), ("y", "q", 3.5)):
        rows += [{"A": a, "B": b, "v": mu + rng.normal(0, 0.3)} for _ in range(n)]
    return pd.DataFrame(rows)


def test_the_preliminary_anova_is_r_aov_with_the_aliased_interaction_dropped() -> None:
    """Weekends are always off-hours (the thesis's TimeOfDay.java): the weekend x business cell is
    empty, R's aov drops the interaction, and sequential_anova without it gives the same table."""
    rng = np.random.default_rng(RNG_SEED)
    rows = [
        {"tod": t, "dow": d, "v": rng.normal() + (0.5 if t == "business" else 0.0)}
        for t, d in (("business", "weekday"), ("off", "weekday"), ("off", "weekend"))
        for _ in range(30)
    ]
    table = sequential_anova(pd.DataFrame(rows), "v", "tod", "dow", interaction=False)
    assert [r["source"] for r in table] == ["tod", "dow", "residual", "total"]
    assert table[2]["df"] == 90 - 3 and sum(r["ss_percent"] for r in table[:3]) == pytest.approx(100)


def test_the_thesis_classification_of_slots() -> None:
    at = pd.to_datetime(
        ["2023-11-11 10:00:00", "2023-11-13 09:00:00", "2023-11-13 09:00:01", "2023-11-13 18:00:00"]
    )
    out = _classify(pd.DataFrame({"at": at}))
    assert list(out["dow"]) == ["weekend", "weekday", "weekday", "weekday"]
    assert list(out["tod"]) == ["off", "off", "business", "off"]  # strictly between 9:00 and 18:00


def test_published_values_stand_for_their_printed_range() -> None:
    assert printed_half_unit(7.85) == pytest.approx(0.005) and printed_half_unit(2619) == 0.5
    assert printed_half_unit(6.57e-07) == pytest.approx(5e-10) and printed_half_unit(True) == 0.0
    pub = Published("x", "S1 L1", 0.08)
    assert Cell(0.0827, 0.0806, 0.0848, pub).contains is True  # 0.08 is [0.075, 0.085]
    assert Cell(0.0827, 0.0806, 0.0848, Published("x", "S1 L1", 0.09)).contains is False
    assert Cell(3.915, paper=Published("x", "S1 L1", 3.92)).matches is True
    assert Cell(239.3, paper=Published("x", "S1 L1", 259.3)).matches is False


# -- files in the thesis's formats (synthetic rows) --------------------------------------------------

MEANS = {  # (op, platform, tier, file, io): (median seconds, spread)
    ("write", "LAMBDA_DD", 5, 1_024_000_000, 512): 7.8,
    ("write", "GCF_DD", 5, 1_024_000_000, 512): 9.6,
    ("write", "LAMBDA_DD", 5, 1_024_000_000, 128000): 3.6,
    ("write", "GCF_DD", 5, 1_024_000_000, 128000): 4.1,
    ("write", "LAMBDA_DD", 1, 10000, 512): 0.00026,
    ("write", "GCF_DD", 1, 10000, 512): 0.00027,
    ("write", "LAMBDA_DD", 5, 10000, 512): 0.00026,
    ("write", "GCF_DD", 5, 10000, 512): 0.00028,
    ("read", "LAMBDA_DD", 5, 1_024_000_000, 512): 265.0,
    ("read", "GCF_DD", 5, 1_024_000_000, 512): 4.8,
    ("read", "LAMBDA_DD", 5, 1_024_000_000, 128000): 25.0,
    ("read", "GCF_DD", 5, 1_024_000_000, 128000): 0.08,
    ("read", "LAMBDA_DD", 1, 10000, 512): 0.020,
    ("read", "GCF_DD", 1, 10000, 512): 0.0002,
    ("read", "LAMBDA_DD", 5, 10000, 512): 0.0008,
    ("read", "GCF_DD", 5, 10000, 512): 0.0002,
}


def _dump_rows(rng: np.random.Generator, per_cell: int = 160, drop: tuple | None = None) -> list[tuple]:
    rows, n = [], 0
    for (op, sysname, tier, size, io), mu in MEANS.items():
        if drop == (op, sysname, tier, size, io):
            continue
        for k in range(per_cell + 3):
            n += 1
            at = pd.Timestamp("2024-04-12") + pd.Timedelta(minutes=30 * k + n % 7)
            if k >= per_cell:  # outside the thesis's window: must be left out
                at = pd.Timestamp("2024-06-01") + pd.Timedelta(minutes=k)
            lat = float(mu * math.exp(rng.normal(0, 0.05)))
            exp = "URANDOM_WRITE" if op == "write" else "DIRECT_READ"
            rows.append(
                (
                    n,
                    "cmd",
                    "MONDAY",
                    size,
                    io,
                    at.isoformat(sep=" "),
                    op.upper(),
                    f"TIER_{tier}",
                    "SUCCESS",
                    sysname,
                    "OFF_HOUR",
                    "WEEKDAY",
                    exp,
                    n,
                    lat,
                )
            )
    return rows


def _write_dump(path: Path, rows: list[tuple]) -> None:
    cols = "(id, command, day_of_week, file_size_bytes, io_size_bytes, occurred_at, operation_type, resource_tier, status, system_name, time_of_day, week_period, experiment_name, experiment_id, latency_seconds, raw_latency, raw_response, raw_throughput, throughput_kb_per_second)"  # noqa: E501
    lines = ["SET statement_timeout = 0;"]
    for r in rows:
        vals = (
            f"{r[0]}, '{r[1]}', '{r[2]}', {r[3]}, {r[4]}, '{r[5]}', '{r[6]}', '{r[7]}', '{r[8]}', '{r[9]}', "
            f"'{r[10]}', '{r[11]}', '{r[12]}', {r[13]}, {r[14]}, '{r[14]} s', 'raw', '1 MB/s', 1000)"
        )
        lines.append(f"INSERT INTO public.final_experiment_data {cols} VALUES ({vals};")
    path.write_text("\n".join(lines) + "\n")


def test_the_thesis_dump_rebuilds_tables_13_to_19_with_its_selection(tmp_path: Path) -> None:
    rows = _dump_rows(np.random.default_rng(RNG_SEED))
    _write_dump(tmp_path / "start_dump.sql", rows)
    view = run_study("S1", [], tmp_path / "out", tmp_path / "start_dump.sql")
    ids = [t.id for t in view.tables]
    for t in ("Table 13", "Table 15", "Table 17", "Table 19"):
        assert t in ids and f"{t} cells" in ids
    # the ANOVA over the selection: 150 most recent per cell inside the window (not the 163 given)
    df = pd.DataFrame(
        rows,
        columns=["id", "c", "d", "file", "io", "at", "op", "tier", "s", "sys", "t", "w", "e", "x", "lat"],
    )
    df["at"] = pd.to_datetime(df["at"])
    large = df[(df["op"] == "WRITE") & (df["file"] == 1_024_000_000) & (df["at"] < "2024-05-11")]
    large = large.sort_values("at", ascending=False).groupby(["sys", "io"]).head(150)
    ref = {r["source"]: r for r in sequential_anova(large, "lat", "sys", "io")}
    t13 = next(t for t in view.tables if t.id == "Table 13")
    assert t13.rows[3]["Degrees of freedom"] == 596
    assert t13.rows[1]["Sum of squares (%)"].rerun == pytest.approx(ref["io"]["ss_percent"])
    assert t13.rows[0]["Sum of squares (%)"].paper.value == 5.89  # the paper's value beside it
    cells = next(t for t in view.tables if t.id == "Table 13 cells")
    assert "Mean, text selection (s)" in cells.columns and cells.rows[0]["n"] == 150
    out = json.loads((tmp_path / "out" / "study.json").read_text())
    assert out["study"] == "S1" and (tmp_path / "out" / "table-13.csv").is_file()
    html = (tmp_path / "out" / "study.html").read_text()
    assert html.count("<img") == len(view.figures) == 16


def test_a_dump_missing_a_cell_is_a_one_line_error_naming_it(tmp_path: Path) -> None:
    rows = _dump_rows(
        np.random.default_rng(2), per_cell=20, drop=("read", "GCF_DD", 5, 1_024_000_000, 128000)
    )
    _write_dump(tmp_path / "d.sql", rows)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "testbed_reports",
            "study",
            "S1",
            "--csv",
            str(tmp_path / "d.sql"),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    first = proc.stderr.splitlines()[0]
    assert "Table 17 GCF 128 KB read (0 obs)" in first and "1 of the 16 cells" in first


def test_the_preliminary_csv_rebuilds_tables_8_to_11(tmp_path: Path) -> None:
    rng = np.random.default_rng(RNG_SEED)
    rows = []
    for sysname, mu in (("LAMBDA_DD", 0.756), ("GCF_DD", 1.04)):
        for k in range(4 * 720):
            at = pd.Timestamp("2023-11-11 00:00") + pd.Timedelta(seconds=120 * k)
            weekend = at.day_of_week >= 5
            business = not weekend and 9 * 3600 < at.hour * 3600 + at.minute * 60 < 18 * 3600
            rows.append(
                {
                    "ID": len(rows),
                    "COLLECTED_AT": str(at),
                    "COMMAND": "if=/dev/zero",
                    "DAY_OF_WEEK": at.day_name().upper(),
                    "FILE_SIZE_BYTES": 1000000000,
                    "IO_SIZE_BYTES": 1024000,
                    "LATENCY_SECONDS": mu * math.exp(rng.normal(0, 0.03)) + (0.015 if business else 0.0),
                    "OPERATION_TYPE": "WRITE",
                    "RAW_LATENCY": "",
                    "RAW_RESPONSE": "",
                    "RAW_THROUGHPUT": "",
                    "SYSTEM_NAME": sysname,
                    "THROUGHPUT_KB_PER_SECOND": 0,
                    "TIME_OF_DAY": "BUSINESS_HOUR" if business else "OFF_HOUR",
                    "WEEK_PERIOD": "WEEKEND" if weekend else "WEEKDAY",
                }
            )
    pd.DataFrame(rows).to_csv(tmp_path / "day-time-dataset.csv", index=False)
    view = run_study("S1", [], tmp_path / "out", tmp_path / "day-time-dataset.csv")
    t8 = next(t for t in view.tables if t.id == "Table 8")
    assert [r["Source of variation"] for r in t8.rows] == ["Time of day", "Day of week", "Residuals", "Total"]
    assert t8.rows[2]["Degrees of freedom"].rerun == 4 * 720 - 3
    assert t8.rows[0]["F value"].rerun > t8.rows[0]["F crit"].rerun  # the business-hours shift is there
    calibrated = next(t for t in view.tables if t.id == "Tables 8-9, calibrated")
    assert "NOT the thesis" in calibrated.title
    weekday = [r for r in calibrated.rows if r["Test"] == "weekday"]
    assert len(weekday) == 2 and all(
        r["Verdict"].startswith("not testable") for r in weekday
    )  # one date each
    assert {r["Test"] for r in calibrated.rows} == {"hour", "business hours", "weekday", "workday"}
    t11 = next(t for t in view.tables if t.id == "Table 11")
    assert t11.rows[0]["GCF median difference (%)"].paper.value == 1.65


def test_a_file_that_is_none_of_the_thesis_tables_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(StudyError, match="not one of the thesis's tables"):
        run_study("S1", [], tmp_path / "o", tmp_path / "x.csv")
    (tmp_path / "y.sql").write_text("SELECT 1;\n")
    with pytest.raises(StudyError, match=r"no INSERT INTO public\.final_experiment_data"):
        run_study("S1", [], tmp_path / "o", tmp_path / "y.sql")


# -- toolkit records ------------------------------------------------------------------------------


def _record(bench: str, rep: int, params: dict, metrics: dict, started: str) -> dict:
    return faas_record(bench, params, rep=rep, metrics=metrics, started=started)


def test_toolkit_records_of_faas_io_give_the_tables(tmp_path: Path) -> None:
    import yaml

    plan = Path(__file__).resolve().parents[2] / "workloads/plans/faas-io.yml"
    rng = np.random.default_rng(3)
    lines = []
    for i, b in enumerate(yaml.safe_load(plan.read_text())["benchmarks"]):
        f = b["params"]["factors"]
        for rep in range(3):
            lat = {
                "write_latency_s": float(rng.uniform(0.1, 1)),
                "read_latency_s": float(rng.uniform(0.1, 1)),
            }
            rec = _record(b["name"], rep, b["params"], lat, f"2026-01-0{1 + rep}T10:00:0{i % 10}Z")
            rec["index"] = i
            lines.append(json.dumps(rec))
            assert f["platform"] in ("aws-lambda", "gcf")
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "faas.jsonl").write_text("\n".join(lines) + "\n")
    view = run_study("S1", [tmp_path / "res"], tmp_path / "out")
    assert {"Table 13", "Table 15", "Table 17", "Table 19"} <= {t.id for t in view.tables}
    assert any("Tables 8-11" in n for n in view.notes)
    t13 = next(t for t in view.tables if t.id == "Table 13")
    assert t13.rows[3]["Degrees of freedom"] == 3 * 4 - 4


def test_results_without_the_study_s_benchmarks_are_refused(tmp_path: Path) -> None:
    (tmp_path / "res").mkdir()
    rec = _record("fio_4k_read", 0, {}, {"x": 1.0}, "2026-01-01T00:00:00Z")
    rec["type"] = "fio"
    (tmp_path / "res" / "h.jsonl").write_text(json.dumps(rec) + "\n")
    with pytest.raises(StudyError, match=r"no records of faas-io.yml \(benchmarks faas_io_\*\)"):
        run_study("S1", [tmp_path / "res"], tmp_path / "out")


def test_manifest_values_used_by_the_view_exist() -> None:
    m = manifest("S1")
    for pid in (
        "t13.platform.ss_pct",
        "t19.tier.F",
        "t10.gcf.business",
        "t11.dow.gcf.significant",
        "tod.aws.cv",
    ):
        assert m.published_value(pid) is not None
