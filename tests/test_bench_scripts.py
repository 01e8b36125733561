"""`make bench`'s scripts keep working as the code under them changes: each answers --help (its
imports and options), and the two FaaS benchmarks run end to end at their smallest size through the
toolkit's service launcher (faas_tier_fidelity.py still unpacked the launcher's old tuple and failed
in make bench). The figures at this size mean nothing and are not checked: make bench measures."""

from __future__ import annotations

import subprocess

import pytest
from repotest import ROOT, VENV_BIN

SCRIPTS = sorted(p.name for p in (ROOT / "bench").glob("*.py") if p.name != "benchlib.py")


def _bench(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(VENV_BIN / "python"), *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_bench_script_answers_help(script: str) -> None:
    res = _bench(f"bench/{script}", "--help", timeout=120)
    assert res.returncode == 0 and "usage:" in res.stdout, res.stderr[-2000:]


def test_faas_tier_fidelity_runs_through_the_launcher() -> None:
    res = _bench("bench/faas_tier_fidelity.py", "--runs", "2", "--work", "50")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "speed ratio 1769/128 MB" in res.stdout and "128 MB: 0.072 vCPU expected" in res.stdout


def test_faas_overhead_runs_through_the_launcher() -> None:
    res = _bench("bench/faas_overhead.py", "--warm-calls", "5", "--cold-calls", "2", "--work", "20")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "warm-call overhead" in res.stdout and "cold start, n=2" in res.stdout
