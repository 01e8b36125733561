"""``testbed-report study S2``: the paper's figures rebuilt in its layout and units, the paper's
values beside the rerun's (Figures 3-44 from the study's raw results; the text's ratios, S2
L537-790), and each confidential machine against its twin with the calibrated interval."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import s2_records

from testbed_reports.study import StudyError, run_study
from testbed_shared.studies import manifest

S2 = manifest("S2")


@pytest.fixture(scope="module")
def view(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("s2")
    return run_study("S2", [s2_records.write(root)], root / "out"), root / "out"


def _table(view, tid: str):
    return next(t for t in view[0].tables if t.id == tid)


def test_the_figures_keep_the_paper_s_layout_and_values(view) -> None:
    fig17 = _table(view, "Figures 17/18")  # fio latency 1M, ms (S2 L601, L606)
    assert [r["operation"] for r in fig17.rows] == [
        "sequentialread",
        "sequentialwrite",
        "randomread",
        "randomwrite",
    ]
    assert fig17.columns[1:] == s2_records_labels()
    cell = fig17.rows[1]["SEV-Encrypted"]
    assert cell.paper.value == 5.747 and cell.paper.source == "S2 L601"  # the study's raw fio result
    assert cell.rerun == pytest.approx(3.5, rel=0.1)  # 0.5 ms x 7, in ms
    pyperf = _table(view, "Figures 3-10")
    assert pyperf.rows[0]["AMD-Non-SEV"].paper.value == 153.0  # crypto_pyaes, Figure 3 (S2 L535)
    notebooks = _table(view, "Figures 23-48")
    assert notebooks.rows[0]["TDX-Encrypted"].paper.value == 4.855  # SimplePrime median, Figure 24 (S2 L638)


def s2_records_labels() -> list[str]:
    return [
        "SEV-Encrypted",
        "SEV-Non-Encrypted",
        "AMD-Non-SEV",
        "TDX-Encrypted",
        "TDX-Non-Encrypted",
        "Intel-Non-TDX",
    ]


def test_overheads_recover_the_known_slowdowns(view) -> None:
    """The synthetic SEV-Encrypted machine is 1.30x its twin, SEV-Non-Encrypted 1.20x: the
    calibrated intervals contain those and decide 'slower'; TDX vs TDX: equivalent or inconclusive."""
    rows = _table(view, "Confidential vs twin").rows
    truth = {"SEV-Encrypted vs AMD-Non-SEV": 30.0, "SEV-Non-Encrypted vs AMD-Non-SEV": 20.0}
    # runs are the unit: the notebooks run 5 (SimplePrime) and 3 (energy, not compared) times, pyperf once
    cells = [
        (r["overhead of the first (%)"], truth[r["comparison"]], r["decision"])
        for r in rows
        if r["measure"] == "SimplePrime" and r["comparison"] in truth
    ]
    assert len(cells) == 2 and {d for _, _, d in cells} == {"slower"}
    assert all(c.low <= x <= c.high for c, x, _ in cells)
    once = [r for r in rows if r["measure"] == "pyperformance crypto_pyaes"]
    assert all(r["overhead of the first (%)"].low is None for r in once)  # one run a side: a point only
    assert {r["decision"] for r in once} == {"inconclusive"}
    pyaes = {r["comparison"]: r for r in rows if r["measure"] == "pyperformance crypto_pyaes"}
    enc = pyaes["SEV-Encrypted vs AMD-Non-SEV"]["overhead of the first (%)"]
    assert pyaes["TDX-Encrypted vs TDX-Non-Encrypted"]["decision"] in ("equivalent", "inconclusive")
    # the paper's point beside it: its Figure 3 bars, SEV-Encrypted 149 ms over AMD-Non-SEV 153 ms
    assert enc.paper.value == pytest.approx(100 * (149 / 153 - 1), abs=1e-3)


def test_stated_ratios_are_recomputed(view) -> None:
    claims = {r["claim"]: r["rerun vs paper"] for r in _table(view, "Stated ratios").rows}
    assert claims["lat_1m_sev_enc"].paper.value == 7  # S2 L603
    assert claims["lat_1m_sev_enc"].rerun == pytest.approx(7.0, rel=0.1)  # the synthetic write latency is 7x
    assert claims["pyperf_intel_twin"].paper.value == 75  # S2 L778
    assert claims["pyperf_intel_twin"].rerun == pytest.approx(100 / 1.33, rel=0.03)
    assert claims["float_intel_twin_slower"].paper.value == [25, 30]  # "25-30 %" (S2 L552), as a range
    assert len(claims) == sum(1 for p in S2.published if p.extra.get("kind") == "claim")


def test_simpleprime_run_to_run_check(view) -> None:
    rows = _table(view, "Section 9.1").rows
    assert {r["executions"] for r in rows} == {5}
    assert all(0 < r["CV of the time (%)"].rerun < 10 for r in rows)


def test_outputs_are_written(view) -> None:
    out = view[1]
    data = json.loads((out / "study.json").read_text())
    assert data["study"] == "S2" and data["fidelity"] == S2.counts()
    assert (out / "figures-17-18.csv").is_file() and "<img" in (out / "study.html").read_text()


def test_results_without_the_paper_s_machines_are_refused(tmp_path: Path) -> None:
    run = s2_records.write(tmp_path)
    for f in run.glob("*.jsonl"):
        text = f.read_text()
        for label in s2_records_labels():
            text = text.replace(f'"label": "{label}"', '"label": "other"')
        f.write_text(
            text.replace('"groups": ["sev"]', '"groups": []')
            .replace('"groups": ["tdx"]', '"groups": []')
            .replace('"amd_baseline"', '"x"')
            .replace('"intel_baseline"', '"y"')
        )
    with pytest.raises(StudyError, match="paper's six"):
        run_study("S2", [run], tmp_path / "out")
