"""Issue 36: the report built a part (a set of whole benchmarks) at a time is the report built
from every observation at once: the same stats.json, the same CSV files, the same HTML."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest
from report_support.synth import Machine, write_run

import testbed_reports.build as build_module
from testbed_reports.errors import ReportError
from testbed_reports.parts import PART_ENV, part_rows, plan

sys.path.insert(0, str(Path(__file__).parent))
from test_report_parameters import _io_study

QUICK = Path(__file__).parent / "data" / "quick-run"


def _outputs(out: Path) -> dict[str, object]:
    """Every output file; the time stamps and the report's name aside."""
    stats = json.loads((out / "stats.json").read_text())
    got: dict[str, object] = {
        "stats.json": {k: v for k, v in stats.items() if k not in ("generated_at", "name")}
    }
    for f in sorted(out.glob("*.csv")):
        got[f.name] = f.read_bytes()
    html = (out / "index.html").read_text()
    got["index.html"] = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", "TIME", html)
    got["summary.md"] = (out / "summary.md").read_text()
    return got


def _csv(tmp: Path) -> Path:
    path = tmp / "paper.csv"
    pd.DataFrame(
        {
            "platform": ["SEV Plain"] * 4 + ["AMD base"] * 4,
            "fn": ["bench_a", "thumbnail"] * 4,
            "ms": [100, 101, 99, 102, 150, 151, 149, 152],
        }
    ).to_csv(path, index=False)
    return path


def _inputs(tmp: Path) -> list[list[Path]]:
    results = tmp / "results"
    shutil.copytree(QUICK, results / "quick")
    ms = [
        Machine("sev-1", "SEV Plain", ["sev"], 1.05, "sev-snp"),
        Machine("sev-2", "SEV Plain", ["sev"], 1.04, "sev-snp"),
        Machine("amd-1", "AMD base", ["amd_baseline"], 1.0),
        Machine("amd-2", "AMD base", ["amd_baseline"], 1.01),
    ]
    runs = [write_run(results, f"r{i}", ms, ["bench_a", "bench_b", "bench_c"], 6, seed=i) for i in range(2)]
    return [[results / "quick"], runs, [*runs, _csv(tmp)], [_io_study(tmp).parent]]


def test_a_report_a_part_at_a_time_is_the_report_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One benchmark a part (TESTBED_REPORT_PART_ROWS=1) against one part: every output the same,
    for the quick run, runs of several machines, runs with a CSV of published results, and a
    study with plan parameters (the parameter ANOVA gathers its runs over the parts)."""
    kw: dict = {"name": "r", "csv_mapping": {"label": "platform", "benchmark": "fn", "value": "ms"}}
    kw["csv_defaults"] = {"metric": "latency", "unit": "ms", "better": "lower"}
    for k, paths in enumerate(_inputs(tmp_path)):
        store = tmp_path / f"store{k}"
        monkeypatch.delenv(PART_ENV, raising=False)
        one = build_module.build(paths, tmp_path / "whole", store=store, **kw)
        monkeypatch.setenv(PART_ENV, "1")
        rep = build_module.build(paths, tmp_path / "parts", store=store, **kw)
        assert len(rep.descriptives) and one.parts == 1 and rep.parts > 1, (one.parts, rep.parts)
        whole, parts = _outputs(tmp_path / "whole"), _outputs(tmp_path / "parts")
        for name in whole:
            assert parts[name] == whole[name], f"inputs {k}: {name}"
        shutil.rmtree(tmp_path / "whole")
        shutil.rmtree(tmp_path / "parts")
    assert rep.param_anova, "the parameter study (the last inputs) has its parameter ANOVA"


def test_parts_hold_whole_benchmarks_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = {"b": 5, "a": 3, "c": 9, "d": 1}
    assert plan(counts, 8) == [["a", "b"], ["c"], ["d"]]  # c alone holds more than a part
    assert plan(counts, 100) == [["a", "b", "c", "d"]]
    assert plan({}, 1) == []
    monkeypatch.setenv(PART_ENV, "2000")
    assert part_rows() == 2000
    for bad in ("0", "-3", "many"):
        monkeypatch.setenv(PART_ENV, bad)
        with pytest.raises(ReportError, match=PART_ENV):
            part_rows()
