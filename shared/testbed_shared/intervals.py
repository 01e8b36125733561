"""The statistics core shared by the agent and the report: Student t, one interval, one summary, Welch.

Runs on a target without numpy or scipy (pure Python; ``math`` only). The report calls the same
functions on numpy arrays: every function of moments (:func:`mean_interval`, :func:`half_width`,
:func:`welch`) is plain arithmetic, and :func:`t_quantile` maps over an array element-wise when
numpy is already loaded. ``shared/tests/test_intervals.py`` checks the t and normal functions
against scipy to 1e-10 relative over a grid of probabilities and degrees of freedom.

Interval (the one the whole toolkit prints): the Student t interval of a mean,
``mean +- t(1 - (1 - level)/2, n - 1) * sd / sqrt(n)``. For a *positive quantity* (a time, a rate,
a size: every value > 0) it is computed on the log scale, around the mean of the log values, and
transformed back: the centre is then the geometric mean and the interval ``[g / f, g * f]`` with
``f = exp(t * sd_log / sqrt(n))`` never crosses zero and is symmetric for ratios. Quantities that
can be zero or negative keep the raw-scale interval of the arithmetic mean.

Comparison (the one Welch step): difference of two means with the Welch-Satterthwaite degrees of
freedom; the report applies it to mean log values, so the difference is a log ratio.
"""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

LEVEL = 0.95
#: degrees of freedom above which t is computed by its Cornish-Fisher expansion around the normal
_LARGE_DF = 1e5


# --- distributions ---------------------------------------------------------------------------------


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularized incomplete beta (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-16:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b) for 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1.0 - x) / b


def norm_sf(x: float) -> float:
    """Upper tail of the standard normal."""
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def norm_quantile(p: float) -> float:
    """Quantile of the standard normal (Acklam's rational approximation + two Halley steps)."""
    if not 0.0 < p < 1.0:
        return -math.inf if p == 0.0 else math.inf if p == 1.0 else math.nan
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
         -3.066479806614716e01, 2.506628277459239e00)  # fmt: skip
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
         -1.328068155288572e01)  # fmt: skip
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
         4.374664141464968e00, 2.938163982698783e00)  # fmt: skip
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    q = min(p, 1.0 - p)
    if q < 0.02425:
        r = math.sqrt(-2.0 * math.log(q))
        x = (((((c[0] * r + c[1]) * r + c[2]) * r + c[3]) * r + c[4]) * r + c[5]) / (
            (((d[0] * r + d[1]) * r + d[2]) * r + d[3]) * r + 1.0
        )
    else:
        r = (q - 0.5) ** 2
        x = (
            (q - 0.5)
            * (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5])
            / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0)
        )
    x = -abs(x)  # the lower-tail quantile of q
    for _ in range(2):  # Halley on the lower tail, computed without cancellation
        e = norm_sf(-x) - q
        u = e * math.sqrt(2.0 * math.pi) * math.exp(x * x / 2.0)
        x -= u / (1.0 + x * u / 2.0)
    return x if p < 0.5 else -x


def _t_tail(x: float, df: float) -> float:
    """P(T > x) for x >= 0."""
    return 0.5 * _betainc(df / 2.0, 0.5, df / (df + x * x))


def _t_logpdf(x: float, df: float) -> float:
    return (
        math.lgamma((df + 1.0) / 2.0)
        - math.lgamma(df / 2.0)
        - 0.5 * math.log(df * math.pi)
        - (df + 1.0) / 2.0 * math.log1p(x * x / df)
    )


def _cornish_fisher(z: float, df: float) -> float:
    """t quantile from the normal one (Abramowitz & Stegun 26.7.5), for very large df."""
    z2 = z * z
    g1 = (z2 + 1.0) * z / 4.0
    g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0
    g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0
    return z + g1 / df + g2 / df**2 + g3 / df**3


def _cornish_fisher_slope(z: float, df: float) -> float:
    z2 = z * z
    d1 = (3.0 * z2 + 1.0) / 4.0
    d2 = (25.0 * z2 * z2 + 48.0 * z2 + 3.0) / 96.0
    d3 = (21.0 * z2**3 + 95.0 * z2 * z2 + 51.0 * z2 - 15.0) / 384.0
    return 1.0 + d1 / df + d2 / df**2 + d3 / df**3


