"""The analysis of a report's comparisons as one family: pooled spreads, simultaneous intervals,
decisions.

Input: one :class:`Cell` per comparison (pair of labels) and metric, with its two sides and its
unpooled estimate (``inference.estimate``). Steps:

1. **Pooling** (``pooling.moderate``): within one comparison, the spreads of the same variance part
   (side a's machines, side b's machines, side a's runs, the pairs ...) are pooled over the metrics
   of one family (primary with primary, secondary with secondary), where their spreads are
   homogeneous. Each estimate's se and df follow (Welch-Satterthwaite over its parts).
2. **Family** (``family``): the primary cells' intervals share one simultaneous z critical value,
   max-T over blocks (a comparison's machine-level metrics measured on the same machines form one
   block, with their correlation estimated from the machines' residuals and shrunk; everything else
   is independent); each cell's t critical value is that z's tail on its own df. Secondary cells get
   95 % intervals.
3. **Decision** (``inference.decide``) read from each printed interval.

``compare.compare`` runs it on a report's observations; ``design`` and ``sequential`` run it on
simulated sides, so the planner's power is the power of this very analysis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from testbed_reports import dist, family, pooling
from testbed_reports.inference import ALPHA, Decision, Estimate, Side, decide

#: z of an unadjusted 95 % interval (secondary metrics)
Z95 = float(dist.norm.isf(ALPHA / 2))


@dataclass
class Cell:
    """One comparison (``pair``, its name) x metric: its sides and its unpooled estimate."""

    pair: str
    bench: str
    metric: str
    better: str
    primary: bool
    margin: float
    side_a: Side
    side_b: Side
    est: Estimate


@dataclass
class Outcome:
    """A cell's pooled estimate, its interval's critical value and level, and the decision."""

    est: Estimate
    dec: Decision
    crit: float  # t critical value of the printed interval
    level: float  # per-interval confidence level, %
    alpha: float  # per-interval alpha (1 - level / 100)
    p_adjusted: float  # the family's single-step max-T adjusted p (secondary: the unadjusted p)


def pool(cells: Sequence[Cell]) -> list[Estimate]:
    """Each cell's estimate with its spreads pooled over its comparison's metrics of its family."""
    groups: dict[tuple, list[tuple[int, int]]] = {}
    for i, c in enumerate(cells):
        if not c.est.ok:
            continue
        for j, part in enumerate(c.est.parts):
            if part.pool:
                groups.setdefault((c.pair, c.primary, part.pool, part.unit), []).append((i, j))
    parts = [list(c.est.parts) for c in cells]
    notes: list[dict[str, str]] = [{} for _ in cells]
    for (_, _, name, unit), members in groups.items():
        s2 = np.array([cells[i].est.parts[j].s2 for i, j in members])
        d = np.array([cells[i].est.parts[j].df for i, j in members])
        new_s2, new_d, info = pooling.moderate(s2, d)
        for (i, j), v, dd in zip(members, new_s2, new_d, strict=True):
            old = parts[i][j]
            parts[i][j] = type(old)(float(v), float(dd), old.coef, old.pool, old.unit)
            notes[i][name] = info.describe(unit)
    out = []
    for c, ps, note in zip(cells, parts, notes, strict=True):
        if not c.est.ok:
            out.append(c.est)
            continue
        text = "; ".join(f"{_side_name(k)}: {v}" for k, v in sorted(note.items()) if v)
        out.append(c.est.with_parts(ps, text))
    return out


def _side_name(key: str) -> str:
    return {"a": "side a", "b": "side b", "pair": "pairs"}.get(key, key)


def blocks(
    cells: Sequence[Cell], ests: Sequence[Estimate], members: Sequence[int]
) -> tuple[list[list[int]], list[np.ndarray]]:
    """The family's max-T blocks: groups of member indices and each group's correlation matrix.

    Machine-level cells of one comparison on the same machines form a block whose correlation is
    estimated from the machines' residual means (both sides, each centred) and shrunk toward the
    identity; every other cell is a block of its own.
    """
    by_machines: dict[tuple, list[int]] = {}
    singles: list[int] = []
    for i in members:
        c = cells[i]
        if ests[i].unit == "machine":
            key = (c.pair, tuple(c.side_a.hosts), tuple(c.side_b.hosts))
            by_machines.setdefault(key, []).append(i)
        else:
            singles.append(i)
    groups: list[list[int]] = []
    mats: list[np.ndarray] = []
    for idx in by_machines.values():
        if len(idx) < 2:
            singles += idx
            continue
        res = np.column_stack(
            [
                np.concatenate(
                    [
                        cells[i].side_a.mean - cells[i].side_a.mean.mean(),
                        cells[i].side_b.mean - cells[i].side_b.mean.mean(),
                    ]
                )
                for i in idx
            ]
        )
        ka, kb = cells[idx[0]].side_a.machines, cells[idx[0]].side_b.machines
        r, _ = family.shrunk_correlation(res, ka + kb - 2)
        groups.append(idx)
        mats.append(r)
    for i in singles:
        groups.append([i])
        mats.append(np.eye(1))
    return groups, mats


def analyse(cells: Sequence[Cell], alpha: float = ALPHA, z: float | None = None) -> list[Outcome]:
    """Pool, take the family's critical value, decide: one outcome per cell (same order).

    ``z``: the primary metrics' z critical value given (a sequential look's boundary) instead of the
    family's max-T one.
    """
    ests = pool(cells)
    prim = [i for i, c in enumerate(cells) if c.primary and ests[i].ok]
    groups, mats = blocks(cells, ests, prim)
    maxt = family.MaxT(mats)
    if z is None:
        z = maxt.z(alpha) if prim else Z95
    ok = np.array([e.ok for e in ests], dtype=bool)
    df = np.array([e.df if e.ok else np.nan for e in ests], dtype=float)
    zc = np.array([z if c.primary else Z95 for c in cells], dtype=float)
    crit = np.where(ok, family.t_critical_each(zc, df), np.nan)
    order = [i for g in groups for i in g]
    z_obs = _z_of([ests[i] for i in order])
    p_adj = dict(zip(order, maxt.adjusted_p(z_obs), strict=True)) if order else {}
    out = []
    for i, c in enumerate(cells):
        est = ests[i]
        lvl = family.level(float(zc[i]))
        dec = decide(est, c.better, 1 - lvl / 100, c.margin, crit=float(crit[i]) if est.ok else None)
        p = float(p_adj.get(i, dec.p)) if c.primary else dec.p
        out.append(Outcome(est, dec, float(crit[i]), lvl, 1 - lvl / 100, p))
    return out


def _z_of(ests: Sequence[Estimate]) -> np.ndarray:
    """Per estimate the |z| with the same two-sided tail as its |t| on its df."""
    if not ests:
        return np.zeros(0)
    diff = np.array([e.diff for e in ests], dtype=float)
    se = np.array([e.se for e in ests], dtype=float)
    df = np.array([e.df for e in ests], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(diff) / se
    t = np.where(se > 0, t, np.where(diff != 0, np.inf, 0.0))
    tail = np.where(np.isfinite(df), dist.t.sf(t, np.where(np.isfinite(df), df, 1.0)), dist.norm.sf(t))
    return np.where(tail > 0, dist.norm.isf(tail), np.inf)
