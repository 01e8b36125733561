"""`testbed-report build`: outputs, single-host runs, explicit pairs, the evidence banner, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from report_helpers import record, run_cli, run_module, write_jsonl
from report_support.synth import Machine, write_run


def test_every_command_has_help() -> None:
    for args in ([], ["build"], ["analyze"]):
        proc = run_cli(*args, "--help")
        assert proc.returncode == 0 and "usage: testbed-report" in proc.stdout
    proc = run_module("build", "--help")
    assert proc.returncode == 0 and "--compare A:B" in proc.stdout


def test_single_host_quick_run_builds_every_output(tmp_path: Path) -> None:
    results = tmp_path / "results" / "quick"
    recs = [
        record(
            benchmark=b,
            index=i,
            repetition=r,
            host="controller",
            label="localhost",
            metrics={
                "bw_bytes": {"value": 1e8 + 1e6 * r, "unit": "B/s", "better": "higher"},
                "elapsed_s": {"value": 2.0 + 0.1 * r, "unit": "s", "better": "lower"},
            },
        )
        for i, b in enumerate(["dd_write", "fio_4k_randread"])
        for r in range(3)
    ]
    write_jsonl(results / "controller.jsonl", recs)
    (results / "controller.sysinfo.json").write_text(
        json.dumps(
            {
                "cpu": {"model": "Test CPU"},
                "kernel": {"release": "6.1.0-test"},
                "hypervisor": {"vendor": "none"},
                "cc": {
                    "technology": "none",
                    "evidence": [],
                    "paravisor": False,
                    "disk_encryption": False,
                    "attestation": None,
                },
            }
        )
    )
    out = tmp_path / "reports" / "out" / "quick"
    proc = run_cli("build", str(results), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert str(out / "index.html") in proc.stdout
    for name in (
        "index.html",
        "summary.md",
        "stats.json",
        "descriptives.csv",
        "comparisons.csv",
        "fingerprints.csv",
        "status.csv",
        "anova.csv",
        "percentiles.csv",
        "failed_runs.csv",
    ):
        assert (out / name).exists(), name
    stats = json.loads((out / "stats.json").read_text())
    assert stats["comparisons"] == [] and stats["problems"] == []
    assert len(stats["descriptives"]) == 4
    desc = pd.read_csv(out / "descriptives.csv")
    assert set(desc.columns) >= {"n", "mean", "median", "sd", "cv_percent", "ci95_low", "ci95_high"}
    html = (out / "index.html").read_text()
    assert "No comparison pairs" in html and "Test CPU" in html and "6.1.0-test" in html
    assert "evidence-mismatch" not in html
    assert "# Benchmark report: quick" in (out / "summary.md").read_text()


def test_explicit_pairs_and_unknown_labels(slowdown_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("build", str(slowdown_run), "--out", str(out), "--compare", "AMD-Baseline:SEV-SNP")
    assert proc.returncode == 0, proc.stderr
    cmp = pd.read_csv(out / "comparisons.csv")
    assert set(cmp["comparison"]) == {"AMD-Baseline vs SEV-SNP"}
    assert (cmp["overhead_percent"] < 0).all()  # the baseline is faster
    proc = run_cli("build", str(slowdown_run), "--out", str(out), "--compare", "SEV-SNP:Nope")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines == [
        "error: --compare 'SEV-SNP:Nope': no results with label 'Nope'",
        "hint: labels: AMD-Baseline, SEV-SNP",
    ]


def test_missing_results_dir_is_a_clear_error(tmp_path: Path) -> None:
    proc = run_cli("build", str(tmp_path / "nothing"), "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr


def test_label_contradicted_by_evidence_is_a_red_banner_at_the_top(tmp_path: Path) -> None:
    machines = [
        Machine("sev-1", "SEV-Encrypted", ["sev"], factor=1.05, technology="none", disk_encryption=False),
        Machine("base-1", "AMD-Baseline", ["amd_baseline"]),
    ]
    results = write_run(tmp_path / "results", "fake", machines, ["b"], reps=5, seed=1)
    out = tmp_path / "out"
    proc = run_cli("build", str(results), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "EVIDENCE MISMATCH" in proc.stderr
    html = (out / "index.html").read_text()
    banner = html.index('id="evidence-mismatch"')
    assert banner < html.index("<h1>")
    assert "claims SEV but its evidence says &#39;none&#39;" in html
    assert "claims disk encryption but sysinfo finds none active" in html
    stats = json.loads((out / "stats.json").read_text())
    assert len(stats["problems"]) == 2
    assert all(c["verdict"].startswith("EVIDENCE MISMATCH") for c in stats["comparisons"])
