"""S4 view (testbed-report study S4) on a rerun made from the paper's own numbers: every cell of
Tables 4 and 6 carries the paper's time and CPU %, so every comparable row must print "inside" or
"equal". Comparable: Table 4 and its average, Table 5 (the text reads their times as seconds, S4
L186, and Table 5 is their mean); CPU % of Table 6. Not comparable: Table 6's times (m:s or
seconds: the paper's evidence cannot decide, S4 L165, L237, L242, L368), Table 7 (not the mean of
Table 6), Tables 8-11 (averages of ten experiments the paper does not publish) and what averages
them (Tables 12, 13 except RSA). Numbers the view derives are labelled derived, never paper."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from testbed_reports.study import run_study
from testbed_reports.study.view import Cell, render_md
from testbed_shared.studies import manifest

S4 = manifest("S4")
SPREAD = (math.exp(-0.002), 1.0, math.exp(0.002))
#: a cell of each averaged-only algorithm (its values: the paper's Table 8-11 averages)
OTHERS = {
    "3des-cbc": (192, "t8"),
    "cast128-cbc": (128, "t9"),
    "blowfish-cbc": (64, "t10"),
    "twofish-cbc": (128, "t11"),
}


def _experiments() -> dict[tuple[str, int, str], dict[str, float]]:
    """(alg, experiment, hypervisor) -> {key, cores, bytes, enc_time, enc_cpu, dec_time, dec_cpu}."""
    out: dict[tuple[str, int, str], dict[str, float]] = {}
    for p in S4.published:
        if p.table in ("Table 4", "Table 6"):
            e = p.extra
            row = out.setdefault(
                (str(e["alg"]), int(e["experiment"]), str(e["hypervisor"])),
                {"key": e["key_bits"], "cores": e["cores"], "bytes": e["file_bytes"]},
            )
            row[str(e["quantity"])] = float(p.value)
    return out


def _record(hyp: str, cores: int, alg: str, idx: int, rep: int, key: int, size: int, q: dict) -> str:
    cells, metrics = [], {}
    for op, short in (("encrypt", "enc"), ("decrypt", "dec")):
        name = f"python.{op}.cpu{cores}.k{key}.b{size}"
        metrics[f"{name}.time_per_op"] = {
            "value": q[f"{short}_time"] * SPREAD[rep],
            "unit": "s",
            "better": "lower",
        }
        metrics[f"{name}.system_cpu_percent"] = {"value": q[f"{short}_cpu"], "unit": "%", "better": "lower"}
        cells.append(
            {
                "cell": name,
                "language": "python",
                "op": op,
                "key_bits": key,
                "bytes": size,
                "cpus": cores,
                "status": "ok",
            }
        )
    return json.dumps(
        {
            "schema": 1,
            "run_id": "s4-paper",
            "host": f"{hyp}-{cores}cpu",
            "label": f"{hyp}-{cores}",
            "groups": [hyp],
            "plan_sha256": "0" * 64,
            "benchmark": f"{alg}-e{idx:02d}",
            "type": "crypto",
            "index": idx,
            "params": {"alg": alg, "payload": "pdf"},
            "repetition": rep,
            "started_at": "2026-01-01T00:00:00Z",
            "ended_at": "2026-01-01T00:00:01Z",
            "status": "ok",
            "error": None,
            "metrics": metrics,
            "samples": {"cells": cells},
            "telemetry": {},
            "tool": {"name": "synth"},
        }
    )


def paper_store(root: Path) -> Path:
    """Tables 4 and 6 experiment by experiment, three runs each, on a Hyper-V and a KVM guest of
    each core count; one cell of each other algorithm carrying its table's averages."""
    out = root / "s4-paper"
    out.mkdir(parents=True)
    lines: dict[str, list[str]] = {}
    for (alg, exp, hyp), q in sorted(_experiments().items()):
        for rep in range(3):
            host = f"{hyp}-{int(q['cores'])}cpu"
            lines.setdefault(host, []).append(
                _record(hyp, int(q["cores"]), alg, exp, rep, int(q["key"]), int(q["bytes"]), q)
            )
    for i, (alg, (key, table)) in enumerate(OTHERS.items()):
        for hyp in ("hyperv", "kvm"):
            q = {
                k: float(S4.published_value(f"{table}.{hyp}.{k}").value)
                for k in ("enc_time", "enc_cpu", "dec_time", "dec_cpu")
            }
            for rep in range(3):
                lines.setdefault(f"{hyp}-2cpu", []).append(
                    _record(hyp, 2, alg, 50 + i, rep, key, 10 << 20, q)
                )
    for host, ls in lines.items():
        (out / f"{host}.jsonl").write_text("\n".join(ls) + "\n")
    return out


