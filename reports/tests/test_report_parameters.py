"""Plan parameters as factors (issue 17 item 5) and the primary metric first with telemetry (issue 16
item 5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from report_helpers import record, run_cli, write_jsonl

from testbed_reports.build import build
from testbed_reports.export import observations, parameter_anova
from testbed_reports.load import load

SIZES = {"512": 1.0, "131072": 3.0}
TIERS = {"128": 2.0, "2048": 1.0}


def _io_study(tmp_path: Path, reps: int = 6) -> Path:
    """dd latency by I/O size x memory tier on one platform: size and tier effects, no interaction."""
    rng = np.random.default_rng(17)
    recs = []
    k = 0
    for size, fs in SIZES.items():
        for tier, ft in TIERS.items():
            for r in range(reps):
                rec = record(
                    benchmark=f"dd_{size}_{tier}",
                    type="dd",
                    index=k,
                    repetition=r,
                    params={
                        "bs": int(size),
                        "tier_mb": int(tier),
                        "flags": {"direct": True},
                        "files": [1, 2],
                    },
                    telemetry={"cpu_percent_mean": 40.0 + r, "steal_percent": 0.5},
                )
                latency = 0.01 * fs * ft * float(np.exp(rng.normal(0, 0.05)))
                rec["metrics"] = {
                    "aux_count": {"value": 1.0, "unit": "1", "better": "lower"},
                    "write_seconds": {"value": latency, "unit": "s", "better": "lower"},
                }
                recs.append(rec)
            k += 1
    return write_jsonl(tmp_path / "r" / "h1.jsonl", recs)


def test_export_writes_one_row_per_observation_with_every_parameter(tmp_path: Path) -> None:
    path = _io_study(tmp_path)
    res = run_cli("export", str(path), "--csv", str(tmp_path / "obs.csv"))
    assert res.returncode == 0 and "(48 observations)" in res.stdout
    df = pd.read_csv(tmp_path / "obs.csv")
    assert len(df) == 48
    for col in (
        "param.bs",
        "param.tier_mb",
        "param.flags.direct",
        "param.files",
        "cpu_percent",
        "steal_percent",
    ):
        assert col in df.columns, col
    assert set(df["param.bs"]) == {512, 131072} and set(df["param.files"]) == {"[1, 2]"}
    assert df["cpu_percent"].between(40, 46).all()


def test_two_way_anova_over_plan_parameters_with_cells(tmp_path: Path) -> None:
    ds = load([_io_study(tmp_path)])
    (entry,) = [a for a in parameter_anova(ds) if a["factors"] == ["param.bs", "param.tier_mb"]]
    assert entry["metric"] == "write_seconds" and entry["scale"] == "log"
    rows = {r["source"]: r for r in entry["table"]}
    assert rows["param.bs"]["ss_percent"] > 50 and rows["param.tier_mb"]["ss_percent"] > 20
    assert rows["param.bs"]["F"] > rows["param.bs"]["F_crit"]
    assert rows["param.bs:param.tier_mb"]["ss_percent"] < 2
    cells = pd.DataFrame(entry["cells"])
    assert len(cells) == 4 and (cells["n"] == 6).all()
    assert (cells["cv_percent"] < 10).all() and (cells["ci_scale"] == "log").all()
    assert ((cells["ci95_low"] < cells["geomean"]) & (cells["geomean"] < cells["ci95_high"])).all()
    tk = {(r["group1"], r["group2"]): r for r in entry["tukey"]}
    assert len(tk) == 6 and tk[("131072 · 128", "512 · 128")]["reject"]
    obs = observations(ds)
    assert len(obs) == len(ds.obs)


def test_report_shows_parameter_anova_primary_first_and_telemetry(tmp_path: Path) -> None:
    rep = build([_io_study(tmp_path)], tmp_path / "out")
    html = (tmp_path / "out" / "index.html").read_text()
    assert "Analysis over plan parameters" in html and "param.bs x param.tier_mb" in html
    assert "machine CPU % (all cores, every process)" in html and "Tukey HSD between cells" in html
    assert 'alt="cells: dd write_seconds by param.bs x param.tier_mb (log scale) histograms"' in html
    sec = html.split("<h2>dd_512_128</h2>")[1]
    assert sec.index("write_seconds") < sec.index("aux_count")  # the primary metric first
    assert (tmp_path / "out" / "parameter_anova.csv").exists() and rep.param_anova


@pytest.mark.parametrize("bad", ["--csv"], ids=["missing-file-argument"])
def test_export_needs_a_file(tmp_path: Path, bad: str) -> None:
    res = run_cli("export", str(_io_study(tmp_path)), bad)
    assert res.returncode == 2
