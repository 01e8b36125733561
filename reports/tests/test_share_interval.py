"""A share of the machine (CPU % of all cores) gets an interval bounded by its definition (issue 37).

``testbed_shared.intervals.share_interval``: the t interval of the mean cut to [0, 100] %. Seeded
simulations with known truth measure its coverage of the mean share for Beta and logit-normal
shares near and far from the bound, and of a machine that reads exactly 100 % in half its runs;
the log-scale interval of a positive quantity (what shares got before) is measured beside it: its
upper end above 100 % is the finding ("CPU % of the machine intervals up to 142.8 %").
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from report_helpers import record, write_jsonl

from testbed_reports.build import build
from testbed_shared.intervals import mean_interval, moments, share_interval

#: (name, sampler of n shares in [0, 1]); seeds fixed below
SHARES = {
    "Beta(40, 2): about 95 % busy": lambda rng, n: rng.beta(40, 2, n),
    "Beta(20, 5): about 80 %": lambda rng, n: rng.beta(20, 5, n),
    "Beta(2, 2): anywhere": lambda rng, n: rng.beta(2, 2, n),
    "Beta(1, 30): nearly idle": lambda rng, n: rng.beta(1, 30, n),
    "logit-normal(3, 0.8)": lambda rng, n: 1 / (1 + np.exp(-rng.normal(3, 0.8, n))),
    "half the runs at exactly 100 %": lambda rng, n: np.where(rng.random(n) < 0.5, 1.0, rng.beta(40, 2, n)),
}
RUNS = 1500


def _true_mean(name: str) -> float:
    return float(SHARES[name](np.random.default_rng(99), 400_000).mean()) * 100


def _log_interval(values: list[float]) -> tuple[float, float]:
    n, m, s = moments([math.log(v) for v in values])
    _, lo, hi = mean_interval(n, m, s, log=True)
    return lo, hi


@pytest.mark.parametrize("name", list(SHARES))
@pytest.mark.parametrize("n", [3, 10, 30])
def test_coverage_of_the_mean_share_and_never_beyond_the_machine(name: str, n: int) -> None:
    rng = np.random.default_rng(7000 + 31 * n + len(name))
    truth = _true_mean(name)
    covered = above = 0
    for _ in range(RUNS):
        values = (SHARES[name](rng, n) * 100).round(1).tolist()  # psutil's 0.1 % resolution
        _, lo, hi, _ = share_interval(values)
        assert 0.0 <= lo <= hi <= 100.0, values
        covered += lo <= truth <= hi
        if all(v > 0 for v in values):
            above += _log_interval(values)[1] > 100.0
    coverage = covered / RUNS
    # measured (seeds above): 0.89-0.96, and 0.84 at n = 3 with half the runs at the bound (the t
    # interval's coverage, cut to the bounds: a sample of three 100s has no spread to show)
    floor = 0.78 if name.startswith("half") and n == 3 else 0.86
    assert floor <= coverage <= 0.99, (name, n, coverage)
    if n == 3 and name.startswith(("Beta(40", "logit", "half")):
        assert above / RUNS > 0.5, (name, above / RUNS)  # the old interval: above 100 % in most samples


def test_the_interval_at_the_bounds() -> None:
    assert share_interval([100.0, 100.0, 100.0])[1:3] == (100.0, 100.0)
    mean, lo, hi, method = share_interval([100.0, 100.0, 75.0])
    assert math.isclose(mean, 91.6667, rel_tol=1e-4) and hi == 100.0 and 50 < lo < 60
    assert _log_interval([100.0, 100.0, 75.0])[1] > 130  # the log-scale interval: above the machine
    assert share_interval([0.0, 0.0, 0.1])[1] == 0.0 and "[0, 100]" in method
    assert math.isnan(share_interval([42.0])[1])


def test_the_report_bounds_machine_shares(tmp_path: Path) -> None:
    """A crypto cell's system_cpu_percent of 100, 100, 75 %: the report's interval ends at 100 %; the
    process's CPU (% of one core, above 100 % with several threads) keeps its log-scale interval."""
    recs = []
    for rep, share in enumerate((100.0, 100.0, 75.0)):
        metrics = {
            "go.encrypt.throughput": {"value": 1e9 * (1 + rep / 10), "unit": "B/s", "better": "higher"},
            "go.encrypt.system_cpu_percent": {"value": share, "unit": "%", "better": "lower"},
            "go.encrypt.cpu_percent": {"value": 150.0 + 40 * rep, "unit": "%", "better": "lower"},
        }
        recs.append(record(benchmark="aes-256-gcm", type="crypto", metrics=metrics, repetition=rep))
    write_jsonl(tmp_path / "r" / "h.jsonl", recs)
    rep = build([tmp_path / "r"], tmp_path / "out")
    d = rep.descriptives.set_index("metric")
    share = d.loc["go.encrypt.system_cpu_percent"]
    assert share["ci95_high"] == 100.0 and share["ci_scale"] == "share"
    assert "within [0, 100]" in share["ci_method"]
    assert d.loc["go.encrypt.cpu_percent", "ci95_high"] > 100.0  # a process may use several cores
    html = (tmp_path / "out" / "index.html").read_text()
    cpu = html[html.index("CPU use while it ran") :]
    assert re.search(r"go\.encrypt\.system_cpu_percent.*?\[5\d\.\d, 100\] %", cpu, re.S)  # shown bounded
