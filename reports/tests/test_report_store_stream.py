"""``store add`` file by file (issue 36): the same bytes as loading the run whole, and the whole-run
path where a directory's layout needs it."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from report_support.synth import Machine, write_run

from testbed_reports import load as loader
from testbed_reports import store as store_module
from testbed_reports import store_stream
from testbed_reports.store import Store
from testbed_reports.store_stream import NotStreamable

QUICK = Path(__file__).parent / "data" / "quick-run"


def _tree(root: Path) -> dict[str, str]:
    return {
        f.relative_to(root).as_posix(): hashlib.sha256(f.read_bytes()).hexdigest()
        for f in sorted(root.rglob("*"))
        if f.is_file() and f.name != ".lock"
    }


def _whole(self: Store, *args: object) -> None:
    raise NotStreamable("the whole-run path, for comparison")


def _both(run: Path, tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict, dict, list[str]]:
    """The store trees of the streaming add and the whole-run add of ``run``, and which path the
    first took."""
    took: list[str] = []
    whole = Store._add_whole

    def spy(self: Store, *args: object) -> list:
        took.append("whole")
        return whole(self, *args)

    with monkeypatch.context() as m:
        m.setattr(Store, "_add_whole", spy)
        Store(tmp / "streamed").add(run)
    with monkeypatch.context() as m:
        m.setattr(Store, "_add_streaming", _whole)
        Store(tmp / "whole").add(run)
    return _tree(tmp / "streamed"), _tree(tmp / "whole"), took


def _machines() -> list[Machine]:
    return [
        Machine("sev-1", "SEV Plain", ["sev"], 1.05, "sev-snp", extra_status={2: "failed"}),
        Machine("sev-2", "SEV Plain", ["sev"], 1.04, "sev-snp"),
        Machine("amd-1", "AMD Plain", ["amd_baseline"], 1.0, extra_status={1: "timeout"}),
    ]


def _edit(f: Path, fn: Callable[[list[dict]], list[dict]]) -> None:
    recs = [json.loads(line) for line in f.read_text().splitlines()]
    f.write_text("".join(json.dumps(r) + "\n" for r in fn(recs)))


def _messy(tmp: Path) -> Path:
    """Three hosts with retries, identical copies, more than 20 conflicting copies in one file,
    margins declared on some hosts only (and two margins for one benchmark), a bad sysinfo field
    and latency percentiles."""
    run = write_run(tmp / "results", "r1", _machines(), ["bench_a", "bench_b"], 30, seed=4)

    def sev1(recs: list[dict]) -> list[dict]:
        retry = recs[2] | {"status": "ok", "attempt": 2, "error": None, "metrics": recs[3]["metrics"]}
        clashes = [r | {"started_at": "2026-01-02T00:00:00Z"} for r in recs[:25]]
        for r in recs:
            r["margin_percent"] = 5 if r["benchmark"] == "bench_a" else 2.5
            r["samples"] = {"clat_ns_percentiles": {"50.0": 1.0 + r["repetition"], "99.0": 9.0}}
        return [*recs, recs[0], recs[7], retry, *clashes]

    def sev2(recs: list[dict]) -> list[dict]:
        for r in recs[:5]:
            r["margin_percent"] = 7.5
            r["session"] = "s-2"
        return [*recs, *recs[10:13], *[r | {"block": "x"} for r in recs[20:23]]]

    _edit(run / "sev-1.jsonl", sev1)
    _edit(run / "sev-2.jsonl", sev2)
    info = json.loads((run / "amd-1.sysinfo.json").read_text())
    (run / "amd-1.sysinfo.json").write_text(json.dumps(info | {"kernel": "not an object"}))
    return run


def test_streaming_gives_the_whole_runs_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = _messy(tmp_path)
    streamed, whole, took = _both(run, tmp_path, monkeypatch)
    assert took == [] and streamed == whole
    man = json.loads((tmp_path / "streamed" / "manifests" / "r1.json").read_text())
    words = "\n".join(man["warnings"])
    assert "duplicated record(s)" in words and "more conflicting duplicates" in words
    assert "records declare different margins" in words and "sysinfo field 'kernel'" in words
    assert man["hosts"] == ["amd-1", "sev-1", "sev-2"] and man["sessions"] == ["s-2"]


def test_files_loaded_ahead_in_workers_give_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With several CPUs the next files are loaded in worker processes: the same bytes."""
    run = _messy(tmp_path)
    monkeypatch.setattr(store_stream, "cpus", lambda: 2)
    monkeypatch.setattr(loader, "PARALLEL_BYTES", 0)
    streamed, whole, took = _both(run, tmp_path, monkeypatch)
    assert took == [] and streamed == whole
    _empty_file(run)  # a worker's NotStreamable: the whole-run path
    streamed, whole, took = _both(run, tmp_path / "again", monkeypatch)
    assert took == ["whole"] and streamed == whole


