"""Issue 12 critical 1, high 6, medium 10: the agent removes only scratch directories it created
and marked, run ids and hosts are names, one agent per results file, results private."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from agenttest import agent

from testbed_agent.results import ResultWriter, read_records

PLAN = """\
benchmarks:
  - {name: dd_tiny, type: dd, wait_s: 0, params: {bs: 4k, count: 4, source: zero, pause_s: 0}}
"""


@pytest.fixture
def plan(tmp_path: Path) -> Path:
    p = tmp_path / "plan.yml"
    p.write_text(PLAN)
    return p


def run(plan: Path, out: Path, *extra: str, env: dict[str, str] | None = None):
    return agent(
        "run", str(plan), "--out", str(out), "--host", "h1", "--node-exporter", "", *extra,
        env={**os.environ, **(env or {})},
    )  # fmt: skip


def precious(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "data.txt").write_text("keep me")
    return d / "data.txt"


def test_scratch_with_foreign_data_is_refused_and_kept(tmp_path: Path, plan: Path) -> None:
    data = precious(tmp_path / "home" / "mydata")
    res = run(plan, tmp_path / "results" / "r1", "--scratch", str(data.parent))
    assert res.returncode == 2, res.stderr
    assert "non-empty directory the agent did not create" in res.stderr and "Traceback" not in res.stderr
    assert data.read_text() == "keep me"


@pytest.mark.parametrize("where", ["same", "inside", "contains"])
def test_scratch_overlapping_out_is_refused(tmp_path: Path, plan: Path, where: str) -> None:
    out = tmp_path / "results" / "r1"
    first = run(plan, out, "--scratch", str(tmp_path / "s0"))
    assert first.returncode == 0, first.stderr
    scratch = {"same": out, "inside": out / "scr", "contains": out.parent}[where]
    res = run(plan, out, "--scratch", str(scratch))
    assert res.returncode == 2, res.stderr
    assert "overlaps the results directory" in res.stderr
    assert [r["status"] for r in read_records(out / "h1.jsonl")] == ["ok"]


@pytest.mark.parametrize("bad", ["../../../somewhere", "..", "a/b", "-x", ".hidden", "x" * 129])
def test_run_id_must_be_a_name(tmp_path: Path, plan: Path, bad: str) -> None:
    root = tmp_path / "scratchroot" / "a" / "b"
    root.mkdir(parents=True)
    victim = precious(tmp_path / "somewhere")
    res = run(plan, tmp_path / "results" / "r1", f"--run-id={bad}", env={"TESTBED_SCRATCH": str(root)})
    assert res.returncode == 2, res.stderr
    assert "is not a valid name" in res.stderr
    assert victim.read_text() == "keep me" and root.is_dir()


def test_host_must_be_a_name(tmp_path: Path, plan: Path) -> None:
    res = agent("run", str(plan), "--out", str(tmp_path / "o"), "--host", "../evil", "--node-exporter", "")
    assert res.returncode == 2 and "--host '../evil' is not a valid name" in res.stderr


def test_created_scratch_removed_adopted_scratch_kept(tmp_path: Path, plan: Path) -> None:
    created = tmp_path / "new" / "scratch"
    res = run(plan, tmp_path / "results" / "r1", "--scratch", str(created))
    assert res.returncode == 0, res.stderr
    assert not created.exists() and created.parent.is_dir()
    adopted = tmp_path / "empty"
    adopted.mkdir()
    res = run(plan, tmp_path / "results" / "r2", "--scratch", str(adopted))
    assert res.returncode == 0, res.stderr
    assert adopted.is_dir() and [p.name for p in adopted.iterdir()] == [".testbed-agent-dir"]


def test_scratch_symlink_is_refused(tmp_path: Path, plan: Path) -> None:
    data = precious(tmp_path / "mydata")
    link = tmp_path / "link"
    link.symlink_to(data.parent)
    res = run(plan, tmp_path / "results" / "r1", "--scratch", str(link))
    assert res.returncode == 2 and "symbolic link" in res.stderr
    assert data.read_text() == "keep me"


def test_results_are_private(tmp_path: Path, plan: Path) -> None:
    out = tmp_path / "results" / "r1"
    res = run(plan, out, "--scratch", str(tmp_path / "s"))
    assert res.returncode == 0, res.stderr
    for path in out.rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode & 0o077 == 0, f"{path} is {oct(mode)}"
    assert stat.S_IMODE(out.stat().st_mode) == 0o700


def test_second_agent_exits_2_and_leaves_the_winners_line(tmp_path: Path, plan: Path) -> None:
    out = tmp_path / "results" / "r1"
    path = out / "h1.jsonl"
    with ResultWriter(path) as winner:
        winner._fh.write('{"half": "written')  # the winner is mid-write
        winner._fh.flush()
        res = run(plan, out, "--scratch", str(tmp_path / "s"))
        assert res.returncode == 2, res.stderr
        assert f"another agent (pid {os.getpid()})" in res.stderr
        assert path.read_text() == '{"half": "written'


@pytest.mark.slow
def test_concurrent_agents_one_wins(tmp_path: Path, plan: Path, spawn) -> None:
    import subprocess
    import sys

    out = tmp_path / "results" / "r1"
    cmd = [sys.executable, "-m", "testbed_agent", "run", str(plan), "--out", str(out), "--host", "h1",
           "--node-exporter", ""]  # fmt: skip
    procs = [
        spawn([*cmd, "--scratch", str(tmp_path / f"s{i}")], stderr=subprocess.PIPE, text=True)
        for i in range(8)
    ]
    results = [(p.wait(120), p.stderr.read()) for p in procs]
    assert all(rc in (0, 2) for rc, _ in results), results
    assert not any("Traceback" in err for _, err in results), results
    assert [r["status"] for r in read_records(out / "h1.jsonl")] == ["ok"]


def test_copied_scratch_mark_does_not_make_a_directory_removable(tmp_path: Path, plan: Path) -> None:
    from testbed_agent import scratch

    ours = scratch.prepare(tmp_path / "ours", tmp_path / "out")
    data = precious(tmp_path / "mydata")
    (data.parent / scratch.MARKER).write_bytes((ours / scratch.MARKER).read_bytes())
    assert not scratch.is_marked(data.parent) and scratch.remove(data.parent) is False
    res = run(plan, tmp_path / "results" / "r1", "--scratch", str(data.parent))
    assert res.returncode == 2 and data.read_text() == "keep me"
    assert scratch.remove(ours) is True and not ours.exists()


def test_scratch_in_use_by_another_agent_is_refused(tmp_path: Path, plan: Path) -> None:
    from testbed_agent import scratch

    busy = scratch.prepare(tmp_path / "busy", tmp_path / "other-out")
    (busy / "their-test-file").write_text("in use")
    with scratch.lock(busy):
        res = run(plan, tmp_path / "results" / "r1", "--scratch", str(busy))
    assert res.returncode == 2 and "in use by another agent" in res.stderr
    assert (busy / "their-test-file").read_text() == "in use"


def test_default_scratch_differs_per_results_dir(tmp_path: Path) -> None:
    from testbed_agent.scratch import default_scratch

    a = default_scratch("run", tmp_path / "a" / "run", "h1")
    assert a != default_scratch("run", tmp_path / "b" / "run", "h1")
    assert a != default_scratch("run", tmp_path / "a" / "run", "h2") and a.name.startswith("run-")
