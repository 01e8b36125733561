"""The list prices of real FaaS calls: ``workloads/faas/pricing.yml`` (rates per platform, with
their date and source), and the rounding every platform bills a call's duration with. How a
platform turns them into a call's price is its own rule (:meth:`Platform.price`)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from testbed_services.faas import faas_dir
from testbed_shared.cost import rounded_seconds
from testbed_shared.errors import TestbedError


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


def billed_s(duration_s: float, rates: dict[str, Any]) -> float:
    """Duration rounded up to the platform's billing granularity, at least its minimum."""
    return rounded_seconds(
        duration_s, float(rates.get("granularity_ms", 1)), float(rates.get("minimum_ms", 0))
    )
