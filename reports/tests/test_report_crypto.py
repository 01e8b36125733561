"""Crypto tables of the report: file kind as a key, system CPU % in the ratio, tables in the HTML."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from report_helpers import record, write_jsonl

from testbed_reports import crypto_tables
from testbed_reports.build import build


def _metric(value: float, unit: str, better: str) -> dict:
    return {"value": value, "unit": unit, "better": better}


def crypto_record(label: str, bench: str, payload: str | None, time_s: float, rep: int = 0) -> dict:
    """One ok crypto record of aes-cbc, 128-bit key, 4 KiB, encrypt and decrypt cells in go."""
    params = {"alg": "aes-cbc"} | ({"payload": payload} if payload else {})
    cells, metrics = [], {}
    for op in ("encrypt", "decrypt"):
        name = f"go.{op}"
        cells.append(
            {"cell": name, "language": "go", "op": op, "key_bits": 128, "bytes": 4096, "cpus": None}
            | {"status": "ok", "reason": None}
        )
        metrics[f"{name}.time_per_op"] = _metric(time_s, "s", "lower")
        metrics[f"{name}.throughput"] = _metric(4096 / time_s, "B/s", "higher")
        metrics[f"{name}.cpu_percent"] = _metric(90.0, "%", "lower")
        metrics[f"{name}.system_cpu_percent"] = _metric(40.0 if label == "kvm" else 20.0, "%", "lower")
    return record(
        label=label,
        host=f"h-{label}",
        benchmark=bench,
        type="crypto",
        params=params,
        repetition=rep,
        metrics=metrics,
        samples={"cells": cells},
    )


def _records() -> list[dict]:
    out = []
    for label, scale in (("hyperv", 1.0), ("kvm", 1.5)):
        for rep in range(3):
            out.append(crypto_record(label, "aes-cbc-text", "text", 1e-3 * scale, rep))
            out.append(crypto_record(label, "aes-cbc-binary", "binary", 4e-3 * scale, rep))
    return out


def test_file_kind_keeps_benchmarks_apart(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "r" / "h.jsonl", _records())
    table, ratio = crypto_tables.write(crypto_tables.cells([path]), tmp_path / "out")
    enc = table[(table["label"] == "hyperv") & (table["op"] == "encrypt")]
    assert sorted(enc["file_kind"]) == ["binary", "text"]  # two rows, not one average
    assert enc.set_index("file_kind")["time_s"].to_dict() == pytest.approx({"binary": 4e-3, "text": 1e-3})
    for name in ("crypto_table.csv", "crypto_cells.csv"):
        assert "file_kind" in pd.read_csv(tmp_path / "out" / name).columns
    on_disk = pd.read_csv(tmp_path / "out" / "crypto_ratio.csv")
    enc_ratio = on_disk[on_disk["op"] == "encrypt"].set_index("file_kind")
    assert sorted(enc_ratio.index) == ["all", "binary", "text"]
    assert enc_ratio.loc["text", "cells"] == 1 and enc_ratio.loc["all", "cells"] == 2
    assert enc_ratio.loc["text", "time_ratio_b_a"] == pytest.approx(1.5)
    # the study's CPU %: system-wide, beside the process's
    assert enc_ratio.loc["binary", "system_cpu_ratio_b_a"] == pytest.approx(2.0)
    assert enc_ratio.loc["binary", "cpu_ratio_b_a"] == pytest.approx(1.0)
    assert len(ratio) == len(on_disk)


def test_file_kind_falls_back_to_the_benchmark_name() -> None:
    assert crypto_tables.file_kind({"benchmark": "aes-cbc-json", "params": {}}) == "json"
    assert crypto_tables.file_kind({"benchmark": "aes-big", "params": {}}) == "aes-big"
    assert crypto_tables.file_kind({"benchmark": "x", "params": {"payload": "text"}}) == "text"
    # the hypervisor plan's binary files are random bytes: the study's name for them
    assert crypto_tables.file_kind({"benchmark": "x", "params": {"payload": "random"}}) == "binary"


def test_one_kind_gives_no_across_kind_row() -> None:
    rows = [crypto_record(lab, "aes-cbc", None, t) for lab, t in (("a", 1.0), ("b", 2.0))]
    cells = [r for rec in rows for r in crypto_tables.cell_rows(rec)]
    table = crypto_tables.seed004_table(pd.DataFrame(cells))
    ratio = crypto_tables.ratio_of_averages(table)
    assert set(ratio["file_kind"]) == {"aes-cbc"} and len(ratio) == 2  # encrypt, decrypt


def test_report_shows_crypto_tables(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "r" / "h.jsonl", _records())
    out = tmp_path / "out"
    build([tmp_path / "r"], out)
    html = (out / "index.html").read_text()
    assert 'id="crypto"' in html and "Ratio of averages" in html
    assert '<th class="t">file_kind</th>' in html and '<th class="t">system_cpu_percent</th>' in html
    assert "all 8 rows in crypto_table.csv" in html
    summary = (out / "summary.md").read_text()
    assert "## Crypto tables" in summary and "| file_kind |" in summary and "| binary |" in summary


def test_crypto_section_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(crypto_tables, "MAX_SHOWN_ROWS", 3)
    rows = [r for rec in _records() for r in crypto_tables.cell_rows(rec)]
    table = crypto_tables.seed004_table(pd.DataFrame(rows))
    sec = crypto_tables.section(table, crypto_tables.ratio_of_averages(table))
    assert sec is not None and len(sec["tables"][0]["rows"]) == 3
    assert "the first 3 of 8 rows" in sec["tables"][0]["note"]
    assert crypto_tables.section(table.iloc[0:0], table.iloc[0:0]) is None
