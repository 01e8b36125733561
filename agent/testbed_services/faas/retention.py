"""Retention models: how long an idle container, and a host, live before the platform reclaims
them. Each profile names its model and the published observations it follows
(``retention:`` in workloads/faas/profiles/*.yml); the emulator draws one value per container
(idle lifetime) and per host (total lifetime) from it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

MODELS = ("fixed", "exponential", "lognormal", "uniform", "never")


@dataclass(frozen=True)
class Retention:
    """One distribution of lifetimes in seconds; ``draw`` gives one lifetime (inf for ``never``)."""

    model: str = "never"
    value_s: float = math.inf
    median_s: float = 0.0
    sigma: float = 0.0
    mean_s: float = 0.0
    low_s: float = 0.0
    high_s: float = 0.0
    min_s: float = 0.0
    max_s: float = math.inf

    def draw(self, rng: random.Random) -> float:
        if self.model == "never":
            return math.inf
        if self.model == "fixed":
            x = self.value_s
        elif self.model == "exponential":
            x = rng.expovariate(1.0 / self.mean_s)
        elif self.model == "lognormal":
            x = rng.lognormvariate(math.log(self.median_s), self.sigma)
        else:
            x = rng.uniform(self.low_s, self.high_s)
        return min(max(x, self.min_s), self.max_s)

    def cdf(self, x: float) -> float:
        """P(lifetime <= x) of what ``draw`` gives: the model's distribution clipped to [min_s, max_s]."""
        if self.model == "never" or x < self.min_s:
            return 0.0
        if x >= self.max_s:
            return 1.0
        return self._model_cdf(x)

    def _model_cdf(self, x: float) -> float:
        """P(X <= x) of the unclipped model, for min_s <= x < max_s."""
        if self.model == "fixed":
            return float(x >= self.value_s)
        if self.model == "exponential":
            return 1.0 - math.exp(-max(x, 0.0) / self.mean_s)
        if self.model == "lognormal":
            if x <= 0 or not self.sigma:
                return float(x >= self.median_s)
            return 0.5 * (1 + math.erf(math.log(x / self.median_s) / (self.sigma * math.sqrt(2))))
        if self.high_s == self.low_s:
            return float(x >= self.low_s)
        return min(1.0, max(0.0, (x - self.low_s) / (self.high_s - self.low_s)))

    def survival(self, x: float) -> float:
        """P(lifetime > x): the share of containers (hosts) expected to outlive an idle gap of x s."""
        return 1.0 - self.cdf(x)

    def describe(self) -> dict[str, Any]:
        keys = {
            "never": (),
            "fixed": ("value_s",),
            "exponential": ("mean_s",),
            "lognormal": ("median_s", "sigma"),
            "uniform": ("low_s", "high_s"),
        }[self.model]
        out: dict[str, Any] = {"model": self.model, **{k: getattr(self, k) for k in keys}}
        if self.min_s:
            out["min_s"] = self.min_s
        if math.isfinite(self.max_s):
            out["max_s"] = self.max_s
        return out


def parse(doc: Any, where: str) -> Retention:
    """A :class:`Retention` from a profile's mapping (ValueError naming ``where`` otherwise)."""
    if doc is None:
        return Retention()
    if not isinstance(doc, dict):
        raise ValueError(f"{where} must be a mapping")
    model = doc.get("model")
    if model not in MODELS:
        raise ValueError(f"{where}.model must be one of {', '.join(MODELS)}, not {model!r}")
    need = {"fixed": ("value_s",), "exponential": ("mean_s",), "lognormal": ("median_s", "sigma")}
    need["uniform"], need["never"] = ("low_s", "high_s"), ()
    fields: dict[str, float] = {}
    for key in (*need[model], "min_s", "max_s"):
        if key not in doc:
            if key in need[model]:
                raise ValueError(f"{where}.{key} is required for model {model}")
            continue
        value = doc[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"{where}.{key} must be a number >= 0")
        fields[key] = float(value)
    if model in ("exponential", "lognormal") and not fields.get("mean_s", fields.get("median_s", 1)) > 0:
        raise ValueError(f"{where}: the mean/median must be > 0")
    if model == "uniform" and fields["low_s"] > fields["high_s"]:
        raise ValueError(f"{where}: low_s > high_s")
    return Retention(model=model, **fields)
