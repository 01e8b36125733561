"""Issue 12 high 4: benchmark processes die with the agent (PR_SET_PDEATHSIG, a pids cgroup as
root), and a resumed run reaps what a killed attempt left (pid file in the state directory)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from testbed_agent.procs import ProcessTracker, proc_stat

AGENT = textwrap.dedent("""\
    import sys, threading, time
    from pathlib import Path
    from testbed_agent.plan import Benchmark
    from testbed_agent.procs import ProcessTracker
    from testbed_agent.workloads.base import RunContext
    tracker = ProcessTracker(Path(sys.argv[1]), sys.argv[2])
    tracker.open()
    if sys.argv[3] == "watchdog":
        tracker.start_watchdog()
    ctx = RunContext(Benchmark("x", "dd", 0, 1), 0, Path(sys.argv[1]), Path(sys.argv[1]),
                     time.monotonic() + 60, threading.Event(), tracker=tracker)
    # a benchmark whose child forks a grandchild, both sleeping
    ctx.exec(["sh", "-c", "sleep 60 & echo $! > " + sys.argv[1] + "/grandchild; sleep 60"])
""")


def wait_for(cond, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def test_children_die_with_a_killed_agent_and_resume_reaps_the_rest(tmp_path: Path, spawn) -> None:
    state = tmp_path / "state"
    name = f"test-{os.getpid()}-{time.monotonic_ns()}"
    agent = spawn([sys.executable, "-c", AGENT, str(state), name, "-"], start_new_session=True)
    assert wait_for(lambda: (state / "grandchild").exists() and (state / "pids").exists())
    child = int((state / "pids").read_text().split()[0])
    grandchild = int((state / "grandchild").read_text())
    os.killpg(agent.pid, signal.SIGKILL)
    agent.wait()
    assert wait_for(lambda: proc_stat(child) is None), "PR_SET_PDEATHSIG ended the benchmark process"
    assert proc_stat(grandchild) is not None  # the grandchild outlives its parent ...
    tracker = ProcessTracker(state, name)
    assert grandchild in tracker.leftovers()
    assert tracker.reap() >= 1  # ... until the resumed run reaps it
    assert proc_stat(grandchild) is None and tracker.leftovers() == set()
    tracker.close()
    if tracker.cgroup is not None:
        assert not tracker.cgroup.exists()


def test_reap_leaves_unrelated_processes_alone(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        tracker = ProcessTracker(tmp_path, f"test-{os.getpid()}-other")
        tracker.open()
        # a recorded session whose leader started after ``other``: pid reuse must not hit ``other``
        info = proc_stat(other.pid)
        assert info is not None
        (tmp_path / "pids").write_text(f"{other.pid} {info[1] + 1}\n")
        assert tracker.reap(timeout=1) == 0 and proc_stat(other.pid) is not None
        tracker.close()
    finally:
        other.kill()
        other.wait()


def test_watchdog_reaps_descendants_without_a_resume(tmp_path: Path, spawn) -> None:
    state = tmp_path / "state"
    name = f"test-{os.getpid()}-{time.monotonic_ns()}"
    agent = spawn([sys.executable, "-c", AGENT, str(state), name, "watchdog"], start_new_session=True)
    assert wait_for(lambda: (state / "grandchild").exists() and (state / "pids").exists())
    child = int((state / "pids").read_text().split()[0])
    grandchild = int((state / "grandchild").read_text())
    os.killpg(agent.pid, signal.SIGKILL)
    agent.wait()
    assert wait_for(lambda: proc_stat(child) is None and proc_stat(grandchild) is None, timeout=5)
    tracker = ProcessTracker(state, name)
    tracker.wait_for_watchdog(timeout=10)  # the watchdog finished and released its lock
    assert tracker.leftovers() == set()
    tracker.close()