def _scalar_t_sf(x: float, df: float) -> float:
    if math.isnan(x) or math.isnan(df) or df <= 0:
        return math.nan
    if math.isinf(df):
        return norm_sf(x)
    if df > _LARGE_DF:  # lgamma's rounding grows with df: invert the expansion instead
        z = x
        for _ in range(50):
            step = (_cornish_fisher(z, df) - x) / _cornish_fisher_slope(z, df)
            z -= step
            if abs(step) <= 1e-16 * max(1.0, abs(z)):
                break
        return norm_sf(z)
    tail = _t_tail(abs(x), df)
    return tail if x >= 0 else 1.0 - tail


@lru_cache(maxsize=4096)
def _scalar_t_quantile(p: float, df: float) -> float:
    if math.isnan(p) or math.isnan(df) or df <= 0 or not 0.0 <= p <= 1.0:
        return math.nan
    if p in (0.0, 1.0):
        return -math.inf if p == 0.0 else math.inf
    if p == 0.5:
        return 0.0
    q = min(p, 1.0 - p)  # solve P(T > x) = q for x > 0
    z = -norm_quantile(q)
    if math.isinf(df) or df > _LARGE_DF:
        x = _cornish_fisher(z, df) if math.isfinite(df) else z
        return x if p > 0.5 else -x
    if df == 1.0:
        x = 1.0 / math.tan(math.pi * q)
    elif df == 2.0:
        x = (1.0 - 2.0 * q) * math.sqrt(2.0 / (4.0 * q * (1.0 - q)))
    else:
        x = _cornish_fisher(z, df) if df > 4 else max(z, 1e-3)
        # Newton on log P(T > x): log tail is concave in x, so the iteration is monotone and safe
        log_q = math.log(q)
        for _ in range(100):
            tail = _t_tail(x, df)
            step = (math.log(tail) - log_q) * tail / math.exp(_t_logpdf(x, df))
            nx = x + step
            if nx <= 0:
                nx = x / 2.0
            if abs(nx - x) <= 1e-15 * max(1.0, abs(nx)):
                x = nx
                break
            x = nx
    return x if p > 0.5 else -x


def _is_array(x: Any) -> bool:
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def _map(f: Any, *args: Any) -> Any:
    """``f`` on scalars, or element-wise on numpy arrays (broadcast) when any argument is one."""
    if any(_is_array(a) for a in args):
        np = sys.modules["numpy"]
        b = np.broadcast_arrays(*[np.asarray(a, dtype=float) for a in args])
        out = np.array([f(*map(float, t)) for t in zip(*(x.ravel() for x in b), strict=True)], dtype=float)
        return out.reshape(b[0].shape)
    return f(*(float(a) for a in args))


def t_quantile(p: Any, df: Any) -> Any:
    """Quantile of Student's t with ``df`` degrees of freedom (any real df > 0; inf = normal)."""
    return _map(_scalar_t_quantile, p, df)


def t_sf(x: Any, df: Any) -> Any:
    """P(T > x) for Student's t."""
    return _map(_scalar_t_sf, x, df)


def t_cdf(x: Any, df: Any) -> Any:
    """P(T <= x) for Student's t."""
    return _map(lambda a, b: _scalar_t_sf(-a, b), x, df)


# --- the interval ----------------------------------------------------------------------------------


def critical(n: Any, level: float = LEVEL) -> Any:
    """The two-sided t critical value of a mean of ``n`` values (df = n - 1; NaN below 2)."""
    if _is_array(n):
        np = sys.modules["numpy"]
        df = np.where(np.asarray(n, dtype=float) > 1, np.asarray(n, dtype=float) - 1, np.nan)
        return t_quantile(0.5 + level / 2.0, df)
    return t_quantile(0.5 + level / 2.0, float(n) - 1.0) if n > 1 else math.nan


def _quiet() -> Any:
    """numpy's floating-point warnings off (overflow to inf is the answer here), when numpy is loaded."""
    np = sys.modules.get("numpy")
    return np.errstate(all="ignore") if np is not None else contextlib.nullcontext()


def half_width(n: Any, sd: Any, level: float = LEVEL) -> Any:
    """Half-width of the t interval of a mean: ``t(n - 1) * sd / sqrt(n)`` (on the scale of ``sd``)."""
    with _quiet():
        return sd / (n**0.5) * critical(n, level)


