"""By hand (issue 40 finding 3): SIGTERM to the agent the moment its dd child exists, with or
without gigabytes of dirty pages left by another writer; the time from the signal to the dd's
death and to the agent's exit, per try and as medians with quartiles.

    python agent/tests/sigterm_window.py TRIES DIRTY_MB [CODE_ROOT]

CODE_ROOT: a tree holding agent/ and shared/ to measure instead of the installed code (e.g. an
older commit, ``git archive <commit> agent shared | tar -x -C DIR``). Every write is bounded: the
dirty pages come from a dd of DIRTY_MB MiB, the agent's own dd writes at most 1 GiB (its file size
limit, RLIMIT_FSIZE) for at most 120 s, all in /var/tmp/testbed-sigterm-window, removed after
each try. Before the fix a signal in the window (the dd started, not yet registered) was lost and
the dd ran on to its end; measured there: 3 of 20 tries, 19-34 s (docs/security.md)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

WORK = Path("/var/tmp/testbed-sigterm-window")
LIMIT = 1 << 30
PLAN = (
    "benchmarks:\n  - {name: dd_long, type: dd, timeout_s: 120, params: {bs: 1k, count: 1000000, "
    'source: urandom, conv: "", read: false}}\n'
)


def _stat(pid: int) -> list[str] | None:
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return data[data.rfind(")") + 2 :].split()


def _alive(pid: int) -> bool:
    fields = _stat(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def _dd_child(agent: int) -> int | None:
    for name in filter(str.isdigit, os.listdir("/proc")):
        fields = _stat(int(name))
        try:
            comm = Path(f"/proc/{name}/comm").read_text().strip()
        except OSError:
            continue
        if fields and int(fields[1]) == agent and comm == "dd":
            return int(name)
    return None


def once(dirty_mb: int, code: str | None) -> dict:
    """One try; returns the seconds from SIGTERM to the dd's death and to the agent's exit."""
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    try:
        if dirty_mb:
            fill = ["dd", "if=/dev/zero", f"of={WORK / 'fill'}", "bs=1M", f"count={dirty_mb}"]
            subprocess.run(fill, check=True, capture_output=True)
        (WORK / "plan.yml").write_text(PLAN)
        env = {**os.environ, **({"PYTHONPATH": f"{code}/agent:{code}/shared"} if code else {})}
        cmd = ["prlimit", f"--fsize={LIMIT}", "--", sys.executable, "-m", "testbed_agent", "run",
               str(WORK / "plan.yml"), "--out", str(WORK / "out" / "w1"), "--host", "h1",
               "--node-exporter", "", "--scratch", str(WORK / "scratch")]  # fmt: skip
        agent = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            dd, end = None, time.monotonic() + 60
            while dd is None and time.monotonic() < end and agent.poll() is None:
                dd = _dd_child(agent.pid)
            if dd is None:
                raise RuntimeError("the agent never started its dd")
            t0 = time.monotonic()
            agent.send_signal(signal.SIGTERM)
            child_s = None
            while time.monotonic() - t0 < 150 and agent.poll() is None:
                if child_s is None and not _alive(dd):
                    child_s = time.monotonic() - t0
                time.sleep(0.002)
            exit_s = time.monotonic() - t0 if agent.poll() is not None else None
        finally:
            if agent.poll() is None:
                agent.kill()  # its dd dies with it (PR_SET_PDEATHSIG)
            agent.wait()
        return {"dirty_mb": dirty_mb, "child_dead_s": child_s, "agent_exit_s": exit_s, "rc": agent.returncode}
    finally:
        shutil.rmtree(WORK, ignore_errors=True)


def main() -> int:
    tries, dirty = int(sys.argv[1]), int(sys.argv[2])
    code = sys.argv[3] if len(sys.argv) > 3 else None
    rows = []
    for _ in range(tries):
        rows.append(once(dirty, code))
        print(json.dumps(rows[-1]), flush=True)
    for key in ("child_dead_s", "agent_exit_s"):
        vals = sorted(150.0 if r[key] is None else r[key] for r in rows)
        q = statistics.quantiles(vals, n=4) if len(vals) > 1 else [vals[0]] * 3
        print(f"{key}: median {statistics.median(vals):.3f} s, quartiles [{q[0]:.3f}, {q[2]:.3f}], "
              f"max {vals[-1]:.3f}; over 1 s: {sum(v > 1 for v in vals)} of {len(vals)}")  # fmt: skip
    print(f"load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
