"""Spreads pooled across metrics: empirical-Bayes (limma-style) moderated variances, where valid.

A comparison's metrics each give a variance of their own unit (a machine mean, a run, a pair) on
the log scale, ``s2`` with ``d`` degrees of freedom: at 3 vs 3 machines 2 df a side, so one metric
alone gives a t critical value near 7 at a family's Bonferroni level where z gives 3.1. Metrics
measured on the same machines tell about each other's spread. This module pools them the way
limma does (Smyth 2004, *Stat. Appl. Genet. Mol. Biol.* 3:3): the metrics' true variances are taken
as drawn from a scaled inverse chi-square law (prior variance ``s0^2`` on ``d0`` df), estimated by
the moments of the log sample variances; each metric's variance becomes the posterior
``(d0 s0^2 + d s2) / (d0 + d)`` on ``d0 + d`` df, and its t statistic is a t on those df.

Two guards keep pooling where it is valid (the calibration in docs/report.md *Pooling* shows why):

- **heterogeneity check**: under equal spreads the centred log variances have a known variance
  (``trigamma(d/2)``); a chi-square test of their dispersion at :data:`HETEROGENEITY_P` turns
  pooling off (each metric keeps its own spread) when the metrics' spreads visibly differ;
- **prior weight cap**: ``d0`` is at most :data:`PRIOR_WEIGHT` times a metric's own df (and never
  more than the df of all the metrics together), so a metric whose spread is larger than the
  others' but not visibly so (one metric with 3x the others' variance at 2 df a metric) keeps part
  of its own spread in its interval.

With 25 metrics at 3 vs 3 machines this takes a metric's df from 2 to about 5 a side; with 12 vs 12
from 11 to about 27. Nothing is pooled across comparisons (different machines) or between primary
and secondary metrics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special as spf

from testbed_reports import dist

#: the heterogeneity check's level: below it the metrics' spreads are not pooled
HETEROGENEITY_P = 0.1
#: the prior's df is at most this many times a metric's own df
PRIOR_WEIGHT = 1.5
#: fewest metrics with a measured spread for pooling
MIN_METRICS = 3


@dataclass(frozen=True)
class Pool:
    """What pooling did for one group of metrics (one side's unit of one comparison's family)."""

    metrics: int  # metrics with a measured spread in the group
    pooled: bool
    prior_sd: float = float("nan")  # s0, the pooled sd of one unit (log scale)
    prior_df: float = 0.0  # d0
    heterogeneity_p: float = float("nan")
    why_not: str = ""

    def describe(self, unit: str) -> str:
        """One phrase for a verdict: what was pooled, or why not ("" for a group too small to pool)."""
        if self.pooled:
            return (
                f"spread pooled over {self.metrics} metrics (sd {100 * self.prior_sd:.2g}% per {unit}, "
                f"{self.prior_df:.0f} prior df)"
            )
        if self.metrics < MIN_METRICS:
            return ""
        return f"spread not pooled: {self.why_not}"


def trigamma_inverse(y: float) -> float:
    """x with trigamma(x) = y (Newton's method of Smyth 2004, from x = 0.5 + 1/y)."""
    if y > 1e7:
        return 1.0 / math.sqrt(y)
    if y < 1e-6:
        return 1.0 / y
    x = 0.5 + 1.0 / y
    for _ in range(60):
        tri = float(spf.polygamma(1, x))
        step = tri * (1.0 - tri / y) / float(spf.polygamma(2, x))
        x += step
        if -step / x < 1e-10:
            break
    return x


def moderate(s2: np.ndarray, d: np.ndarray) -> tuple[np.ndarray, np.ndarray, Pool]:
    """Moderated variances and df of ``s2`` (each on ``d`` df), and what was done.

    Metrics without a measured spread (``d <= 0`` or a non-finite ``s2``) are returned unchanged
    and take no part. A zero variance (constant values) takes no part in the estimate but gets the
    posterior like the others.
    """
    s2 = np.asarray(s2, dtype=float)
    d = np.asarray(d, dtype=float)
    usable = (d > 0) & np.isfinite(s2) & np.isfinite(d)
    part = usable & (s2 > 0)
    g = int(part.sum())
    if g < MIN_METRICS:
        return (
            s2,
            d,
            Pool(g, False, why_not=f"{g} metric(s) with a measured spread (pooling needs {MIN_METRICS})"),
        )
    sp, dp = s2[part], d[part]
    half = dp / 2
    e = np.log(sp) - spf.digamma(half) + np.log(half)
    tri = spf.polygamma(1, half)
    centre = float(e.mean())
    dispersion = float(((e - centre) ** 2 / tri).sum())
    p = float(dist.chi2.sf(dispersion, g - 1))
    if p < HETEROGENEITY_P:
        return s2, d, Pool(g, False, heterogeneity_p=p, why_not=f"the metrics' spreads differ (p={p:.2g})")
    excess = float(((e - centre) ** 2).sum() / (g - 1) - tri.mean())
    cap = min(PRIOR_WEIGHT * float(dp.min()), float(dp.sum()))
    d0 = min(2 * trigamma_inverse(excess), cap) if excess > 0 else cap
    s02 = math.exp(centre + float(spf.digamma(d0 / 2)) - math.log(d0 / 2))
    out_s2 = np.where(usable, (d0 * s02 + d * np.where(usable, s2, 0.0)) / (d0 + d), s2)
    out_d = np.where(usable, d0 + d, d)
    return out_s2, out_d, Pool(g, True, math.sqrt(s02), d0, p)
