"""Rebuilt numbers of the VM studies (S2, S4): a rerun's value with its interval beside the paper's.

Two kinds of cell. A **level** (a machine's time, a bandwidth): the summary of the rerun's runs
by :func:`testbed_shared.intervals.describe` (for a positive quantity the geometric mean with its
log-scale t interval; the unit of replication is the run, so one run gives no interval). An
**overhead** of one side over another (a confidential VM over its twin, Hyper-V over KVM): the
ratio of geometric means with the calibrated Welch interval and decision of
:mod:`testbed_reports.inference` (estimand, unit and error control as documented there), shown
in percent with a slowdown positive; the paper's own point value (its formula, e.g. S4's eq. 1)
stands beside it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import pandas as pd

from testbed_reports import inference
from testbed_reports.study.view import Cell, printed_half_unit
from testbed_shared.intervals import describe
from testbed_shared.studies import Published

NAN = float("nan")


def level(
    values: Iterable[float], paper: Published | None = None, scale: float = 1.0, note: str = ""
) -> Cell:
    """The runs ``values`` (times ``scale``) summarised with their 95 % interval (none from one run)."""
    v = [x * scale for x in values if x is not None and math.isfinite(x)]
    if not v:
        return Cell(None, paper=paper, note=note or "no rerun value")
    s = describe(v)
    centre = s["geomean"] if s["ci_scale"] == "log" else s["mean"]
    what = "geometric mean" if s["ci_scale"] == "log" else "mean"
    if len(v) < 2:
        return Cell(
            centre, paper=paper, note=f"one run: no interval{'; ' + note if note else ''}", estimand=what
        )
    return Cell(
        centre,
        s["ci_low"],
        s["ci_high"],
        paper=paper,
        note=f"{what} of {len(v)} runs, log-scale t 95 % CI{'; ' + note if note else ''}",
        estimand=what,
    )


@dataclass
class Overhead:
    """An overhead of side a over side b in percent, its calibrated interval and the decision."""

    point: float
    low: float
    high: float
    decision: str
    reason: str
    unit: str

    def cell(self, paper: Published | None = None) -> Cell:
        if not math.isfinite(self.point):
            return Cell(None, paper=paper, note=self.reason)
        low = self.low if math.isfinite(self.low) else None
        high = self.high if math.isfinite(self.high) else None
        return Cell(
            self.point,
            low,
            high,
            paper=paper,
            note=f"{self.decision}: {self.reason} (unit: {self.unit})",
            estimand="ratio of geometric means",
        )


def overhead(a: pd.DataFrame, b: pd.DataFrame, better: str = "lower") -> Overhead:
    """Overhead of ``a`` over ``b``: frames with columns host and value (one row per run)."""
    frame = pd.concat([a.assign(label="a"), b.assign(label="b")], ignore_index=True).assign(
        benchmark="x", metric="m"
    )
    if frame.empty or a.empty or b.empty:
        return Overhead(NAN, NAN, NAN, "inconclusive", "a side has no runs", "run")
    sides = inference.sides(frame[["benchmark", "metric", "label", "host", "value"]])
    sa, sb = sides.get(("x", "m", "a")), sides.get(("x", "m", "b"))
    if sa is None or sb is None:
        return Overhead(NAN, NAN, NAN, "inconclusive", "a side has no positive values", "run")
    est = inference.estimate(sa, sb)
    d = inference.decide(est, better, inference.ALPHA, inference.DEFAULT_MARGIN)
    if est.ok:
        point = float(inference.to_overhead(est.diff, better))
    elif sa.n.sum() and sb.n.sum() and not (sa.nonpositive or sb.nonpositive):
        # too few runs for an interval: the point ratio of geometric means alone
        point = float(inference.to_overhead(sa.pooled()[0] - sb.pooled()[0], better))
    else:
        point = NAN
    return Overhead(point, d.lo, d.hi, d.decision, d.reason, est.unit)


def derived(
    pid: str,
    source: str,
    value: float | None,
    formula: str,
    unit: str = "%",
    span: tuple[float, float] | None = None,
    not_comparable: str = "",
) -> Published | None:
    """A value the paper implies (``formula`` applied to its own printed numbers), as a Published
    that the views print as "derived VALUE = FORMULA", never as "paper". ``span``: the range the
    formula gives over the range each rounded input stands for (what a rerun is compared with);
    ``not_comparable``: an input's reason, which the derived value inherits."""
    if value is None or not math.isfinite(value):
        return None
    extra: dict[str, object] = {"derived": formula}
    if span is not None and all(math.isfinite(x) for x in span):
        extra["range"] = [min(span), max(span)]
    if not_comparable:
        extra["not_comparable"] = not_comparable
    return Published(pid, source, round(value, 4), unit, "derived", extra)


def eq1_span(hyperv: Published | None, kvm: Published | None) -> tuple[float, float] | None:
    """The range of eq. 1 over the ranges two rounded values stand for: the signed ratio's range
    folded at zero (eq. 1 is its absolute value, so a signed range across zero starts at 0)."""
    span = rounded_span(pct_over, hyperv, kvm)
    if span is None:
        return None
    lo, hi = span
    return (0.0, max(-lo, hi)) if lo <= 0 <= hi else (min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))


def rounded_span(f: Callable[..., float | None], *printed: Published | None) -> tuple[float, float] | None:
    """min and max of ``f`` over the corners of the ranges the printed values stand for (24.2 is
    [24.15, 24.25]): how far a formula of rounded numbers is known (``f`` monotone in each
    argument, as a difference or a ratio is)."""
    if any(p is None for p in printed):
        return None
    ranges = []
    for p in printed:
        v = float(p.value)  # type: ignore[union-attr]
        h = printed_half_unit(p.value)  # type: ignore[union-attr]
        ranges.append((v - h, v + h))
    values = [f(*corner) for corner in itertools.product(*ranges)]
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return (min(finite), max(finite)) if len(finite) == len(values) else None


def pct_over(a: float | None, b: float | None) -> float | None:
    """(a - b) / b x 100, the paper's ratio without its absolute value; None without both."""
    if a is None or b is None or b == 0:
        return None
    return (a - b) / b * 100.0


def eq1(hyperv: float | None, kvm: float | None) -> float | None:
    """S4's eq. 1 (S4 L175): |Hyper-V - KVM| / KVM x 100."""
    p = pct_over(hyperv, kvm)
    return None if p is None else abs(p)
