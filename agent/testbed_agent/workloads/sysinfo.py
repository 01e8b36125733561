"""``sysinfo`` (classic ``systeminfo``): the machine fingerprint as a benchmark record."""

from __future__ import annotations

import json
import sys

from testbed_agent.results import Outcome, metric
from testbed_agent.sysinfo import option_args
from testbed_agent.workloads.base import NoParams, RunContext, Workload


class Sysinfo(Workload):
    type = "sysinfo"
    tool = "testbed-agent sysinfo"
    aliases = ("systeminfo",)
    name_prefixes = ("systeminfo", "sysinfo")
    default_timeout_s = 120.0
    typical_s = 5.0

    def run(self, ctx: RunContext, params: NoParams) -> Outcome:
        out = ctx.artifact("sysinfo.json")
        cmd = [sys.executable, "-m", "testbed_agent", "sysinfo", "--out", str(out)]
        ctx.exec([*cmd, *option_args(ctx.options)])  # the run's options, as the runner's fingerprint
        info = json.loads(out.read_text())
        metrics = {}
        if info["memory"].get("total_bytes"):
            metrics["memory_total_bytes"] = metric(info["memory"]["total_bytes"], "B", "higher")
        metrics["logical_cpus"] = metric(info["cpu"]["logical_cpus"] or 0, "1", "higher")
        return Outcome(
            metrics=metrics,
            samples={"cc_technology": info["cc"]["technology"], "cpu_model": info["cpu"]["model"]},
            tool={"name": "testbed-agent sysinfo", "version": info["agent_version"]},
            artifacts=[out.name],
        )
