"""Loading: schema errors name file and line; statuses are shown, not used as values."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from report_helpers import record, write_jsonl

from testbed_reports.build import build
from testbed_reports.errors import SchemaError
from testbed_reports.load import load


def test_schema_violation_names_file_and_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r1" / "h1.jsonl", [record(), record(status="bogus"), record()])
    with pytest.raises(SchemaError) as err:
        load([tmp_path / "r1"])
    assert err.value.message.startswith(f"{path}:2: field 'status'")
    write_jsonl(path, [record(), record(metrics={"x": {"value": "fast", "unit": "s", "better": "lower"}})])
    with pytest.raises(SchemaError, match=r":2: metric 'x': value must be a finite number"):
        load([path])
    write_jsonl(path, [record(metrics={"x": {"value": 1.0, "unit": "s", "better": "up"}})])
    with pytest.raises(SchemaError, match=r":1: metric 'x': better must be"):
        load([path])


@pytest.mark.parametrize(
    ("second", "third", "got"),
    [
        (float("nan"), "x", "nan"),
        ("x", float("inf"), "'x'"),
        (True, 1.0, "True"),
        (None, "x", "None"),
        (10**400, 1.0, repr(10**400)),
        ([1.0], 1.0, "[1.0]"),
        (2.0, -float("inf"), "-inf"),
    ],
)
def test_the_first_value_that_is_not_a_finite_number_is_named(
    second: object, third: object, got: str, tmp_path: Path
) -> None:
    """Values are collected as floats while the file is read (not as Python objects): the error
    still names the first observation whose value is not a finite number, its line and its value,
    whatever kind of value it is and whatever follows."""

    def metrics(v: object) -> dict:
        return {
            "a": {"value": 1.5, "unit": "s", "better": "lower"},
            "x": {"value": v, "unit": "s", "better": "lower"},
        }

    path = tmp_path / "h1.jsonl"
    lines = [record(metrics=metrics(1.0), repetition=r) for r in range(3)]
    lines[1]["metrics"] = metrics(second)
    lines[2]["metrics"] = metrics(third)
    path.write_text("".join(json.dumps(rec) + "\n" for rec in lines))
    line = 2 if not isinstance(second, float) or second != 2.0 else 3
    with pytest.raises(SchemaError) as err:
        load([path])
    assert err.value.message == f"{path}:{line}: metric 'x': value must be a finite number, got {got}"


def test_broken_middle_line_is_an_error_but_a_torn_last_line_is_ignored(tmp_path: Path) -> None:
    path = tmp_path / "r1" / "h1.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(record()) + "\n{not json\n" + json.dumps(record(repetition=1)) + "\n")
    with pytest.raises(SchemaError, match=r"h1.jsonl:2: not valid JSON"):
        load([path])
    path.write_text(json.dumps(record()) + "\n" + json.dumps(record(repetition=1))[:40])
    ds = load([path])
    assert len(ds.records) == 1 and len(ds.obs) == 1


def test_statuses_are_shown_and_interrupted_superseded_by_a_rerun(tmp_path: Path) -> None:
    recs = [
        record(repetition=0, status="interrupted", error="SIGTERM", metrics={}),
        record(repetition=0, metrics={"bw_bytes": {"value": 10.0, "unit": "B/s", "better": "higher"}}),
        record(repetition=1, metrics={"bw_bytes": {"value": 12.0, "unit": "B/s", "better": "higher"}}),
        record(repetition=2, status="failed", error="fio exited 1", metrics={}),
        record(repetition=3, status="timeout", error="timed out after 60 s", metrics={}),
        record(repetition=4, status="skipped", error="no fio", metrics={}),
        record(repetition=5, status="interrupted", error="SIGINT", metrics={}),
    ]
    results = tmp_path / "results" / "r1"
    write_jsonl(results / "h1.jsonl", recs)
    ds = load([results])
    assert sorted(ds.obs["value"]) == [10.0, 12.0]
    assert list(ds.records["status"]) == ["ok", "ok", "failed", "timeout", "skipped", "interrupted"]
    rep = build([results], tmp_path / "out")
    row = rep.status.iloc[0]
    assert (row["ok"], row["failed"], row["timeout"], row["skipped"], row["interrupted"]) == (2, 1, 1, 1, 1)
    failed = pd.read_csv(tmp_path / "out" / "failed_runs.csv")
    assert set(failed["status"]) == {"failed", "timeout", "skipped", "interrupted"}
    html = (tmp_path / "out" / "index.html").read_text()
    assert "fio exited 1" in html and "timed out after 60 s" in html
    assert rep.descriptives.iloc[0]["n"] == 2


def test_csv_of_published_results_joins_the_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report of a CSV alone: no results store is made (it made results/_store/.lock in the
    working directory, the repository's when the tests ran there)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TESTBED_STORE", raising=False)
    csv = tmp_path / "paper.csv"
    pd.DataFrame(
        {
            "platform": ["AWS"] * 5 + ["GCP"] * 5,
            "fn": "thumbnail",
            "ms": [100, 101, 99, 102, 98, 150, 151, 149, 152, 148],
        }
    ).to_csv(csv, index=False)
    rep = build(
        [csv],
        tmp_path / "out",
        compare_specs=["GCP:AWS"],
        csv_mapping={"label": "platform", "benchmark": "fn", "value": "ms"},
        csv_defaults={"metric": "latency", "unit": "ms", "better": "lower"},
    )
    (row,) = rep.comparisons.itertuples(index=False)
    assert row.overhead_percent == pytest.approx(50.0, abs=0.05)  # ratio of geometric means
    assert row.unit == "ms" and row.decision == "slower"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "paper.csv"]


def test_latency_percentiles_are_read_from_samples(tmp_path: Path) -> None:
    pct = {"1.000000": 1000, "50.000000": 2000, "99.000000": 9000, "99.900000": 20000}
    recs = [record(repetition=r, samples={"clat_ns_percentiles": {"write": pct}}) for r in range(3)]
    write_jsonl(tmp_path / "r" / "h1.jsonl", recs)
    ds = load([tmp_path / "r"])
    assert set(ds.percentiles["series"]) == {"clat_ns_percentiles.write"}
    assert sorted(set(ds.percentiles["percentile"])) == [1.0, 50.0, 99.0, 99.9]
    build([tmp_path / "r"], tmp_path / "out")
    table = pd.read_csv(tmp_path / "out" / "percentiles.csv")
    assert table.loc[table["percentile"] == 99.0, "median_value"].item() == 9000


def test_parallel_parsing_gives_the_same_table_and_the_same_errors(tmp_path: Path, monkeypatch) -> None:
    from testbed_reports import load as load_mod

    results = tmp_path / "r"
    for h in range(3):
        write_jsonl(
            results / f"h{h}.jsonl",
            [
                record(
                    host=f"h{h}",
                    repetition=r,
                    metrics={
                        "bw_bytes": {"value": 100.0 + r + h, "unit": "B/s", "better": "higher"},
                        f"only_h{h}": {"value": 1.0 + h, "unit": "s", "better": "lower"},
                    },
                )
                for r in range(4)
            ],
        )
    serial = load([results])
    monkeypatch.setattr(load_mod, "PARALLEL_BYTES", 0)
    parallel = load([results])
    pd.testing.assert_frame_equal(serial.obs, parallel.obs)
    assert len(parallel.obs) == 3 * 4 * 2
    bad = write_jsonl(
        results / "h9.jsonl",
        [
            record(host="h9"),
            record(
                host="h9", metrics={"bw_bytes": {"value": float("nan"), "unit": "B/s", "better": "higher"}}
            ),
        ],
    )
    with pytest.raises(SchemaError) as err:
        load([results])
    assert err.value.message.startswith(f"{bad}:2: metric 'bw_bytes': value must be a finite number")


def test_a_run_where_everything_failed_still_gives_a_report(tmp_path: Path) -> None:
    recs = [record(repetition=r, status="failed", error="boom", metrics={}) for r in range(2)]
    write_jsonl(tmp_path / "r" / "h1.jsonl", recs)
    rep = build([tmp_path / "r"], tmp_path / "out")
    assert rep.descriptives.empty and rep.comparisons.empty
    assert "boom" in (tmp_path / "out" / "index.html").read_text()
