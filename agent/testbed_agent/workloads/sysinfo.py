"""``sysinfo`` (classic ``systeminfo``): the machine fingerprint as a benchmark record."""

from __future__ import annotations

import json
import sys

from testbed_agent.results import Outcome, metric
from testbed_agent.workloads import register
from testbed_agent.workloads.base import RunContext, Workload


@register
class Sysinfo(Workload):
    type = "sysinfo"
    tool = "testbed-agent sysinfo"

    @classmethod
    def timeout_s(cls, bench) -> float:
        return bench.timeout_s or 120.0

    def run(self, ctx: RunContext) -> Outcome:
        out = ctx.artifact("sysinfo.json")
        cmd = [sys.executable, "-m", "testbed_agent", "sysinfo", "--out", str(out)]
        cmd += ["--cloud", ctx.options.get("cloud") or "none"]
        if ctx.options.get("host_facts"):
            cmd += ["--host-facts", str(ctx.options["host_facts"])]
        ctx.exec(cmd)
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