def mean_interval(
    n: Any, mean: Any, sd: Any, level: float = LEVEL, log: bool = False
) -> tuple[Any, Any, Any]:
    """``(centre, low, high)`` of the t interval of a mean from its moments (floats or arrays).

    With ``log=True`` the moments are of log values: the centre is the geometric mean and the
    interval is transformed back (positive, never crossing zero).
    """
    h = half_width(n, sd, level)
    if log:
        if _is_array(mean) or _is_array(h):
            np = sys.modules["numpy"]
            with np.errstate(over="ignore", invalid="ignore"):
                return np.exp(mean), np.exp(mean - h), np.exp(mean + h)
        return _exp(mean), _exp(mean - h), _exp(mean + h)
    with _quiet():
        return mean, mean - h, mean + h


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf
    except (TypeError, ValueError):
        return math.nan


# --- one sample ------------------------------------------------------------------------------------


def moments(values: Sequence[float]) -> tuple[int, float, float]:
    """``(n, mean, sd)``: two-pass on values scaled by their largest magnitude (finite at any scale)."""
    n = len(values)
    if n == 0:
        return 0, math.nan, math.nan
    scale = max(abs(v) for v in values)
    scale = scale if 0 < scale < math.inf else 1.0
    y = [v / scale for v in values]
    mean = math.fsum(y) / n
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in y) / (n - 1)) if n > 1 else math.nan
    return n, mean * scale, sd * scale


def is_positive(values: Iterable[float]) -> bool:
    """True when every value is finite and > 0: a time, rate or size, summarised on the log scale."""
    vals = list(values)
    return bool(vals) and all(0 < v < math.inf for v in vals)


