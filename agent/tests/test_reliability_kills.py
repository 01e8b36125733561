"""Issue 12 reliability suite: random SIGKILLs of the agent's whole process group during every
workload type of the quick plan (sysinfo, fio incl. its layout, dd, crypto in Python, a notebook),
each followed by a resume. At the end: 0 lost, 0 duplicated, every execution ok, 0 orphan
processes (within 5 s of each kill, before any resume: the watchdog reaps), scratch removed.
Seeded and bounded; prints the counts."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from testbed_agent.results import dedupe, read_records

SEED = 7
KILLS = 24
PLAN = """\
name: reliability
defaults: {wait_s: 0, repetitions: 2}
benchmarks:
  - {name: systeminfo, type: sysinfo, repetitions: 1}
  - {name: fio_4k_randwrite, type: fio, params: {size: 128M, runtime_s: 3, ramp_s: 0}}
  - {name: fio_1m_read, type: fio, params: {size: 48M, runtime_s: 1, ramp_s: 0}}
  - {name: dd_write_read, type: dd, params: {bs: 128k, count: 256, source: urandom, pause_s: 0.2}}
  - name: aes-256-gcm
    type: crypto
    params: {languages: [python], payload_bytes: 4096, iterations: 50, warmup: 5}
  - {name: SimplePrime.ipynb, type: kaggle_notebook, repetitions: 1, params: {scale: quick}}
"""
EXECUTIONS = 10


def tagged(tag: str) -> dict[int, str]:
    """Live (non-zombie) processes carrying the test's tag in their environment: pid -> name."""
    found = {}
    needle = f"TESTBED_RELIABILITY_TAG={tag}".encode()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if needle not in Path(f"/proc/{pid}/environ").read_bytes():
                continue
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            continue
        if stat.rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X"):
            found[int(pid)] = stat[stat.find(b"(") + 1 : stat.rfind(b")")].decode(errors="replace")
    return found


def sessions_started(out: Path) -> int:
    try:
        return (out / "h1.state" / "sessions").read_text().count("start ")
    except OSError:
        return 0


def survivors(left: dict[int, str], out: Path, before: int) -> dict[int, str]:
    """Which of a killed attempt's processes are still alive once the resumed agent has begun
    (its session is recorded, or 30 s have passed)."""
    deadline = time.monotonic() + 30
    while sessions_started(out) <= before and time.monotonic() < deadline:
        time.sleep(0.02)
    alive = set(left) & set(tagged_cached(left))
    return {p: left[p] for p in alive}


def tagged_cached(left: dict[int, str]) -> list[int]:
    return [p for p in left if Path(f"/proc/{p}").exists() and _live(p)]


def _live(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False


@pytest.mark.slow
def test_random_sigkills_then_resume(tmp_path: Path, spawn) -> None:
    rng = random.Random(SEED)
    plan = tmp_path / "plan.yml"
    plan.write_text(PLAN)
    out, scratch = tmp_path / "results" / "rel", tmp_path / "scratch"
    tag = uuid.uuid4().hex
    env = {**os.environ, "TESTBED_RELIABILITY_TAG": tag}
    cmd = [sys.executable, "-m", "testbed_agent", "run", str(plan), "--out", str(out), "--host", "h1",
           "--scratch", str(scratch), "--node-exporter", ""]  # fmt: skip
    kills = resumes = left_after_kill = alive_after_5s = 0
    names: dict[str, int] = {}
    survived: dict[str, int] = {}
    left: dict[int, str] = {}
    rc = None
    started = time.monotonic()
    while rc != 0:
        assert time.monotonic() - started < 240, "bounded: the suite must finish"
        before = sessions_started(out)
        proc = spawn(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                     text=True, start_new_session=True)  # fmt: skip
        resumes += kills > 0
        for name in survivors(left, out, before).values():
            survived[name] = survived.get(name, 0) + 1
        left = {}
        if kills < KILLS:
            try:
                rc = proc.wait(rng.uniform(0.4, 3.0))
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                kills += 1
                time.sleep(0.1)
                left = tagged(tag)
                left_after_kill += bool(left)
                for name in left.values():
                    names[name] = names.get(name, 0) + 1
                # the watchdog reaps without waiting for a resume
                gone_by = time.monotonic() + 5
                while tagged(tag) and time.monotonic() < gone_by:
                    time.sleep(0.02)
                left = tagged(tag)
                alive_after_5s += bool(left)
                continue
        _, err = proc.communicate(timeout=300)
        rc = proc.returncode
        assert rc == 0, err[-3000:]
    recs = read_records(out / "h1.jsonl")
    result = dedupe(recs)
    ok = [r for r in result.kept if r["status"] == "ok"]
    orphans = tagged(tag)
    print(
        f"\nreliability: seed {SEED}, {kills} SIGKILLs, {resumes} resumes, {len(recs)} records, "
        f"{len(ok)}/{EXECUTIONS} executions ok, {left_after_kill} kills left processes 0.1 s after "
        f"({names}), {alive_after_5s} still 5 s after, {sum(survived.values())} alive once the resume "
        f"began ({survived}), "
        f"{len(orphans)} alive at end"
    )
    assert kills == KILLS
    assert result.duplicates == 0 and result.conflicts == []
    assert len(result.kept) == EXECUTIONS and len(ok) == EXECUTIONS, [
        (r["benchmark"], r["repetition"], r["status"], r["error"]) for r in result.kept
    ]
    assert sorted((r["index"], r["repetition"]) for r in ok) == sorted(
        {(i, rep) for i, reps in enumerate((1, 2, 2, 2, 2, 1)) for rep in range(reps)}
    )
    assert alive_after_5s == 0 and survived == {} and orphans == {}
    assert not scratch.exists()
    assert not any(p.name.endswith(".staging") for p in out.rglob("*"))
