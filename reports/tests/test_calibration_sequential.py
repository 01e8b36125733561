"""Calibration of sequential decisions over machines (issue 34 item 3): Lan-DeMets O'Brien-Fleming
boundaries, and the family-wise error and coverage of the repeated intervals when the stop is
decided from the data (machines added 3 at a time up to 12 a label, stopped as soon as every
primary metric is decided). Seeded, small; bench/calibration.py runs it at full size."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from report_helpers import run_cli
from report_support import calibration as c
from report_support.synth import Machine, write_run

from testbed_reports import sequential

pytestmark = pytest.mark.slow


def test_one_look_is_the_fixed_design_and_several_spend_alpha_as_planned() -> None:
    assert sequential.boundaries((1.0,), 0.05)[0] == pytest.approx(1.959964, abs=1e-4)
    fr = (0.25, 0.5, 0.75, 1.0)
    b = sequential.boundaries(fr, 0.05)
    assert b[0] == pytest.approx(3.92, abs=0.01) and list(b) == sorted(b, reverse=True)
    rng = np.random.default_rng(1)  # Brownian score at the looks: the boundaries' total crossing rate
    s = np.cumsum(rng.normal(0, 1, (200_000, 4)) * np.sqrt(np.diff((0.0, *fr))), axis=1)
    crossed = (np.abs(s / np.sqrt(fr)) >= b).any(axis=1).mean()
    assert abs(crossed - 0.05) < 0.0025


def test_stopping_on_the_data_keeps_the_family_error_and_coverage() -> None:
    res = c.sequential_setting((3, 6, 9, 12), 40, seed=9, true=0, metrics=10)
    print(f"\n{res}")
    n = res.rates["family-wise error"].total
    assert res.rates["family-wise error"].value <= 0.05 + 3 * math.sqrt(0.0475 / n)
    assert res.rates["simultaneous coverage"].value >= 0.95 - 3 * math.sqrt(0.0475 / n)


def test_a_large_difference_stops_early() -> None:
    res = c.sequential_setting((3, 6, 9, 12), 15, seed=10, true=5, metrics=5, effect=0.10, machine_sd=0.01)
    print(f"\n{res}")
    assert res.rates["power per true metric"].value >= 0.9
    assert res.mean("machines per label at the stop") < 12


def test_the_sequential_command_says_continue_or_stop(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    machines = [
        Machine(f"{lab.lower()}-{i}", lab, [grp], factor=float(np.exp(rng.normal(0, 0.02))))
        for lab, grp in (("SEV", "sev"), ("Base", "amd_baseline"))
        for i in range(3)
    ]
    results = write_run(tmp_path / "results", "r", machines, ["b1", "b2"], reps=5, seed=2)
    res = run_cli("sequential", str(results), "--compare", "SEV:Base", "--looks", "3", "--max-machines", "12")
    assert res.returncode == 0, res.stderr
    first = res.stdout.splitlines()[0]
    assert first.startswith(("continue: ", "stop: ")) and "machines per label" in first
    cap = run_cli("sequential", str(results), "--compare", "SEV:Base", "--looks", "3", "--max-machines", "3")
    assert cap.returncode == 0 and cap.stdout.startswith("stop: ")
    bad = run_cli(
        "sequential", str(results), "--compare", "SEV:Base", "--looks", "2,4", "--max-machines", "12"
    )
    assert bad.returncode == 2 and "the results hold 3" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_cli(
        "sequential", str(results), "--compare", "SEV:Base", "--looks", "4,3", "--max-machines", "12"
    )
    assert bad.returncode == 2 and "--looks" in bad.stderr
