"""``pyperformance``: ``pyperformance run`` on a benchmark selection; its venv is built once and
reused; the pyperf JSON is kept beside the results and every benchmark becomes a metric."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from testbed_agent.plan import Benchmark, ParamError
from testbed_agent.results import Outcome, metric
from testbed_agent.workloads import register
from testbed_agent.workloads.base import RunContext, Workload, require
from testbed_shared.errors import WorkloadError
from testbed_shared.paths import cache_dir

MODES = ("fast", "rigorous", "normal", "debug-single-value")


@register
class Pyperformance(Workload):
    type = "pyperformance"
    tool = "pyperformance"
    parse_kind = "pyperf"

    @classmethod
    def check(cls, bench: Benchmark) -> None:
        p = bench.params
        b = p.get("benchmarks", "default")
        if isinstance(b, list):
            if not all(isinstance(x, str) for x in b):
                raise ParamError("params.benchmarks", "a list of benchmark names")
        elif not isinstance(b, str):
            raise ParamError("params.benchmarks", "a name, a group or a list of names")
        require(p, "mode", str, default="normal", choices=MODES)
        if "fast" in p:
            require(p, "fast", bool)
        require(p, "affinity", str, default="-")

    @classmethod
    def timeout_s(cls, bench: Benchmark) -> float:
        return bench.timeout_s or 4 * 3600.0

    def run(self, ctx: RunContext) -> Outcome:
        p = ctx.params
        selection = p.get("benchmarks", "default")
        if isinstance(selection, list):
            selection = ",".join(selection)
        mode = p.get("mode") or ("fast" if p.get("fast") else "normal")
        # pyperformance keeps its venv under ./venv of the working directory: a fixed cache
        # directory per Python makes it built once and reused by every run.
        workdir = Path(
            p.get("venv_dir") or cache_dir() / f"pyperformance-py{sys.version_info[0]}{sys.version_info[1]}"
        )
        workdir.mkdir(parents=True, exist_ok=True)
        out = ctx.artifact("pyperf.json")
        if out.exists():
            out.unlink()
        cmd = [sys.executable, "-m", "pyperformance", "run", "-b", selection, "-o", str(out)]
        if mode != "normal":
            cmd.append(f"--{mode}")
        if p.get("affinity"):
            cmd += ["--affinity", str(p["affinity"])]
        env = {**os.environ, "PYTHONHASHSEED": os.environ.get("PYTHONHASHSEED", "0")}
        res = ctx.exec(cmd, cwd=workdir, env=env, check=False)
        ctx.artifact("pyperformance.log").write_text(res.stdout + res.stderr)
        if not out.exists():
            tail = (res.stderr or res.stdout).strip().splitlines()[-1:] or ["no output"]
            raise WorkloadError(f"pyperformance wrote no results (exit {res.returncode}): {tail[0][:300]}")
        parsed = self.parse_file(out)
        outcome = Outcome(
            metrics=parsed["metrics"],
            samples=parsed["samples"],
            tool=parsed["tool"],
            artifacts=[out.name, ctx.artifact("pyperformance.log").name],
            params={"benchmarks": selection, "mode": mode},
        )
        if res.returncode != 0:
            outcome.status = "failed"
            outcome.error = f"pyperformance exited {res.returncode}; partial results kept"
        return outcome

    @staticmethod
    def parse_file(path: Path) -> dict[str, Any]:
        """Mean, sd and all values (seconds) of every benchmark in a pyperf JSON file."""
        import pyperf

        try:
            suite = pyperf.BenchmarkSuite.load(str(path))
        except (OSError, ValueError, json.JSONDecodeError) as exc:
            raise WorkloadError(f"{path}: not a pyperf JSON file ({exc})") from None
        metrics: dict[str, Any] = {}
        samples: dict[str, Any] = {}
        for bench in suite.get_benchmarks():
            values = list(bench.get_values())
            if not values:
                continue
            name = bench.get_name()
            unit = bench.get_unit()
            si_unit = {"second": "s", "byte": "B"}.get(unit, unit)
            metrics[name] = metric(bench.mean(), si_unit, "lower")
            samples[name] = {
                "values": values,
                "sd": bench.stdev() if len(values) > 1 else 0.0,
                "median": bench.median(),
                "runs": bench.get_nrun(),
                "loops": bench.get_loops() if hasattr(bench, "get_loops") else None,
            }
        if not metrics:
            raise WorkloadError(f"{path}: no benchmark values")
        meta = suite.get_metadata() if hasattr(suite, "get_metadata") else {}
        version = meta.get("performance_version") or _version("pyperformance")
        return {
            "metrics": metrics,
            "samples": samples,
            "tool": {"name": "pyperformance", "version": version, "pyperf": _version("pyperf")},
        }


def _version(pkg: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(pkg)
    except PackageNotFoundError:
        return None
