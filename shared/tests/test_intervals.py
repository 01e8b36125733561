"""The shared statistics core (testbed_shared.intervals): pure-Python t and normal functions against
scipy, the one interval on both scales, the one-sample summary, Welch, and that it imports without
numpy or scipy (what a target has)."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from testbed_shared import intervals as iv

PROBS = [1e-12, 1e-9, 1e-6, 1e-4, 1e-3, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.3, 0.45, 0.5,
         0.55, 0.8, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999, 0.9999, 1 - 1e-6, 1 - 1e-9]  # fmt: skip
DFS = [0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 7.3, 10, 19.9, 29, 50, 100, 1e3, 1e4, 5e4, 1e5, 2e5, 1e6, 1e9,
       1e15, math.inf]  # fmt: skip


def test_t_quantile_matches_scipy_to_1e_10() -> None:
    worst = max(
        abs(iv.t_quantile(p, df) - stats.t.ppf(p, df)) / max(1.0, abs(stats.t.ppf(p, df)))
        for p in PROBS
        for df in DFS
    )
    assert worst < 1e-10, worst


def test_t_tail_and_normal_quantile_match_scipy() -> None:
    xs = [-50, -10, -5, -3, -1, -0.1, 0, 0.1, 1, 2, 3, 5, 10, 50]
    worst = max(
        abs(iv.t_sf(x, df) - stats.t.sf(x, df)) / stats.t.sf(x, df)
        for x in xs
        for df in DFS
        if stats.t.sf(x, df)
    )
    assert worst < 1e-9, worst
    assert iv.t_cdf(-2.0, 7.0) == pytest.approx(stats.t.cdf(-2.0, 7.0), rel=1e-12)
    assert max(abs(iv.norm_quantile(p) - stats.norm.ppf(p)) for p in PROBS) < 1e-12
    assert math.isnan(iv.t_quantile(0.5, 0)) and iv.t_quantile(1.0, 3) == math.inf


def test_functions_map_over_numpy_arrays() -> None:
    df = np.array([[1.0, 4.0], [30.0, np.nan]])
    got = iv.t_quantile(0.975, df)
    assert got.shape == (2, 2) and np.isnan(got[1, 1])
    assert got[0, 1] == pytest.approx(stats.t.ppf(0.975, 4), rel=1e-12)
    n = np.array([1.0, 2.0, 10.0])
    centre, lo, hi = iv.mean_interval(n, np.zeros(3), np.full(3, 0.1), log=True)
    assert np.isnan(lo[0]) and (lo[1:] < 1).all() and (hi[1:] > 1).all() and (centre == 1).all()


def test_log_interval_of_a_positive_quantity_never_crosses_zero() -> None:
    # go.decrypt.ops_per_s of issue 30 printed a raw interval of [-6873, 3.0e5]
    values = [1.2e5, 3.1e3, 2.9e5, 1.1e3, 4.0e4]
    d = iv.describe(values)
    assert d["ci_scale"] == "log" and 0 < d["ci_low"] < d["geomean"] < d["ci_high"]
    raw = iv.mean_interval(*iv.moments(values))
    assert raw[1] < 0  # what the raw interval said
    logs = np.log(values)
    expect = np.exp(logs.mean() + np.array([-1, 1]) * stats.t.ppf(0.975, 4) * logs.std(ddof=1) / math.sqrt(5))
    assert (d["ci_low"], d["ci_high"]) == pytest.approx(tuple(expect), rel=1e-12)
    mixed = iv.describe([-1.0, 0.5, 2.0])
    assert mixed["ci_scale"] == "raw" and math.isnan(mixed["geomean"]) and mixed["ci_low"] < 0


def test_summary_statistics_and_scale_safety() -> None:
    d = iv.describe([1.0, 2.0, 3.0, 4.0])
    assert d["n"] == 4 and d["mean"] == 2.5 and d["median"] == 2.5
    assert d["sd"] == pytest.approx(np.std([1, 2, 3, 4], ddof=1)) and d["cv_percent"] == pytest.approx(
        51.64, 1e-3
    )
    huge = iv.moments([1e155, 1.02e155, 0.98e155])
    assert math.isfinite(huge[2]) and huge[2] / huge[1] == pytest.approx(0.02)
    assert iv.describe([5.0])["sd"] != iv.describe([5.0])["sd"]  # NaN: one value has no spread
    assert iv.relative_half_width_percent([1.0]) is None and iv.relative_half_width_percent([1, -1]) is None


def test_welch_matches_scipy() -> None:
    a, b = np.array([1.0, 1.2, 0.9, 1.1, 1.05]), np.array([1.3, 1.25, 1.4, 1.35])
    diff, se, df = iv.welch(a.mean(), a.std(ddof=1), len(a), b.mean(), b.std(ddof=1), len(b))
    res = stats.ttest_ind(a, b, equal_var=False)
    assert 2 * iv.t_sf(abs(diff / se), df) == pytest.approx(res.pvalue, rel=1e-10)
    assert iv.welch(1.0, 0.0, 3, 1.0, 0.0, 4) == (0.0, 0.0, 5.0)


def test_core_imports_without_numpy_or_scipy() -> None:
    code = (
        "import sys; sys.modules['numpy'] = None; sys.modules['scipy'] = None\n"
        "from testbed_shared import intervals as iv\n"
        "print(round(iv.t_quantile(0.975, 4), 6), iv.describe([1.0, 2.0, 4.0])['ci_scale'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.split() == ["2.776445", "log"]


def test_quantile_interval_is_the_order_statistics_of_scipys_binomial() -> None:
    """The ends are x[F^-1(a) - 1] and x[F^-1(1 - a)] with scipy's binomial F, the estimate numpy's
    quantile; an end out of range is NaN (the median of 5 values at 95 %)."""
    rng = np.random.default_rng(7)
    for n in (1, 5, 6, 9, 20, 101, 400, 3200):
        x = np.sort(rng.lognormal(0, 1, n))
        for q in (0.5, 0.9, 0.99):
            for level in (0.9, 0.95):
                est, lo, hi = iv.quantile_interval(x.tolist(), q, level)
                a = (1 - level) / 2
                j, k = int(stats.binom.ppf(a, n, q)), int(stats.binom.ppf(1 - a, n, q)) + 1
                assert est == pytest.approx(float(np.quantile(x, q)), rel=1e-12)
                assert (lo == x[j - 1]) if j >= 1 else math.isnan(lo), (n, q, level)
                assert (hi == x[k - 1]) if k <= n else math.isnan(hi), (n, q, level)
