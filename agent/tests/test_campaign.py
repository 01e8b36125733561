"""``testbed-agent campaign``: the real schedule loop on a tiny dd plan, stopped by SIGTERM after the
current run, killed with SIGKILL mid-run and resumed; the store holds exactly the recorded runs."""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from agenttest import agent

from testbed_agent.campaign import parse_duration

#: the schedule: a slot every 2 s over 30 s (15 slots), long enough that a loaded machine's SIGTERM
#: and resume (10-15 s under load average 6) still leave slots to run
EVERY, FOR, SLOTS = "2s", "30s", 15

PLAN = """\
name: campaign-tiny
defaults: {wait_s: 0, repetitions: 1}
benchmarks:
  - {name: dd_tiny, type: dd, params: {bs: 4k, count: 16}}
"""


def _events(store: Path) -> list[dict]:
    path = store / "campaign.events.ndjson"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _state(store: Path) -> dict:
    try:
        return json.loads((store / "campaign.json").read_text())
    except (FileNotFoundError, ValueError):
        return {}


def _start(plan: Path, store: Path, tmp: Path) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "testbed_agent", "campaign", str(plan), "--out", str(store)]
    argv += ["--every", EVERY, "--for", FOR, "--node-exporter", "", "--scratch", str(tmp / "scratch")]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_running(store: Path, proc: subprocess.Popen[str], timeout: float = 40) -> dict:
    """Wait until a run is in progress (state.current set); return it."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        cur = _state(store).get("current")
        if cur:
            return cur
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        time.sleep(0.05)
    raise AssertionError("no run started")


def test_parse_duration() -> None:
    assert parse_duration("2s") == 2 and parse_duration("1m") == 60 and parse_duration("4d") == 345600
    assert parse_duration("1h30m") == 5400 and parse_duration("90") == 90 and parse_duration("1.5h") == 5400
    for bad in ("", "0s", "4x", "m", "1m2"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_duration(bad)


@pytest.mark.slow
def test_campaign_stop_kill_resume(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yml"
    plan.write_text(PLAN)
    store = tmp_path / "results" / "tod"
    # 1. SIGTERM while the first run is going: it finishes, then the campaign stops (143)
    proc = _start(plan, store, tmp_path)
    first = _wait_running(store, proc)
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, out
    assert "stopped by signal 15" in out
    runs = [e for e in _events(store) if e["event"] == "run"]
    assert [(r["run_id"], r["exit_code"]) for r in runs] == [(first["run_id"], 0)]
    assert _state(store)["status"] == "stopped"
    # 2. the same command resumes; SIGKILL mid-run: the state keeps the run in progress
    proc = _start(plan, store, tmp_path)
    killed = _wait_running(store, proc)
    proc.kill()
    proc.communicate(timeout=30)
    # 3. once more: the killed run is recorded as incomplete and the schedule runs to its end
    res = agent(
        "campaign", str(plan), "--out", str(store), "--every", EVERY, "--for", FOR,
        "--node-exporter", "", "--scratch", str(tmp_path / "scratch"), timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert "complete:" in res.stdout
    _check_store(store, first["run_id"], killed["run_id"])


def _check_store(store: Path, first: str, killed: str) -> None:
    state, events = _state(store), _events(store)
    assert state["status"] == "done" and state["slots"] == SLOTS and state["current"] is None
    assert state["incomplete"] == 1
    assert [e["run_id"] for e in events if e["event"] == "incomplete"] == [killed]
    skipped = sum(e["count"] for e in events if e["event"] == "skipped")
    runs = [e for e in events if e["event"] == "run"]
    assert state["runs"] == len(runs) and state["skipped"] == skipped
    assert len(runs) + skipped + 1 == SLOTS  # every slot is a run, a skip or the incomplete one
    assert runs[0]["run_id"] == first == "tod-000000"
    slots = [r["k"] for r in runs]
    assert slots == sorted(set(slots)) and all(r["exit_code"] == 0 for r in runs)
    for r in runs:  # drift-free: each run started at its slot (start + k x 2 s), not after the last
        assert r["run_id"] == f"tod-{r['k']:06d}" and r["late_s"] < 1.0
        records = [json.loads(x) for x in (store / r["run_id"] / f"{os.uname().nodename}.jsonl").open()]
        assert [(x["run_id"], x["status"]) for x in records] == [(r["run_id"], "ok")]
    dirs = sorted(p.name for p in store.iterdir() if p.is_dir())
    assert dirs == sorted([*(r["run_id"] for r in runs), killed])
    # the report reads the whole store (the events file is not taken for results)
    from testbed_reports.load import load
    from testbed_reports.timeofday import analyze, select

    table = select(load([store]).obs, "write_seconds", "dd_tiny", None)
    assert len(runs) <= len(table) <= len(runs) + 1  # + the killed run if it recorded a value
    res = analyze(table, min_per_group=2)
    assert res["timezone"] == "UTC" and "refused" in res["factors"]["weekday"]
    again = agent("campaign", str(store.parent.parent / "plan.yml"), "--out", str(store), "--every", EVERY,
                  "--for", FOR, "--node-exporter", "")  # fmt: skip
    assert again.returncode == 0 and "already complete" in again.stdout


def test_campaign_refuses_other_options_and_watchdog_exits_quietly(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yml"
    plan.write_text(PLAN)
    store = tmp_path / "tod"
    store.mkdir()
    state = {
        "campaign": "tod", "plan": str(plan), "plan_sha256": "0" * 64, "every_s": 60.0, "for_s": 600.0,
        "start_ts": time.time(), "slots": 10, "host": "h", "label": "h", "groups": [],
    }  # fmt: skip
    (store / "campaign.json").write_text(json.dumps(state))
    base = ["campaign", str(plan), "--out", str(store), "--host", "h", "--node-exporter", ""]
    res = agent(*base, "--every", "1m", "--for", "10m")
    assert res.returncode == 2 and "field 'plan_sha256'" in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 2 and "Traceback" not in res.stderr
    with open(store / "campaign.lock", "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        assert agent(*base, "--every", "1m", "--for", "10m", "--watchdog").returncode == 0
        busy = agent(*base, "--every", "1m", "--for", "10m")
        assert busy.returncode == 2 and "another campaign process" in busy.stderr
    bad = agent("campaign", str(plan), "--out", str(tmp_path / "x y"), "--every", "1m", "--for", "1h")
    assert bad.returncode == 2 and "campaign name 'x y'" in bad.stderr
    short = agent("campaign", str(plan), "--out", str(tmp_path / "s"), "--every", "1h", "--for", "1m")
    assert short.returncode == 2 and "shorter than --every" in short.stderr


def test_the_timeofday_plan_is_valid() -> None:
    from testbed_agent.plan import load_plan

    plan = load_plan(Path(__file__).resolve().parents[2] / "workloads/plans/timeofday-dd.yml")
    assert [b.name for b in plan.benchmarks] == ["tod_gcf", "tod_aws"] and plan.executions == 2
    write = plan.benchmarks[0].params["sequence"][0]["event"]["command"]
    assert write == "if=/dev/zero of=/tmp/file1 bs=1024000 count=976"  # the thesis's slot (S1 L710-713)
