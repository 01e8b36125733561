"""``pyperformance``: ``pyperformance run`` on a benchmark selection; its venv is built once and
reused; the pyperf JSON is kept beside the results and every benchmark becomes a metric."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from testbed_agent.params import NAME_RE, spec
from testbed_agent.results import Outcome, metric
from testbed_agent.workloads.base import RunContext, Workload
from testbed_shared.errors import WorkloadError
from testbed_shared.paths import cache_dir

MODES = ("fast", "rigorous", "normal", "debug-single-value")
#: seconds per benchmark by mode, and the size of the named groups (duration estimate)
PER_BENCH_S = {"fast": 20.0, "debug-single-value": 5.0, "normal": 60.0, "rigorous": 180.0}
GROUPS = {"default": 60, "all": 90}


@dataclass(frozen=True)
class PyperformanceParams:
    #: a name, a group, a comma list or a list of names; never an option (``--help``)
    benchmarks: tuple[str, ...] = spec("default", "names", pattern=r"-?" + NAME_RE)
    #: None: ``fast`` if ``fast`` is true, else ``normal``
    mode: str | None = spec(None, choices=MODES)
    fast: bool = spec(False, "bool")
    affinity: str = spec("", pattern=r"([0-9]{1,4}([-,][0-9]{1,4})*)?")
    venv_dir: str | None = spec(None, pattern=r"[^\x00-\x1f]+")

    @property
    def run_mode(self) -> str:
        """The mode pyperformance runs in."""
        return self.mode or ("fast" if self.fast else "normal")


class Pyperformance(Workload):
    type = "pyperformance"
    tool = "pyperformance"
    parse_kind = "pyperf"
    aliases = ("pyperf",)
    name_prefixes = ("pyperformance",)
    Params = PyperformanceParams
    #: each benchmark's time
    primary = (r".+",)
    default_timeout_s = 4 * 3600.0
    typical_s = 3600.0

    @classmethod
    def estimate_s(cls, params: PyperformanceParams) -> float:
        count = sum(GROUPS.get(b, 1) for b in params.benchmarks)
        return count * PER_BENCH_S[params.run_mode]

    def run(self, ctx: RunContext, params: PyperformanceParams) -> Outcome:
        p = params
        selection = ",".join(p.benchmarks)
        mode = p.run_mode
        # pyperformance keeps its venv under ./venv of the working directory: a fixed cache
        # directory per Python makes it built once and reused by every run.
        workdir = Path(
            p.venv_dir or cache_dir() / f"pyperformance-py{sys.version_info[0]}{sys.version_info[1]}"
        )
        workdir.mkdir(parents=True, exist_ok=True)
        out = ctx.artifact("pyperf.json")
        if out.exists():
            out.unlink()
        cmd = [sys.executable, "-m", "pyperformance", "run", "-b", selection, "-o", str(out)]
        if mode != "normal":
            cmd.append(f"--{mode}")
        if p.affinity:
            cmd += ["--affinity", p.affinity]
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
        import pyperf  # noqa: PLC0415 - pyperformance extra: only this type needs pyperf

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
    try:
        return version(pkg)
    except PackageNotFoundError:
        return None
