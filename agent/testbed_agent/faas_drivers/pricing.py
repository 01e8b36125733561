"""What a plan's real run would cost: invocations, GB-seconds and price per platform.

Prices come from ``workloads/faas/pricing.yml`` (list prices with their date and source). A
benchmark runs on the platform its ``profile`` models (aws-lambda -> AWS Lambda, gcf-gen2 ->
Google Cloud Functions, azure-consumption -> Azure Functions). Its invocations follow from its mode
(warm: warm-up + calls; cold: calls; cold_warm: 2 x calls; scaling: concurrency x calls per level;
retention: gaps x concurrency x 2; sets: (warm-up sets + sets) x concurrency per memory size and
batch; sequence: its calls; ramp: each step's callers calling back to back for its seconds) times
its repetitions. The duration of one call is a rough
figure from the function and its event (:func:`typical_call_s`), capped by the function's timeout;
the *ceiling* assumes every call runs to its timeout. Both are estimates for a cost cap, not
results: the run's own ledger charges what the platforms report.
"""

from __future__ import annotations

import importlib.util
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from testbed_services.faas import faas_dir
from testbed_shared.errors import TestbedError

#: emulator profile -> the real platform it models (by name prefix: the era profiles
#: ``aws-lambda-2017``, ``gcf-gen2-2024``, ``azure-functions-2017`` model their platform too)
PLATFORM_OF_PROFILE = {
    "aws-lambda": "aws-lambda",
    "gcf-gen2": "gcf-gen2",
    "azure-consumption": "azure-functions",
    "azure-functions": "azure-functions",
}
#: Python calcs per second at one full vCPU (the calcs function's loop; measured on the development
#: machine at 0.57e6/s on a shared vCPU, rounded down)
CALCS_PER_VCPU_S = 5e5
#: local /tmp throughput assumed for dd on the platforms, B/s
DD_BPS = 100e6
#: seconds of one call by function when the event says nothing more precise
FUNCTION_S = {"crypto": 0.5, "fio": 5.0}
DEFAULT_CALL_S = 1.0
#: the shortest a caller's call takes end to end on a real platform (a client's HTTPS round trip to
#: the region): a ramp's back-to-back callers make at most one call per this many seconds each
ROUND_TRIP_FLOOR_S = 0.05
#: init seconds of a cold call (Python runtime start and the function's imports), for billing
COLD_INIT_S = 0.3
#: default memory and timeout of a deployment per platform when the plan gives none
PLATFORM_DEFAULTS = {
    "aws-lambda": {"memory_mb": 128, "timeout_s": 3.0},
    "gcf-gen2": {"memory_mb": 256, "timeout_s": 60.0},
    "azure-functions": {"memory_mb": 1536, "timeout_s": 300.0},
}
SIZE = re.compile(r"^(\d+)([kKmMgG]?)$")


@dataclass(frozen=True)
class Pricing:
    """The pricing table: its date, currency and per-platform rates."""

    date: str
    currency: str
    platforms: dict[str, dict[str, Any]]
    path: str

    def rates(self, platform: str) -> dict[str, Any]:
        if platform not in self.platforms:
            raise TestbedError(f"{self.path}: no prices for platform {platform!r}")
        return self.platforms[platform]


@lru_cache(maxsize=4)
def load_pricing(path: str | None = None) -> Pricing:
    """``workloads/faas/pricing.yml`` (or ``path``)."""
    p = Path(path) if path else faas_dir() / "pricing.yml"
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
        platforms = doc["platforms"]
        for name, rates in platforms.items():
            if not rates.get("source"):
                raise ValueError(f"platform {name} has no source")
        return Pricing(str(doc["date"]), str(doc.get("currency", "USD")), platforms, str(p))
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TestbedError(f"{p}: invalid pricing table: {exc}") from None


def emulator_only(params: dict[str, Any]) -> str | None:
    """Why a faas benchmark needs the emulator itself and is skipped on a real platform, if it does:
    a faster clock (``time_scale``) or the key service on the agent's loopback (``key_service``)."""
    scale = float(params.get("time_scale") or 1)
    if scale != 1:
        return f"time_scale {scale:g} speeds up the emulator's clock; a platform runs in real time"
    if params.get("key_service"):
        return "key_service runs on this host's loopback, which a real platform cannot reach"
    return None


def platform_of(profile: str) -> str | None:
    """The real platform an emulator profile models (None for test profiles): its name is a key of
    :data:`PLATFORM_OF_PROFILE` or starts with one and a dash."""
    for prefix, platform in PLATFORM_OF_PROFILE.items():
        if profile == prefix or profile.startswith(prefix + "-"):
            return platform
    return None


