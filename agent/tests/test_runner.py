"""The runner for real: failures recorded and the plan goes on, timeouts, signals, resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from testbed_agent import runner as runner_mod
from testbed_agent.plan import load_plan
from testbed_agent.procs import ProcessTracker
from testbed_agent.results import Identity, read_records
from testbed_agent.runner import Runner
from testbed_agent.workloads.base import RunContext
from testbed_shared.errors import Interrupted


def records(out: Path) -> list[dict]:
    return read_records(next(out.glob("*.jsonl")))


def agent_cmd(plan: Path, out: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "testbed_agent",
        "run",
        str(plan),
        "--out",
        str(out),
        "--host",
        "h1",
        *extra,
    ]


def run(plan: Path, out: Path, *extra: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    cmd = agent_cmd(
        plan, out, "--label", "Local", "--group", "local", "--scratch", str(out.parent / "scratch"), *extra
    )
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


#: a dd that writes nothing to disk whatever happens (its target is /dev/null) and runs until it is
#: ended (2 TB from /dev/zero), bounded in time by its timeout
ENDLESS_DD = (
    "{name: dd_long, type: dd, timeout_s: 60, params: {bs: 1k, count: 2000000000, source: zero, "
    'conv: "", read: false, filename: /dev/null, allow_device: true}}'
)


def test_failure_and_timeout_are_records_and_the_plan_goes_on(
    tmp_path: Path, write_plan, node_exporter
) -> None:
    # dd fails at run time: /dev/full refuses every write with ENOSPC (what the plan checks before
    # it starts, a foreign file or a missing directory, is test_guard's business)
    plan = write_plan("""\
benchmarks:
  - {name: dd_full, type: dd, params: {bs: 4k, count: 16, source: zero, conv: "", read: false,
      filename: /dev/full, allow_device: true}}
  - {name: dd_slow, type: dd, timeout_s: 1, params: {bs: 1k, count: 100000000, source: urandom, conv: "",
      filename: /dev/null, allow_device: true}}
  - {name: dd_ok, type: dd, repetitions: 2, params: {bs: 4k, count: 16, source: zero, pause_s: 0}}
""")
    out = tmp_path / "results" / "run1"
    res = run(
        plan, out, "--node-exporter", node_exporter["url"], "--textfile-dir", str(node_exporter["textfile"])
    )
    assert res.returncode == 3, res.stderr  # ran to the end, with failures
    recs = records(out)
    assert [(r["benchmark"], r["repetition"], r["status"]) for r in recs] == [
        ("dd_full", 0, "failed"),
        ("dd_slow", 0, "timeout"),
        ("dd_ok", 0, "ok"),
        ("dd_ok", 1, "ok"),
    ]
    assert "dd exited with 1" in recs[0]["error"] and recs[0]["metrics"] == {}, recs[0]
    ok = recs[2]
    assert ok["schema"] == 1 and ok["run_id"] == "run1" and ok["host"] == "h1" and ok["label"] == "Local"
    assert ok["groups"] == ["local"] and len(ok["plan_sha256"]) == 64
    assert ok["started_at"].endswith("Z") and ok["ended_at"] >= ok["started_at"]
    tel = ok["telemetry"]
    assert {
        "cpu_percent_mean",
        "steal_percent",
        "iowait_percent_mean",
        "process_cpu_user_s",
        "agent_cpu_s",
    } <= tel.keys()
    assert tel["node_exporter"]["cpu_seconds_user"] >= 0 and "disk_written_bytes" in tel["node_exporter"]
    assert (out / "h1.sysinfo.json").exists()
    prom = (node_exporter["textfile"] / "testbed_agent.prom").read_text()
    assert 'testbed_agent_executions_done{host="h1",run_id="run1"} 4.0' in prom


def _wait_for_dd(proc: subprocess.Popen, timeout: float = 120) -> None:
    """Until the agent ``proc`` runs a dd (it reached the benchmark; a fixed sleep is not enough
    on a loaded machine)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        for entry in Path("/proc").iterdir():
            try:
                if not entry.name.isdigit():
                    continue
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
            if ppid == proc.pid and Path(argv[0].decode(errors="replace")).name == "dd":
                return
        time.sleep(0.05)
    raise AssertionError("the agent never started dd")  # the spawn fixture ends the agent


