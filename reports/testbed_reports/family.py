"""Simultaneous intervals for the primary family: a single-step max-T critical value.

The primary metrics of all comparisons of a report form one family; each of its intervals is
printed at the simultaneous level, so the chance that any of them misses its truth (and so of any
false slower/faster/equivalent read from them) is at most :data:`ALPHA`. The critical value is
taken on the z scale, the quantile ``c`` of ``max |Z_g|`` with ``Z`` multivariate normal with the
estimates' correlation ``R``, and mapped to each metric's own t (``t_g = F_t^-1(Phi(c), df_g)``),
so metrics with few df get a wider interval at the same simultaneous level.

``R`` is block-diagonal: comparisons on different labels are independent, and inside a comparison
of machine means the correlation between metrics (a machine faster on one benchmark is often faster
on others: a machine-wide effect) is estimated from the machines' residuals and shrunk toward the
identity (Schafer & Strimmer 2005, target I): with few machines the estimate is mostly noise and
the shrinkage takes it back to independence. With ``R = I`` the value is Sidak's,
``Phi^-1(1 - (1 - (1 - alpha)^(1/m)) / 2)``, a hair below Bonferroni's; with correlated metrics it
is smaller (25 metrics at correlation 0.5: 2.9 instead of 3.1). Any correlation set to zero where it
is not can only make ``c`` larger (Sidak's inequality), never the error rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from testbed_reports import dist

ALPHA = 0.05
#: Monte Carlo draws of max |Z| (seeded: the same report gives the same critical value)
DRAWS = 10_000
SEED = 34


def sidak_z(m: int, alpha: float = ALPHA) -> float:
    """Two-sided simultaneous z critical value for ``m`` independent estimates."""
    if m <= 0:
        return float("nan")
    return float(dist.norm.isf((1 - (1 - alpha) ** (1 / m)) / 2))


def shrunk_correlation(residuals: np.ndarray, df: int | None = None) -> tuple[np.ndarray, float]:
    """Correlation of the columns of ``residuals`` (units x metrics, each column centred within its
    groups: ``df`` degrees of freedom, default units - 1), shrunk toward the identity; and the
    shrinkage weight (1: the identity).

    Schafer-Strimmer: lambda = sum Var(r_ij) / sum r_ij^2 over i != j, with Var(r_ij) estimated
    from the spread of the products of the standardised residuals.
    """
    x = np.asarray(residuals, dtype=float)
    n, m = x.shape
    df = n - 1 if df is None else df
    if m < 2 or df < 2:
        return np.eye(m), 1.0
    sd = np.sqrt((x * x).sum(axis=0) / df)
    ok = sd > 0
    w = np.zeros_like(x)
    w[:, ok] = x[:, ok] / sd[ok]
    prod = w[:, :, None] * w[:, None, :]  # units x m x m
    r = prod.sum(axis=0) / df
    wbar = prod.mean(axis=0)
    var_r = n / df**3 * ((prod - wbar) ** 2).sum(axis=0)
    off = ~np.eye(m, dtype=bool) & ok[:, None] & ok[None, :]
    denom = float((r[off] ** 2).sum())
    lam = 1.0 if denom <= 0 else min(1.0, max(0.0, float(var_r[off].sum()) / denom))
    out = np.where(off, np.clip((1 - lam) * r, -1.0, 1.0), 0.0)
    np.fill_diagonal(out, 1.0)
    return out, lam


class MaxT:
    """The distribution of max |Z| over independent blocks of correlated normals (``blocks``: one
    correlation matrix each): Sidak's closed form when every block is the identity, else
    :data:`DRAWS` seeded Monte Carlo draws, taken once."""

    def __init__(self, blocks: Sequence[np.ndarray]) -> None:
        self.m = sum(len(b) for b in blocks)
        self.identity = all(np.allclose(b, np.eye(len(b))) for b in blocks)
        self.draws = None if self.identity or self.m == 0 else np.sort(_max_abs(blocks))

    def z(self, alpha: float = ALPHA) -> float:
        """The (1 - alpha) quantile: the family's z critical value."""
        if self.m == 0:
            return float("nan")
        if self.draws is None:
            return sidak_z(self.m, alpha)
        return float(np.quantile(self.draws, 1 - alpha))

    def adjusted_p(self, z_abs: np.ndarray) -> np.ndarray:
        """Single-step adjusted p of each |z|: the chance of a family maximum at least as large."""
        z_abs = np.asarray(z_abs, dtype=float)
        if self.m == 0:
            return np.full(len(z_abs), np.nan)
        if self.draws is None:
            p = np.minimum(2 * dist.norm.sf(z_abs), 1.0)
            return np.where(np.isfinite(z_abs), 1 - (1 - p) ** self.m, np.where(np.isnan(z_abs), np.nan, 0.0))
        above = len(self.draws) - np.searchsorted(self.draws, np.nan_to_num(z_abs, nan=np.inf), side="left")
        return np.where(np.isnan(z_abs), np.nan, (above + 1) / (len(self.draws) + 1))


def maxt_z(blocks: Sequence[np.ndarray], alpha: float = ALPHA) -> float:
    """The (1 - alpha) quantile of max |Z| over independent blocks of correlated normals."""
    return MaxT(blocks).z(alpha)


def _max_abs(blocks: Sequence[np.ndarray]) -> np.ndarray:
    rng = np.random.default_rng(SEED)
    out = np.zeros(DRAWS)
    singles = sum(1 for b in blocks if len(b) == 1)
    if singles:  # independent singletons: the max of their |Z| has the closed-form law
        u = rng.random(DRAWS)
        out = dist.norm.isf((1 - u ** (1 / singles)) / 2)
    for b in blocks:
        if len(b) == 1:
            continue
        root = _cholesky(b)  # continuous in b: a tiny change of b moves the draws a tiny bit
        z = rng.standard_normal((DRAWS, len(b))) @ root.T
        out = np.maximum(out, np.abs(z, out=z).max(axis=1))  # in place: a new array costs more than the abs
    return out


def _cholesky(b: np.ndarray) -> np.ndarray:
    """A lower-triangular root of the correlation matrix ``b`` (a little jitter when singular)."""
    for jitter in (0.0, 1e-10, 1e-8, 1e-6):
        try:
            return np.linalg.cholesky(b + jitter * np.eye(len(b)))
        except np.linalg.LinAlgError:
            continue
    vals, vecs = np.linalg.eigh(b)
    return vecs * np.sqrt(np.clip(vals, 0.0, None))


def t_critical_each(z: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Per element the t critical value at the two-sided level of its z critical value."""
    z, df = np.asarray(z, dtype=float), np.asarray(df, dtype=float)
    good = np.isfinite(df) & (df > 0)
    return np.where(good, dist.t.isf(dist.norm.sf(z), np.where(good, df, 1.0)), z)


def t_critical(z: float, df: np.ndarray | float) -> np.ndarray:
    """Each metric's t critical value at the two-sided level of the z critical value ``z``."""
    df = np.asarray(df, dtype=float)
    tail = float(dist.norm.sf(z))
    return np.where(np.isfinite(df) & (df > 0), dist.t.isf(tail, np.where(df > 0, df, 1.0)), z)


def level(z: float) -> float:
    """The per-interval confidence level (in %) of a two-sided z critical value."""
    return 100 * (1 - 2 * float(dist.norm.sf(z))) if math.isfinite(z) else float("nan")