def vcpus(rates: dict[str, Any], memory_mb: float) -> float:
    """vCPUs a platform gives this memory size (GCF's table; Lambda 1 per 1769 MB; Azure 1)."""
    table = rates.get("vcpus")
    if table:
        for size in sorted(int(k) for k in table):
            if memory_mb <= size:
                return float(table[size] if size in table else table[str(size)])
        return float(max(table.values()))
    if "arm64" in (rates.get("per_gb_second") or {}):
        return min(6.0, memory_mb / 1769.0)
    return 1.0


def billed_s(duration_s: float, rates: dict[str, Any]) -> float:
    """Duration rounded up to the billing granularity, at least the minimum."""
    ms = max(duration_s * 1000.0, float(rates.get("minimum_ms", 0)))
    step = float(rates.get("granularity_ms", 1))
    return math.ceil(ms / step - 1e-9) * step / 1000.0 if step > 0 else ms / 1000.0


def call_price(
    platform: str, memory_mb: float, duration_s: float, arch: str = "x86_64", pricing: Pricing | None = None
) -> dict[str, float]:
    """GB-seconds and price of one call of ``duration_s`` billed seconds at ``memory_mb``."""
    rates = (pricing or load_pricing()).rates(platform)
    seconds = billed_s(duration_s, rates)
    memory = memory_mb
    if rates.get("memory") == "observed":
        step = float(rates.get("memory_step_mb", 128))
        memory = max(step, math.ceil(memory_mb / step) * step)
    gb_s = memory / 1024.0 * seconds
    if "per_vcpu_second" in rates:
        price = vcpus(rates, memory) * seconds * float(rates["per_vcpu_second"])
        price += gb_s * float(rates["per_gib_second"])
    else:
        per = rates["per_gb_second"]
        if arch not in per:
            raise TestbedError(f"{platform} has no price for architecture {arch!r} ({', '.join(per)})")
        price = gb_s * float(per[arch])
    return {"gb_seconds": gb_s, "price": price + float(rates.get("per_request", 0.0))}


# -- one benchmark ------------------------------------------------------------------------------


def invocations(p: dict[str, Any], call_s: float = DEFAULT_CALL_S) -> tuple[int, int]:
    """(calls, of which cold) one execution of a faas benchmark makes; ``call_s`` (one call's
    seconds) sizes a ramp's continuous load."""
    mode = p.get("mode", "warm")
    calls = int(p.get("calls") or (1 if mode in ("scaling", "ramp") else 5))
    conc = int(p.get("concurrency") or 1)
    if mode == "cold":
        return calls, calls
    if mode == "cold_warm":
        return 2 * calls, calls
    if mode == "scaling":
        levels = [int(x) for x in p.get("ladder") or ()] or [conc]
        warm = int(p.get("warmup", 1)) if p.get("ladder") else 0
        cold = sum(levels) if p.get("cold", "host") != "none" else max(levels)
        return warm + sum(levels) * calls, min(warm, 1) + cold
    if mode == "retention":
        gaps = len(p.get("gaps_s") or ())
        if p.get("fresh_per_gap", True) is False:  # one sequence: each set warms the next gap's
            return (gaps + 1) * conc, conc
        return 2 * gaps * conc, gaps * conc
    if mode == "sets":
        configs = len(p.get("memory_sweep") or ()) * int(p.get("batches", 1)) or 1
        per_config = (int(p.get("warmup_sets", 1)) + int(p.get("sets", 0))) * conc
        return configs * per_config, configs * conc
    if mode == "sequence":
        return sum("phase" in item for item in p.get("sequence") or ()), 1
    if mode == "ramp":
        steps = [int(x) for x in p.get("steps") or ()]
        each = max(call_s, ROUND_TRIP_FLOOR_S)
        per_caller = [max(1, math.ceil(float(d) / each)) for d in p.get("step_s") or ()]
        return sum(n * k for n in steps for k in per_caller), max(steps, default=0)
    first = 1 if p.get("first") == "cold" else 0
    return first + int(p.get("warmup", 1)) + calls, 1


def typical_call_s(function: str, event: dict[str, Any], cpu: float) -> float:
    """A rough duration of one call of ``function`` with ``event`` at ``cpu`` vCPUs."""
    share = max(min(cpu, 1.0), 0.05)
    if function == "calcs":
        return _calcs(event) / CALCS_PER_VCPU_S / share + 0.001
    if function == "dd":
        steps = event.get("steps") or [{"args": event.get("args") or []}]
        nbytes = sum(_dd_bytes(s.get("args") or []) for s in steps)
        return nbytes / DD_BPS + 0.01
    if function == "fio":
        return float(event.get("runtime_s") or FUNCTION_S["fio"])
    if function in FUNCTION_S:
        return FUNCTION_S[function] / share
    return DEFAULT_CALL_S


