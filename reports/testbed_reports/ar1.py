"""Linear regression with AR(1) errors in continuous time, fitted by exact GLS: the model
``timeofday`` tests hours of the day with.

Model: ``y_i = x_i' beta + e_i`` where ``e`` is a stationary Gaussian AR(1) process observed at the
runs' times ``t_i``: ``var e_i = sigma^2`` and ``corr(e_i, e_j) = rho ** (|t_i - t_j| / step)`` (an
Ornstein-Uhlenbeck process; on a regular schedule the discrete AR(1) with coefficient ``rho`` per
step). ``step`` is the median gap between runs, so ``rho`` is "phi per run"; a missed run or a pause
only lengthens a gap. ``rho`` is restricted to [0, 1): negative dependence is fitted as none
(ordinary least squares), which overstates the variance of a mean of neighbouring runs.

Fit: the Prais-Winsten transform with gaps (``z_1 = e_1``, ``z_i = (e_i - r_i e_{i-1}) / sqrt(1 -
r_i^2)``, ``r_i = rho ** gap_i``) whitens the errors exactly, so every likelihood evaluation is one
least-squares fit of the transformed data (normal equations, Cholesky): O(n p^2). ``rho``
maximises the restricted (REML) likelihood profiled over ``beta`` and ``sigma^2`` (a grid in
``log(1 - rho)``, then Brent's method next to the best grid point: about 40 fits); REML because
the fixed effects of a short campaign bias the ML ``rho`` down. At that ``rho``: the GLS ``beta``
and its covariance ``sigma^2 (X' V^-1 X)^-1``.

Tests (:meth:`Ar1Fit.contrast`, :meth:`Ar1Fit.wald`) carry the uncertainty of the estimated ``rho``
in two ways. The covariance is Kenward and Roger's adjusted one for this single covariance
parameter (``C + 2 var(u) C (Q - P C P) C``, u = log(1 - rho), their second-derivative term left
out): it adds what the estimated rho costs beta and undoes the downward bias of the covariance at
the estimated rho. The denominator degrees of freedom are Satterthwaite's (Fai and Cornelius's
for several rows, as lmerTest), from the REML information of (log sigma^2, u) and the derivative of
the covariance in u. Both take three more fits. Without them (``rho`` taken as known, ``n - p``
df, as feasible GLS does) a 23-df hour test on four days of 15-minute runs said "effect" in 7.4 %
of null campaigns at phi 0.5 (docs/campaigns.md).

Model check (:meth:`Ar1Fit.ljung_box`): the whitened residuals are independent if the model holds;
Ljung-Box over their first lags says when they are not.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import linalg, optimize, stats

from testbed_reports import dist

#: the largest rho fitted (per step): a random walk is fitted as this
RHO_MAX = 1 - 1e-6
_U_MIN = math.log(1 - RHO_MAX)  # rho = 1 - exp(u), u in [_U_MIN, 0]
_GRID = np.linspace(_U_MIN, 0.0, 25)


@dataclass(frozen=True)
class Ar1Fit:
    """A fitted regression with AR(1) errors (see the module docstring)."""

    beta: np.ndarray
    #: (X' V^-1 X)^-1, V the errors' correlation matrix at ``rho``
    cov_unscaled: np.ndarray
    #: the errors' marginal variance (REML estimate)
    sigma2: float
    rho: float
    #: seconds per step (the median gap): ``rho`` is the correlation of runs one step apart
    step_s: float
    n: int
    df_resid: int
    #: whitened residuals, independent with variance ``sigma2`` under the model
    innovations: np.ndarray
    #: the whitened design (V^-1/2 X)
    whitened_x: np.ndarray
    #: covariance of (log sigma2, log(1 - rho)) from the REML information (zero for a given rho)
    theta_cov: np.ndarray
    #: derivative of ``cov_unscaled`` with respect to log(1 - rho)
    dcov_du: np.ndarray
    #: ``cov_unscaled`` plus Kenward and Roger's small-sample term for the estimated rho: the
    #: covariance the tests use
    cov_adjusted: np.ndarray

    @property
    def rho_se(self) -> float:
        """Standard error of ``rho`` from the REML information (delta method from log(1 - rho))."""
        return (1 - self.rho) * math.sqrt(max(float(self.theta_cov[1, 1]), 0.0))

    def _eigen_df(self, row: np.ndarray) -> float:
        """Satterthwaite's df of ``row' beta``'s estimated variance: 2 / var(log of it)."""
        v = float(row @ self.cov_unscaled @ row)
        grad = np.array([1.0, float(row @ self.dcov_du @ row) / v])
        var_log = float(grad @ self.theta_cov @ grad)
        return min(2.0 / var_log, float(self.df_resid)) if var_log > 0 else float(self.df_resid)

    def df_for(self, rows: np.ndarray) -> float:
        """Denominator degrees of freedom of the test of ``L beta = 0``: Satterthwaite's for one row,
        Fai and Cornelius's combination of the eigen-contrasts' for several (as lmerTest)."""
        m = np.atleast_2d(np.asarray(rows, dtype=float))
        vals, vecs = np.linalg.eigh(m @ self.cov_unscaled @ m.T)
        nus = np.array([self._eigen_df(vecs[:, k] @ m) for k in range(len(vals))])
        if len(nus) == 1:
            return float(nus[0])
        big = nus[nus > 2]
        e = float(np.sum(big / (big - 2)))
        q = len(nus)
        return float(2 * e / (e - q)) if e > q else float(max(nus.min(), 1.0))

    def contrast(self, c: np.ndarray) -> tuple[float, float, float]:
        """Estimate, standard error (from ``cov_adjusted``) and degrees of freedom of ``c' beta``."""
        c = np.asarray(c, dtype=float)
        se = math.sqrt(max(float(c @ self.cov_adjusted @ c), 0.0) * self.sigma2)
        return float(c @ self.beta), se, self.df_for(c)

    def wald(self, rows: np.ndarray) -> tuple[float, int, float, float]:
        """F test of ``L beta = 0`` (``rows`` = L, full row rank): (F, df1, df2, p), df2 from
        :meth:`df_for`."""
        m = np.atleast_2d(np.asarray(rows, dtype=float))
        est = m @ self.beta
        cov = m @ self.cov_adjusted @ m.T * self.sigma2
        q = m.shape[0]
        f_val = float(est @ np.linalg.solve(cov, est)) / q
        df2 = self.df_for(m)
        return f_val, q, df2, float(stats.f.sf(f_val, q, df2))

    def ljung_box(self, lags: int) -> tuple[float, int, float]:
        """Ljung-Box Q of the whitened residuals over lags 1..``lags``: (Q, df, p), df ``lags - 1``
        (one for ``rho``). Each autocorrelation is taken from its expectation under the model,
        ``-sum_i H[i, i+k] / (n - p)`` (H the whitened design's hat matrix): a design with a level
        per day and per hour makes neighbouring residuals negatively correlated by itself."""
        z, xw = self.innovations, self.whitened_x
        n, p = xw.shape
        den = float(z @ z)
        r = np.array([float(z[k:] @ z[:-k]) / den for k in range(1, lags + 1)])
        xc = xw @ self.cov_unscaled
        expected = np.array([-float(np.sum(xc[:-k] * xw[k:])) / (n - p) for k in range(1, lags + 1)])
        q = float(n * (n + 2) * np.sum((r - expected) ** 2 / (n - np.arange(1, lags + 1))))
        df = max(lags - 1, 1)
        return q, df, float(dist.chi2.sf(q, df))