@pytest.fixture(scope="module")
def view(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("s4paper")
    return run_study("S4", [paper_store(root)], root / "out")


def _cells(view):
    for t in view.tables:
        for row in t.rows:
            for col, c in row.items():
                if isinstance(c, Cell) and c.paper is not None:
                    yield t, row, col, c


def test_the_paper_s_own_numbers_rerun_print_inside_or_equal(view) -> None:
    bad, compared = [], 0
    for t, row, col, c in _cells(view):
        if c.no_verdict:
            continue
        compared += 1
        if c.verdict not in ("inside", "equal"):
            bad.append((t.id, next(iter(row.values())), col, c.rerun, c.paper.value, c.verdict))
    assert compared >= 150 and not bad, bad


def test_what_cannot_be_compared_says_why(view) -> None:
    """Tables 8-11 average experiments the paper does not publish; Table 6's times have no
    decidable unit; Table 7 is not Table 6's mean: no inside/outside for any of them."""
    verdicts: dict[str, set[str]] = {}
    for t, _row, col, c in _cells(view):
        kind = "cpu" if "cpu" in col.lower() or "CPU" in col else "time"
        verdicts.setdefault(f"{t.id} {kind}", set()).add(c.verdict.split(":")[0])
    for tid in ("Table 7", "Table 8", "Table 9", "Table 10", "Table 11", "Table 12"):
        for kind in ("time", "cpu"):
            assert verdicts.get(f"{tid} {kind}", {"not comparable"}) == {"not comparable"}, (tid, kind)
    assert verdicts["Table 6 time"] == {"not comparable"}
    assert verdicts["Table 6 cpu"] <= {"inside", "equal"}
    assert verdicts["Table 4 time"] <= {"inside", "equal"} and verdicts["Table 5 time"] <= {"inside", "equal"}
    for p in S4.published:
        if p.table in ("Table 8", "Table 9", "Table 10", "Table 11"):
            assert "not publish" in p.not_comparable, p.id
        if p.table == "Table 6" and p.extra["quantity"].endswith("time"):
            assert "unit" in p.not_comparable, p.id


def test_derived_numbers_are_labelled_derived_with_their_formula(view) -> None:
    """The paper prints the differences of Tables 5, 7-11 and one overall eq. 1 (S4 L338); the
    per-table eq. 1 and the per-row ratios are the view's own arithmetic on the paper's numbers."""
    text = render_md(view)
    for t, row, col, c in _cells(view):
        label = next(iter(row.values()))
        if label == "eq. 1 (%)" or col.startswith("HV over KVM"):
            assert c.paper.derived and c.paper_label.startswith("derived "), (t.id, label, col)
        if label == "Differences":
            assert not c.paper.derived and c.paper.source in (
                "S4 L223",
                "S4 L267",
                "S4 L281",
                "S4 L298",
                "S4 L316",
                "S4 L330",
            )
    assert "| paper 18.05" not in text and "| paper -12.95" not in text
    assert "derived 18.05" in text  # eq. 1 of Table 5's averages: |24.2 - 20.5| / 20.5
    assert not any(c.startswith("paper eq. 1") for t in view.tables for c in t.columns)


def test_figures_two_to_four_are_built_and_the_manifest_says_what_is_the_toolkit_s(view) -> None:
    assert {"Figure 2", "Figure 3", "Figure 4"} <= {f.id for f in view.figures}
    assert S4.element("files.units").status == "adapted" and S4.element("files.streaming").status == "adapted"
    assert "Figures 2-4" in S4.element("table.12-13").what
    assert S4.element("table.8-11").status != "exact" and S4.element("table.7").status != "exact"
    unit = {e.id: e for e in S4.elements if e.id.startswith("time_unit.")}
    assert unit["time_unit.table4"].value == "s" and unit["time_unit.table6"].status == "not here"
    assert "L186" in unit["time_unit.table4"].source and "L242" in unit["time_unit.table6"].reason