def describe(values: Sequence[float], level: float = LEVEL) -> dict[str, Any]:
    """n, mean, median, sd, CV %, geometric mean and the interval of one sample.

    The interval is the :func:`mean_interval` of the log values for a positive quantity (the
    geometric mean's, ``ci_scale: log``), else of the raw values (``ci_scale: raw``).
    """
    vals = [float(v) for v in values]
    n, mean, sd = moments(vals)
    ordered = sorted(vals)
    median = (ordered[(n - 1) // 2] + ordered[n // 2]) / 2 if n else math.nan
    log = is_positive(vals)
    if log:
        centre, lo, hi = mean_interval(*moments([math.log(v) for v in vals])[0:3], level=level, log=True)
    else:
        centre, lo, hi = mean_interval(n, mean, sd, level)
        centre = math.nan
    return {
        "n": n,
        "mean": mean,
        "median": median,
        "sd": sd,
        "cv_percent": 100 * sd / abs(mean) if n > 1 and mean != 0 else math.nan,
        "geomean": centre,
        "ci_low": lo,
        "ci_high": hi,
        "ci_scale": "log" if log else "raw",
        "ci_level": level,
    }


def arithmetic_mean_interval(
    values: Sequence[float], level: float = LEVEL
) -> tuple[float, float, float, str]:
    """``(mean, low, high, method)``: the sample's arithmetic mean and an interval of the population's.

    For a place where the statistic compared is an arithmetic mean (a paper's "mean time"). For a
    positive quantity the interval is the hull of two: the modified Cox interval of a lognormal mean,
    ``exp(m + s2/2 +- t(n-1) * sqrt(s2/n + s2^2 / (2(n-1))))`` over the log values (m, s2), right at
    small n for skewed times, and the raw-scale t interval, right at large n whatever the shape
    (its lower end is used only when above zero). The hull covers whenever either does and never
    crosses zero. Measured (reports/tests/test_study_intervals.py): 93 % at n = 5 for lognormal
    data with log-sd 1 (the t interval alone: 82 %, its lower end below zero half the time). A
    mixture of rare slow and many fast values (cold starts) is not covered at small n by any
    interval of its mean; the study views split or name it. Other quantities: the t interval.
    """
    vals = [float(v) for v in values]
    n, mean, sd = moments(vals)
    if n < 2:
        return mean, math.nan, math.nan, "one value: no interval"
    _, t_lo, t_hi = mean_interval(n, mean, sd, level)
    if not is_positive(vals):
        return mean, t_lo, t_hi, "t"
    _, m, s = moments([math.log(v) for v in vals])
    s2 = s * s
    h = critical(n, level) * math.sqrt(s2 / n + s2 * s2 / (2.0 * (n - 1)))
    c_lo, c_hi = _exp(m + s2 / 2 - h), _exp(m + s2 / 2 + h)
    low = min(c_lo, t_lo) if t_lo > 0 else c_lo
    return mean, low, max(c_hi, t_hi), "hull of modified Cox (lognormal) and t"


def share_interval(
    values: Sequence[float], bound: float = 100.0, level: float = LEVEL
) -> tuple[float, float, float, str]:
    """``(mean, low, high, method)`` of a share bounded by ``[0, bound]`` (CPU % of the machine).

    The estimand is the arithmetic mean share; the interval is its t interval intersected with
    ``[0, bound]``. A confidence set cut to the parameter space keeps its coverage exactly (the
    mean lies in ``[0, bound]``, so no cut-off part ever held it) and never shows an impossible
    share. Measured (reports/tests/test_share_interval.py, seeded, 1,500 samples a case): coverage
    of the mean 89-96 % at n = 3-30 for Beta and logit-normal shares near and far from the bounds,
    84 % at n = 3 when half the runs read exactly 100 % (a sample of three 100s has no spread to
    show); the log-scale interval of a positive quantity, used for shares before, put its upper end
    above 100 % in 73 % of the samples of a machine about 95 % busy at n = 3. A logit-scale interval
    was tried: runs that read exactly the bound (psutil's 100.0) make it swing with the offset that
    keeps the logit finite (three runs 100, 100, 75 give [0.02, 100] %).
    """
    vals = [float(v) for v in values]
    n, mean, sd = moments(vals)
    if n < 2:
        return mean, math.nan, math.nan, "one value: no interval"
    _, lo, hi = mean_interval(n, mean, sd, level)
    return mean, min(max(lo, 0.0), bound), max(min(hi, bound), 0.0), f"mean, t within [0, {bound:g}]"


def relative_half_width_percent(values: Sequence[float], level: float = LEVEL) -> float | None:
    """Half-width in percent of the log-scale interval, ``100 * (exp(h) - 1)``; None if undefined."""
    vals = [float(v) for v in values]
    if len(vals) < 2 or not is_positive(vals):
        return None
    n, _, sd = moments([math.log(v) for v in vals])
    return 100 * math.expm1(half_width(n, sd, level))


# --- the comparison step ---------------------------------------------------------------------------


def welch(m_a: Any, s_a: Any, n_a: Any, m_b: Any, s_b: Any, n_b: Any) -> tuple[Any, Any, Any]:
    """``(difference a - b, its standard error, Welch-Satterthwaite df)`` from two samples' moments.

    With both spreads zero the df is ``n_a + n_b - 2`` (the pooled value; the interval is a point).
    """
    with _quiet():
        va, vb = s_a * s_a / n_a, s_b * s_b / n_b
        se = (va + vb) ** 0.5
    if _is_array(se):
        np = sys.modules["numpy"]
        with np.errstate(divide="ignore", invalid="ignore"):
            df = (va + vb) ** 2 / (va * va / (n_a - 1) + vb * vb / (n_b - 1))
        return m_a - m_b, se, np.where(se == 0, n_a + n_b - 2.0, df)
    if se == 0:
        return m_a - m_b, 0.0, float(n_a + n_b - 2)
    return m_a - m_b, se, (va + vb) ** 2 / (va * va / (n_a - 1) + vb * vb / (n_b - 1))


def _binom_ppf(p: float, n: int, q: float) -> int:
    """The smallest k with P(B <= k) >= p for B ~ binomial(n, q), 0 < q < 1 (pmf in logs: any n)."""
    log_q, log_r = math.log(q), math.log1p(-q)
    total = 0.0
    for k in range(n + 1):
        total += math.exp(
            math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * log_q + (n - k) * log_r
        )
        if total >= p * (1 - 1e-12):
            return k
    return n


def quantile_interval(values: Sequence[float], q: float, level: float = LEVEL) -> tuple[float, float, float]:
    """The q-quantile (linear interpolation) and its distribution-free interval from order
    statistics: the j-th and k-th smallest values with j = F^-1(a) and k = F^-1(1 - a) + 1 for the
    binomial(n, q) law F, a = (1 - level) / 2. Coverage at least ``level`` for any continuous law;
    an end the order statistics cannot give (n too small) is NaN."""
    x = sorted(float(v) for v in values)
    n = len(x)
    if n == 0:
        return math.nan, math.nan, math.nan
    pos = q * (n - 1)
    low = math.floor(pos)
    est = x[low] + (x[min(low + 1, n - 1)] - x[low]) * (pos - low)
    a = (1 - level) / 2
    lo_k, hi_k = _binom_ppf(a, n, q), _binom_ppf(1 - a, n, q) + 1
    return est, x[lo_k - 1] if lo_k >= 1 else math.nan, x[hi_k - 1] if hi_k <= n else math.nan
