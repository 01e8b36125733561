"""How long a ``faas`` execution takes, for ``plan show``: the emulator's start, each call's work
(the one call model, ``faas_drivers.calls``, at the tier's vCPUs and /tmp kind) plus the
emulator's own per-call and cold-start times, concurrent calls sharing this machine's CPUs, and
the idle times (gaps and pauses over the time scale, ramp durations). The estimate is for
planning, not a measurement.
"""

from __future__ import annotations

import os
from typing import Any

from testbed_agent.faas_drivers.calls import call_s, dd_s
from testbed_services.faas.profiles import load_profile
from testbed_shared.errors import TestbedError

#: seconds to start a private emulator and deploy (both sides of a benchmark)
START_S = 3.0
#: seconds of one call besides its work (HTTP, worker, inspector)
CALL_S = 0.02
#: seconds of a cold start (a worker process)
COLD_S = 0.5


def estimate(p: Any) -> float:
    vcpus, tmp = _profile(p)
    one = CALL_S + call_s(p.function, p.event, vcpus, tmp)
    cpus = os.cpu_count() or 2

    def burst(n: int, calls: int = 1) -> float:
        """``n`` concurrent callers of ``calls`` calls: the slower of one caller's chain and the
        total CPU the calls need spread over this machine's CPUs."""
        work = one - CALL_S
        return max(calls * one, n * calls * work * min(vcpus, 1.0) / cpus) + COLD_S

    mode = p.mode
    if mode == "sequence":
        size = 0
        total = COLD_S
        for item in p.sequence:
            if "pause_s" in item:
                total += float(item["pause_s"]) / p.time_scale
                continue
            secs, size = dd_s(item.get("event", {}), size, tmp)
            total += CALL_S + (secs if secs is not None else one)
        return START_S + total
    if mode == "warm":
        return START_S + COLD_S + (p.warmup + p.calls + (p.first == "cold")) * one
    if mode in ("cold", "cold_warm"):
        return START_S + p.calls * (COLD_S + one) * (2 if mode == "cold_warm" else 1)
    if mode == "scaling":
        levels = [int(x) for x in p.ladder] or [p.concurrency]
        pauses = p.level_pause_s / p.time_scale * max(0, len(levels) - 1)
        return START_S + sum(burst(n, p.calls) for n in levels) + pauses + p.warmup * one
    if mode == "retention":
        sets = len(p.gaps_s) * (1 if not p.fresh_per_gap else 2) + (not p.fresh_per_gap)
        return START_S + sets * burst(p.concurrency) + sum(p.gaps_s) / p.time_scale
    if mode == "sets":
        sizes = max(1, len(p.memory_sweep))
        sets = (p.warmup_sets + p.sets) * sizes * (p.batches if p.memory_sweep else 1)
        return START_S + sets * (burst(p.concurrency) + p.set_pause_s / p.time_scale)
    if mode == "ramp":
        return START_S + sum(p.step_s) * len(p.steps)
    return START_S + p.calls * one


def _profile(p: Any) -> tuple[float, str]:
    """(vCPUs of the benchmark's memory size, /tmp kind) from its profile."""
    try:
        prof = load_profile(p.profile)
        return max(0.01, prof.vcpus(p.memory_mb or prof.memory_default_mb)), prof.tmp_kind
    except (TestbedError, ValueError):  # an estimate: an unreadable profile counts as one vCPU on disk
        return 1.0, "disk"
