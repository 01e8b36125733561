"""Issue 40 finding 5: a plan's ``filename`` through a symbolic link to a directory. The agent
resolved the links of a target's parent directories once and then created, marked and wrote the
file where they pointed, as root, and the record named the link's path; under a race (the
directory swapped for a link), fio and dd files appeared in a foreign directory.

Every component of a target is now opened without following a link: a link anywhere in the path
is refused, at plan check and at run time, by the same check. Also issue 40 finding 8: ``validate``
and ``plan derive`` accept what the run refuses (``filename: /proc/self/mem``)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from agenttest import agent
from fsrace import run_filename

from testbed_agent.guard import check_target
from testbed_agent.plan import Benchmark, ParamError
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.dd import Dd
from testbed_agent.workloads.fio import Fio
from testbed_shared.errors import TargetRefused

FIO = {"size": "256k", "runtime_s": 1, "ramp_s": 0, "ioengine": "psync", "iodepth": 1}
DD = {"bs": "4k", "count": 4, "source": "zero", "pause_s": 0}


def params(cls: type, filename: Path) -> dict:
    return {**(FIO if cls is Fio else DD), "filename": str(filename)}


def bench(cls: type, filename: Path) -> Benchmark:
    name = "fio_4k_randwrite" if cls is Fio else "dd_x"
    return Benchmark(name, cls.type, 0, 1, params=params(cls, filename))


def run(cls: type, filename: Path, tmp_path: Path):
    b = bench(cls, filename)
    ctx = RunContext(b, 0, tmp_path / "scratch", tmp_path / "art", time.monotonic() + 120, threading.Event())
    return cls().run(ctx, cls.parse(b))


@pytest.fixture
def linked(tmp_path: Path) -> tuple[Path, Path]:
    """``data/link`` -> ``foreign`` (a directory someone else owns the contents of)."""
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "link").symlink_to(foreign)
    return tmp_path / "data" / "link", foreign


@pytest.mark.parametrize("cls", [Dd, Fio])
@pytest.mark.parametrize("depth", ["parent", "grandparent"])
def test_a_target_through_a_linked_directory_is_refused(
    tmp_path: Path, linked, cls: type, depth: str
) -> None:
    link, foreign = linked
    if depth == "grandparent":
        (foreign / "sub").mkdir()
    target = link / "testfile.dat" if depth == "parent" else link / "sub" / "testfile.dat"
    with pytest.raises(ParamError, match="symbolic link"):
        cls.check(bench(cls, target))
    with pytest.raises(TargetRefused, match="symbolic link"):
        run(cls, target, tmp_path)
    assert [p.name for p in foreign.rglob("*")] == (["sub"] if depth == "grandparent" else [])


@pytest.mark.parametrize("cls", [Dd, Fio])
def test_a_real_directory_is_written_and_recorded_as_given(tmp_path: Path, cls: type) -> None:
    target = tmp_path / "data" / "new" / "testfile.dat"
    out = run(cls, target, tmp_path)
    assert out.params["target"] == str(target) and target.is_file()


def test_the_plan_check_and_the_run_agree_on_proc(tmp_path: Path) -> None:
    """``validate`` and ``plan derive`` refuse ``/proc/self/mem`` as the run does."""
    plan = tmp_path / "p.yml"
    plan.write_text(
        "benchmarks:\n  - {name: dd_x, type: dd, params: {bs: 4k, count: 1, filename: /proc/self/mem}}\n"
    )
    res = agent("validate", str(plan))
    assert res.returncode == 2 and "pseudo-filesystem" in res.stderr and f"{plan}:2" in res.stderr, res.stderr
    ok = tmp_path / "ok.yml"
    ok.write_text("benchmarks:\n  - {name: dd_x, type: dd, params: {bs: 4k, count: 1}}\n")
    res = agent("plan", "derive", str(ok), "--set", "dd.filename=/proc/self/mem")
    assert res.returncode == 2 and "pseudo-filesystem" in res.stderr, res.stderr
    with pytest.raises(TargetRefused, match="pseudo-filesystem"):
        run(Dd, Path("/proc/self/mem"), tmp_path)


def test_a_link_as_the_last_component_and_in_the_middle(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "alias").symlink_to(real)
    (real / "f.dat").write_bytes(b"x")
    (tmp_path / "f-link").symlink_to(real / "f.dat")
    for p in (tmp_path / "alias" / "f.dat", tmp_path / "alias" / "new.dat", tmp_path / "f-link"):
        with pytest.raises(TargetRefused, match="symbolic link"):
            check_target(p, allow_device=True)


@pytest.mark.slow
@pytest.mark.parametrize(("cls", "swaps", "pause"), [(Dd, 1000, 0.01), (Fio, 400, 0.05)], ids=["dd", "fio"])
def test_race_a_directory_of_the_filename_never_sends_a_write_elsewhere(
    tmp_path: Path, cls: type, swaps: int, pause: float
) -> None:
    """A seeded attacker swaps ``data/sub`` (the target's directory, outside the scratch
    directory) for a link to a foreign directory and back while the real benchmark runs with
    ``filename: data/sub/testfile.dat``: no run writes into the foreign directory."""
    res = run_filename(swaps, tmp_path, lambda target: run(cls, target, tmp_path), seed=40, pause=pause)
    print(cls.type, res.summary())
    assert res.foreign_writes == 0 and res.tracebacks == [], res.tracebacks[:2]
    assert res.tool_runs > 0 and res.swaps > swaps // 2  # the link was in place that often
