"""FaaS cost model: GB-seconds and price per invocation from a price table."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class PriceTable:
    """Per-GB-second rates by architecture, a per-request fee and the billing granularity."""

    per_gb_second: dict[str, float]
    per_request: float = 0.0
    granularity_ms: float = 1.0
    minimum_ms: float = 0.0
    currency: str = "USD"
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PriceTable:
        rates = data.get("per_gb_second")
        if not isinstance(rates, dict) or not rates:
            raise ValueError("price table needs per_gb_second: {x86_64: rate, arm64: rate}")
        return cls(
            per_gb_second={str(k): float(v) for k, v in rates.items()},
            per_request=float(data.get("per_request", 0.0)),
            granularity_ms=float(data.get("granularity_ms", 1.0)),
            minimum_ms=float(data.get("minimum_ms", 0.0)),
            currency=str(data.get("currency", "USD")),
            source=str(data.get("source", "")),
        )


def billed_seconds(duration_s: float, table: PriceTable) -> float:
    """Duration rounded up to the billing granularity, at least the minimum."""
    return rounded_seconds(duration_s, table.granularity_ms, table.minimum_ms)


def rounded_seconds(duration_s: float, granularity_ms: float, minimum_ms: float) -> float:
    """``duration_s`` rounded up to a multiple of ``granularity_ms`` (none when 0), at least
    ``minimum_ms``: how FaaS platforms bill a call's duration."""
    ms = max(duration_s * 1000.0, minimum_ms)
    if granularity_ms > 0:
        ms = math.ceil(ms / granularity_ms - 1e-9) * granularity_ms
    return ms / 1000.0


def invocation_cost(
    memory_mb: float, duration_s: float, table: PriceTable, arch: str = "x86_64"
) -> dict[str, float]:
    """GB-seconds and price of one invocation (memory in MB of 2^20 bytes, GB = 1024 MB)."""
    if arch not in table.per_gb_second:
        raise ValueError(f"no per-GB-second rate for architecture {arch!r}")
    gb_s = memory_mb / 1024.0 * billed_seconds(duration_s, table)
    price = gb_s * table.per_gb_second[arch] + table.per_request
    return {"gb_seconds": gb_s, "price": price}


def cost_efficiency(throughput: float, price: float) -> float:
    """Throughput per unit of money (e.g. operations per USD); inf when free."""
    return math.inf if price <= 0 else throughput / price