def test_sigterm_records_interrupted_and_rerun_resumes(tmp_path: Path, write_plan, spawn) -> None:
    """SIGTERM as soon as the dd runs (the moment that lost the signal before, issue 40 finding 3).
    The dd writes to /dev/null: nothing reaches the disk whatever happens (before, 2 TB into the
    scratch directory filled the disk when the signal was lost)."""
    plan = write_plan(f"""\
benchmarks:
  - {{name: dd_a, type: dd, repetitions: 2, params: {{bs: 4k, count: 8, source: zero, pause_s: 0}}}}
  - {ENDLESS_DD}
  - {{name: dd_b, type: dd, params: {{bs: 4k, count: 8, source: zero, pause_s: 0}}}}
""")
    out = tmp_path / "results" / "run2"
    cmd = agent_cmd(plan, out, "--node-exporter", "", "--scratch", str(tmp_path / "scratch"))
    proc = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    jsonl = out / "h1.jsonl"
    while time.monotonic() < deadline:  # wait until dd_long is running (2 records written)
        if jsonl.exists() and len(read_records(jsonl)) == 2:
            break
        time.sleep(0.05)
    _wait_for_dd(proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)  # a hang guard only: a loaded machine is slow to stop
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Traceback" not in err
    first = read_records(jsonl)
    assert [(r["benchmark"], r["repetition"], r["status"]) for r in first] == [
        ("dd_a", 0, "ok"),
        ("dd_a", 1, "ok"),
        ("dd_long", 0, "interrupted"),
    ]

    # re-run: the completed executions are skipped and the interrupted one starts again;
    # interrupt once more, and nothing already recorded is lost or duplicated.
    plan_text = plan.read_text()
    proc2 = spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_dd(proc2)  # the resumed run is running dd_long again
    proc2.send_signal(signal.SIGINT)
    proc2.communicate(timeout=120)
    assert proc2.returncode == 128 + signal.SIGINT
    second = read_records(jsonl)
    assert second[:3] == first  # nothing already recorded is touched
    assert [(r["benchmark"], r["status"]) for r in second[3:]] == [("dd_long", "interrupted")]
    assert plan.read_text() == plan_text
    json.dumps(second)  # still valid JSON Lines


def test_resume_skips_completed_and_finishes(tmp_path: Path, write_plan) -> None:
    plan = write_plan("""\
benchmarks:
  - {name: dd_a, type: dd, repetitions: 3, params: {bs: 4k, count: 8, source: zero, pause_s: 0}}
""")
    out = tmp_path / "results" / "run3"
    assert run(plan, out, "--node-exporter", "", "--only", "dd_a").returncode == 0
    lines = (out / "h1.jsonl").read_text().splitlines()
    # simulate a crash after the 2nd record: drop the 3rd and leave a torn half line
    (out / "h1.jsonl").write_text("\n".join(lines[:2]) + "\n" + lines[2][:40])
    res = run(plan, out, "--node-exporter", "")
    assert res.returncode == 0, res.stderr
    recs = records(out)
    assert [(r["benchmark"], r["repetition"]) for r in recs] == [("dd_a", 0), ("dd_a", 1), ("dd_a", 2)]
    assert "1 resumed" not in res.stderr and "2 resumed" in res.stderr


def test_sigterm_while_a_benchmark_starts_ends_it(tmp_path: Path, write_plan, monkeypatch) -> None:
    """Issue 40 finding 3: a SIGTERM that came while the agent recorded the process it had just
    started (the pid file's fsync, seconds long behind a disk's writeback) found no process to end;
    the dd ran on to its own end (2 TB in the test that filled the disk). The signal is delivered
    here at that moment, to the agent's real handler: the dd is ended and the record says so."""
    plan = load_plan(write_plan(f"benchmarks:\n  - {ENDLESS_DD}\n"))
    started = ProcessTracker.started

    def signal_while_recording(self: ProcessTracker, pid: int) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here, as it would after an fsync
        started(self, pid)

    monkeypatch.setattr(ProcessTracker, "started", signal_while_recording)
    ident = Identity("r1", "h1", "h1", (), plan.sha256)
    runner = Runner(plan, tmp_path / "out", ident, scratch=tmp_path / "scratch", progress=False)
    assert runner.run() == 128 + signal.SIGTERM
    (rec,) = read_records(tmp_path / "out" / "h1.jsonl")
    assert rec["status"] == "interrupted", rec["error"]  # before: "timeout", the dd ran 60 s


def test_a_benchmark_that_ignores_sigterm_is_killed(tmp_path: Path, write_plan, monkeypatch) -> None:
    """The agent's SIGTERM ends a benchmark that ignores SIGTERM too: SIGKILL after a grace time."""
    monkeypatch.setattr(runner_mod, "KILL_AFTER_S", 0.5)
    plan = load_plan(write_plan(f"benchmarks:\n  - {ENDLESS_DD}\n"))
    runner = Runner(plan, tmp_path / "out", Identity("r1", "h1", "h1", (), plan.sha256), progress=False)
    bench = plan.benchmarks[0]
    ctx = RunContext(bench, 0, tmp_path, tmp_path, time.monotonic() + 60, runner.stop)
    runner._ctx = ctx
    caught: list[BaseException] = []

    def bench_run() -> None:
        try:
            ctx.exec(["sh", "-c", "trap '' TERM; sleep 60"])
        except Interrupted as exc:
            caught.append(exc)

    thread = threading.Thread(target=bench_run)
    thread.start()
    while ctx._proc is None:
        time.sleep(0.01)
    runner._on_signal(signal.SIGTERM, None)
    thread.join(30)
    assert not thread.is_alive() and caught  # before: the benchmark ran its 60 s
