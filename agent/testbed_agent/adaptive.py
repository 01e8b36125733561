"""Adaptive repetitions: run a benchmark until the confidence interval of its primary metric is narrow.

A plan says ``repetitions: {min: 5, max: 30, target_ci_percent: 1}``: the runner executes at least
``min`` and at most ``max`` repetitions and stops as soon as the 95 % t-interval of the mean of the
log values of every primary metric (workloads.primary_metrics) has a half-width of at most
``target_ci_percent`` percent (``exp(t * sd / sqrt(n)) - 1``). Interval on the log scale, because
overheads are ratios; the stopping rule's coverage at stop is measured by a seeded simulation
(agent/tests/test_adaptive.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from testbed_agent.workloads import primary_metrics

MAX_REPETITIONS = 10_000
_KEYS = ("min", "max", "target_ci_percent")


class RepetitionsError(ValueError):
    """A ``repetitions`` value that cannot be used; ``field`` names the offending key."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class Adaptive:
    """The adaptive rule of one benchmark."""

    min: int
    max: int
    target_ci_percent: float
    confidence: float = 0.95

    def as_dict(self) -> dict[str, Any]:
        return {"min": self.min, "max": self.max, "target_ci_percent": self.target_ci_percent}


def _count(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise RepetitionsError(field, f"expected a whole number, got {value!r}")
    if not 1 <= value <= MAX_REPETITIONS:
        raise RepetitionsError(field, f"must be between 1 and {MAX_REPETITIONS}, got {value!r}")
    return value


def parse_repetitions(value: Any, where: str = "repetitions") -> tuple[int, Adaptive | None]:
    """``(repetitions, adaptive)`` of a plan's value: a count, or a mapping min/max/target_ci_percent.

    ``repetitions`` is the most the benchmark can run (``max`` for adaptive ones).
    """
    if not isinstance(value, Mapping):
        return _count(value, where), None
    extra = sorted(str(k) for k in value if k not in _KEYS and not str(k).startswith("__"))
    if extra:
        raise RepetitionsError(
            f"{where}.{extra[0]}", "unknown key (adaptive repetitions take min, max, target_ci_percent)"
        )
    missing = [k for k in _KEYS if k not in value]
    if missing:
        raise RepetitionsError(f"{where}.{missing[0]}", "is required for adaptive repetitions")
    lo = _count(value["min"], f"{where}.min")
    hi = _count(value["max"], f"{where}.max")
    if lo < 2:
        raise RepetitionsError(f"{where}.min", f"must be >= 2 (an interval needs two runs), got {lo}")
    if hi < lo:
        raise RepetitionsError(f"{where}.max", f"must be >= min ({lo}), got {hi}")
    target = value["target_ci_percent"]
    if isinstance(target, bool) or not isinstance(target, int | float) or not math.isfinite(target):
        raise RepetitionsError(f"{where}.target_ci_percent", f"expected a number, got {target!r}")
    if not 0 < target < 100:
        raise RepetitionsError(f"{where}.target_ci_percent", f"must be > 0 and < 100, got {target!r}")
    return hi, Adaptive(lo, hi, float(target))


def half_width_percent(values: Iterable[float], confidence: float = 0.95) -> float | None:
    """Half-width in percent of the t-interval of the mean of ``log(values)``; None if undefined."""
    from scipy.stats import t

    vals = [float(v) for v in values]
    if len(vals) < 2 or any(not math.isfinite(v) or v <= 0 for v in vals):
        return None
    logs = [math.log(v) for v in vals]
    mean = math.fsum(logs) / len(logs)
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
    hw = float(t.ppf(0.5 + confidence / 2, len(logs) - 1)) * sd / math.sqrt(len(logs))
    return math.expm1(hw) * 100


def primary_values(btype: str, records: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Values of each primary metric over the ok records of one benchmark."""
    oks = [r for r in records if r.get("status") == "ok"]
    names = primary_metrics(btype, {n for r in oks for n in (r.get("metrics") or {})})
    return {n: [r["metrics"][n]["value"] for r in oks if n in (r.get("metrics") or {})] for n in names}


def decide(rule: Adaptive, btype: str, records: list[Mapping[str, Any]], executed: int) -> dict[str, Any]:
    """The rule's state after ``executed`` executions: n ok, widest half-width, and ``stop`` (a
    reason, or None to go on)."""
    per_metric = primary_values(btype, records)
    widths = {n: half_width_percent(v, rule.confidence) for n, v in per_metric.items()}
    n_ok = min((len(v) for v in per_metric.values()), default=0)
    known = [w for w in widths.values() if w is not None]
    widest = max(known) if known and len(known) == len(widths) else None
    stop = None
    if executed >= rule.min:
        if not per_metric:
            stop = "no primary metric: ran min repetitions"
        elif widest is not None and n_ok >= rule.min and widest <= rule.target_ci_percent:
            stop = f"target reached: CI half-width {widest:.3g} % <= {rule.target_ci_percent:g} %"
    if stop is None and executed >= rule.max:
        shown = "n/a" if widest is None else f"{widest:.3g} %"
        stop = f"max reached: CI half-width {shown} > {rule.target_ci_percent:g} %"
    return {**rule.as_dict(), "n_ok": n_ok, "half_width_percent": widest, "stop": stop}
