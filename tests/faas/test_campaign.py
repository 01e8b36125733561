"""``testbed-agent campaign``: a plan run on a fixed schedule, each run appended to one store."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from testbed_agent.campaign import parse_duration

PLAN = """name: tick
defaults: {wait_s: 0, repetitions: 1}
benchmarks:
  - {name: dd_tiny, type: dd, params: {bs: 4k, count: 16, read: false, pause_s: 0}}
"""


def campaign(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "testbed_agent", "campaign", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.mark.slow
def test_runs_on_schedule_into_one_store(tmp_path):
    plan = tmp_path / "tick.yml"
    plan.write_text(PLAN)
    store = tmp_path / "store"
    run_opts = ["--run-opt=--node-exporter=", "--run-opt=--no-progress", "--run-opt=--host=h"]
    proc = campaign(str(plan), "--store", str(store), "--every", "4s", "--for", "9s", *run_opts)
    assert proc.returncode == 0, proc.stderr
    ledger = [json.loads(line) for line in (store / "campaign.jsonl").read_text().splitlines()]
    assert [e["tick"] for e in ledger] == list(range(len(ledger))) and 2 <= len(ledger) <= 3
    ok = [e for e in ledger if e["status"] == "ok"]
    assert len(ok) >= 2, ledger
    for e in ok:
        records = (store / e["run_id"] / "h.jsonl").read_text().splitlines()
        assert json.loads(records[0])["status"] == "ok"
    assert len({e["run_id"] for e in ok}) == len(ok)
    # started again after its end: nothing more runs, the ledger is kept
    again = campaign(str(plan), "--store", str(store), "--every", "4s", "--for", "9s", *run_opts)
    assert again.returncode == 0 and len((store / "campaign.jsonl").read_text().splitlines()) == len(ledger)
    other = tmp_path / "other.yml"
    other.write_text(PLAN.replace("count: 16", "count: 8"))
    refused = campaign(str(other), "--store", str(store), "--every", "4s", "--for", "9s")
    assert refused.returncode == 2 and "another plan" in refused.stderr


@pytest.mark.parametrize("text", ["1", "0m", "-1m", "1w", "m", "1.5.2h"])
def test_bad_durations_are_one_line_errors(tmp_path, text):
    plan = tmp_path / "p.yml"
    plan.write_text(PLAN)
    proc = campaign(str(plan), "--store", str(tmp_path / "s"), "--every", text, "--for", "1d")
    assert proc.returncode == 2 and "--every" in proc.stderr and "Traceback" not in proc.stderr


def test_durations():
    assert parse_duration("1m", "--every") == 60 and parse_duration("4d", "--for") == 4 * 86400
    assert parse_duration("1.5h", "--for") == 5400