def _bidiagonal(gaps: np.ndarray, rho: float) -> tuple[np.ndarray, np.ndarray]:
    """The whitening matrix W (V^-1 = W'W, lower bidiagonal): its diagonal and its subdiagonal
    (``sub[i]`` is W[i, i-1]; ``sub[0]`` unused)."""
    r = rho**gaps
    s = np.sqrt(1.0 - r * r)
    return np.r_[1.0, 1.0 / s], np.r_[0.0, -r / s]


def _whiten(gaps: np.ndarray, rho: float, a: np.ndarray) -> tuple[np.ndarray, float]:
    """The transformed rows of ``a`` and log det V."""
    r = rho**gaps
    s = np.sqrt(1.0 - r * r)
    out = np.empty_like(a)
    out[0] = a[0]
    out[1:] = (a[1:] - r[:, None] * a[:-1]) / s[:, None]
    return out, float(2 * np.log(s).sum())


@dataclass(frozen=True)
class _State:
    """The GLS fit at one rho: (X'V^-1 X)^-1, beta, whitened residuals, their sum of squares and
    log det V + log det X'V^-1 X (the REML likelihood's determinants)."""

    cov: np.ndarray
    beta: np.ndarray
    resid: np.ndarray
    rss: float
    logdets: float
    xw: np.ndarray