def test_large_files_are_loaded_ahead_only_as_far_as_the_memory_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 36: each file loaded ahead is one more file's load in memory, so large files get fewer
    workers, down to none (a 10^8 run's 888 MB files load one at a time within 4 GiB)."""
    files = []
    for name, size in (("a", 100), ("b", 300), ("c", 200)):
        (tmp_path / f"{name}.jsonl").write_bytes(b"x" * size)
        files.append(tmp_path / f"{name}.jsonl")
    monkeypatch.setattr(loader, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(store_stream, "LOAD_FACTOR", 4)
    monkeypatch.setattr(store_stream, "cpus", lambda: 4)
    for memory, workers in ((10**6, 2), (2400, 2), (2399, 1), (1200, 1), (1199, 0), (0, 0)):
        monkeypatch.setattr(store_stream, "AHEAD_MEMORY", memory)
        assert store_stream.workers_ahead(files) == workers, memory
    monkeypatch.setattr(store_stream, "AHEAD_MEMORY", 10**6)
    assert store_stream.workers_ahead(files[:1]) == 0  # nothing to load ahead of
    monkeypatch.setattr(store_stream, "cpus", lambda: 1)
    assert store_stream.workers_ahead(files) == 0
    monkeypatch.setattr(store_stream, "cpus", lambda: 4)
    monkeypatch.setattr(loader, "PARALLEL_BYTES", 601)
    assert store_stream.workers_ahead(files) == 0  # a small run: workers would cost more than they save


def test_streaming_fills_missing_margins_as_the_whole_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host whose records declare no margin beside one whose records do (NaN, not null)."""
    run = write_run(tmp_path / "results", "r1", _machines(), ["bench_a"], 4)
    _edit(run / "sev-2.jsonl", lambda recs: [r | {"margin_percent": 5} for r in recs])
    streamed, whole, took = _both(run, tmp_path, monkeypatch)
    assert took == [] and streamed == whole


def test_streaming_the_quick_run_and_a_file_with_several_hosts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(QUICK, tmp_path / "quick")
    streamed, whole, took = _both(tmp_path / "quick", tmp_path / "q", monkeypatch)
    assert took == [] and streamed == whole
    run = write_run(tmp_path / "results", "r1", _machines(), ["bench_a"], 5)
    both = (run / "sev-1.jsonl").read_text() + (run / "amd-1.jsonl").read_text()
    (run / "sev-1.jsonl").write_text(both)
    (run / "amd-1.jsonl").unlink()
    streamed, whole, took = _both(run, tmp_path / "s", monkeypatch)
    assert took == [] and streamed == whole


def _spread(run: Path) -> None:
    """One host's records in two files of different names."""
    lines = (run / "sev-1.jsonl").read_text().splitlines(keepends=True)
    (run / "sev-1.jsonl").write_text("".join(lines[: len(lines) // 2]))
    (run / "zz-sev-1-later.jsonl").write_text("".join(lines[len(lines) // 2 :]))


def _refetched(run: Path) -> None:
    """The same run fetched twice into subdirectories (one host in two files of one name)."""
    for sub in ("a", "b"):
        (run / sub).mkdir()
        for f in run.glob("sev-1*"):
            shutil.copy(f, run / sub / f.name)
    for f in run.glob("sev-1*"):
        f.unlink()


def _apart(run: Path) -> None:
    """Two different runs that carry one run id and host (kept apart: r1@2)."""
    other = write_run(run.parent / "other", "r1", _machines()[:1], ["bench_a"], 3, seed=9)
    shutil.copy(other / "sev-1.jsonl", run / "zz-sev-1.jsonl")


def _error_number(run: Path) -> None:
    """An ``error`` that is a number (its column's type is the whole run's)."""
    _edit(run / "amd-1.jsonl", lambda recs: [r | {"error": 3} if r["status"] != "ok" else r for r in recs])


def _empty_file(run: Path) -> None:
    (run / "aa-empty.jsonl").write_text("")


@pytest.mark.parametrize("layout", [_spread, _refetched, _apart, _error_number, _empty_file])
def test_layouts_that_need_the_whole_run_take_the_whole_run_path(
    layout: Callable[[Path], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = write_run(tmp_path / "results", "r1", _machines(), ["bench_a", "bench_b"], 4)
    layout(run)
    streamed, whole, took = _both(run, tmp_path, monkeypatch)
    assert took == ["whole"] and streamed == whole
    assert not list((tmp_path / "streamed").glob(".adding-*"))  # the streamed parts removed


def test_a_schema_error_names_its_file_and_leaves_the_store_as_it_was(tmp_path: Path) -> None:
    run = write_run(tmp_path / "results", "r1", _machines(), ["bench_a"], 4)
    st = Store(tmp_path / "store")
    (run / "sev-2.jsonl").write_text('{"schema": 1}\n')
    with pytest.raises(store_module.ReportError, match=r"sev-2\.jsonl:1"):
        st.add(run)
    assert not (tmp_path / "store" / "records").exists()
    assert not list((tmp_path / "store").glob(".adding-*"))
