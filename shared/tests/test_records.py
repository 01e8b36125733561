"""The record module (testbed_shared.records): fields, checks, reading and which record counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed_shared import records
from testbed_shared.records import Entry, RecordError

BASE = {"run_id": "r", "host": "h", "benchmark": "b", "repetition": 0, "status": "ok"}


def test_make_writes_every_field_in_the_documented_order() -> None:
    rec = records.make(**BASE, margin_percent=3.0, adaptive={"stop": True})
    assert list(rec) == [f.name for f in records.FIELDS]
    short = records.make(**BASE)
    assert "margin_percent" not in short and "adaptive" not in short
    assert records.validate(short, "x", 1) is short


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"schema": 2}, "unsupported schema 2"),
        ({"schema": True}, "unsupported schema true"),
        ({"host": ""}, "field 'host' must be a non-empty string"),
        ({"status": "done"}, "field 'status' must be one of"),
        ({"repetition": -1}, "field 'repetition' must be an integer"),
        ({"groups": "sev"}, "field 'groups' must be a list of strings"),
        ({"metrics": None}, "field 'metrics' is missing"),
        ({"index": 2**40}, "field 'index' must be an integer"),
        ({"session": 7}, "field 'session' must be a string"),
        ({"attempt": 0}, "field 'attempt' must be a whole number >= 1"),
        ({"attempt": "2"}, "field 'attempt' must be a whole number >= 1"),
        ({"margin_percent": 150}, "field 'margin_percent' must be a number between 0 and 100"),
        ({"metrics": {"x": {"value": "1", "unit": "s", "better": "lower"}}}, "metric 'x': value must be"),
        ({"metrics": {"x": {"value": 1, "unit": "s", "better": "up"}}}, "metric 'x': better must be"),
    ],
)
def test_a_bad_record_is_one_line_naming_file_line_and_field(change: dict, words: str) -> None:
    rec = records.make(**BASE)
    rec.update(change)
    if change.get("metrics", 0) is None:
        del rec["metrics"]
    with pytest.raises(RecordError, match=r"^f\.jsonl:7: ") as err:
        records.validate(rec, "f.jsonl", 7)
    assert words in str(err.value) and "\n" not in str(err.value)


def test_a_failed_record_needs_no_metrics() -> None:
    rec = {"schema": 1, **BASE, "status": "failed"}
    assert records.validate(rec, "f", 1) is rec


def test_read_lines_skips_a_torn_tail_and_names_a_broken_line(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    good = json.dumps(records.make(**BASE))
    path.write_text(good + "\n" + good[:20])
    assert [n for n, _, _ in records.read_lines(path)] == [1]
    path.write_text(good[:20] + "\n" + good + "\n")
    with pytest.raises(RecordError, match=r"h\.jsonl:1: not valid JSON"):
        list(records.read_lines(path))
    path.write_bytes(b"\xff\n")
    with pytest.raises(RecordError, match=r"h\.jsonl:1: not UTF-8"):
        list(records.read_lines(path))


def _e(rep: int, attempt: int, status: str, digest: str) -> Entry:
    return Entry(("r", "h", 0, "b", rep), attempt, status, digest, f"f:{digest}")


def test_select_counts_the_last_attempt_and_the_final_over_interrupted() -> None:
    chosen = records.select(
        [_e(0, 1, "failed", "a"), _e(1, 1, "ok", "b"), _e(0, 2, "ok", "c"), _e(1, 1, "ok", "b")]
    )
    assert chosen.kept == [1, 2] and chosen.duplicates == 1 and chosen.superseded == 1
    chosen = records.select([_e(0, 1, "interrupted", "a"), _e(0, 1, "ok", "b")])
    assert chosen.kept == [1] and not chosen.conflicts
    chosen = records.select([_e(0, 1, "ok", "a"), _e(0, 1, "ok", "b")])
    assert chosen.kept == [0] and len(chosen.conflicts) == 1
    assert "CONFLICTING duplicate of b repetition 0 on h (run r): f:b differs from f:a" in chosen.conflicts[0]


def test_runs_join_files_that_share_a_session_or_a_record() -> None:
    a = records.markers([("s1", 1), ("s1", 2)])
    copy = records.markers([("s1", 1)])
    other = records.markers([("s2", 3)])
    legacy = records.markers([(None, 3)])  # no session, but the same record as `other`
    assert records.runs([a, other, copy, legacy]) == [0, 1, 0, 1]


def test_read_keeps_different_runs_with_one_run_id_apart(tmp_path: Path) -> None:
    for site, session in (("a", "s1"), ("b", "s2")):
        (tmp_path / site).mkdir()
        rec = records.make(**BASE, session=session, metrics={"t": records.metric(1.0, "s", "lower")})
        (tmp_path / site / "h.jsonl").write_text(json.dumps(rec) + "\n")
    found = records.read([tmp_path / "a", tmp_path / "b"])
    assert [r["run_id"] for r in found.records] == ["r", "r@2"]
    assert "kept apart" in found.warnings[0]
    with pytest.raises(RecordError, match="no such file"):
        records.read([tmp_path / "missing"])
