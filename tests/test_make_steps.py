"""make run / make test / make bench steps (issue 30): scripts/step.py shows progress with an
estimate while a step is silent, keeps the exit status, learns the estimate from the last
successful run and sums the steps; scripts/plan-builds.py builds what a plan runs and no more."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEP = ROOT / "scripts" / "step.py"


def step(tmp: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        "PATH": "/usr/bin:/bin",
        "TESTBED_STEPS_FILE": str(tmp / "steps.json"),
        "TESTBED_STEP_HEARTBEAT_S": "0.3",
    }
    return subprocess.run(
        [sys.executable, str(STEP), *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_a_silent_step_shows_progress_and_its_estimate_comes_from_the_last_run(tmp_path: Path) -> None:
    first = step(tmp_path, "build", "--estimate", "30", "--", "sh", "-c", "echo start; sleep 1.2; echo end")
    assert first.returncode == 0, first.stderr
    lines = first.stdout.splitlines()
    assert lines[0] == "start" and lines[-1] == "end"
    beats = [x for x in lines if x.startswith("   .. build: ")]
    assert beats and all("left (typical 30s)" in b for b in beats), lines
    last = json.loads((tmp_path / "steps.json").read_text())["last"]["build"]
    again = step(tmp_path, "build", "--estimate", "30", "--", "sh", "-c", "sleep 1.2")
    assert f"(last run {round(last)}s)" in again.stdout or "longer than the last run" in again.stdout, (
        again.stdout
    )


def test_a_failing_step_keeps_its_status_and_does_not_become_the_estimate(tmp_path: Path) -> None:
    ok = step(tmp_path, "plan", "--", "sh", "-c", "true")
    assert ok.returncode == 0
    before = json.loads((tmp_path / "steps.json").read_text())["last"]["plan"]
    bad = step(tmp_path, "plan", "--", "sh", "-c", "sleep 0.5; exit 3")
    assert bad.returncode == 3
    data = json.loads((tmp_path / "steps.json").read_text())
    assert data["last"]["plan"] == before and data["session"]["plan"] >= 0.5


def test_the_summary_names_each_step_and_the_total(tmp_path: Path) -> None:
    assert step(tmp_path, "--reset").returncode == 0
    for name in ("install", "build"):
        assert step(tmp_path, name, "--", "sh", "-c", "true").returncode == 0
    out = step(tmp_path, "--summary", "install", "build", "plan").stdout.strip()
    assert out.startswith("install 0s, build 0s, total ") and "plan" not in out, out


def test_plan_builds_names_only_the_languages_a_plan_runs(tmp_path: Path) -> None:
    def builds(plan: Path) -> list[str]:
        res = subprocess.run(
            [sys.executable, str(ROOT / "scripts" / "plan-builds.py"), str(plan)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert res.returncode == 0, res.stderr
        return res.stdout.split()

    assert builds(ROOT / "workloads" / "plans" / "quick.yml") == ["crypto-go"]
    plan = tmp_path / "p.yml"
    plan.write_text(
        "name: p\nbenchmarks:\n"
        "  - {name: fio_4k_randread, type: fio, params: {size: 8M, runtime_s: 1}}\n"
        "  - name: aes\n    type: crypto\n    params: {alg: aes-gcm, languages: [python, rust, node]}\n"
    )
    assert builds(plan) == ["crypto-node", "crypto-rust"]
