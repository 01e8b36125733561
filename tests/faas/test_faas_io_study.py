"""Issue 17 (done when): the local-I/O study run on the emulator at reduced repetitions gives, from
the toolkit's results alone, the study's table shapes: a two-way ANOVA (SS %, F, F crit) per factor
pair and CV / CI per cell, over dd's latency in seconds (faas-io-factorial-small.yml, one repetition;
the full factorial, not the thesis's compatible design)."""

from __future__ import annotations

import csv
import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from .conftest import needs_root

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "workloads/plans/faas-io-factorial-small.yml"
#: the study's five factors, as the plan's parameters
FACTORS = ["factors.file_size_bytes", "factors.io_size_bytes", "factors.op", "memory_mb", "profile"]


def _run(*cmd: str) -> None:
    proc = subprocess.run([sys.executable, "-m", *cmd], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr + proc.stdout


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    needs_root()
    tmp = tmp_path_factory.mktemp("faasio")
    plan = yaml.safe_load(PLAN.read_text())
    # one repetition: the pooled two-way tables keep 28 residual df (32 cells of the full design)
    plan["defaults"].update(repetitions=1, wait_s=0)
    (tmp / "plan.yml").write_text(yaml.safe_dump(plan, sort_keys=False))
    res, rep = tmp / "results", tmp / "report"
    _run("testbed_agent", "run", str(tmp / "plan.yml"), "--out", str(res), "--host", "faas")
    _run("testbed_reports", "build", str(res), "--out", str(rep))
    _run("testbed_reports", "export", str(res), "--csv", str(tmp / "obs.csv"))
    records = [json.loads(line) for line in (res / "faas.jsonl").read_text().splitlines()]
    stats = json.loads((rep / "stats.json").read_text())
    with open(tmp / "obs.csv") as fh:
        obs = list(csv.DictReader(fh))
    return records, stats, obs, rep


def test_every_cell_ran_enforced_with_latency(study):
    records, _, obs, _ = study
    assert len(records) == 32 and all(r["status"] == "ok" for r in records), [r["error"] for r in records]
    assert all(r["params"]["resolved_limits_enforced"] is True for r in records)
    assert all(r["metrics"]["latency_s"]["value"] > 0 for r in records)
    lat = [o for o in obs if o["metric"] == "latency_s"]
    assert len(lat) == 32 and all(o[f"param.{f}"] for o in lat for f in FACTORS)


def test_two_way_anova_per_factor_pair(study):
    _, stats, _, rep = study
    tables = [a for a in stats["parameter_anova"] if a["type"] == "faas"]
    assert {a["metric"] for a in tables} == {"latency_s"}, "dd's seconds are the analysed metric"
    pairs = {tuple(a["factors"]) for a in tables}
    assert pairs == {tuple(f"param.{f}" for f in p) for p in itertools.combinations(FACTORS, 2)}
    for a in tables:
        fa, fb = a["factors"]
        rows = {r["source"]: r for r in a["table"]}
        assert set(rows) == {fa, fb, f"{fa}:{fb}", "residual"}
        assert rows["residual"]["df"] == 32 - 4
        for src in (fa, fb, f"{fa}:{fb}"):
            assert rows[src]["df"] == 1 and rows[src]["F"] >= 0 and rows[src]["F_crit"] > 1
        assert sum(r["ss_percent"] for r in rows.values()) == pytest.approx(100, abs=0.5)
    with open(rep / "parameter_anova.csv") as fh:
        head = next(csv.reader(fh))
    assert {"factors", "ss_percent", "F", "F_crit"} <= set(head)


def test_cv_and_ci_per_cell(study):
    records, stats, _, _ = study
    a = next(a for a in stats["parameter_anova"] if a["factors"] == ["param.memory_mb", "param.profile"])
    assert len(a["cells"]) == 4
    for c in a["cells"]:
        vals = [
            r["metrics"]["latency_s"]["value"]
            for r in records
            if str(r["params"]["memory_mb"]) == c["param.memory_mb"]
            and r["params"]["profile"] == c["param.profile"]
        ]
        assert c["n"] == len(vals) == 8
        assert c["mean"] == pytest.approx(sum(vals) / 8)
        assert c["cv_percent"] > 0 and math.isfinite(c["cv_percent"])
        # latency is positive: the cell's interval is the geometric mean's (log scale), printed
        # beside it; a right-skewed cell's arithmetic mean may lie above that interval
        assert c["ci_scale"] == "log"
        assert c["geomean"] == pytest.approx(math.exp(sum(math.log(v) for v in vals) / 8))
        assert c["ci95_low"] < c["geomean"] < c["ci95_high"]
