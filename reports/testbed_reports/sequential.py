"""Sequential over machines: add machines until the comparison is decided or the cost cap is reached.

A group-sequential design over looks ``K_1 < K_2 < ... <= K_max`` machines per label. At look j the
information fraction is ``t_j = K_j / K_max``; the family's 5 % is split over its m primary metrics
(Bonferroni, ``alpha / m`` each), and each metric's share is spent over the looks by the
Lan-DeMets O'Brien-Fleming function ``alpha*(t) = 2 - 2 Phi(z_(1 - a/2) / sqrt(t))`` (little early,
most at the end). The boundaries ``c_j`` are exact for a Brownian score: ``P(|Z_1| < c_1, ...,
|Z_(j-1)| < c_(j-1), |Z_j| >= c_j) = alpha*(t_j) - alpha*(t_(j-1))`` under no difference, computed
by numerical integration of the score's density over the continuation region (Armitage, McPherson
& Rowe 1969), whatever looks came before; unplanned looks are fine as long as ``K_max`` is fixed.

At each look the report's own analysis (``analysis.analyse``: pooled spreads, machine means) is
read at the boundary instead of the one-look critical value: each primary metric's interval is its
*repeated confidence interval* (Jennison & Turnbull 1989; z boundary mapped to its t on its df), and
its decision is read from that interval as always. Repeated intervals cover their truths
simultaneously over all looks, so coverage and family-wise error hold however the stopping is
decided from the data. Rule: **stop** when every primary metric is decided (slower, faster or
equivalent) or the look is at ``K_max``; else **continue** and add machines.

:func:`look_at` is the function the orchestration calls after each batch; ``testbed-report
sequential`` is its command (docs/report.md, *Sequential over machines*).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from testbed_reports import dist, wording
from testbed_reports.analysis import Cell, Outcome, analyse
from testbed_reports.compare import cells, parse_pairs
from testbed_reports.errors import ReportError
from testbed_reports.inference import ALPHA, DEFAULT_MARGIN
from testbed_reports.load import load
from testbed_reports.stats import describe

#: points of the integration grid over the continuation region
GRID = 801


def spent(t: float, alpha: float) -> float:
    """Lan-DeMets O'Brien-Fleming alpha spent by information fraction ``t`` (two-sided ``alpha``)."""
    if t <= 0:
        return 0.0
    t = min(t, 1.0)
    return float(2 * dist.norm.sf(dist.norm.isf(alpha / 2) / math.sqrt(t)))


@lru_cache(maxsize=256)
def boundaries(fractions: tuple[float, ...], alpha: float) -> tuple[float, ...]:
    """Two-sided z boundaries ``c_j`` at the information fractions (increasing, in (0, 1])."""
    if not fractions or any(b <= a for a, b in itertools.pairwise(fractions)):
        raise ValueError(f"information fractions must increase: {fractions}")
    out: list[float] = []
    grid = None  # score values and the sub-density of the score continuing past the last look
    dens = None
    prev_t = 0.0
    for t in fractions:
        target = spent(t, alpha) - spent(prev_t, alpha)
        step = t - prev_t
        if grid is None:

            def exit_prob(c: float, t: float = t) -> float:
                return float(2 * dist.norm.sf(c))

        else:

            def exit_prob(c: float, t: float = t, step: float = step, g=grid, f=dens) -> float:
                hi = c * math.sqrt(t)
                # P(continued so far and |S_t| >= hi): integrate the continued density forward
                tail = dist.norm.sf((hi - g) / math.sqrt(step)) + dist.norm.cdf((-hi - g) / math.sqrt(step))
                return float(np.trapezoid(f * tail, g))

        c = _solve(exit_prob, target)
        out.append(c)
        hi = c * math.sqrt(t)
        new_grid = np.linspace(-hi, hi, GRID)
        if grid is None:
            dens = dist.norm.pdf(new_grid / math.sqrt(t)) / math.sqrt(t)
        else:
            kern = dist.norm.pdf((new_grid[:, None] - grid[None, :]) / math.sqrt(step)) / math.sqrt(step)
            dens = np.trapezoid(kern * dens[None, :], grid, axis=1)
        grid = new_grid
        prev_t = t
    return tuple(out)


def _solve(exit_prob, target: float) -> float:
    """The c with exit_prob(c) = target (exit_prob decreases in c), by bisection on [0, 40]."""
    if target <= 0:
        return math.inf
    lo, hi = 0.0, 40.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if exit_prob(mid) > target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-9:
            break
    return (lo + hi) / 2


def metric_alpha(metrics: int, alpha: float = ALPHA) -> float:
    """Each primary metric's share of the family's alpha (Bonferroni)."""
    return alpha / max(metrics, 1)


