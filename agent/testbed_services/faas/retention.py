"""Retention models: how long an idle container, and a host, live before the platform reclaims
them, and how old a host already is when a function first lands on it. Each profile names its
model and the published observations it follows (``retention:`` in workloads/faas/profiles/*.yml,
with a ``sources:`` entry per parameter); the emulator draws one value per container (idle
lifetime) and per host (total lifetime, age at first use) from it.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

MODELS = ("fixed", "exponential", "lognormal", "uniform", "triangular", "never")


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
    mode_s: float = 0.0
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
        elif self.model == "triangular":
            x = rng.triangular(self.low_s, self.high_s, self.mode_s)
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
        if self.model == "triangular":
            return _triangular_cdf(x, self.low_s, self.mode_s, self.high_s)
        return min(1.0, max(0.0, (x - self.low_s) / (self.high_s - self.low_s)))

    def survival(self, x: float) -> float:
        """P(lifetime > x): the share of containers (hosts) expected to outlive an idle gap of x s."""
        return 1.0 - self.cdf(x)

    def mean(self) -> float:
        """Mean of the unclipped model (inf for ``never``)."""
        return {
            "never": math.inf,
            "fixed": self.value_s,
            "exponential": self.mean_s,
            "lognormal": self.median_s * math.exp(self.sigma**2 / 2),
            "uniform": (self.low_s + self.high_s) / 2,
            "triangular": (self.low_s + self.mode_s + self.high_s) / 3,
        }[self.model]

    def scaled(self, factor: float) -> Retention:
        """The same model with every time divided by ``factor`` (an emulator's time scale)."""
        if factor == 1:
            return self
        div = {
            k: getattr(self, k) / factor
            for k in ("value_s", "median_s", "mean_s", "low_s", "high_s", "mode_s", "min_s", "max_s")
        }
        return Retention(model=self.model, sigma=self.sigma, **div)

    def describe(self) -> dict[str, Any]:
        keys = {
            "never": (),
            "fixed": ("value_s",),
            "exponential": ("mean_s",),
            "lognormal": ("median_s", "sigma"),
            "uniform": ("low_s", "high_s"),
            "triangular": ("low_s", "mode_s", "high_s"),
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
    need["triangular"] = ("low_s", "mode_s", "high_s")
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
    if model == "triangular" and not fields["low_s"] <= fields["mode_s"] <= fields["high_s"]:
        raise ValueError(f"{where}: needs low_s <= mode_s <= high_s")
    return Retention(model=model, **fields)


def _triangular_cdf(x: float, low: float, mode: float, high: float) -> float:
    if x <= low:
        return 0.0
    if x >= high:
        return 1.0
    if x <= mode:
        return (x - low) ** 2 / ((high - low) * (mode - low))
    return 1.0 - (high - x) ** 2 / ((high - low) * (high - mode))
