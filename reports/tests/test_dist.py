"""testbed_reports.dist returns exactly scipy.stats' values (NaN == NaN, the sign of zero too), for
scalars and arrays, on grids that cover the tails, the support's ends and invalid arguments; and the
call sites rewritten around it (units_needed, timeofday's power) return what they returned on
scipy.stats."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from testbed_reports import dist
from testbed_reports.inference import units_needed
from testbed_reports.timeofday import _power

TINY = [5e-324, 1e-300, 1e-100, 1e-20, 1e-10, 1e-5, 1e-3, 0.025, 0.05]
#: probabilities: 0, 1, tiny and near-1 ones, and invalid ones
QS = [0.0, -0.0, *TINY, 0.2, 0.5, 0.8, 0.975, *(1 - q for q in TINY[3:]), 1 - 2**-53, 1.0]
QS += [-0.1, 1.1, -np.inf, np.inf, np.nan]
#: points: infinite, huge, tiny, signed zeros, NaN
XS = [-np.inf, -1e300, -1e10, -50.0, -10.0, -3.3, -1.0, -1e-300, -0.0, 0.0, 1e-300, 0.5, 1.0, 2.5, 7.0, 40.0]
XS += [1e10, 1e300, np.inf, np.nan]
#: degrees of freedom: valid (infinite too) and invalid
DFS = [0.5, 1.0, 2.0, 3.7, 30.0, 1e6, np.inf, 0.0, -1.0, -np.inf, np.nan]
DENSE_Q = np.r_[np.linspace(0.0, 1.0, 401), np.geomspace(1e-300, 0.5, 300), 1 - np.geomspace(1e-16, 0.5, 300)]
DENSE_X = np.r_[np.linspace(-40, 40, 801), np.geomspace(1e-10, 1e10, 201), -np.geomspace(1e-10, 1e10, 201)]

CASES = [("t", m, 1) for m in ("cdf", "sf", "ppf", "isf")]
CASES += [("norm", m, 0) for m in ("cdf", "sf", "ppf", "isf", "pdf")]
CASES += [("chi2", m, 1) for m in ("cdf", "sf", "ppf", "isf")]
#: norm.pdf(+-1e300) squares past the float range: scipy.stats warns the same
OVERFLOW = pytest.mark.filterwarnings("ignore:overflow encountered in square:RuntimeWarning")


def _same(ours: Any, theirs: Any) -> None:
    assert type(ours) is type(theirs)
    np.testing.assert_array_equal(ours, theirs, strict=True)
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


def _grid(method: str) -> tuple[list[float], np.ndarray]:
    return (QS, DENSE_Q) if method in ("ppf", "isf") else (XS, DENSE_X)


@OVERFLOW
@pytest.mark.parametrize(("name", "method", "shapes"), CASES)
def test_arrays_equal_scipy_stats(name: str, method: str, shapes: int) -> None:
    ours, theirs = getattr(getattr(dist, name), method), getattr(getattr(sps, name), method)
    special, dense = _grid(method)
    points = np.concatenate([special, dense])
    if shapes:
        df = np.array(DFS)
        _same(ours(points[:, None], df[None, :]), theirs(points[:, None], df[None, :]))
        _same(ours(points, 3.7), theirs(points, 3.7))
        _same(ours(0.3, df), theirs(0.3, df))
        _same(ours(list(special), 4), theirs(list(special), 4))  # a list, an integer df
    else:
        _same(ours(points), theirs(points))
        _same(ours(points.reshape(-1, 1)[::2]), theirs(points.reshape(-1, 1)[::2]))


@OVERFLOW
@pytest.mark.parametrize(("name", "method", "shapes"), CASES)
def test_scalars_equal_scipy_stats(name: str, method: str, shapes: int) -> None:
    ours, theirs = getattr(getattr(dist, name), method), getattr(getattr(sps, name), method)
    special, _ = _grid(method)
    for args in itertools.product(special, *[[*DFS, 4]] * shapes):
        _same(ours(*args), theirs(*args))
    _same(ours(np.float64(0.25), *[np.int64(3)] * shapes), theirs(np.float64(0.25), *[np.int64(3)] * shapes))


def _units_needed_scipy(spread: float, alpha: float, margin: float) -> int:
    """inference.units_needed as it was on scipy.stats (one t.ppf call on both quantiles)."""
    ratio = 2 * (spread / math.log1p(margin / 100)) ** 2
    z = float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(0.8))
    n = max(2, math.ceil(ratio * z * z))
    while n < 10**8:
        df = 2 * n - 2
        t = float(sps.t.ppf([1 - alpha / 2, 0.8], df).sum())
        need = math.ceil(ratio * t * t)
        if need <= n:
            return n
        n = max(n + 1, need)
    return n


def test_units_needed_is_unchanged() -> None:
    spreads = [0.001, 0.005, 0.01, 0.03, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0]
    alphas = [0.05, 0.01, 0.05 / 3, 0.05 / 25, 0.001, 1e-6]
    margins = [0.5, 1.0, 2.0, 5.0, 10.0, 25.0, 50.0]
    for args in itertools.product(spreads, alphas, margins):
        assert units_needed(*args) == _units_needed_scipy(*args), args


def _power_scipy(delta: float, se: float, df: float, alpha: float) -> float:
    """timeofday._power as it was: one scipy.stats call per tail."""
    crit = float(sps.t.isf(alpha / 2, df))
    total = 0.0
    for nc in (delta / se, -delta / se):
        tail = float(sps.nct.sf(crit, df, nc))
        total += tail if math.isfinite(tail) else float(sps.norm.sf(crit - nc))
    return min(total, 1.0)


def test_power_is_unchanged() -> None:
    deltas = [0.0, 0.01, math.log1p(0.15), 1.0, 5.0]
    ses, dfs = [1e-4, 0.01, 0.05, 0.3], [1.0, 2.5, 8.0, 23.0, 300.0]
    for args in itertools.product(deltas, ses, dfs, [0.05, 0.001]):
        assert _power(*args) == _power_scipy(*args), args
