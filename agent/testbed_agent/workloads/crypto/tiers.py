"""Enforced FaaS memory tiers for ``crypto`` cells: each language process in an instance cgroup.

With ``tier_profile`` (a FaaS profile, e.g. ``aws-lambda``) and ``memory_mb``, every cell's process
joins a fresh cgroup made by the FaaS emulator's cgroups module, limited to the vCPU share the
profile gives that memory size (``Profile.vcpus``, capped at this machine's CPUs) and to that memory.
The cell's CPU time, throttling and peak memory come from the cgroup; the cgroup is removed after
the cell. Without root or usable cgroups the cells run unconfined and the record says so.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from testbed_agent.params import ParamError
from testbed_agent.results import metric
from testbed_services.faas import cgroups
from testbed_services.faas.instance import JOIN_AND_EXEC
from testbed_services.faas.profiles import MIB, Profile, load_profile
from testbed_shared.errors import TestbedError


@dataclass(frozen=True)
class TierParams:
    """A FaaS memory tier: the profile (workloads/faas/profiles) and the memory size it offers."""

    profile: Profile
    memory_mb: int


def parse_tier(p: dict[str, Any]) -> TierParams | None:
    """``tier_profile`` with the ``memory_mb`` the profile offers, checked; None without a tier."""
    if "tier_profile" not in p:
        return None
    name, mem = p["tier_profile"], p.get("memory_mb")
    if not isinstance(name, str) or not name:
        raise ParamError(
            "params.tier_profile", f"a FaaS profile name (workloads/faas/profiles), got {name!r}"
        )
    if isinstance(mem, bool) or not isinstance(mem, int) or mem <= 0:
        raise ParamError("params.memory_mb", f"tier_profile needs memory_mb as an integer > 0, got {mem!r}")
    try:
        profile = load_profile(name)
        profile.check_memory(mem)
    except TestbedError as exc:
        hint = f" ({exc.hint})" if getattr(exc, "hint", None) else ""
        raise ParamError("params.tier_profile", f"{exc}{hint}") from None
    return TierParams(profile=profile, memory_mb=mem)


class TierCells:
    """The instance cgroups of one crypto benchmark run (one backend, one cgroup per cell)."""

    def __init__(self, tier: TierParams) -> None:
        self.profile = tier.profile
        self.memory_mb = tier.memory_mb
        self.vcpus = min(self.profile.vcpus(self.memory_mb), float(os.cpu_count() or 1))
        self.backend = cgroups.detect(f"crypto-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        self.cg: cgroups.InstanceCgroup | None = None

    def record(self) -> dict[str, Any]:
        """What the record says about the tier: enforced or why not, the limits."""
        return {
            "limits_enforced": self.backend.enforced,
            "reason": None if self.backend.enforced else self.backend.reason,
            "profile": self.profile.name,
            "memory_mb": self.memory_mb,
            "vcpus": round(self.vcpus, 4),
            "cgroup": self.backend.version,
        }

    @contextlib.contextmanager
    def cell(self, name: str) -> Iterator[None]:
        """A limited cgroup for one cell (``wrap`` puts a command line in it), removed afterwards."""
        if not self.backend.enforced:
            yield
            return
        self.cg = self.backend.create(f"{name}-{uuid.uuid4().hex[:6]}")
        try:
            self.cg.set_limits(self.vcpus, self.memory_mb * MIB)
            yield
        finally:
            self.cg.kill()
            self.cg.remove()
            self.cg = None

    def wrap(self, argv: list[str]) -> list[str]:
        """``argv`` started by a shell that first writes its pid to the cell cgroup (as the emulator)."""
        if self.cg is None:
            return argv
        return ["/bin/sh", "-c", JOIN_AND_EXEC, "sh", *self.cg.procs_files(), "--", *argv]

    def metrics(self) -> dict[str, dict[str, Any]]:
        """The cell cgroup's CPU, throttling and memory figures (read before the cgroup goes)."""
        if self.cg is None:
            return {}
        st = self.cg.stats()
        cpu = st.cpu_user_s + st.cpu_system_s
        out = {
            "cg_cpu_s": metric(cpu, "s", "lower"),
            "cg_throttled_s": metric(st.throttled_s, "s", "lower"),
            "cg_nr_periods": metric(float(st.nr_periods), "count", "lower"),
            "cg_nr_throttled": metric(float(st.nr_throttled), "count", "lower"),
            "cg_memory_peak": metric(float(st.memory_peak_bytes), "B", "lower"),
            "cg_oom_kills": metric(float(st.oom_kills), "count", "lower"),
        }
        if cpu > 0:  # the share of the CPU it wanted that it got (none measurable: no share)
            out["cg_cpu_share"] = metric(cpu / (cpu + st.throttled_s), "ratio", "higher")
        return out

    def close(self) -> None:
        self.backend.cleanup()


def run_tiered(
    tiers: TierCells | None,
    cell: str,
    argv: list[str],
    runner: Callable[[list[str]], tuple[str, dict[str, Any]]],
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """``runner(argv)`` in the cell's cgroup when there is a tier: (status, output, cgroup metrics)."""
    if tiers is None:
        return (*runner(argv), {})
    with tiers.cell(cell):
        status, out = runner(tiers.wrap(argv))
        return status, out, tiers.metrics()


def tier_params(outcome: Any, tiers: TierCells | None) -> None:
    """Put the tier (limits enforced or why not) in a record's samples and params."""
    if tiers is not None:
        outcome.samples["tier"] = tiers.record()
        outcome.params["limits_enforced"] = tiers.backend.enforced
        outcome.params["tier_profile"] = tiers.profile.name
