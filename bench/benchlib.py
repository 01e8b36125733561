"""What every ``make bench`` script shares: a ratio with its interval and a decision, and progress.

Estimand of a paired bench: the geometric mean of the per-pair ratios a/b (the two arms run back to
back, in a seeded random order within each pair, so drift hits both). Unit of replication: the
pair. Interval: Student t on the per-pair log ratios, at the level the sequential rule spends per
look (Bonferroni over the planned looks, so stopping early at the first decided look keeps the
error rate at 5 %). The decision is the report's own (``testbed_reports.inference.decide``):
``equivalent`` within +-margin, ``slower``/``faster`` when the interval excludes 0, otherwise
``inconclusive`` ("not shown"), with the pairs that would resolve the margin. Every t interval here
comes from the one core, ``testbed_shared.intervals``; the quantile intervals are order statistics.
"""

from __future__ import annotations

import math
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from testbed_reports.inference import ALPHA, Decision, Estimate, Side, decide, estimate, signed
from testbed_shared.intervals import mean_interval as t_interval
from testbed_shared.intervals import moments, quantile_interval, t_quantile


@dataclass
class Ratio:
    """A ratio a/b with its interval and the decision against a margin."""

    what: str
    ratio: float
    lo: float
    hi: float
    level: float
    n: int
    decision: Decision
    margin: float
    unit: str = "pair"

    def line(self, target: str = "") -> str:
        words = {
            "equivalent": f"equivalent within +-{self.margin:g} %",
            "inconclusive": "not shown (inconclusive)",
        }.get(self.decision.decision, self.decision.decision)
        tail = f"   target: {target}" if target else ""
        return (
            f"  {self.what}: ratio {self.ratio:.4f} [{self.lo:.4f}, {self.hi:.4f}] "
            f"({self.level:.1%} interval, {self.n} {self.unit}s) -> {words}{tail}"
        )


def paired_ratio(
    a: Sequence[float],
    b: Sequence[float],
    what: str,
    margin: float,
    alpha: float = ALPHA,
    better: str = "higher",
) -> Ratio:
    """Geometric mean of a_i/b_i with a t interval on the log ratios, decided against +-margin %.

    ``better`` is the direction of the measured quantity (throughput: higher), so a ratio below 1
    of a throughput reads as ``slower``.
    """
    n, mean, sd = moments([math.log(x) - math.log(y) for x, y in zip(a, b, strict=True)])
    est = Estimate(
        diff=mean,
        se=sd / math.sqrt(n) if n > 1 else float("nan"),
        df=float(n - 1),
        unit="pair",
        spread=sd / math.sqrt(2) if n > 1 else float("nan"),
        per_side=n,
        reason="" if n > 1 else "too few pairs",
    )
    ratio, lo, hi = t_interval(n, mean, sd, 1 - alpha, log=True)
    return Ratio(what, ratio, lo, hi, 1 - alpha, n, decide(est, better, alpha, margin), margin)


def ratio_of_samples(
    a: Sequence[float], b: Sequence[float], what: str, margin: float, better: str, alpha: float = ALPHA
) -> Ratio:
    """Ratio of geometric means of two independent samples, Welch t on logs (the report's estimate)."""

    def side(x: Sequence[float]) -> Side:
        n, mean, sd = moments([math.log(v) for v in x])
        return Side(np.array([n]), np.array([mean]), np.array([sd]), 0, n)

    est = estimate(side(a), side(b))
    half = float(t_quantile(1 - alpha / 2, est.df)) * est.se if est.ok else math.nan
    return Ratio(
        what,
        math.exp(est.diff) if est.ok else math.nan,
        math.exp(est.diff - half) if est.ok else math.nan,
        math.exp(est.diff + half) if est.ok else math.nan,
        1 - alpha,
        min(len(a), len(b)),
        decide(est, better, alpha, margin),
        margin,
        "run",
    )


@dataclass
class AtLeast:
    """A ratio a/b (geometric mean of paired ratios, t interval on their logs) against a floor.

    ``met`` when the whole interval is at or above ``target``, ``not met`` when it is below,
    otherwise not shown, with the pairs that would decide at the observed spread."""

    what: str
    ratio: float
    lo: float
    hi: float
    level: float
    n: int
    target: float
    sd: float  # sd of a pair's log ratio

    @property
    def decision(self) -> str:
        if not (math.isfinite(self.lo) and math.isfinite(self.hi)):
            return "not shown"
        return "met" if self.lo >= self.target else "not met" if self.hi < self.target else "not shown"

    def needed(self) -> int | None:
        """Pairs whose interval at this spread would clear the floor (None: the ratio is on it)."""
        gap = abs(math.log(self.ratio / self.target)) if self.ratio > 0 else 0.0
        if not (gap > 0 and math.isfinite(self.sd)):
            return None
        if self.sd == 0:
            return 2
        n = 2
        while n < 10**6:
            if float(t_quantile(1 - (1 - self.level) / 2, n - 1)) * self.sd / math.sqrt(n) < gap:
                return n
            n = max(n + 1, int(n * 1.2))
        return None

    def words(self) -> str:
        if self.decision != "not shown":
            return f"{self.decision} (target: at least {self.target:g})"
        more = self.needed()
        tail = f"; about {more} would decide at this spread" if more else ""
        return f"not shown after {self.n} {('rounds' if self.n != 1 else 'round')}{tail}"

    def line(self) -> str:
        return (
            f"{self.ratio:.3f} [{self.lo:.3f}, {self.hi:.3f}] ({self.level:.1%} interval, {self.n} rounds)"
            f" -> {self.words()}"
        )


