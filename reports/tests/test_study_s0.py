"""S0 view (testbed-report study S0): the paper's cost model (S0 L188-198) checked against its own
printed rows, and Tables V/VI and the heat maps rebuilt from synthetic faas-crypto-kms records with a
known best configuration (the view chooses among what the records hold)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from faas_records import faas_record

from testbed_reports.study import StudyError, run_study
from testbed_reports.study.s0 import WORKLOADS, Config
from testbed_shared.studies import manifest

MIB = 1 << 20


def test_the_cost_model_gives_the_papers_cost_column_from_its_own_rows() -> None:
    """Equation (1) on each printed row of Tables V and VI (time, memory size, architecture) gives
    the printed cost to its printed digits (the paper's GB-second prices, S0 L124-128)."""
    m = manifest("S0")
    rows = [p for p in m.published if p.id.startswith(("t5.", "t6."))]
    assert len(rows) == 2 * 2 * len(WORKLOADS)
    for p in rows:
        e = p.extra
        c = Config("w", "warm", str(e["arch"]).lower(), "x", int(e["memory_size_mb"]), [float(p.value)], [])
        assert c.mean_cost == pytest.approx(float(e["cost_usd"]), rel=0.03), p.id


def _record(bench: str, params: dict, calls: list[dict]) -> dict:
    return faas_record(bench, params, metrics={"latency_s": 0.01}, calls=calls, ended="2026-01-01T10:00:01Z")


#: warm mean handler time (ms) of each synthetic configuration (workload sha256)
WARM_MS = {
    ("x86_64", 128): 25.0,
    ("x86_64", 1024): 10.0,
    ("arm64", 128): 27.5,
    ("arm64", 1024): 12.0,
}


def _store(tmp: Path, archs: tuple[str, ...] = ("x86_64", "arm64")) -> Path:
    rng = np.random.default_rng(7)
    lines = []
    for (arch, mem), ms in WARM_MS.items():
        if arch not in archs:
            continue
        calls = [{"phase": "cold", "status": 200, "handler_s": 5 * ms / 1000, "memory_peak_bytes": 80 * MIB}]
        calls += [{"phase": "warmup", "status": 200, "handler_s": ms / 1000} for _ in range(9)]
        calls += [
            {
                "phase": "measured",
                "status": 200,
                "handler_s": float(rng.normal(ms, ms / 50)) / 1000,
                "memory_peak_bytes": 78 * MIB,
            }
            for _ in range(20)
        ]
        params = {
            "memory_mb": mem,
            "event": {"workload": "sha256"},
            "factors": {"workload": "sha256", "arch": arch, "language": "python"},
        }
        lines.append(json.dumps(_record(f"s0_sha256_{mem}_{arch}", params, calls)))
    (tmp / "res").mkdir()
    (tmp / "res" / "faas.jsonl").write_text("\n".join(lines) + "\n")
    return tmp / "res"


def test_tables_v_and_vi_choose_the_fastest_and_the_most_cost_efficient(tmp_path: Path) -> None:
    view = run_study("S0", [_store(tmp_path)], tmp_path / "out")
    t5, t6 = (next(t for t in view.tables if t.id == i) for i in ("Table V", "Table VI"))
    warm5 = next(r for r in t5.rows if r["Workload"] == "SHA256" and r["Start type"] == "Warm")
    assert (warm5["Architecture"], warm5["Memory size (MB)"].rerun) == ("x86_64", 1024.0)
    cell = warm5["Mean execution time (ms)"]
    assert cell.low < cell.rerun < cell.high and cell.rerun == pytest.approx(10.0, rel=0.05)
    assert "n=20" in cell.note and cell.paper.value == pytest.approx(8.09)  # warm: calls 11-30
    assert warm5["Configurations compared"] == 4
    # cost efficiency = (1/t)/(t x mem x price), so t^2 x mem x price decides: x86_64 128 MB at
    # 25 ms (80,000 x p) beats 1024 MB at 10 ms (102,400 x p), and Arm64's 20 % lower GB-s price
    # makes its 128 MB at 27.5 ms (77,440 x p) the best of all, though 10 % slower
    warm6 = next(r for r in t6.rows if r["Workload"] == "SHA256" and r["Start type"] == "Warm")
    assert (warm6["Architecture"], warm6["Memory size (MB)"].rerun) == ("arm64", 128.0)
    assert warm6["Max mean memory consumption (MB)"].rerun == pytest.approx(78.0)
    # workloads without records keep the paper's value and no rerun
    aes = next(r for r in t5.rows if r["Workload"] == "AES256 Decrypt" and r["Start type"] == "Cold")
    assert aes["Mean execution time (ms)"].rerun is None and aes["Mean execution time (ms)"].paper
    assert any("workloads without records" in n for n in view.notes)
    heat = next(f for f in view.figures if f.id.startswith("SHA256")).svg
    # (Arm64 - x86_64) / x86_64 of the warm means at 128 and 1024 MB: +10 % and +20 % (2 % noise)
    diffs = [float(x) for x in re.findall(r"<td>([+-][0-9.]+) %</td>", heat)]
    assert diffs == [pytest.approx(10, abs=2.5), pytest.approx(20, abs=2.5)]
    assert (tmp_path / "out" / "study.html").is_file()


def test_one_architecture_leaves_the_heat_map_not_here(tmp_path: Path) -> None:
    view = run_study("S0", [_store(tmp_path, ("x86_64",))], tmp_path / "out")
    heat = next(f for f in view.figures if f.id.startswith("SHA256")).svg
    assert "not here" in heat and "Arm64 records" in heat


def test_results_without_s0_records_are_refused(tmp_path: Path) -> None:
    (tmp_path / "res").mkdir()
    rec = _record("faas_io_x", {}, [])
    (tmp_path / "res" / "faas.jsonl").write_text(json.dumps(rec) + "\n")
    with pytest.raises(StudyError, match=r"no records of faas-crypto-kms.yml"):
        run_study("S0", [tmp_path / "res"], tmp_path / "out")
