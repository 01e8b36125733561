"""Red team, file-system races (issue 26 finding 6): 1,000 swaps of the test file for a link to a
foreign file and of the scratch directory for a link to a foreign directory, while the agent opens
its target beneath the held scratch descriptor and writes through what it opened (in-process and
with the real dd via ``/proc/self/fd/N``): 0 foreign writes, 0 tracebacks.

A larger loop: ``python agent/tests/fsrace.py 20000``."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from fsrace import run, run_outputs

from testbed_agent.benchmark import Benchmark
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.dd import Dd
from testbed_agent.workloads.fio import Fio

SWAPS = 1000


@pytest.mark.slow
def test_swapped_files_and_scratch_redirect_no_write(tmp_path: Path) -> None:
    res = run(SWAPS, tmp_path)
    print(res.summary())
    assert res.swaps == SWAPS
    assert res.foreign_writes == 0
    assert res.tracebacks == [], res.tracebacks[:2]
    assert res.writes > 0 and res.tool_runs > 0 and res.attempts == res.writes + res.refusals


def _bench_step(cls: type, params: dict, tmp_path: Path):
    """A whole dd or fio benchmark (the workload's own run) in the held scratch directory."""
    bench = Benchmark(f"{cls.type}_4k_randwrite" if cls is Fio else "dd_x", cls.type, 0, 1, params=params)
    parsed = cls.parse(bench)

    def step(scr: Path) -> None:
        ctx = RunContext(
            bench=bench,
            repetition=0,
            scratch=scr,
            artifacts=tmp_path / "art",
            deadline=time.monotonic() + 120,
            stop=threading.Event(),
        )
        cls().run(ctx, parsed)

    return step


@pytest.mark.slow
@pytest.mark.parametrize(
    ("cls", "params", "swaps"),
    [
        (Dd, {"bs": "4k", "count": 4, "source": "zero", "pause_s": 0}, 400),
        (Fio, {"size": "256k", "runtime_s": 1, "ramp_s": 0, "ioengine": "psync", "iodepth": 1}, 200),
    ],
    ids=["dd", "fio"],
)
def test_dd_and_fio_benchmarks_under_swaps_write_only_their_file(tmp_path: Path, cls, params, swaps) -> None:
    """The same attacker against the real workloads (dd's and fio's file at ``<scratch>/dd`` and
    ``<scratch>/fio``): the attacker swaps the workload's file, and the scratch directory itself."""
    res = run(swaps, tmp_path, step=_bench_step(cls, params, tmp_path), target_rel=f"{cls.type}/testfile.dat")
    print(cls.type, res.summary())
    assert res.foreign_writes == 0 and res.tracebacks == [], res.tracebacks[:2]
    assert res.tool_runs > 0


@pytest.mark.slow
def test_output_directory_swapped_for_a_link_gets_no_write(tmp_path: Path) -> None:
    """Every file the toolkit writes goes through ``write_atomically``: 1,000 swaps of the output
    directory for a link to a foreign directory while reports are written into it."""
    res = run_outputs(SWAPS, tmp_path)
    print(res.summary())
    assert res.foreign_writes == 0 and res.tracebacks == [], res.tracebacks[:2]
    assert res.writes > 0
