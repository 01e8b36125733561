"""Regression tests of issue 13's reproductions, through the real loader and report builder."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from report_helpers import record, run_cli, write_jsonl
from report_support.synth import Machine, write_run

from testbed_reports import diagnostics
from testbed_reports.build import build
from testbed_reports.errors import SchemaError
from testbed_reports.load import load


def _records(label: str, host: str, values: list[float], **over: object) -> list[dict]:
    base = {"label": label, "host": host, "groups": [], "type": "dd", "benchmark": "dd_write"}
    base.update(over)
    out = []
    for r, v in enumerate(values):
        rec = record(repetition=r, **base)
        rec["metrics"] = {"write_seconds": {"value": v, "unit": "s", "better": "lower"}}
        out.append(rec)
    return out


def _compare(tmp_path: Path, a: list[float], b: list[float], **kw: object) -> object:
    write_jsonl(tmp_path / "r" / "a.jsonl", _records("A", "ha", a))
    write_jsonl(tmp_path / "r" / "b.jsonl", _records("B", "hb", b))
    rep = build([tmp_path / "r"], tmp_path / "out", compare_specs=["A:B"], **kw)
    (row,) = rep.comparisons.itertuples(index=False)
    return row


def test_null_data_with_two_machines_per_label_is_never_decided(tmp_path: Path) -> None:
    """451 of 2000 verdicts said 'significant' on such data when runs were treated as independent."""
    rng = np.random.default_rng(13)
    metrics = tuple((f"m{k}_seconds", "s", "lower", 1.0) for k in range(20))
    machines = [
        Machine(f"{lab.lower()}-{i}", lab, [grp], factor=float(np.exp(rng.normal(0, 0.03))))
        for lab, grp in (("SEV", "sev"), ("Base", "amd_baseline"))
        for i in range(2)
    ]
    results = write_run(tmp_path / "results", "null", machines, ["b"], reps=10, seed=13, metrics=metrics)
    rep = build([results], tmp_path / "out")
    assert len(rep.comparisons) == 20
    assert set(rep.comparisons["test_unit"]) == {"machine"}
    assert not rep.comparisons["decision"].isin(["slower", "faster"]).any()
    row = rep.comparisons.iloc[0]
    assert "machines per label would tell (resolve ±2% at the spread seen" in row["reason"]


def test_three_runs_can_reach_a_verdict_on_a_large_slowdown(tmp_path: Path) -> None:
    """A 20 % slowdown with 1 % noise at 3 runs was 'not significant (Holm p=0.1)'."""
    row = _compare(tmp_path, [1.20, 1.21, 1.19], [1.0, 1.01, 0.99])
    assert row.decision == "slower" and row.overhead_ci_low > 10
    assert "only 3 runs" in row.diagnostics


def test_family_is_the_primary_metrics_only(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    recs = []
    for lab, host, f in (("A", "ha", 1.1), ("B", "hb", 1.0)):
        for r in range(10):
            rec = record(label=lab, host=host, groups=[], type="fio", benchmark="fio_x", repetition=r)
            rec["metrics"] = {
                "write_bw_bytes": {
                    "value": 1e8 / f * float(np.exp(rng.normal(0, 0.03))),
                    "unit": "B/s",
                    "better": "higher",
                }
            }
            for k in range(40):
                rec["metrics"][f"extra_{k}"] = {
                    "value": float(np.exp(rng.normal(0, 0.03))),
                    "unit": "s",
                    "better": "lower",
                }
            recs.append(rec)
    write_jsonl(tmp_path / "r" / "x.jsonl", recs)
    rep = build([tmp_path / "r"], tmp_path / "out", compare_specs=["A:B"])
    cmp = rep.comparisons.set_index("metric")
    assert cmp["primary"].sum() == 1 and bool(cmp.loc["write_bw_bytes", "primary"])
    assert cmp.loc["write_bw_bytes", "ci_level"] == pytest.approx(95.0)  # a family of one
    assert cmp.loc["write_bw_bytes", "decision"] == "slower"
    assert "secondary" not in cmp.loc["write_bw_bytes", "verdict"]
    assert "secondary metric: unadjusted 95% interval" in cmp.loc["extra_0", "verdict"]


def test_decision_and_sign_come_from_one_interval(tmp_path: Path) -> None:
    """A mostly faster label with a slow tail was called '2.3 % slower, significant'. The slow runs
    are spread over the sequence (a tail of the run distribution, not a level that moved)."""
    a = [0.97] * 17
    for pos, v in ((3, 1.6), (10, 1.7), (16, 1.8)):
        a.insert(pos, v)
    row = _compare(tmp_path, a, [1.0 + 0.001 * k for k in range(20)])
    if row.decision == "slower":
        assert row.overhead_ci_low > 0
    if row.decision == "faster":
        assert row.overhead_ci_high < 0
    assert row.decision == "inconclusive"
    assert "outlier" in row.diagnostics or "bimodal" in row.diagnostics


def test_a_level_that_moved_is_part_of_the_mean_over_the_runs(tmp_path: Path) -> None:
    """The same values with the slow runs last: the level moved, the mean over these runs is higher,
    and the verdict says that this is what it speaks about (docs/report.md, Drift)."""
    a = [0.97] * 17 + [1.6, 1.7, 1.8]
    row = _compare(tmp_path, a, [1.0 + 0.001 * k for k in range(20)])
    assert row.decision in ("slower", "inconclusive")
    assert "drift" in row.diagnostics
    assert "the statement is about the mean over the runs measured" in row.verdict


def test_tiny_difference_at_large_n_is_equivalent_not_significant(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    a = list(1.005 * np.exp(rng.normal(0, 0.01, 2000)))
    b = list(np.exp(rng.normal(0, 0.01, 2000)))
    row = _compare(tmp_path, a, b)
    assert row.decision == "equivalent" and row.tost_p < 0.05
    assert row.p < 0.05  # the p-value stays in the table


def test_margin_option_changes_the_decision(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    a = list(1.03 * np.exp(rng.normal(0, 0.002, 50)))
    b = list(np.exp(rng.normal(0, 0.002, 50)))
    assert _compare(tmp_path, a, b).decision == "slower"
    assert _compare(tmp_path, a, b, margin=5.0).decision == "equivalent"
    assert _compare(tmp_path, a, b, margins={"dd_write": 5.0}).decision == "equivalent"


def test_margin_from_the_records(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "r" / "a.jsonl", _records("A", "ha", [1.03, 1.031, 1.029] * 5, margin_percent=5))
    write_jsonl(tmp_path / "r" / "b.jsonl", _records("B", "hb", [1.0, 1.001, 0.999] * 5, margin_percent=5))
    rep = build([tmp_path / "r"], tmp_path / "out", compare_specs=["A:B"])
    assert rep.comparisons["margin_percent"].tolist() == [5.0]
    assert rep.comparisons["decision"].tolist() == ["equivalent"]


@pytest.mark.parametrize(
    ("a", "b"),
    [([-1.0, -1.1, -0.9], [0.5, 0.6, 0.55]), ([1.0, 1.1, 0.9], [0.0, 0.0, 0.0])],
    ids=["negative", "zero-baseline"],
)
def test_ratios_of_non_positive_values_are_refused(tmp_path: Path, a: list[float], b: list[float]) -> None:
    row = _compare(tmp_path, a, b)
    assert row.decision == "inconclusive" and row.reason.startswith("ratio refused")
    assert not np.isfinite(row.overhead_percent)
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "600" not in summary and "50.0 % faster" not in summary


@pytest.mark.parametrize("scale", [1e155, 1e-300, 1.5e308])
def test_moments_are_finite_and_exact_at_any_scale(tmp_path: Path, scale: float) -> None:
    base = [1.0, 1.02, 0.98, 1.01, 0.99]
    row = _compare(tmp_path, [v * scale for v in base], [v * scale / 1.1 for v in base])
    desc = build([tmp_path / "r"], tmp_path / "out2", compare_specs=["A:B"]).descriptives
    assert np.isfinite(desc["sd"]).all() and (desc["sd"] > 0).all()
    assert desc["sd"].iloc[0] / desc["mean"].iloc[0] == pytest.approx(np.std(base, ddof=1) / np.mean(base))
    assert row.overhead_percent == pytest.approx(10.0)
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert "Infinity" not in json.dumps(stats) and "NaN" not in json.dumps(stats)


def test_identical_constants_have_zero_spread_handled(tmp_path: Path) -> None:
    row = _compare(tmp_path, [2.0] * 5, [2.0] * 5)
    assert row.decision == "equivalent" and row.overhead_ci_low == row.overhead_ci_high == 0
    assert "as fast as" not in row.verdict
    row = _compare(tmp_path, [2.0] * 5, [1.0] * 5)
    assert row.decision == "slower" and row.overhead_percent == pytest.approx(100.0)


def test_a_string_value_is_rejected_with_file_and_line(tmp_path: Path) -> None:
    recs = _records("A", "ha", [1.0, 1.0])
    recs[1]["metrics"]["write_seconds"]["value"] = "1.5"
    path = write_jsonl(tmp_path / "r" / "a.jsonl", recs)
    with pytest.raises(SchemaError, match=r"a\.jsonl:2: .*finite number, got '1\.5'"):
        load([path])
    res = run_cli("build", str(path), "--out", str(tmp_path / "out"))
    assert res.returncode == 2 and "a.jsonl:2" in res.stderr and "Traceback" not in res.stderr


def test_drift_and_outliers_are_printed_beside_the_verdict(tmp_path: Path) -> None:
    drift = [1.0 + 0.01 * k for k in range(20)]
    b = [1.0, 1.001, 0.999, 1.0, 1.002] * 4
    b[7] = 3.0
    row = _compare(tmp_path, drift, b)
    assert "A ha: values rise with run order (drift" in row.diagnostics
    assert "B hb: 1 outlier(s)" in row.diagnostics
    assert row.n_b == 20  # flagged, never removed


def test_a_drifting_machine_is_judged_over_the_runs_measured(tmp_path: Path) -> None:
    """Issue 34 item 4: a run-level comparison is about the mean over the runs measured, so a level
    that wanders is part of what is estimated: the noise comes from successive differences (a
    1 %/run walk does not inflate it), the decision is made, and the verdict says what it is about.
    Before, the decision was withheld (covering the long-run level needed about half of all steady
    comparisons withheld too)."""
    rng = np.random.default_rng(7)
    level = np.cumsum(rng.normal(0.0, 0.01, 30))  # a walk of 1 % a run
    a = np.exp(0.10 + level + rng.normal(0.0, 0.002, 30)).tolist()  # this walk averages -4.7 %
    b = np.exp(rng.normal(0.0, 0.002, 30)).tolist()
    row = _compare(tmp_path, a, b)
    assert "level not stable over the runs" in row.diagnostics or "with run order" in row.diagnostics
    truth = 100 * np.expm1(0.10 + level.mean())  # A's level over the runs measured against B's
    assert row.overhead_ci_low <= truth <= row.overhead_ci_high
    assert row.decision == "slower" and "withheld" not in row.reason
    assert (
        "the level of ha moved over the runs (drift): the statement is about the mean over the runs"
        in row.verdict
    )
    steady = _compare(tmp_path / "steady", np.exp(0.05 + rng.normal(0.0, 0.002, 30)).tolist(), b)
    assert steady.decision == "slower" and "drift" not in steady.verdict


def test_drift_p_sets_the_level_check_and_is_printed_in_the_method(tmp_path: Path) -> None:
    rng = np.random.default_rng(8)
    a, b = np.exp(rng.normal(0.0, 0.03, 30)).tolist(), np.exp(rng.normal(0.0, 0.03, 30)).tolist()
    write_jsonl(tmp_path / "r" / "a.jsonl", _records("A", "ha", a))
    write_jsonl(tmp_path / "r" / "b.jsonl", _records("B", "hb", b))
    build([tmp_path / "r"], tmp_path / "out", compare_specs=["A:B"], drift_p=0.3)
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert any("KPSS level stability, p < 0.3," in m for m in stats["method"])
    assert "p < 0.3," in (tmp_path / "out" / "summary.md").read_text()
    res = run_cli("build", str(tmp_path / "r"), "--out", str(tmp_path / "o2"), "--drift-p", "1.5")
    assert res.returncode == 2 and "--drift-p 1.5" in res.stderr and "Traceback" not in res.stderr


def test_bimodal_sample_is_flagged(tmp_path: Path) -> None:
    a = [1.0, 1.001, 0.999, 1.002, 0.998] * 3 + [1.5, 1.501, 1.499, 1.502, 1.498] * 3
    row = _compare(tmp_path, a, [1.0 + 0.001 * k for k in range(30)])
    assert "A ha: looks bimodal" in row.diagnostics


def test_time_windows_that_do_not_overlap_are_reported(tmp_path: Path) -> None:
    a = _records(
        "A", "ha", [1.0, 1.01, 0.99], started_at="2026-01-01T00:00:00Z", ended_at="2026-01-01T00:01:00Z"
    )
    b = _records(
        "B", "hb", [1.0, 1.01, 0.99], started_at="2026-01-03T00:00:00Z", ended_at="2026-01-03T00:01:00Z"
    )
    write_jsonl(tmp_path / "r" / "a.jsonl", a)
    write_jsonl(tmp_path / "r" / "b.jsonl", b)
    rep = build([tmp_path / "r"], tmp_path / "out", compare_specs=["A:B"])
    assert (
        "not measured at the same time: A ran before B (48.0 h apart)"
        in rep.comparisons["diagnostics"].iloc[0]
    )


def test_time_windows_parsed_in_chunks_equal_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """``windows`` parses large runs in slices; any slice size gives the one-pass windows."""
    starts = ["2026-01-02T00:00:00Z", None, "2026-01-01T23:00:00-02:00", "bad", "2026-01-01T00:00:00.5Z"]
    ends = [None, "2026-01-05T00:00:00Z", "2026-01-02T03:00:00+01:00", "2026-01-09T00:00:00Z", None]
    recs = pd.DataFrame(
        {"label": ["A", "A", "B", "B", "A"] * 3, "started_at": starts * 3, "ended_at": ends * 3}
    )
    whole = diagnostics.windows(recs)
    assert set(whole) == {"A", "B"}
    for size in (1, 2, 4):
        monkeypatch.setattr(diagnostics, "WINDOW_CHUNK", size)
        assert diagnostics.windows(recs) == whole
    assert diagnostics.windows(recs.assign(started_at=None)) == {}


def test_pyperformance_values_enter_as_individual_pyperf_values(tmp_path: Path) -> None:
    recs = []
    for r in range(2):
        rec = record(type="pyperformance", benchmark="default", repetition=r)
        rec["metrics"] = {"nbody": {"value": 0.2, "unit": "s", "better": "lower"}}
        rec["samples"] = {"nbody": {"values": [0.19, 0.2, 0.21, 0.2, 0.2], "sd": 0.007}}
        recs.append(rec)
    ds = load([write_jsonl(tmp_path / "r" / "h.jsonl", recs)])
    assert len(ds.obs) == 10 and ds.obs["value"].min() == pytest.approx(0.19)


def test_one_machine_per_label_says_what_the_verdict_speaks_about(tmp_path: Path) -> None:
    row = _compare(tmp_path, [1.1, 1.11, 1.09, 1.1, 1.1], [1.0, 1.01, 0.99, 1.0, 1.0])
    assert "speaks about these two machines, not about their VM types" in row.verdict
    stats = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert stats["comparisons"][0]["decision"] == "slower"
    assert stats["comparisons"][0]["reason"].endswith("lies above 0")


def test_label_anova_is_on_log_values_with_machines_nested_in_labels(tmp_path: Path) -> None:
    """Protection x vendor with 2 machines per label: the machine means are the observations."""
    labels = [
        ("SEV", "sev", "sev-snp", "AMD EPYC", 1.10),
        ("AMD", "amd_baseline", "none", "AMD EPYC", 1.0),
        ("TDX", "tdx", "tdx", "Intel Xeon", 1.05),
        ("Intel", "intel_baseline", "none", "Intel Xeon", 1.0),
    ]
    machines = [
        Machine(f"{lab.lower()}-{i}", lab, [grp], factor=f * (1 + 0.01 * i), technology=tech, cpu_model=cpu)
        for lab, grp, tech, cpu, f in labels
        for i in range(2)
    ]
    results = write_run(tmp_path / "results", "fact", machines, ["b"], reps=5, seed=3)
    rep = build([results], tmp_path / "out")
    (entry,) = [
        a for a in rep.anova if a["factors"] == ["protection", "vendor"] and a["metric"] == "bw_bytes"
    ]
    assert entry["scale"] == "log" and entry["unit_of_replication"] == "machine mean"
    residual = entry["table"][-1]
    assert residual["source"] == "residual" and residual["df"] == 8 - 4  # 8 machines, 4 cells
    raw = build([results], tmp_path / "raw", anova_log=False).anova
    assert {a["scale"] for a in raw} == {"raw"}
