"""pyperformance for real: one benchmark in debug mode, its venv built once and reused."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from testbed_agent.plan import Benchmark, ParamError
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.pyperformance import Pyperformance
from testbed_shared.paths import cache_dir


@pytest.mark.slow
def test_pyperformance_run_records_values(tmp_path: Path) -> None:
    bench = Benchmark(
        "pyperformance_tiny",
        "pyperformance",
        0,
        1,
        params={"benchmarks": ["float"], "mode": "debug-single-value"},
    )
    Pyperformance.check(bench)
    ctx = RunContext(
        bench=bench,
        repetition=0,
        scratch=tmp_path,
        artifacts=tmp_path / "art",
        deadline=time.monotonic() + 900,
        stop=threading.Event(),
    )
    out = Pyperformance().run(ctx, Pyperformance.parse(ctx.bench))
    assert out.status == "ok", out.error
    assert out.metrics["float"]["unit"] == "s" and out.metrics["float"]["value"] > 0
    assert out.samples["float"]["values"]
    assert (tmp_path / "art" / out.artifacts[0]).exists()
    venvs = list((cache_dir() / "pyperformance-py311").glob("venv/*"))
    assert venvs, "the benchmark venv is kept in the cache for reuse"


def test_pyperformance_params_checked() -> None:
    with pytest.raises(ParamError) as err:
        Pyperformance.check(Benchmark("p", "pyperformance", 0, 1, params={"mode": "turbo"}))
    assert err.value.field == "params.mode"
    with pytest.raises(ParamError):
        Pyperformance.check(Benchmark("p", "pyperformance", 0, 1, params={"benchmarks": 7}))
