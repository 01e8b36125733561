"""Student's t, the normal and the chi-squared distribution's cdf, sf, ppf and isf (and the normal's
pdf) at scipy.stats' values without scipy.stats' per-call overhead.

scipy.stats' generic wrappers spend about 0.1-0.3 ms a call checking and broadcasting their
arguments, and the report's statistics call them tens of thousands of times in a calibration, mostly
on scalars. These functions call the same scipy.special kernels as ``scipy.stats.t``, ``norm`` and
``chi2`` and apply the wrappers' rules around them, so they return exactly scipy.stats' values
(``reports/tests/test_dist.py``): NaN for an invalid df (not > 0, or NaN; df = inf is valid and
gets the kernels' value, as in scipy.stats), a NaN x or a q outside [0, 1]; outside the open
support cdf and sf are 0 or 1 (x = +-inf; x <= 0 for chi2); q = 0 and 1 give the support's ends; a
quantile of -0.0 is 0.0. Arguments are taken as float64; scalars give a numpy float64, arrays an
array of their broadcast shape.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special as sc

Kernel = Callable[..., Any]


def _scalars(*values: Any) -> bool:
    """Whether every value is a Python (or numpy float64) scalar: the path without arrays."""
    return all(isinstance(v, (float, int)) for v in values)


def _done(out: np.ndarray) -> Any:
    return out[()] if out.ndim == 0 else out


class _Dist:
    """A distribution with support (``a``, ``b``) and kernels taking (x or q, *shape parameters)."""

    def __init__(self, a: float, b: float, cdf: Kernel, sf: Kernel, ppf: Kernel, isf: Kernel) -> None:
        self.a, self.b = a, b
        self._cdf, self._sf, self._ppf, self._isf = cdf, sf, ppf, isf

    @staticmethod
    def _valid(shapes: tuple[np.ndarray, ...]) -> np.ndarray | bool:
        ok: np.ndarray | bool = True
        for s in shapes:
            ok = ok & (s > 0)
        return ok

    def _tail(self, kernel: Kernel, x: ArrayLike, shapes: tuple[ArrayLike, ...], one: Callable) -> Any:
        if _scalars(x, *shapes):
            if math.isnan(x) or not all(s > 0 for s in shapes):
                return np.float64(math.nan)
            return kernel(x, *shapes) if self.a < x < self.b else np.float64(1.0 if one(x) else 0.0)
        x = np.asarray(x, dtype=float)
        args = tuple(np.asarray(s, dtype=float) for s in shapes)
        ok = self._valid(args)
        inside = ok & (self.a < x) & (x < self.b)
        out = np.where(inside, kernel(x, *args), np.where(ok & one(x), 1.0, 0.0))
        return _done(np.where(ok & ~np.isnan(x), out, np.nan))

    def _quantile(
        self, kernel: Kernel, q: ArrayLike, shapes: tuple[ArrayLike, ...], at0: float, at1: float
    ) -> Any:
        if _scalars(q, *shapes):
            if not (0 <= q <= 1 and all(s > 0 for s in shapes)):
                return np.float64(math.nan)
            return np.float64(at0 if q == 0 else at1) if q in (0, 1) else kernel(q, *shapes) + 0.0
        q = np.asarray(q, dtype=float)
        args = tuple(np.asarray(s, dtype=float) for s in shapes)
        ok = self._valid(args)
        out = np.where(ok & (q > 0) & (q < 1), kernel(q, *args) + 0.0, np.nan)
        return _done(np.where(ok & (q == 0), at0, np.where(ok & (q == 1), at1, out)))

    def cdf(self, x: ArrayLike, *shapes: ArrayLike) -> Any:
        """P(X <= x)."""
        return self._tail(self._cdf, x, shapes, lambda v: v >= self.b)

    def sf(self, x: ArrayLike, *shapes: ArrayLike) -> Any:
        """P(X > x)."""
        return self._tail(self._sf, x, shapes, lambda v: v <= self.a)

    def ppf(self, q: ArrayLike, *shapes: ArrayLike) -> Any:
        """The q quantile."""
        return self._quantile(self._ppf, q, shapes, self.a, self.b)

    def isf(self, q: ArrayLike, *shapes: ArrayLike) -> Any:
        """The 1 - q quantile."""
        return self._quantile(self._isf, q, shapes, self.b, self.a)


class _Norm(_Dist):
    """The normal, which has its density too."""

    def pdf(self, x: ArrayLike) -> Any:
        """The density."""
        x = np.asarray(x, dtype=float)
        return _done(np.where(np.isnan(x), np.nan, np.exp(-(x**2) / 2.0) / np.sqrt(2 * np.pi)))


#: Student's t: ``(x or q, df)``
t = _Dist(
    -np.inf,
    np.inf,
    lambda x, df: sc.stdtr(df, x),
    lambda x, df: sc.stdtr(df, -x),
    lambda q, df: sc.stdtrit(df, q),
    lambda q, df: -sc.stdtrit(df, q),
)
#: the standard normal: ``(x or q)``
norm = _Norm(-np.inf, np.inf, sc.ndtr, lambda x: sc.ndtr(-x), sc.ndtri, lambda q: -sc.ndtri(q))
#: chi-squared: ``(x or q, df)``
chi2 = _Dist(
    0.0,
    np.inf,
    lambda x, df: sc.chdtr(df, x),
    lambda x, df: sc.chdtrc(df, x),
    lambda q, df: 2 * sc.gammaincinv(df / 2, q),
    lambda q, df: sc.chdtri(df, q),
)
