"""The statistics: a known slowdown is decided slower, equal distributions never slower or faster."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from report_support.synth import Machine, write_run
from scipy import stats as sps

from testbed_reports.build import build
from testbed_reports.compare import overhead
from testbed_reports.numerics import cv_ci
from testbed_reports.stats import describe


def test_known_slowdown_is_found_within_its_ci_and_decided_slower(slowdown_run: Path, tmp_path: Path) -> None:
    rep = build([slowdown_run], tmp_path / "out")
    cmp = rep.comparisons
    assert set(cmp["comparison"]) == {"SEV-SNP vs AMD-Baseline"}
    assert len(cmp) == 4  # 2 benchmarks x 2 metrics (one higher-, one lower-is-better)
    for row in cmp.itertuples(index=False):
        assert "drift" not in row.diagnostics  # the fixture's precondition
        assert row.overhead_ci_low < 8.0 < row.overhead_ci_high, row.verdict
        assert abs(row.overhead_percent - 8.0) < 3.0
        assert row.decision == "slower"
        assert row.p < 0.05 and row.p_adjusted >= row.p
        # the headline rule (issue 37): both values with their unit, which side is slower, by how much
        assert row.verdict.startswith(f"{row.benchmark} ")
        assert re.search(
            r": SEV-SNP machine sev-1 [\d.,]+ (MB/s|µs|ms), AMD-Baseline machine base-1 [\d.,]+ ", row.verdict
        )
        assert re.search(
            r"SEV-SNP machine sev-1 is \d+\.\d% slower \[\d+\.\d, \d+\.\d\] than AMD-Baseline machine base-1",
            row.verdict,
        )
        assert "these two machines, not about their VM types" in row.verdict


def test_same_distribution_is_never_slower_or_faster(same_run: Path, tmp_path: Path) -> None:
    rep = build([same_run], tmp_path / "out")
    cmp = rep.comparisons
    assert set(cmp["comparison"]) == {"TDX vs Intel-Baseline"}
    assert len(cmp) == 4
    for row in cmp.itertuples(index=False):
        assert row.decision in ("equivalent", "inconclusive"), row.verdict
        assert row.overhead_ci_low < 0.0 < row.overhead_ci_high


def test_overhead_is_positive_for_a_slowdown_in_either_direction() -> None:
    assert overhead(1.10, "lower") == pytest.approx(10.0)  # takes 10% longer
    assert overhead(1 / 1.10, "higher") == pytest.approx(10.0)  # 1/1.1 of the throughput
    assert overhead(0.5, "lower") == pytest.approx(-50.0)


def test_several_machines_per_label_make_the_machine_the_unit(tmp_path: Path) -> None:
    offsets = [0.95, 1.0, 1.06]
    machines = [
        Machine(f"sev-{i}", "SEV", ["sev"], factor=1.10 * f, technology="sev-snp")
        for i, f in enumerate(offsets)
    ]
    machines += [Machine(f"base-{i}", "Base", ["amd_baseline"], factor=f) for i, f in enumerate(offsets)]
    results = write_run(tmp_path / "results", "multi", machines, ["b"], reps=8, seed=5, sigma=0.01)
    rep = build([results], tmp_path / "out")
    desc = rep.descriptives
    assert set(desc["machines"]) == {3}
    assert set(desc["ci_method"]) == {"geometric mean, t on log values over machine means"}
    for row in rep.comparisons.itertuples(index=False):
        assert row.test_unit == "machine"
        assert row.overhead_ci_low < 10.0 < row.overhead_ci_high
        assert "scope types: 3 vs 3 machines, machine is the unit" in row.verdict
        assert row.scope == "types"


def test_describe_matches_textbook_formulas() -> None:
    values = np.array([10.0, 12.0, 11.0, 13.0, 9.0])
    obs = pd.DataFrame(
        {
            "benchmark": "b",
            "metric": "m",
            "label": "L",
            "host": pd.Categorical(["h"] * 5),
            "unit": "s",
            "better": "lower",
            "value": values,
        }
    )
    row = describe(obs).iloc[0]
    assert row["n"] == 5 and row["mean"] == pytest.approx(11.0) and row["median"] == pytest.approx(11.0)
    assert row["sd"] == pytest.approx(np.std(values, ddof=1))
    assert row["cv_percent"] == pytest.approx(100 * np.std(values, ddof=1) / 11.0)
    logs = np.log(values)  # a positive quantity: the interval of the geometric mean (log scale) ...
    lo, hi = np.exp(sps.t.interval(0.95, 4, loc=logs.mean(), scale=sps.sem(logs)))
    # ... and Yuen's of the 20 % trimmed mean (one machine: its typical run): the hull of the two
    trimmed = sps.trim_mean(logs, 0.2)
    wins = np.clip(logs, np.sort(logs)[1], np.sort(logs)[-2])  # 5 runs: one trimmed at each end
    se = np.sqrt(4 * np.var(wins, ddof=1) / (3 * 2))  # (n - 1) s_w^2 / (h (h - 1)), h = 3
    tlo, thi = np.exp(sps.t.interval(0.95, 2, loc=trimmed, scale=se))
    assert (row["ci95_low"], row["ci95_high"]) == (pytest.approx(min(lo, tlo)), pytest.approx(max(hi, thi)))
    assert row["typical"] == pytest.approx(np.exp(trimmed)) and "typical run" in row["ci_method"]
    assert row["geomean"] == pytest.approx(np.exp(logs.mean())) and row["ci_scale"] == "log"
    raw = describe(obs.assign(value=values - 11.0)).iloc[0]  # zero and negative values: raw scale
    lo, hi = sps.t.interval(0.95, 4, loc=0.0, scale=sps.sem(values))
    assert (raw["ci95_low"], raw["ci95_high"]) == (pytest.approx(lo), pytest.approx(hi))
    assert raw["ci_scale"] == "raw" and np.isnan(raw["geomean"])
    assert row["cv_ci_low"] < row["cv_percent"] < row["cv_ci_high"]


def test_cv_interval_is_vangels_mckay_interval() -> None:
    """Vangel (1996) eq. for the modified McKay interval, written out for one case."""
    n, k = 10, 0.1
    nu = n - 1
    u1, u2 = sps.chi2.ppf(0.975, nu), sps.chi2.ppf(0.025, nu)
    lo = k / np.sqrt(((u1 + 2) / n - 1) * k * k + u1 / nu)
    hi = k / np.sqrt(((u2 + 2) / n - 1) * k * k + u2 / nu)
    got_lo, got_hi = cv_ci(np.array([10.0]), np.array([n]))
    assert got_lo[0] == pytest.approx(100 * lo) and got_hi[0] == pytest.approx(100 * hi)
