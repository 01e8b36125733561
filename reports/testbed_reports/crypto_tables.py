"""Crypto tables in the shape of the hypervisor crypto study (seed-004).

Rows: algorithm x key size x file size; columns: encrypt and decrypt time, process CPU % and
system-wide CPU % per label (machine / hypervisor), language and CPU count. Read from the ``crypto``
records' cells (``samples.cells`` names each cell's algorithm, key size, size, op, language and CPU
count), so the table does not depend on which parts a metric name leaves out. Also the study's
"ratio of averages": per op, the mean time over every cell two labels share, label b / label a.

Files written by :func:`write` into the report directory:
``crypto_cells.csv`` (one row per cell and repetition), ``crypto_table.csv`` (means per
label x language x CPUs x algorithm x key x size x op, the seed-004 table) and
``crypto_ratio.csv`` (ratio of averages between labels).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

#: per-cell quantities carried into the tables (metric suffix -> column)
QUANTITIES = {
    "time_per_op": "time_s",
    "cold_time": "cold_time_s",
    "throughput": "throughput_Bps",
    "cpu_percent": "cpu_percent",
    "system_cpu_percent": "system_cpu_percent",
}
KEYS = ["label", "language", "cpus", "alg", "key_bits", "file_bytes", "op"]
CELL_COLUMNS = ["run_id", "host", "benchmark", "repetition", *KEYS, *QUANTITIES.values()]


def _records(paths: Sequence[Path]) -> Iterable[dict[str, Any]]:
    """Every ok ``crypto`` record of the result files (directories are searched for *.jsonl)."""
    for p in paths:
        files = [p] if p.is_file() else sorted(p.rglob("*.jsonl"))
        for f in files:
            if f.suffix != ".jsonl":
                continue
            for line in f.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(rec, dict) and rec.get("type") == "crypto" and rec.get("status") == "ok":
                    yield rec


def cell_rows(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per ok cell of one record, with its algorithm, sizes and quantities."""
    params = rec.get("params") or {}
    alg = params.get("resolved_alg") or params.get("alg")
    if alg is None or alg == "kms-envelope":
        return []
    metrics = rec.get("metrics") or {}
    rows = []
    for cell in (rec.get("samples") or {}).get("cells", []):
        if cell.get("status") != "ok":
            continue
        row = {
            "run_id": rec.get("run_id"),
            "host": rec.get("host"),
            "label": rec.get("label") or rec.get("host"),
            "benchmark": rec.get("benchmark"),
            "repetition": rec.get("repetition"),
            "language": cell["language"],
            "cpus": cell.get("cpus") or 0,
            "alg": alg,
            "key_bits": cell["key_bits"],
            "file_bytes": cell["bytes"],
            "op": cell["op"],
        }
        for q, col in QUANTITIES.items():
            m = metrics.get(f"{cell['cell']}.{q}")
            row[col] = m["value"] if isinstance(m, dict) else None
        rows.append(row)
    return rows


def cells(paths: Sequence[Path]) -> pd.DataFrame:
    """All crypto cells of the result files, one row per cell and repetition."""
    rows = [r for rec in _records(paths) for r in cell_rows(rec)]
    return pd.DataFrame(rows, columns=CELL_COLUMNS)


def seed004_table(df: pd.DataFrame) -> pd.DataFrame:
    """Means per label x language x CPUs x algorithm x key size x file size x op (encrypt, decrypt)."""
    if df.empty:
        return pd.DataFrame(columns=[*KEYS, "n", *QUANTITIES.values()])
    agg = df.groupby(KEYS, observed=True, dropna=False)[list(QUANTITIES.values())].mean()
    agg.insert(0, "n", df.groupby(KEYS, observed=True, dropna=False).size())
    return agg.reset_index().sort_values(KEYS, kind="stable").reset_index(drop=True)


def ratio_of_averages(table: pd.DataFrame) -> pd.DataFrame:
    """Per op and language, mean time (and CPU %) over the cells two labels share, b / a."""
    cols = ["op", "language", "a", "b", "cells", "mean_time_a_s", "mean_time_b_s", "time_ratio_b_a"]
    cols += ["mean_cpu_a", "mean_cpu_b", "cpu_ratio_b_a"]
    rows = []
    cell = ["cpus", "alg", "key_bits", "file_bytes"]
    for (op, lang), part in table.groupby(["op", "language"], observed=True):
        by = {lab: g.set_index(cell) for lab, g in part.groupby("label", observed=True)}
        for a, b in itertools.combinations(sorted(by), 2):
            common = by[a].index.intersection(by[b].index)
            if common.empty:
                continue
            ta, tb = by[a].loc[common, "time_s"].mean(), by[b].loc[common, "time_s"].mean()
            ca, cb = by[a].loc[common, "cpu_percent"].mean(), by[b].loc[common, "cpu_percent"].mean()
            rows.append([op, lang, a, b, len(common), ta, tb, tb / ta if ta else None, ca, cb])
            rows[-1].append(cb / ca if ca else None)
    return pd.DataFrame(rows, columns=cols)


def write(paths: Sequence[Path], out: Path) -> pd.DataFrame:
    """Write the crypto CSVs of the report when the results hold crypto cells; the seed-004 table."""
    df = cells(paths)
    if df.empty:
        return seed004_table(df)
    table = seed004_table(df)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "crypto_cells.csv", index=False)
    table.to_csv(out / "crypto_table.csv", index=False)
    ratio_of_averages(table).to_csv(out / "crypto_ratio.csv", index=False)
    return table
