"""The record module (testbed_shared.records): fields, checks, reading and which record counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed_shared import records
from testbed_shared.records import Entry, RecordError

BASE = {"run_id": "r", "host": "h", "benchmark": "b", "repetition": 0, "status": "ok"}


def test_make_writes_every_field_in_the_documented_order() -> None:
    rec = records.make(**BASE, margin_percent=3.0, primary=[], block="pair-0", adaptive={"stop": True})
    assert list(rec) == [f.name for f in records.FIELDS]
    short = records.make(**BASE)
    assert "margin_percent" not in short and "adaptive" not in short and "primary" not in short
    assert "block" not in short
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
        ({"primary": "x"}, "field 'primary' must be a list of distinct metric names"),
        ({"primary": ["x", "x"]}, "field 'primary' must be a list of distinct metric names"),
        ({"primary": [1]}, "field 'primary' must be a list of distinct metric names"),
        ({"primary": ["bw"]}, "field 'primary' names \"bw\", which is not one of the record's metrics"),
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


def _whole_file_lines(path: Path) -> list[tuple[int, str, object]] | str:
    """What reading a result file meant before it was streamed: the whole file decoded, split at
    "\\n", a torn last line skipped; its lines or the error's message."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return f"{path}:{line}: not UTF-8 text (results are UTF-8 JSON Lines)"
    lines, out = text.split("\n"), []
    for i, raw in enumerate(lines):
        if raw.strip():
            try:
                out.append((i + 1, raw, json.loads(raw)))
            except json.JSONDecodeError as exc:
                if i == len(lines) - 1 and not text.endswith("\n"):
                    break
                return f"{path}:{i + 1}: not valid JSON ({exc.msg})"
    return out


@pytest.mark.parametrize("block", [1, 2, 3, 7, 1 << 24])
@pytest.mark.parametrize(
    "data",
    [
        b'{"a": 1}\n{"b": "\xc3\xa9"}\n',
        b'{"a": 1}\n{"b": "\xc3\xa9"}',
        b'{"a": 1}\n{"b": "\xc3',
        b'{"a": "\xe2\x82\xac"}\r\n\n  \n{"b": 2}\r\n',
        b'{"a": 1}\n{"b": 2}\nabc\xc3\n{"c": 3}\n',
        b'{"a": 1}\nnot json\n{"c": 3}\n',
        b'{"a": 1}\n{"b": "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac"}\n\xff',
        b"\n\n[1]\n\n",
        b"",
        b'{"a": \xe2\x82\xac}\n{"b": 1',
    ],
)
def test_read_lines_streamed_reads_what_the_whole_file_read_gave(
    data: bytes, block: int, tmp_path: Path, monkeypatch
) -> None:
    """Issue 36: result files are read a block at a time (an 888 MB file no longer held three times
    over), with the same lines, the same torn-tail rule and the same errors on the same lines as
    when the whole file was decoded at once; a file that is not UTF-8 yields nothing."""
    path = tmp_path / "h.jsonl"
    path.write_bytes(data)
    monkeypatch.setattr(records, "READ_BLOCK", block)
    got: list[tuple[int, str, object]] | str = []
    try:
        for item in records.read_lines(path):
            got.append(item)  # type: ignore[union-attr]
    except RecordError as exc:
        got = exc.message if not got or "UTF-8" not in exc.message else "yielded before the UTF-8 error"
    assert got == _whole_file_lines(path)


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


def test_a_record_names_its_primary_metrics() -> None:
    t = records.metric(1.0, "s", "lower")
    rec = records.make(**BASE, btype="fio", metrics={"read_bw_bytes": t, "t": t}, primary=["t"])
    assert rec["primary"] == ["t"] and records.validate(rec, "f", 1) is rec
    optional = ("margin_percent", "block", "adaptive")
    assert list(rec) == [f.name for f in records.FIELDS if f.name not in optional]
    assert records.primary_metrics(rec) == ["t"], "the record's word, not its type's rule"
    assert records.primary_metrics({**rec, "primary": []}) == [], "none is an answer"
    assert records.primary_metrics(records.make(**BASE, btype="fio", metrics={"read_bw_bytes": t})) == [
        "read_bw_bytes"
    ]


@pytest.mark.parametrize(
    ("btype", "names", "primary"),
    [
        ("fio", ["read_bw_bytes", "read_iops", "write_bw_bytes", "read_clat_p99_s", "trim_bw_bytes"],
         ["read_bw_bytes", "trim_bw_bytes", "write_bw_bytes"]),
        ("dd", ["write_bytes", "write_seconds", "write_bw_bytes", "read_seconds"],
         ["read_seconds", "write_seconds"]),
        ("kaggle_notebook", ["wall_s", "kernel_start_s", "cell_3_s"], ["wall_s"]),
        ("notebook", ["wall_s", "cells_s"], ["wall_s"]),
        ("pyperformance", ["nbody", "float"], ["float", "nbody"]),
        ("pyperf", ["nbody"], ["nbody"]),
        ("crypto", ["py.aes.4096.throughput", "py.aes.4096.cpu_percent", "py.ecdsa.time_per_op",
                    "py.aes.4096.time_per_op", "go.aes.16384.throughput", "warmup_s"],
         ["go.aes.16384.throughput", "py.aes.4096.throughput", "py.ecdsa.time_per_op"]),
        ("faas", ["latency_s", "write_latency_s", "round_trip_p50_s", "round_trip_s"], ["latency_s"]),
        ("faas", ["write_latency_s", "read_latency_s", "direct_write_latency_s", "round_trip_p50_s"],
         ["read_latency_s", "write_latency_s"]),
        ("faas", ["round_trip_p50_s", "round_trip_s"], ["round_trip_p50_s"]),
        ("faas", ["calls"], []),
        ("sysinfo", ["logical_cpus"], []),
        ("csv", ["value"], []),
    ],
)  # fmt: skip
def test_records_made_before_the_field_read_by_the_frozen_rules(
    btype: str, names: list[str], primary: list[str]
) -> None:
    """The rules of every workload type when the field came (issue 35), for records without it."""
    t = records.metric(1.0, "s", "lower")
    old = records.make(**BASE, btype=btype, metrics=dict.fromkeys(names, t))
    assert "primary" not in old
    assert records.primary_metrics(old) == primary
    assert records.primary_metrics({**old, "type": ""}, btype) == primary, "a caller may name the type"
