"""``testbed-report history`` over stored runs (issue 36): each run's overhead, the change point, the
comparison of two runs and the fingerprint changes beside them; and the calibration of its decisions
by simulation with known ground truth (seeded, runs in seconds; ``-s`` prints the rates)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from report_support.synth import Machine, write_run

from testbed_reports.cli import main
from testbed_reports.errors import ReportError
from testbed_reports.history import RunPoint, between, change_point, history, point
from testbed_reports.inference import sides
from testbed_reports.store import Store


def _history(tmp: Path, factors: list[float], kernels: list[str] | None = None) -> Path:
    """One stored run per factor (A's slowdown against B), 5 repetitions a label, one machine each."""
    results = tmp / "results"
    for i, f in enumerate(factors):
        ms = [Machine("a-1", "A", ["sev"], f, "sev-snp"), Machine("b-1", "B", ["amd_baseline"], 1.0)]
        run = write_run(results, f"run{i:02d}", ms, ["bench"], 5, seed=i, sigma=0.005)
        if kernels:
            si = run / "a-1.sysinfo.json"
            info = json.loads(si.read_text())
            info["kernel"]["release"] = kernels[i]
            si.write_text(json.dumps(info))
        for rec_file in run.glob("*.jsonl"):  # each run a day later (history orders by time)
            text = rec_file.read_text().replace("2026-01-01T", f"2026-01-{i + 1:02d}T")
            rec_file.write_text(text)
    st = Store(results / "_store")
    for run in sorted(results.glob("run*")):
        st.add(run)
    return st.root


def test_history_finds_the_step_and_names_what_changed(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    kernels = ["6.1.0-18"] * 5 + ["6.1.0-21"] * 5
    store = _history(tmp_path, [1.03] * 5 + [1.08] * 5, kernels)
    out = tmp_path / "hist"
    rc = main(
        [
            "history",
            "--store",
            str(store),
            "--compare",
            "A:B",
            "--metric",
            "clat_mean_s",
            "--between",
            "run02:run07",
            "--out",
            str(out),
        ]
    )
    assert rc == 0
    text = capsys.readouterr().out
    assert "window: changed at run run05" in text
    assert "A kernel: 6.1.0-18 -> 6.1.0-21" in text
    assert "run02 -> run07: worse" in text
    data = json.loads((out / "history.json").read_text())
    assert [p["run"] for p in data["points"]] == [f"run{i:02d}" for i in range(10)]
    assert data["points"][5]["changes"] == ["A kernel: 6.1.0-18 -> 6.1.0-21"]
    assert data["points"][0]["overhead"] == pytest.approx(3.0, abs=1.0)
    assert data["window"]["step"] == pytest.approx(100 * (1.08 / 1.03 - 1), abs=1.0)
    assert (out / "history.svg").read_text().startswith("<svg")
    assert len(pd.read_csv(out / "history.csv")) == 10


def test_a_stable_history_shows_no_change(tmp_path: Path) -> None:
    store = _history(tmp_path, [1.05] * 8)
    h = history(store, "A:B", "bench.clat_mean_s")
    assert h.window.decision == "no change detected"
    assert all(p.decision == "slower" for p in h.points)


def test_history_errors_are_one_line_with_a_hint(tmp_path: Path) -> None:
    store = _history(tmp_path, [1.05] * 4)
    with pytest.raises(ReportError, match=r"--metric 'nope': not measured on A and B") as exc:
        history(store, "A:B", "nope")
    assert "bench.clat_mean_s" in exc.value.hint
    with pytest.raises(ReportError, match=r"no stored run measured both A and C"):
        history(store, "A:C", "bw_bytes")
    with pytest.raises(ReportError, match=r"no results store here"):
        history(tmp_path / "nowhere", "A:B", "bw_bytes")
    with pytest.raises(ReportError, match=r"--between 'run00:run99': no overhead for run 'run99'"):
        history(store, "A:B", "bw_bytes", between_runs="run00:run99")


# -- calibration ---------------------------------------------------------------------------------

RUNS, REPS, DAY_SD, RUN_SD = 10, 5, 0.01, 0.02


def _runs_of(rng: np.random.Generator, levels: np.ndarray) -> list[RunPoint]:
    """One history: per run, 5 repetitions of A and of B on one machine each, the run's true log
    ratio ``levels[r]`` plus a day effect of A's (DAY_SD: what a run shares), run noise RUN_SD;
    each run's overhead through the report's own path (sides -> estimate -> decide; the runs'
    sides computed in one vectorised call, a run per benchmark name)."""
    runs = len(levels)
    centre = np.stack([levels + rng.normal(0, DAY_SD, runs), np.zeros(runs)], axis=1)  # run x label
    values = 1e-3 * np.exp(centre[:, :, None] + rng.normal(0, RUN_SD, (runs, 2, REPS)))
    r, lab, k = np.meshgrid(np.arange(runs), np.arange(2), np.arange(REPS), indexing="ij")
    labels = np.array(["A", "B"])[lab.ravel()]
    obs = pd.DataFrame(
        {
            "benchmark": [f"r{x}" for x in r.ravel()],
            "metric": "m",
            "label": labels,
            "host": [f"{x}-1" for x in labels],
            "value": values.ravel(),
            "repetition": k.ravel(),
            "record": np.arange(values.size),
            "started_at": None,
        }
    )
    sd = sides(obs)
    return [
        point(f"r{x}", "", sd[(f"r{x}", "m", "A")], sd[(f"r{x}", "m", "B")], "lower", 2.0)
        for x in range(runs)
    ]


def _rate(hits: int, n: int) -> str:
    p = hits / n
    half = 1.96 * math.sqrt(max(p * (1 - p), 1e-12) / n)
    return f"{100 * p:.1f}% [{100 * max(p - half, 0):.1f}, {100 * min(p + half, 1):.1f}] of {n}"


def test_the_change_decisions_are_calibrated(capsys: pytest.CaptureFixture) -> None:
    """Stable histories: false "changed" (change point) and false worse/better (--between) at 5 % or
    less; a 3 % step after run 5: the power, printed; pooling a run's repetitions as if they were
    independent replicates (each run's own interval as the only noise) errs far more often."""
    rng = np.random.default_rng(36)
    sims, perms = 300, 499
    false_cp = false_between = naive = power_cp = power_between = 0
    stable = np.full(RUNS, math.log(1.05))
    step = stable + np.where(np.arange(RUNS) >= RUNS // 2, math.log(1.03), 0.0)
    for i in range(sims):
        pts = _runs_of(rng, stable)
        y = [p.log_ratio for p in pts]
        false_cp += change_point(y, "lower", seed=i, permutations=perms)[0] == "changed"
        false_between += between(pts[2], pts[7], y, "lower", 2.0).decision in ("worse", "better")
        d = pts[7].log_ratio - pts[2].log_ratio  # the trap: the runs' own se as the only noise
        naive += abs(d) > 1.96 * math.hypot(pts[2].se, pts[7].se)
        pts = _runs_of(rng, step)
        y = [p.log_ratio for p in pts]
        power_cp += change_point(y, "lower", seed=i, permutations=perms)[0] == "changed"
        power_between += between(pts[2], pts[7], y, "lower", 2.0).decision == "worse"
    with capsys.disabled():
        print(
            f"\nhistory calibration ({RUNS} runs, {REPS} repetitions a label and run, "
            f"day sd {100 * DAY_SD:g}%, run sd {100 * RUN_SD:g}%):\n"
            f"  stable: false 'changed' (change point) {_rate(false_cp, sims)}; "
            f"false worse/better (--between) {_rate(false_between, sims)}; "
            f"repetitions pooled as independent {_rate(naive, sims)}\n"
            f"  3% step after run 5: power (change point) {_rate(power_cp, sims)}; "
            f"(--between run 2 vs run 7) {_rate(power_between, sims)}"
        )
    se = math.sqrt(0.05 * 0.95 / sims)
    assert false_cp / sims <= 0.05 + 2 * se
    assert false_between / sims <= 0.05 + 2 * se
    assert naive / sims > 0.09  # what treating repetitions as replicates of the run would give
    assert power_cp / sims > 0.3
