"""What a plan's real run would cost: invocations, GB-seconds and price per platform.

A benchmark runs on the platform its ``profile`` models (``platforms.modelled_by``), priced by that
platform's own rule (:meth:`Platform.price`) from the list prices of ``workloads/faas/pricing.yml``.
Its invocations follow from its mode (``calls.invocations``) times its repetitions (an adaptive
benchmark's most); a memory sweep's calls are priced at each of its sizes. The *estimate* takes
each call's duration from the one call model (``calls.call_s``: the function, its event, the
memory's vCPUs), capped by the function's timeout; the *ceiling* assumes every call runs to its
timeout, cold calls with their init billed where the platform bills it. The ceiling is what a cost
cap is checked against; the run's own ledger charges what the platforms report.
"""

from __future__ import annotations

from typing import Any

from testbed_agent.faas_drivers import platforms
from testbed_agent.faas_drivers.calls import call_s, emulator_only, invocations
from testbed_agent.faas_drivers.prices import Pricing, load_pricing
from testbed_services.faas.profiles import load_profile
from testbed_shared.errors import TestbedError

__all__ = ["benchmark_cost", "load_pricing", "plan_cost"]

#: init seconds of a cold call (Python runtime start and the function's imports), for billing
COLD_INIT_S = 0.3
#: a platform's row of a plan's cost before its first benchmark
EMPTY_ROW = {"benchmarks": 0, "invocations": 0, "gb_seconds": 0.0, "price": 0.0, "price_ceiling": 0.0}


def _tmp_kind(profile: str) -> str:
    """The /tmp kind of the emulator profile that models the platform (``disk`` if unknown)."""
    try:
        return load_profile(profile).tmp_kind
    except TestbedError:
        return "disk"


def benchmark_cost(
    params: dict[str, Any], repetitions: int, platform: str, pricing: Pricing | None = None
) -> dict[str, Any]:
    """Invocations, GB-seconds and price (estimate and ceiling) of a faas benchmark on ``platform``."""
    pricing = pricing or load_pricing()
    cls = platforms.get(platform)
    init = COLD_INIT_S if pricing.rates(platform).get("init_billed") else 0.0
    timeout = float(params.get("function_timeout_s") or cls.default_timeout_s)
    arch = str(params.get("architecture") or "x86_64")
    tmp = _tmp_kind(str(params.get("profile") or platform))
    sizes = [float(m) for m in params.get("memory_sweep") or ()] or [params.get("memory_mb")]
    out: dict[str, Any] = {"invocations": 0, "cold_invocations": 0, "gb_seconds": 0.0, "price": 0.0}
    out["price_ceiling"] = 0.0
    for size in sizes:
        memory = cls.estimate_memory_mb(size)
        work = call_s(str(params.get("function")), params.get("event") or {}, cls.vcpus(memory, pricing), tmp)
        one = min(work, timeout)
        calls, cold = invocations(params, one)
        calls, cold = calls * repetitions // len(sizes), cold * repetitions // len(sizes)
        worst_calls = invocations(params, timeout)[0] * repetitions // len(sizes)  # a ramp's fewest
        warm_price = cls.price(memory, one, arch, pricing)
        cold_price = cls.price(memory, one + init, arch, pricing)
        worst = cls.price(memory, timeout + init, arch, pricing)
        out["invocations"] += calls
        out["cold_invocations"] += cold
        out["gb_seconds"] += (calls - cold) * warm_price["gb_seconds"] + cold * cold_price["gb_seconds"]
        out["price"] += (calls - cold) * warm_price["price"] + cold * cold_price["price"]
        out["price_ceiling"] += worst_calls * worst["price"]
        out.setdefault("memory_mb", memory)
        out.setdefault("call_s", one)
    return {"platform": platform, "architecture": arch, **out}


def plan_cost(benchmarks: list[Any], pricing: Pricing | None = None) -> dict[str, dict[str, Any]]:
    """Per platform: the faas benchmarks that would run there and their summed cost."""
    pricing = pricing or load_pricing()
    out: dict[str, dict[str, Any]] = {}
    for b in benchmarks:
        if b.type != "faas":
            continue
        platform = platforms.modelled_by(str(b.params.get("profile", "aws-lambda")))
        if platform is None:
            continue
        row = out.setdefault(platform, {**EMPTY_ROW, "emulator_only": 0})
        if emulator_only(b.params):
            row["emulator_only"] += 1
            continue
        reps = b.adaptive.max if getattr(b, "adaptive", None) else b.repetitions
        cost = benchmark_cost(b.params, reps, platform, pricing)
        row["benchmarks"] += 1
        for key in ("invocations", "gb_seconds", "price", "price_ceiling"):
            row[key] += cost[key]
    for platform, row in out.items():
        rates = pricing.rates(platform)
        row.update(currency=pricing.currency, pricing_date=pricing.date, source=rates["source"])
    return out