@lru_cache(maxsize=1)
def _calcs_levels() -> dict[int, tuple[int, ...]]:
    """The calcs function's stress levels, read from its module (a mapping level -> (calcs, ...),
    or a list indexed by level)."""
    path = faas_dir() / "functions" / "calcs" / "handler.py"
    spec = importlib.util.spec_from_file_location("_testbed_calcs_levels", path)
    if spec is None or spec.loader is None:
        return {}
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    levels = getattr(module, "LEVELS", {})
    return dict(levels) if isinstance(levels, dict) else dict(enumerate(levels))


def _calcs(event: dict[str, Any]) -> float:
    if "level" in event:
        row = _calcs_levels().get(int(event["level"]))
        return float(row[0]) if row else 0.0
    size, calls = int(event.get("array_size", 20)), int(event.get("function_calls", 1000))
    return float(event.get("calcs", size * calls))


def _size(text: str) -> int:
    m = SIZE.match(text.strip())
    if not m:
        return 0
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def _dd_bytes(args: list[Any]) -> int:
    ops = dict(str(a).partition("=")[::2] for a in args)
    return _size(ops.get("bs", "512")) * int(ops.get("count", "0") or 0)


def benchmark_cost(
    params: dict[str, Any], repetitions: int, platform: str, pricing: Pricing | None = None
) -> dict[str, Any]:
    """Invocations, GB-seconds and price (estimate and ceiling) of a faas benchmark on ``platform``."""
    pricing = pricing or load_pricing()
    rates = pricing.rates(platform)
    base = PLATFORM_DEFAULTS[platform]
    memory = float(params.get("memory_mb") or base["memory_mb"])
    if platform == "azure-functions":
        memory = float(rates.get("instance_memory_mb", 1536))
    timeout = float(params.get("function_timeout_s") or base["timeout_s"])
    arch = str(params.get("architecture") or "x86_64")
    one = min(
        typical_call_s(str(params.get("function")), params.get("event") or {}, vcpus(rates, memory)), timeout
    )
    n, cold = invocations(params, one)
    n, cold = n * repetitions, cold * repetitions
    init = COLD_INIT_S if rates.get("init_billed") else 0.0
    warm_price = call_price(platform, memory, one, arch, pricing)
    cold_price = call_price(platform, memory, one + init, arch, pricing)
    worst = call_price(platform, memory, timeout + init, arch, pricing)
    n_worst = invocations(params, timeout)[0] * repetitions  # a ramp makes fewer calls of its timeout
    return {
        "platform": platform,
        "invocations": n,
        "cold_invocations": cold,
        "memory_mb": memory,
        "architecture": arch,
        "call_s": one,
        "gb_seconds": (n - cold) * warm_price["gb_seconds"] + cold * cold_price["gb_seconds"],
        "price": (n - cold) * warm_price["price"] + cold * cold_price["price"],
        "price_ceiling": n_worst * worst["price"],
    }


def _empty_row() -> dict[str, Any]:
    return {
        "benchmarks": 0,
        "invocations": 0,
        "gb_seconds": 0.0,
        "price": 0.0,
        "price_ceiling": 0.0,
        "emulator_only": 0,
    }


def plan_cost(benchmarks: list[Any], pricing: Pricing | None = None) -> dict[str, dict[str, Any]]:
    """Per platform: the faas benchmarks that would run there and their summed cost."""
    pricing = pricing or load_pricing()
    out: dict[str, dict[str, Any]] = {}
    for b in benchmarks:
        if b.type != "faas":
            continue
        platform = platform_of(str(b.params.get("profile", "aws-lambda")))
        if platform is None:
            continue
        if emulator_only(b.params):
            row = out.setdefault(platform, _empty_row())
            row["emulator_only"] += 1
            continue
        reps = b.adaptive.max if getattr(b, "adaptive", None) else b.repetitions
        cost = benchmark_cost(b.params, reps, platform, pricing)
        row = out.setdefault(platform, _empty_row())
        row["benchmarks"] += 1
        for key in ("invocations", "gb_seconds", "price", "price_ceiling"):
            row[key] += cost[key]
    for platform, row in out.items():
        rates = pricing.rates(platform)
        row.update(currency=pricing.currency, pricing_date=pricing.date, source=rates["source"])
    return out
