"""Issue 12 high 5 (agent side) and high 4 (retries): one record per execution; a failed execution
caused by an interrupted attempt is retried on resume, bounded, with ``attempt`` recorded."""

from __future__ import annotations

import json
import os
from pathlib import Path

from agenttest import agent

from testbed_agent.plan import load_plan
from testbed_agent.results import MAX_ATTEMPTS, Identity, dedupe, make_record, read_records, resume_state

IDENT = Identity("r1", "h1", "L", ("local",), "a" * 64)


def rec(rep: int, status: str = "ok", value: float = 1.0, **kw) -> dict:
    r = make_record(
        IDENT, benchmark="dd_x", btype="dd", index=0, repetition=rep, params={},
        started_at="2026-01-01T00:00:00Z", ended_at="2026-01-01T00:00:01Z", status=status,
        metrics={"write_seconds": {"value": value, "unit": "s", "better": "lower"}}, **kw,
    )  # fmt: skip
    return r


def write(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def test_file_concatenated_with_itself_counts_once(tmp_path: Path) -> None:
    recs = [rec(i, value=1 + i) for i in range(3)]
    path = write(tmp_path / "h1.jsonl", recs + recs)
    result = dedupe(read_records(path))
    assert len(result.kept) == 3 and result.duplicates == 3 and result.conflicts == []


def test_conflicting_records_are_reported_not_double_counted() -> None:
    result = dedupe([rec(0, value=1.0), rec(0, value=2.0), rec(1)])
    assert len(result.kept) == 2 and result.kept[0]["metrics"]["write_seconds"]["value"] == 1.0
    assert len(result.conflicts) == 1 and "dd_x repetition 0" in result.conflicts[0]


def test_latest_attempt_supersedes_interrupted_and_failed() -> None:
    recs = [rec(0, "interrupted"), rec(0, "failed", attempt=1), rec(0, "ok", value=3.0, attempt=2)]
    result = dedupe(recs)
    assert [r["status"] for r in result.kept] == ["ok"] and result.superseded == 2 and not result.conflicts


def test_resume_retries_only_failures_of_interrupted_attempts(tmp_path: Path) -> None:
    recs = [
        rec(0, "failed", error="dd exited with 1: no space", session="alive"),  # a real failure: final
        rec(1, "failed", error="fio exited with -9: ", session="alive"),  # child killed by a signal
        rec(2, "failed", error="fio JSON unreadable", session="killed"),  # its agent was killed
        rec(3, "failed", error="fio exited with -9: ", attempt=MAX_ATTEMPTS),  # bounded
        rec(4, "ok"),
    ]
    path = write(tmp_path / "h1.jsonl", recs)
    done, attempts = resume_state(path, IDENT.plan_sha256, {"killed"})
    assert sorted(k[2] for k in done) == [0, 3, 4]
    assert attempts[(0, "dd_x", 1)] == 2 and attempts[(0, "dd_x", 2)] == 2


PLAN = """\
benchmarks:
  - {name: dd_x, type: dd, wait_s: 0, repetitions: 2, params: {bs: 4k, count: 4, source: zero, pause_s: 0}}
"""


def test_resume_after_a_killed_session_retries_its_failure(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yml"
    plan.write_text(PLAN)
    out = tmp_path / "results" / "r1"
    (out / "h1.state").mkdir(parents=True)
    (out / "h1.state" / "sessions").write_text("start dead\n")  # started, never ended: killed
    ident = Identity("r1", "h1", "h1", (), load_plan(plan).sha256)
    failed = make_record(
        ident, benchmark="dd_x", btype="dd", index=0, repetition=0, params={}, started_at="x",
        ended_at="x", status="failed", error="dd JSON unreadable", session="dead",
    )  # fmt: skip
    write(out / "h1.jsonl", [failed])
    res = agent("run", str(plan), "--out", str(out), "--host", "h1", "--node-exporter", "",
                "--scratch", str(tmp_path / "s"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    recs = read_records(out / "h1.jsonl")
    assert [(r["repetition"], r["status"], r["attempt"]) for r in recs] == [
        (0, "failed", 1), (0, "ok", 2), (1, "ok", 1)
    ]  # fmt: skip
    assert recs[1]["session"] == recs[2]["session"] != "dead"
    again = agent("run", str(plan), "--out", str(out), "--host", "h1", "--node-exporter", "",
                  "--scratch", str(tmp_path / "s"))  # fmt: skip
    assert again.returncode == 0 and len(read_records(out / "h1.jsonl")) == 3
    assert os.path.isdir(out / "h1.state") and not os.path.exists(tmp_path / "s")
