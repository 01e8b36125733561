"""`testbed-report analyze`: descriptive stats and a two-way ANOVA checked against a hand computation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from report_helpers import run_cli

from testbed_reports.anova import two_way_anova, two_way_anova_fast

# Hand computation (balanced 2x2, r = 2): cell means a1b1=3, a1b2=7, a2b1=6, a2b2=14, grand mean 7.5.
# SSA = 4 * (2.5^2 + 2.5^2) = 50, SSB = 4 * (3^2 + 3^2) = 72, SSAB = 2 * (1 + 1 + 1 + 1) = 8,
# SSE = 8 * 1^2 = 8, SST = 138; MSE = 8 / 4 = 2, so F = 25, 36, 4; F(0.95; 1, 4) = 7.7086.
ROWS = [
    ("x", "a1", "b1", 2),
    ("x", "a1", "b1", 4),
    ("x", "a1", "b2", 6),
    ("x", "a1", "b2", 8),
    ("x", "a2", "b1", 5),
    ("x", "a2", "b1", 7),
    ("x", "a2", "b2", 13),
    ("x", "a2", "b2", 15),
    ("y", "a1", "b1", 1000),
    ("y", "a2", "b2", 2000),
]
EXPECTED = {
    "memory": (1, 100 * 50 / 138, 25.0),
    "io": (1, 100 * 72 / 138, 36.0),
    "memory:io": (1, 100 * 8 / 138, 4.0),
    "residual": (4, 100 * 8 / 138, None),
}


@pytest.fixture
def published_csv(tmp_path: Path) -> Path:
    path = tmp_path / "published.csv"
    pd.DataFrame(ROWS, columns=["platform", "memory", "io", "latency_ms"]).to_csv(path, index=False)
    return path


def test_analyze_reproduces_the_hand_computed_anova(published_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "stats"
    proc = run_cli(
        "analyze",
        "--csv",
        str(published_csv),
        "--metric",
        "latency_ms",
        "--by",
        "memory,io",
        "--where",
        "platform=x",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    stats = json.loads((out / "stats.json").read_text())
    assert stats["n_rows"] == 8
    anova = {r["source"]: r for r in stats["anova"]}
    assert set(anova) == set(EXPECTED)
    for source, (df, ss_pct, f_val) in EXPECTED.items():
        assert anova[source]["df"] == df
        assert anova[source]["ss_percent"] == pytest.approx(ss_pct)
        if f_val is None:
            assert anova[source]["F"] is None and anova[source]["F_crit"] is None
        else:
            assert anova[source]["F"] == pytest.approx(f_val)
            assert anova[source]["F_crit"] == pytest.approx(7.7086, abs=1e-4)
    groups = {(g["group"]["memory"], g["group"]["io"]): g for g in stats["groups"]}
    g = groups[("a1", "b1")]
    assert g["n"] == 2 and g["mean"] == pytest.approx(3.0) and g["median"] == pytest.approx(3.0)
    assert g["sd"] == pytest.approx(np.sqrt(2))
    assert g["cv_percent"] == pytest.approx(100 * np.sqrt(2) / 3)
    # a positive quantity: the interval of the geometric mean (log scale), never below zero (the raw
    # t interval said [-9.7, 15.7] ms for a latency)
    half = 12.7062 * np.std(np.log([2.0, 4.0]), ddof=1) / np.sqrt(2)
    assert g["geomean"] == pytest.approx(np.sqrt(8)) and g["ci_scale"] == "log"
    assert g["ci95_low"] == pytest.approx(np.sqrt(8) * np.exp(-half), rel=1e-4) and g["ci95_low"] > 0
    assert g["ci95_high"] == pytest.approx(np.sqrt(8) * np.exp(half), rel=1e-4)
    assert (out / "anova.csv").exists() and (out / "groups.csv").exists()


def test_one_factor_and_tukey(published_csv: Path, tmp_path: Path) -> None:
    out = tmp_path / "one"
    proc = run_cli(
        "analyze",
        "--csv",
        str(published_csv),
        "--metric",
        "latency_ms",
        "--by",
        "memory",
        "--where",
        "platform=x",
        "--tukey",
        "--out",
        str(out),
    )
    assert proc.returncode == 0, proc.stderr
    stats = json.loads((out / "stats.json").read_text())
    assert "anova" not in stats
    assert [g["group"]["memory"] for g in stats["groups"]] == ["a1", "a2"]
    (t,) = stats["tukey"]
    assert (t["group1"], t["group2"]) == ("a1", "a2")
    assert t["meandiff"] == pytest.approx(5.0)  # 10 - 5


def test_fast_anova_equals_statsmodels_on_unbalanced_data() -> None:
    rng = np.random.default_rng(2)
    a = rng.choice(["p", "q", "r"], size=80)
    b = rng.choice(["u", "v"], size=80)
    y = rng.normal(size=80) + (a == "q") * 0.8 + (b == "v") * 0.5 + ((a == "r") & (b == "v")) * 1.0
    df = pd.DataFrame({"y": y, "a": a, "b": b})
    ref, fast = two_way_anova(df, "y", "a", "b"), two_way_anova_fast(df, "y", "a", "b")
    for r, f in zip(ref, fast, strict=True):
        assert r["source"] == f["source"] and r["df"] == f["df"]
        assert f["ss"] == pytest.approx(r["ss"], rel=1e-9)
        if r["F"] is not None:
            assert f["F"] == pytest.approx(r["F"], rel=1e-9)


def test_analyze_errors_are_one_line_with_a_hint(published_csv: Path, tmp_path: Path) -> None:
    proc = run_cli(
        "analyze",
        "--csv",
        str(published_csv),
        "--metric",
        "nope",
        "--by",
        "memory",
        "--out",
        str(tmp_path / "o"),
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert lines[0].startswith("error: ") and "no column 'nope'" in lines[0]
    assert lines[1].startswith("hint: columns: platform, memory, io, latency_ms")
    assert "Traceback" not in proc.stderr
    bad = tmp_path / "bad.csv"
    bad.write_text("memory,latency_ms\na1,1\na1,fast\n")
    proc = run_cli(
        "analyze", "--csv", str(bad), "--metric", "latency_ms", "--by", "memory", "--out", str(tmp_path / "o")
    )
    assert proc.returncode == 2 and f"{bad}:3:" in proc.stderr


def test_incomplete_design_is_refused(published_csv: Path, tmp_path: Path) -> None:
    proc = run_cli(
        "analyze",
        "--csv",
        str(published_csv),
        "--metric",
        "latency_ms",
        "--by",
        "memory,io",
        "--where",
        "platform=y",
        "--out",
        str(tmp_path / "o"),
    )
    assert proc.returncode == 2
    assert "incomplete factorial design" in proc.stderr
