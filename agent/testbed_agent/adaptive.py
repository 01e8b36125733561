"""Adaptive repetitions: run a benchmark until the confidence interval of its primary metric is narrow.

A plan says ``repetitions: {min: 5, max: 30, target_ci_percent: 1}``: the runner executes at least
``min`` and at most ``max`` repetitions and stops as soon as the 95 % t interval of the mean of the
log values of every primary metric (the records say which: ``testbed_shared.records.primary_metrics``)
would have a half-width of at most ``target_ci_percent`` percent (``exp(t * s / sqrt(n)) - 1``) at a
*robust* spread s = 1.4826 x the median absolute deviation of the log values (the shared core's t,
``testbed_shared.intervals``).

Why robust: with the classical sd, a stop at ``min`` happened exactly when no rare slow run (an
outlier, a second mode) had occurred yet, so the stopped labels' means were biased against the
labels that went on; comparing two such labels covered the true overhead in 83 % of simulated data
sets with 10 % bimodal noise. The MAD hardly moves when a rare run occurs, so when the rule stops
no longer depends on whether one did, and comparisons of adaptively stopped labels cover at about
the nominal 95 % under normal, t3, 1-in-20 +50 % outlier and 10 % bimodal noise (measured by a
simulation that really stops adaptively: reports/tests/test_calibration_adaptive.py; figures in
docs/report.md). The report's intervals use the classical sd over all runs taken.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from testbed_shared.intervals import half_width, is_positive, relative_half_width_percent
from testbed_shared.records import primary_metrics

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
    """Half-width in percent of the t interval of the mean of ``log(values)`` (classical sd: the
    interval the report prints); None if undefined."""
    return relative_half_width_percent([float(v) for v in values], confidence)


def robust_half_width_percent(values: Iterable[float], confidence: float = 0.95) -> float | None:
    """The stopping rule's half-width: as :func:`half_width_percent` with the sd replaced by
    1.4826 x the median absolute deviation of the log values; None if undefined."""
    vals = [float(v) for v in values]
    if len(vals) < 2 or not is_positive(vals):
        return None
    logs = [math.log(v) for v in vals]
    centre = statistics.median(logs)
    mad = 1.4826 * statistics.median(abs(x - centre) for x in logs)
    return 100 * math.expm1(half_width(len(logs), mad, confidence))


def primary_values(btype: str, records: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Values of each primary metric over the ok records of one benchmark (a record without the
    ``primary`` field: by the frozen rule of ``btype``)."""
    oks = [r for r in records if r.get("status") == "ok"]
    names = sorted({n for r in oks for n in primary_metrics(r, btype)})
    return {n: [r["metrics"][n]["value"] for r in oks if n in (r.get("metrics") or {})] for n in names}


def decide(rule: Adaptive, btype: str, records: list[Mapping[str, Any]], executed: int) -> dict[str, Any]:
    """The rule's state after ``executed`` executions: n ok, widest half-width, and ``stop`` (a
    reason, or None to go on)."""
    per_metric = primary_values(btype, records)
    widths = {n: robust_half_width_percent(v, rule.confidence) for n, v in per_metric.items()}
    n_ok = min((len(v) for v in per_metric.values()), default=0)
    known = [w for w in widths.values() if w is not None]
    widest = max(known) if known and len(known) == len(widths) else None
    stop = None
    if executed >= rule.min:
        if not per_metric:
            stop = "no primary metric: ran min repetitions"
        elif widest is not None and n_ok >= rule.min and widest <= rule.target_ci_percent:
            stop = f"target reached: robust CI half-width {widest:.3g} % <= {rule.target_ci_percent:g} %"
    if stop is None and executed >= rule.max:
        shown = "n/a" if widest is None else f"{widest:.3g} %"
        stop = f"max reached: robust CI half-width {shown} > {rule.target_ci_percent:g} %"
    return {**rule.as_dict(), "n_ok": n_ok, "half_width_percent": widest, "stop": stop}