def at_least(
    a: Sequence[float], b: Sequence[float], what: str, target: float, alpha: float = ALPHA
) -> AtLeast:
    """Paired ratio a_i/b_i against the floor ``target`` (see :class:`AtLeast`)."""
    n, mean, sd = moments([math.log(x) - math.log(y) for x, y in zip(a, b, strict=True)])
    ratio, lo, hi = t_interval(n, mean, sd, 1 - alpha, log=True)
    return AtLeast(what, ratio, lo, hi, 1 - alpha, n, target, sd)


def geo_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Geometric mean of positive values with a t interval on their logs (never crosses zero)."""
    return t_interval(*moments([math.log(v) for v in values]), level, log=True)


def paired_interval(
    a: Sequence[float], b: Sequence[float], level: float = 0.95
) -> tuple[float, float, float]:
    """The ratio a_i/b_i pair by pair: geometric mean with a t interval on the pairs' log ratios."""
    return geo_interval([x / y for x, y in zip(a, b, strict=True)], level)


def mean_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Mean with its Student t interval."""
    return t_interval(*moments([float(v) for v in values]), level)


def bracket(lo: float, hi: float, digits: int = 2) -> str:
    """An interval as printed: "[lo, hi]", or "[no interval: too few runs]" when it has no bounds."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "[no interval: too few runs]"
    return f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def against(
    lo: float, hi: float, below: float | None = None, within: tuple[float, float] | None = None
) -> str:
    """The decision an interval [lo, hi] gives against a target: "met", "not met" or "not shown".

    ``below``: the target is "less than this" (met when the whole interval is below it, not met when
    the whole interval is above it). ``within``: the target is a band (met when the interval lies
    inside it, not met when it lies outside it).
    """
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "not shown (too few runs for an interval)"
    if below is not None:
        return "met" if hi < below else "not met" if lo > below else "not shown (interval spans the target)"
    assert within is not None
    a, b = within
    if a <= lo and hi <= b:
        return "met"
    if hi < a or lo > b:
        return "not met"
    return "not shown (interval spans the target's edge)"


def looks(first: int, cap: int, every: int) -> list[int]:
    """The planned looks of a sequential bench: first, first+every, ..., and the cap."""
    out = list(range(first, cap, every))
    return [*out, cap] if not out or out[-1] != cap else out


class Progress:
    """One line per step with the elapsed time and an estimate of what is left (plain text, so
    it shows under ``| tee`` and in CI logs)."""

    def __init__(self, what: str, total: int) -> None:
        self.what, self.total, self.start, self.done = what, total, time.monotonic(), 0

    def step(self, note: str = "") -> None:
        self.done += 1
        spent = time.monotonic() - self.start
        left = spent / self.done * (self.total - self.done)
        print(
            f"  [{self.what} {self.done}/{self.total}] {note}  elapsed {_dur(spent)}, about {_dur(left)} left"
            " (at most)",
            flush=True,
        )


class OthersCpu:
    """The CPU time processes outside this bench used while it ran, as a share of the machine.

    The load average counts the bench's own busy processes (a kernel and its client make it 2 on
    2 CPUs), so it cannot say whether a machine was quiet. This takes the busy time of all CPUs
    (/proc/stat: user, nice, system, irq, softirq, steal) and subtracts this process's and its
    reaped children's CPU time (``os.times``): what is left is the others' work. Call
    :meth:`share` after the bench's children are reaped."""

    def __init__(self) -> None:
        self.start = self._now()

    @staticmethod
    def _now() -> tuple[float, float, float]:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        tick = os.sysconf("SC_CLK_TCK")
        busy = (fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]) / tick
        t = os.times()
        return time.monotonic(), busy, t.user + t.system + t.children_user + t.children_system

    def share(self) -> float:
        """The others' CPU time since this was made, as a fraction of all CPUs' wall time."""
        now = self._now()
        wall = (now[0] - self.start[0]) * (os.cpu_count() or 1)
        return max(0.0, (now[1] - self.start[1]) - (now[2] - self.start[2])) / wall if wall > 0 else 0.0


def _dur(s: float) -> str:
    s = max(0, round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def headline(text: str) -> None:
    print(text, flush=True)
    sys.stdout.flush()


__all__ = [
    "AtLeast",
    "OthersCpu",
    "Progress",
    "Ratio",
    "against",
    "at_least",
    "geo_interval",
    "headline",
    "looks",
    "mean_interval",
    "paired_ratio",
    "quantile_interval",
    "ratio_of_samples",
    "signed",
]