def _state(gaps: np.ndarray, xy: np.ndarray, rho: float) -> _State:
    p = xy.shape[1] - 1
    w, logdet_v = _whiten(gaps, rho, xy)
    gram = w.T @ w  # X'V^-1 X, X'V^-1 y, y'V^-1 y
    chol = np.linalg.cholesky(gram[:p, :p])
    beta = np.linalg.solve(chol.T, np.linalg.solve(chol, gram[:p, p]))
    resid = w[:, p] - w[:, :p] @ beta
    linv = np.linalg.solve(chol, np.eye(p))
    logdets = logdet_v + 2 * float(np.log(np.diag(chol)).sum())
    return _State(linv.T @ linv, beta, resid, max(float(resid @ resid), 1e-300), logdets, w[:, :p])


def _rho(u: float) -> float:
    return min(max(1.0 - math.exp(u), 0.0), RHO_MAX)


def _theta_cov(
    gaps: np.ndarray, xy: np.ndarray, u: float, at: _State
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Covariance of (log sigma2, u = log(1 - rho)) from the REML information at ``u`` (numerical
    second derivatives; one-sided at the boundary rho = 0), d(X'V^-1 X)^-1/du and the adjusted
    covariance (:func:`_kenward_roger`)."""
    n, p = xy.shape[0], xy.shape[1] - 1
    h = 1e-3
    us = (u - h, u, u + h) if u + h <= 0 else (u - 2 * h, u - h, u)
    st = [at if v == u else _state(gaps, xy, _rho(v)) for v in us]
    rss = np.array([x.rss for x in st])
    logdets = np.array([x.logdets for x in st])
    central = us[1] == u

    def d1(a: np.ndarray) -> np.ndarray:  # first derivative at u
        return (a[2] - a[0]) / (2 * h) if central else (3 * a[2] - 4 * a[1] + a[0]) / (2 * h)

    def d2(a: np.ndarray) -> float:
        return float((a[2] - 2 * a[1] + a[0]) / h**2)

    # -2 log L_R(s, u) = (n - p) s + rss(u) e^-s + logdets(u); at s = log(rss / (n - p))
    scale = (n - p) / at.rss
    cross = -float(d1(rss)) * scale
    hess = np.array([[n - p, cross], [cross, d2(rss) * scale + d2(logdets)]])
    dcov = d1(np.stack([x.cov for x in st]))
    if np.linalg.det(hess) <= 0 or hess[1, 1] <= 0:  # no curvature in rho: treat it as known
        return np.diag([2.0 / (n - p), 0.0]), dcov, at.cov
    theta = 2 * np.linalg.inv(hess)
    diag, sub = zip(*(_bidiagonal(gaps, _rho(v)) for v in us), strict=True)
    w_u = (d1(np.stack(diag)), d1(np.stack(sub)))
    xw_u = d1(np.stack([x.xw for x in st]))
    return theta, dcov, _kenward_roger(at, _bidiagonal(gaps, _rho(u)), w_u, xw_u, float(theta[1, 1]))


def _kenward_roger(
    at: _State,
    w: tuple[np.ndarray, np.ndarray],
    w_u: tuple[np.ndarray, np.ndarray],
    xw_u: np.ndarray,
    var_u: float,
) -> np.ndarray:
    """``C + 2 var(u) C (Q - P C P) C`` with C = (X'V^-1 X)^-1, P = X' dV^-1/du X and Q = X' dV^-1/du
    V dV^-1/du X: Kenward and Roger's (1997) adjusted covariance for one covariance parameter
    (its second-derivative term left out), which adds what the estimated rho costs beta (Kackar
    and Harville) and undoes the downward bias of C at the estimated rho. With V^-1 = W'W:
    P = Xu'X~ + X~'Xu (X~ = W X, Xu = dX~/du) and Q = |W'^-1 Wu' X~ + Xu|^2, O(n p^2)."""
    xw, c = at.xw, at.cov
    (diag, sub), (diag_u, sub_u) = w, w_u
    wu_t_x = diag_u[:, None] * xw  # Wu' X~: Wu is lower bidiagonal
    wu_t_x[:-1] += sub_u[1:, None] * xw[1:]
    banded = np.zeros((2, len(diag)))  # W' is upper bidiagonal
    banded[0, 1:] = sub[1:]
    banded[1] = diag
    y = linalg.solve_banded((0, 1), banded, wu_t_x) + xw_u
    p_u = xw_u.T @ xw + xw.T @ xw_u
    q_u = y.T @ y
    return c + 2 * var_u * c @ (q_u - p_u @ c @ p_u) @ c


def fit(times_s: np.ndarray, y: np.ndarray, x: np.ndarray, rho: float | None = None) -> Ar1Fit:
    """GLS of ``y`` on ``x`` (n x p, full column rank) with AR(1) errors at ``times_s`` (seconds,
    strictly increasing), ``rho`` by REML (or the ``rho`` given, then treated as known). Raises
    ValueError on a design it cannot fit."""
    t = np.asarray(times_s, dtype=float)
    y = np.asarray(y, dtype=float)
    x = np.asarray(x, dtype=float)
    n, p = x.shape
    if len(t) != n or len(y) != n:
        raise ValueError("times, values and design differ in length")
    gap = np.diff(t)
    if n < p + 3 or not (gap > 0).all():
        raise ValueError("need strictly increasing times and more runs than parameters + 2")
    step = float(np.median(gap))
    gaps = gap / step
    if np.linalg.matrix_rank(x) < p:
        raise ValueError("the design is rank-deficient")
    xy = np.column_stack([x, y])

    def neg2_reml(u: float) -> float:
        st = _state(gaps, xy, _rho(u))
        return (n - p) * math.log(st.rss / (n - p)) + st.logdets

    if rho is None:
        values = [neg2_reml(u) for u in _GRID]
        k = int(np.argmin(values))
        lo, hi = _GRID[max(k - 1, 0)], _GRID[min(k + 1, len(_GRID) - 1)]
        opts = {"xatol": 1e-4}
        best = optimize.minimize_scalar(neg2_reml, bounds=(lo, hi), method="bounded", options=opts)
        u = float(best.x) if best.fun < values[k] else float(_GRID[k])
    else:
        u = math.log(1.0 - min(max(rho, 0.0), RHO_MAX))
    at = _state(gaps, xy, _rho(u))
    if rho is None:
        theta_cov, dcov, adjusted = _theta_cov(gaps, xy, u, at)
    else:
        theta_cov, dcov, adjusted = np.diag([2.0 / (n - p), 0.0]), np.zeros((p, p)), at.cov
    return Ar1Fit(
        beta=at.beta,
        cov_unscaled=at.cov,
        sigma2=at.rss / (n - p),
        rho=_rho(u),
        step_s=step,
        n=n,
        df_resid=n - p - 1,
        innovations=at.resid,
        whitened_x=at.xw,
        theta_cov=theta_cov,
        dcov_du=dcov,
        cov_adjusted=adjusted,
    )