def fractions(looks: Sequence[int], max_machines: int) -> tuple[float, ...]:
    """Information fractions of the looks (machines per label over the cap)."""
    return tuple(min(k / max_machines, 1.0) for k in looks)


def read(cells: Sequence[Cell], looks: Sequence[int], max_machines: int) -> tuple[list[Outcome], float]:
    """The outcomes of the last look (repeated confidence intervals and decisions) and its boundary."""
    m = sum(1 for c in cells if c.primary and c.est.ok)
    c = boundaries(fractions(looks, max_machines), metric_alpha(m))[-1]
    return analyse(cells, z=c), c


@dataclass
class Look:
    """One look: what to do, and the primary metrics' repeated intervals and decisions."""

    action: str  # "stop" or "continue"
    why: str
    machines: int
    max_machines: int
    boundary: float
    rows: list[dict] = field(default_factory=list)

    def summary(self) -> str:
        return f"{self.action}: {self.why}"

    def lines(self) -> list[str]:
        return [r["sentence"] for r in self.rows]

    def as_dict(self) -> dict:
        return {
            "action": self.action,
            "why": self.why,
            "machines_per_label": self.machines,
            "max_machines_per_label": self.max_machines,
            "boundary_z": self.boundary,
            "metrics": self.rows,
        }


def decide_look(cells: Sequence[Cell], looks: Sequence[int], max_machines: int) -> Look:
    """Continue or stop after the last of ``looks`` (the data of ``cells``), with the decisions."""
    outcomes, c = read(cells, looks, max_machines)
    rows = []
    for cell, o in zip(cells, outcomes, strict=True):
        if not cell.primary:
            continue
        rows.append(
            {
                "benchmark": cell.bench,
                "metric": cell.metric,
                "decision": o.dec.decision,
                "overhead_percent": o.dec.overhead,
                "rci_low": o.dec.lo,
                "rci_high": o.dec.hi,
                "rci_level": o.level,
                "sentence": f"{cell.bench} {cell.metric}: {wording.outcome('a', 'b', o.dec, cell.margin)}",
            }
        )
    open_ = [r for r in rows if r["decision"] == "inconclusive"]
    k = looks[-1]
    if not rows:
        return Look("stop", "no primary metric to compare", k, max_machines, c, rows)
    if not open_:
        return Look(
            "stop",
            f"all {len(rows)} primary metrics decided at {k} machines per label",
            k,
            max_machines,
            c,
            rows,
        )
    if k >= max_machines:
        return Look(
            "stop",
            f"the cost cap ({max_machines} machines per label) is reached; {len(open_)} of {len(rows)} "
            "primary metrics stay inconclusive",
            k,
            max_machines,
            c,
            rows,
        )
    step = k - looks[-2] if len(looks) > 1 else k
    nxt = min(k + step, max_machines)
    return Look(
        "continue",
        f"{len(open_)} of {len(rows)} primary metrics undecided at {k} machines per label; add "
        f"{nxt - k} machines per label (next look at {nxt})",
        k,
        max_machines,
        c,
        rows,
    )


def parse_looks(text: str, max_machines: int) -> list[int]:
    """``--looks 3,6``: machines per label at each look so far, increasing, up to the cap."""
    try:
        looks = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        looks = []
    if not looks or any(b <= a for a, b in itertools.pairwise(looks)) or looks[0] < 2:
        raise ReportError(f"--looks {text!r}: expected increasing machines per label, from 2 (e.g. 3,6)")
    if max_machines < looks[-1]:
        raise ReportError(
            f"--max-machines {max_machines}: below the last look ({looks[-1]} machines per label)"
        )
    return looks


def look_at(
    results: Sequence[Path], spec: str, looks_text: str, max_machines: int, margin: float = DEFAULT_MARGIN
) -> Look:
    """Read the results so far and take the look (``testbed-report sequential``)."""

    looks = parse_looks(looks_text, max_machines)
    ds = load(results)
    labels = sorted({str(x) for x in ds.obs["label"].unique()})
    (pair,) = parse_pairs([spec], labels)
    todo = [c.cell for c in cells(ds.obs, describe(ds.obs), [pair], margin)]
    seen = {min(c.side_a.machines, c.side_b.machines) for c in todo if c.primary}
    if not todo or seen != {looks[-1]}:
        got = ", ".join(map(str, sorted(seen))) or "none"
        raise ReportError(
            f"--looks {looks_text}: this look is at {looks[-1]} machines per label, the results hold {got}",
            "give the machines per label of every look so far, this one last",
        )
    return decide_look(todo, looks, max_machines)
