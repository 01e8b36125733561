"""S3 view (testbed-report study S3) from synthetic per-call samples with known truth: RQ-1's levels,
slowdown and the regression of container-cold time on the containers of a host (Figure 7, R2);
RQ-4's recreated share after idle gaps with its Clopper-Pearson interval; the host uptimes; the
research questions a store lacks named; a store without S3 records refused."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from faas_records import faas_record

from testbed_reports.study import StudyError, run_study

#: the truth of the synthetic RQ-1: a new container costs BASE + SLOPE x the containers started on
#: its host at that level (the packing effect of Figure 7), with small noise
BASE, SLOPE, NOISE = 1.0, 0.1, 0.02
#: RQ-4: gap (s) -> containers recreated out of 100
RECREATED = {10: 0, 600: 42, 2400: 100}


def _record(bench: str, index: int, params: dict, calls: list[dict]) -> dict:
    return faas_record(bench, params, index=index, calls=calls, ended="2026-01-01T10:00:01Z")


def _rq1_calls(rng: np.random.Generator) -> list[dict]:
    """Levels 1, 10 and 100; at most 26 containers a host (the profile's packing cap)."""
    calls = []
    for n in (1, 10, 100):
        hosts = [min(26, n - 26 * h) for h in range(-(-n // 26))]
        for h, k in enumerate(hosts):
            t = BASE + SLOPE * k
            calls += [
                {
                    "phase": f"c{n}",
                    "status": 200,
                    "round_trip_s": float(t + rng.normal(0, NOISE)),
                    "new_instance": True,
                    "cold_start_kind": "container",
                    "instance_id": f"c{n}-h{h}-i{i}",
                    "host_id": f"c{n}-h{h}",
                    "host_uptime_s": 1000.0 + 100 * h + n,
                }
                for i in range(k)
            ]
    return calls


def _rq4_calls(rng: np.random.Generator) -> list[dict]:
    calls = [
        {
            "phase": "warmup",
            "status": 200,
            "round_trip_s": 1.5,
            "new_instance": True,
            "instance_id": f"i{i}",
            "host_id": f"h{i // 26}",
        }
        for i in range(100)
    ]
    for gap, new in RECREATED.items():
        calls += [
            {
                "phase": f"gap_{gap}s",
                "status": 200,
                "round_trip_s": float((2.0 if i < new else 1.0) + rng.normal(0, NOISE)),
                "new_instance": i < new,
                "instance_id": f"g{gap}-{i}" if i < new else f"i{i}",
                "host_id": f"h{i // 26}",
            }
            for i in range(100)
        ]
    return calls


def _store(tmp: Path, rq4: bool = True) -> Path:
    rng = np.random.default_rng(11)
    p = {"profile": "aws-lambda-2017", "memory_mb": 128, "event": {"level": 4}}
    lines = [json.dumps(_record("s3_rq1_container_cold_ladder", 0, p, _rq1_calls(rng)))]
    if rq4:
        lines.append(json.dumps(_record("s3_rq4_retention", 1, p, _rq4_calls(rng))))
    (tmp / "res").mkdir()
    (tmp / "res" / "faas.jsonl").write_text("\n".join(lines) + "\n")
    return tmp / "res"


def _table(view, tid: str):
    return next(t for t in view.tables if t.id == tid)


def test_rq1_levels_slowdown_and_the_packing_regression(tmp_path: Path) -> None:
    view = run_study("S3", [_store(tmp_path)], tmp_path / "out")
    rq1 = {r["Concurrent requests"]: r for r in _table(view, "RQ-1").rows}
    assert sorted(rq1) == [1, 10, 100]
    assert (rq1[100]["Containers"], rq1[100]["Hosts"]) == (100, 4)
    assert rq1[100]["Cold-start paths"] == "container 100"
    # level 100: hosts of 26, 26, 26 and 22 containers -> mean 1 + 0.1 x (3 x 26^2 + 22^2) / 100
    expect = BASE + SLOPE * (3 * 26**2 + 22**2) / 100
    assert rq1[100]["Mean time (s)"].rerun == pytest.approx(expect, abs=0.01)
    summary = {r["Figure"]: r["Rerun"] for r in _table(view, "RQ-1 summary").rows}
    one = summary["slowdown 1 -> 100 requests (x)"]  # level 1 is one call: no interval
    assert one.rerun == pytest.approx(expect / 1.1, rel=0.03) and one.low is None
    assert one.paper.value == pytest.approx(3.8)
    ten = summary["slowdown 10 -> 100 requests (x)"]  # level 10: one host of 10 containers, 2.0 s
    assert ten.low < ten.rerun < ten.high and ten.rerun == pytest.approx(expect / 2.0, rel=0.02)
    assert summary["most hosts at one level"].rerun == 4
    (fit,) = _table(view, "RQ-3 (cold)").rows
    assert fit["Points (host, level)"] == 1 + 1 + 4  # one point per host and level
    assert fit["Slope (s per container)"] == pytest.approx(SLOPE, rel=0.05)
    assert fit["R2"].rerun > 0.99 and fit["R2"].paper.value == pytest.approx(0.9886)


def test_rq4_recreated_share_after_each_gap(tmp_path: Path) -> None:
    view = run_study("S3", [_store(tmp_path)], tmp_path / "out")
    rows = {r["Idle gap (min)"]: r for r in _table(view, "RQ-4").rows}
    assert sorted(rows) == [round(g / 60, 3) for g in sorted(RECREATED)]
    ten = rows[10.0]["Containers recreated"]
    assert ten.rerun == pytest.approx(0.42) and ten.low < 0.42 < ten.high
    assert ten.paper.value == pytest.approx(0.418) and ten.contains is True
    assert rows[40.0]["Containers recreated"].rerun == 1.0 and rows[40.0]["Hosts recycled"].rerun == 1.0
    ratio = rows[10.0]["Time vs warm (x)"]
    assert ratio.rerun == pytest.approx(1.42, rel=0.02)  # 42 new at 2 s, 58 reused at 1 s


def test_missing_research_questions_are_named_and_uptimes_tabled(tmp_path: Path) -> None:
    view = run_study("S3", [_store(tmp_path, rq4=False)], tmp_path / "out")
    for rq in ("S3_RQ2", "S3_RQ4", "S3_RQ5", "S3_AZURE", "S3_RQ3"):
        assert any(n.startswith(f"{rq}: no records") for n in view.notes), rq
    (up,) = _table(view, "Host uptimes").rows
    assert up["Hosts"].rerun == 1 + 1 + 4 and up["Minimum (s)"].rerun == 1001.0
    assert (tmp_path / "out" / "study.json").is_file()


def test_results_without_s3_records_are_refused(tmp_path: Path) -> None:
    (tmp_path / "res").mkdir()
    (tmp_path / "res" / "faas.jsonl").write_text(json.dumps(_record("faas_io_x", 0, {}, [])) + "\n")
    with pytest.raises(StudyError, match=r"no records of the factors plans"):
        run_study("S3", [tmp_path / "res"], tmp_path / "out")
