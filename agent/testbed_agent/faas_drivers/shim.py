"""The shim inside a function on Google Cloud Functions and Azure Functions
(``workloads/faas/shims/testbed_shim.py``): what it adds to a package, and a call's record from
the envelope it returns. Those platforms answer with no per-call report of their own, so the
instance, cold/warm, init and handler times come from inside the function."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

from testbed_agent.faas_drivers.base import Call, Platform
from testbed_agent.faas_drivers.prices import Pricing
from testbed_services.faas import faas_dir
from testbed_services.faas.functions import FunctionCode

MIB = 1 << 20


def shims_dir() -> Path:
    """``workloads/faas/shims``: the shim and each platform's entry point around it."""
    return faas_dir() / "shims"


def files(code: FunctionCode) -> dict[str, bytes]:
    """The shim and its configuration (which module and handler it calls)."""
    config = {"function": code.name, "module": code.module, "handler": code.handler}
    return {
        "testbed_shim.py": (shims_dir() / "testbed_shim.py").read_bytes(),
        "testbed_shim.json": (json.dumps(config, sort_keys=True) + "\n").encode(),
    }


def http(local: threading.local) -> Any:
    """The calling thread's HTTP session (requests), made on first use."""
    import requests  # noqa: PLC0415 - its SDK only when the platform is used

    session = getattr(local, "session", None)
    if session is None:
        session = local.session = requests.Session()
    return session


def _seconds(value: Any) -> float:
    """A time the shim reports: a finite number >= 0, else NaN (the ledger then refuses the call)."""
    ok = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )
    return float(value) if ok else math.nan


def call(
    driver: Platform,
    pricing: Pricing,
    status: int,
    envelope: Any,
    text: str,
    rtt: float,
    memory_mb: float,
    billed_memory_mb: float | None = None,
    extra: dict[str, Any] | None = None,
) -> Call:
    """The :class:`Call` of one HTTP answer (``envelope``: its JSON body, ``text``: its start),
    priced by ``driver``'s platform and charged to the run's ledger."""
    extra = dict(extra or {})
    if not isinstance(envelope, dict) or not isinstance(envelope.get("testbed"), dict):
        return Call(status, False, rtt, error=f"HTTP {status}: {text[:300]}", platform=extra)
    report = envelope["testbed"]
    err = envelope.get("error")
    cold = bool(report.get("cold"))
    init = _seconds(report.get("init_s") or 0.0) if cold else 0.0
    inspector = {
        "new_instance": cold,
        "instance_id": report.get("instance_id"),
        "handler_s": _seconds(report.get("handler_s") or 0.0),
        "init_s": init,
        "cold_start_s": init,
        "cpu_user_s": report.get("cpu_user_s"),
        "cpu_system_s": report.get("cpu_system_s"),
        "memory_peak_bytes": report.get("max_rss_bytes"),
        "memory_limit_bytes": int(memory_mb * MIB),
        "instance_uptime_s": report.get("instance_uptime_s"),
        "instance_invocations": report.get("instance_invocations"),
    }
    billed = inspector["handler_s"] + init
    memory = billed_memory_mb if billed_memory_mb is not None else memory_mb
    if math.isfinite(billed):
        cost = driver.price(memory, billed, "x86_64", pricing)
    else:  # the shim's report is no time: the call cannot be priced (the ledger refuses it)
        cost = {"gb_seconds": math.nan, "price": math.nan}
    billing = {
        "duration_s": billed,
        "memory_mb": memory,
        "currency": pricing.currency,
        **cost,
        "estimated": True,
    }
    error = (
        f"{err.get('type')}: {err.get('message')}" if isinstance(err, dict) else (str(err) if err else None)
    )
    ok = status == 200 and not err
    result = envelope.get("result") if ok else None
    return driver.charged(Call(status, ok, rtt, result, error, inspector, billing, extra))
