"""Hostile and broken result files (issue 12, items 5 and 8): a clean error naming file and line, or a
report, never a traceback; duplicates counted once; labels escaped in summary.md."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from report_helpers import record, run_cli, write_jsonl

from testbed_reports.build import build
from testbed_reports.errors import ReportError
from testbed_reports.load import load


def _recs(n: int = 4, **over: object) -> list[dict]:
    return [
        record(
            repetition=r,
            metrics={"write_seconds": {"value": 1.0 + r / 100, "unit": "s", "better": "lower"}},
            **over,
        )
        for r in range(n)
    ]


def test_a_file_concatenated_with_itself_counts_once_with_a_warning(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r" / "h1.jsonl", _recs() + _recs())
    ds = load([path])
    assert len(ds.obs) == 4
    assert ds.warnings == ["4 duplicated record(s) (identical copies) counted once"]
    res = run_cli("build", str(path), "--out", str(tmp_path / "out"))
    assert res.returncode == 0 and "warning: 4 duplicated record(s)" in res.stderr


def test_a_conflicting_duplicate_is_flagged_and_not_used(tmp_path: Path) -> None:
    recs = _recs()
    other = copy.deepcopy(recs[1])
    other["metrics"]["write_seconds"]["value"] = 9.0
    path = write_jsonl(tmp_path / "r" / "h1.jsonl", [*recs, other])
    ds = load([path])
    assert len(ds.obs) == 4 and ds.obs["value"].max() < 2
    (w,) = ds.warnings
    assert w.startswith("CONFLICTING duplicate of b1 repetition 1 on h1") and "h1.jsonl:5 differs from" in w
    rep = build([path], tmp_path / "out")
    assert "CONFLICTING" in (tmp_path / "out" / "summary.md").read_text() and rep.warnings


BROKEN = {
    "index null": ({"index": None}, "field 'index' must be an integer"),
    "index 10^30": ({"index": 10**30}, "field 'index' must be an integer"),
    "repetition negative": ({"repetition": -1}, "field 'repetition' must be an integer from 0"),
    "label a list": ({"label": ["a", "b"]}, "field 'label' must be a string"),
    "type a number": ({"type": 3}, "field 'type' must be a string"),
    "samples a list": ({"samples": [1]}, "field 'samples' must be an object"),
    "value 10^400": (
        {"metrics": {"m": {"value": 10**400, "unit": "s", "better": "lower"}}},
        "value must be a finite number",
    ),
    "value a string": ({"metrics": {"m": {"value": "1.5", "unit": "s", "better": "lower"}}}, "got '1.5'"),
    "value true": ({"metrics": {"m": {"value": True, "unit": "s", "better": "lower"}}}, "got True"),
    "margin 0": ({"margin_percent": 0}, "field 'margin_percent' must be a number between 0 and 100"),
    "pyperf sample a string": (
        {"type": "pyperformance", "samples": {"write_seconds": {"values": [1.0, "x"]}}},
        "samples 'write_seconds': values must be finite numbers",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN), ids=list(BROKEN))
def test_malformed_records_are_a_clean_error_with_file_and_line(tmp_path: Path, case: str) -> None:
    over, message = BROKEN[case]
    recs = _recs(2)
    recs[1].update(over)
    path = write_jsonl(tmp_path / "r" / "h1.jsonl", recs)
    res = run_cli("build", str(path), "--out", str(tmp_path / "out"))
    assert res.returncode == 2, res.stderr
    assert "h1.jsonl:2: " in res.stderr and message in res.stderr and "Traceback" not in res.stderr


def test_latin1_bytes_and_deep_nesting_name_their_line(tmp_path: Path) -> None:
    path = tmp_path / "r" / "h1.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(json.dumps(_recs(1)[0]).encode() + b"\n" + '{"label": "caf\xe9"}\n'.encode("latin-1"))
    res = run_cli("build", str(path), "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and "h1.jsonl:2: not UTF-8 text" in res.stderr
    path.write_text(json.dumps(_recs(1)[0]) + "\n" + "[" * 100_000 + "]" * 100_000 + "\n")
    res = run_cli("build", str(path), "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and "h1.jsonl:2: JSON nested too deeply" in res.stderr


def test_cc_a_string_in_sysinfo_is_reported_not_a_traceback(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r" / "h1.jsonl", _recs())
    (tmp_path / "r" / "h1.sysinfo.json").write_text(json.dumps({"cc": "sev-snp", "cpu": "x", "kernel": [1]}))
    res = run_cli("build", str(path), "--out", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr


def test_all_values_at_the_float_limit_plot_and_report(tmp_path: Path) -> None:
    recs = _recs(6)
    for r in recs:
        r["metrics"]["write_seconds"]["value"] = 1.7e308
    path = write_jsonl(tmp_path / "r" / "h1.jsonl", recs)
    rep = build([path], tmp_path / "out")
    assert rep.descriptives["mean"].iloc[0] == pytest.approx(1.7e308)
    assert "inf" not in (tmp_path / "out" / "summary.md").read_text().lower()


def test_summary_md_escapes_labels(tmp_path: Path) -> None:
    label = "evil | <img src=x onerror=alert(1)>\n# heading [link](http://x) *b*"
    path = write_jsonl(tmp_path / "r" / "h1.jsonl", _recs(label=label))
    build([path], tmp_path / "out")
    md = (tmp_path / "out" / "summary.md").read_text()
    assert "<img" not in md and "\n# heading" not in md and "[link](http" not in md
    assert "evil \\| &lt;img src=x onerror=alert(1)\\> \\# heading" in md


# --- property-based fuzzing of the record loader -------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
FIELDS = [
    "schema", "run_id", "host", "label", "groups", "benchmark", "type", "index", "repetition",
    "status", "started_at", "ended_at", "metrics", "samples", "margin_percent",
]  # fmt: skip
COUNTS = {"examples": 0, "clean_errors": 0, "reports": 0}


@st.composite
def mutated_records(draw: st.DrawFn) -> list[dict]:
    """A valid file with one to three fields of some records replaced by random JSON values."""
    recs = _recs(3)
    for _ in range(draw(st.integers(1, 3))):
        rec = recs[draw(st.integers(0, 2))]
        key = draw(st.sampled_from(FIELDS))
        if key == "metrics" and draw(st.booleans()):
            rec["metrics"]["write_seconds"][draw(st.sampled_from(["value", "unit", "better"]))] = draw(JSON)
        else:
            rec[key] = draw(JSON)
    return recs


@seed(12)
@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(recs=mutated_records())
def test_fuzzed_records_give_a_clean_error_or_a_dataset(tmp_path: Path, recs: list[dict]) -> None:
    path = tmp_path / "fuzz" / "h1.jsonl"
    path.parent.mkdir(exist_ok=True)
    try:
        text = "".join(json.dumps(r, allow_nan=True) + "\n" for r in recs)
    except (ValueError, OverflowError):
        return
    path.write_text(text, encoding="utf-8")
    COUNTS["examples"] += 1
    try:
        load([path])
    except ReportError as exc:
        assert "h1.jsonl" in str(exc) or "no result records" in str(exc)
        COUNTS["clean_errors"] += 1
    else:
        COUNTS["reports"] += 1


def test_odd_field_values_build_or_fail_cleanly_through_the_cli(tmp_path: Path) -> None:
    """Every field set to each odd value, through ``testbed-report build``; prints the fuzz counts."""
    print(f"record-loader fuzzing: {COUNTS}")
    odd = [None, ["x"], {"a": 1}, -1, 1e308, "\x00", ""]
    outcomes = {0: 0, 2: 0}
    for k, field in enumerate(FIELDS):
        recs = _recs(3)
        recs[1][field] = odd[k % len(odd)]
        path = write_jsonl(tmp_path / f"f{k}" / "h1.jsonl", recs)
        res = run_cli("build", str(path), "--out", str(tmp_path / f"out{k}"))
        assert res.returncode in (0, 2) and "Traceback" not in res.stderr, (field, res.stderr)
        outcomes[res.returncode] += 1
    print(f"odd field values: {outcomes[0]} reports, {outcomes[2]} clean errors")


@pytest.mark.slow
def test_random_broken_files_build_a_report_or_fail_cleanly(tmp_path: Path) -> None:
    """60 seeded files with random fields replaced, through the whole build (plots included)."""
    import random
    import warnings

    rnd = random.Random(5)
    odd = [
        None,
        True,
        -1,
        0,
        1e308,
        10**30,
        "",
        "x",
        "<b>",
        [],
        ["a"],
        {},
        {"a": 1},
        1.5,
        "2026-13-45",
        "\n#h",
    ]
    odd += [{"values": [1, 2]}, {"write_seconds": {"values": [1e308, 1e308]}}]
    outcomes = {"reports": 0, "clean_errors": 0}
    for k in range(60):
        recs = [
            record(
                repetition=r,
                label=rnd.choice(["A", "B"]),
                host=rnd.choice(["h1", "h2"]),
                type=rnd.choice(["dd", "pyperformance", "fio"]),
                metrics={
                    "write_seconds": {
                        "value": rnd.choice([1.0, 2.0, 0.0, -1.0, 1e-300, 1.7e308]),
                        "unit": "s",
                        "better": "lower",
                    }
                },
            )
            for r in range(6)
        ]
        for _ in range(rnd.randint(0, 3)):
            recs[rnd.randrange(6)][rnd.choice([*FIELDS, "telemetry", "params", "error"])] = rnd.choice(odd)
        path = write_jsonl(tmp_path / f"f{k}" / "h.jsonl", recs)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            try:
                build([path], tmp_path / f"out{k}", compare_specs=["A:B"] if k % 2 else [])
                outcomes["reports"] += 1
            except ReportError as exc:
                assert "h.jsonl" in str(exc) or "label" in str(exc) or "no result records" in str(exc), exc
                outcomes["clean_errors"] += 1
    print(f"random broken files through build: {outcomes}")
