"""Fixtures of the report tests: synthetic result directories with known properties."""

from __future__ import annotations

from pathlib import Path

import pytest
from report_helpers import BENCHMARKS
from report_support.synth import Machine, write_run


@pytest.fixture
def slowdown_run(tmp_path: Path) -> Path:
    """SEV 8% slower than its baseline (both metrics), 30 repetitions, 3% lognormal noise (a seed on
    which no drift check fires by chance: a drifting machine's run-level decision is withheld)."""
    machines = [
        Machine("sev-1", "SEV-SNP", ["sev"], factor=1.08, technology="sev-snp"),
        Machine("base-1", "AMD-Baseline", ["amd_baseline"], factor=1.0),
    ]
    return write_run(tmp_path / "results", "slow", machines, BENCHMARKS, reps=30, seed=8)


@pytest.fixture
def same_run(tmp_path: Path) -> Path:
    """TDX and its baseline drawn from the same distribution."""
    machines = [
        Machine("tdx-1", "TDX", ["tdx"], factor=1.0, technology="tdx", cpu_model="Intel Xeon"),
        Machine("intel-1", "Intel-Baseline", ["intel_baseline"], factor=1.0, cpu_model="Intel Xeon"),
    ]
    return write_run(tmp_path / "results", "same", machines, BENCHMARKS, reps=30, seed=11)
