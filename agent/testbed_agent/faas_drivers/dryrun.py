"""``testbed-agent platform dry-run PLAN --target T``: every platform API call a plan would make.

The plan's faas benchmarks run through the real ``faas`` workload and the target's real driver,
repetition by repetition, with the driver in dry-run mode: each request is printed (operation and
parameters; packages as byte counts) instead of sent, and answered with a stand-in so the run
goes on (calls succeed at once, idle gaps are not waited). No credentials are read. The counts per
operation close the output.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from testbed_agent.faas_drivers import open_driver, platforms
from testbed_agent.faas_drivers.routing import skip_reason
from testbed_agent.faas_drivers.target import Target
from testbed_agent.plan import load_plan
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.faas import FaasWorkload
from testbed_shared.errors import TestbedError


class DryContext(RunContext):
    """A run context whose idle gaps pass at once (nothing is waited for in a dry run)."""

    def sleep(self, seconds: float) -> None:
        return


def dry_run_plan(plan_path: Path, target: Target, out: TextIO | None = None) -> dict[str, int]:
    """Print the calls of ``plan_path``'s faas benchmarks on ``target``; their counts per operation."""
    out = out or sys.stdout
    if not platforms.get(target.platform).real:
        raise TestbedError(f"a dry run is for real platforms: {target.platform} costs nothing to call")
    plan = load_plan(plan_path)
    driver = open_driver(target, dry_run=True, out=out)
    options: dict[str, Any] = {"faas_driver": driver, "faas_dry_run": True}
    with tempfile.TemporaryDirectory(prefix="testbed-dry-run-") as tmp:
        for bench in plan.benchmarks:
            if bench.type != "faas":
                continue
            params = FaasWorkload.parse(bench)
            reason = skip_reason(target, params)
            if reason:
                print(f"# {bench.name}: skipped ({reason})", file=out)
                continue
            reps = bench.adaptive.max if bench.adaptive else bench.repetitions
            for rep in range(reps):
                print(f"# {bench.name}, repetition {rep + 1} of {reps}", file=out)
                ctx = DryContext(
                    bench=bench,
                    repetition=rep,
                    scratch=Path(tmp) / "scratch",
                    artifacts=Path(tmp) / "artifacts",
                    deadline=time.monotonic() + 1e9,
                    options=options,
                )
                FaasWorkload().run(ctx, params)
    return driver.counts()
