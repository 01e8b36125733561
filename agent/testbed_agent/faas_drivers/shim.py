"""A call's record from the envelope the shim returns (``workloads/faas/shims/testbed_shim.py``):
on Google Cloud Functions and Azure Functions the per-call instance, cold/warm, init and handler
times come from inside the function, because those platforms answer with no report of their own."""

from __future__ import annotations

from typing import Any

from testbed_agent.faas_drivers.base import Call
from testbed_agent.faas_drivers.pricing import Pricing, call_price

MIB = 1 << 20


def shim_call(
    platform: str,
    status: int,
    envelope: Any,
    text: str,
    rtt: float,
    memory_mb: float,
    pricing: Pricing,
    billed_memory_mb: float | None = None,
    extra: dict[str, Any] | None = None,
) -> Call:
    """The :class:`Call` of one HTTP answer (``envelope``: its JSON body, ``text``: its start)."""
    extra = dict(extra or {})
    if not isinstance(envelope, dict) or "testbed" not in envelope:
        return Call(status, False, rtt, error=f"HTTP {status}: {text[:300]}", platform=extra)
    shim = envelope["testbed"]
    err = envelope.get("error")
    cold = bool(shim.get("cold"))
    init = float(shim.get("init_s") or 0.0) if cold else 0.0
    inspector = {
        "new_instance": cold,
        "instance_id": shim.get("instance_id"),
        "handler_s": float(shim.get("handler_s") or 0.0),
        "init_s": init,
        "cold_start_s": init,
        "cpu_user_s": shim.get("cpu_user_s"),
        "cpu_system_s": shim.get("cpu_system_s"),
        "memory_peak_bytes": shim.get("max_rss_bytes"),
        "memory_limit_bytes": int(memory_mb * MIB),
        "instance_uptime_s": shim.get("instance_uptime_s"),
        "instance_invocations": shim.get("instance_invocations"),
    }
    billed = inspector["handler_s"] + init
    memory = billed_memory_mb if billed_memory_mb is not None else memory_mb
    cost = call_price(platform, memory, billed, "x86_64", pricing)
    billing = {
        "duration_s": billed,
        "memory_mb": memory,
        "currency": pricing.currency,
        **cost,
        "estimated": True,
    }
    error = f"{err.get('type')}: {err.get('message')}" if err else None
    ok = status == 200 and not err
    return Call(status, ok, rtt, envelope.get("result") if ok else None, error, inspector, billing, extra)
