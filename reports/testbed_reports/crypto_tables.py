"""Crypto tables in the shape of the hypervisor crypto study (seed-004).

Rows: algorithm x key size x file kind x file size; columns: encrypt and decrypt time, process CPU % and
system-wide CPU % per label (machine / hypervisor), language and CPU count. Read from the ``crypto``
records' cells (``samples.cells`` names each cell's algorithm, key size, size, op, language and CPU
count), so the table does not depend on which parts a metric name leaves out. The file kind is the
benchmark's ``payload`` parameter (random, json, text, ...), else a kind named in the benchmark name,
else the benchmark name, so benchmarks of different files are never averaged into one row. Also the
study's "ratio of averages": per op, language and file kind (and across kinds when there are several),
the mean time, process CPU % and system-wide CPU % over every cell two labels share, label b / label a.

Files written by :func:`write` into the report directory:
``crypto_cells.csv`` (one row per cell and repetition), ``crypto_table.csv`` (means per
label x language x CPUs x algorithm x key x file kind x size x op, the seed-004 table) and
``crypto_ratio.csv`` (ratio of averages between labels).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from testbed_reports.errors import SchemaError
from testbed_shared import records
from testbed_shared.records import RecordError
from testbed_shared.safecsv import write_frame

#: per-cell quantities carried into the tables (metric suffix -> column)
QUANTITIES = {
    "time_per_op": "time_s",
    "cold_time": "cold_time_s",
    "throughput": "throughput_Bps",
    "cpu_percent": "cpu_percent",
    "system_cpu_percent": "system_cpu_percent",
}
KEYS = ["label", "language", "cpus", "alg", "key_bits", "file_kind", "file_bytes", "op"]
#: file kinds recognised in a benchmark name when the record has no ``payload`` parameter
KIND_WORDS = ("random", "json", "text", "binary", "csv", "image", "zero")
#: the file kind of cells that carry none (tables built from rows without the column)
NO_KIND = "unspecified"
CELL_COLUMNS = ["run_id", "host", "groups", "benchmark", "repetition", *KEYS, *QUANTITIES.values()]


def _records(paths: Sequence[Path]) -> Iterable[dict[str, Any]]:
    """The ok ``crypto`` records that count (testbed_shared.records: checked, one per execution,
    a retried one by its last attempt) of the result files (directories searched for *.jsonl)."""
    try:
        found = records.read(
            [p for p in paths if Path(p).suffix != ".csv"],
            keep=lambda r: r.get("type") == "crypto" and r["status"] == "ok",
        )
    except RecordError as exc:
        raise SchemaError(exc.path, exc.line, exc.problem) from None
    return found.records


#: payload kinds under the study's names: files of random bytes are its "binary" files
PAYLOAD_KINDS = {"random": "binary"}


def file_kind(rec: dict[str, Any]) -> str:
    """The kind of file a record's cells processed: ``payload`` param, a kind in the name, the name."""
    params = rec.get("params") or {}
    kind = params.get("payload") or params.get("resolved_payload")
    if kind:
        return PAYLOAD_KINDS.get(str(kind), str(kind))
    name = str(rec.get("benchmark") or "")
    words = set(name.lower().replace("_", "-").split("-"))
    found = [w for w in KIND_WORDS if w in words]
    return found[0] if found else name or NO_KIND


def cell_rows(rec: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per ok cell of one record, with its algorithm, sizes and quantities."""
    params = rec.get("params") or {}
    alg = params.get("resolved_alg") or params.get("alg")
    if alg is None or alg == "kms-envelope":
        return []
    metrics = rec.get("metrics") or {}
    kind = file_kind(rec)
    rows = []
    for cell in (rec.get("samples") or {}).get("cells", []):
        if cell.get("status") != "ok":
            continue
        row = {
            "run_id": rec.get("run_id"),
            "host": rec.get("host"),
            "groups": ",".join(sorted(str(g) for g in rec.get("groups") or [])),
            "label": rec.get("label") or rec.get("host"),
            "benchmark": rec.get("benchmark"),
            "repetition": rec.get("repetition"),
            "language": cell["language"],
            "cpus": cell.get("cpus") or 0,
            "alg": alg,
            "key_bits": cell["key_bits"],
            "file_kind": kind,
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
    return cells_of(_records(paths))


def cells_of(recs: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """The cells of crypto records that count (``load.Dataset.crypto``, or :func:`_records`)."""
    rows = [r for rec in recs for r in cell_rows(rec)]
    return pd.DataFrame(rows, columns=CELL_COLUMNS)


def seed004_table(df: pd.DataFrame) -> pd.DataFrame:
    """Means per label x language x CPUs x algorithm x key size x file kind x file size x op."""
    if df.empty:
        return pd.DataFrame(columns=[*KEYS, "n", *QUANTITIES.values()])
    if "file_kind" not in df:
        df = df.assign(file_kind=NO_KIND)
    agg = df.groupby(KEYS, observed=True, dropna=False)[list(QUANTITIES.values())].mean()
    agg.insert(0, "n", df.groupby(KEYS, observed=True, dropna=False).size())
    return agg.reset_index().sort_values(KEYS, kind="stable").reset_index(drop=True)


RATIO_COLUMNS = [
    "op",
    "language",
    "file_kind",
    "a",
    "b",
    "cells",
    "mean_time_a_s",
    "mean_time_b_s",
    "time_ratio_b_a",
    "mean_cpu_a",
    "mean_cpu_b",
    "cpu_ratio_b_a",
    "mean_system_cpu_a",
    "mean_system_cpu_b",
    "system_cpu_ratio_b_a",
]
#: what identifies one cell in the ratio of averages (the file kind joins it across kinds)
_CELL = ["cpus", "alg", "key_bits", "file_kind", "file_bytes"]


def _ratio(x: float, y: float) -> float | None:
    return y / x if x and pd.notna(x) and pd.notna(y) else None


def _pair_rows(part: pd.DataFrame, head: list[Any]) -> list[list[Any]]:
    """Ratio-of-averages rows of every label pair of ``part`` (one op, language and kind set)."""
    rows = []
    by = {lab: g.set_index(_CELL) for lab, g in part.groupby("label", observed=True)}
    for a, b in itertools.combinations(sorted(by), 2):
        common = by[a].index.intersection(by[b].index)
        if common.empty:
            continue
        row = [*head, a, b, len(common)]
        for col in ("time_s", "cpu_percent", "system_cpu_percent"):
            ma, mb = by[a].loc[common, col].mean(), by[b].loc[common, col].mean()
            row += [ma, mb, _ratio(ma, mb)]
        rows.append(row)
    return rows


def ratio_of_averages(table: pd.DataFrame) -> pd.DataFrame:
    """Per op, language and file kind, mean time and CPU % over the cells two labels share, b / a.

    CPU is both the process's (``cpu_percent``) and the system-wide (``system_cpu_percent``, the
    study's CPU %). With several file kinds, one more row per op and language spans them all
    (``file_kind`` "all"), matching cells of the same kind.
    """
    if table.empty:
        return pd.DataFrame(columns=RATIO_COLUMNS)
    if "file_kind" not in table:
        table = table.assign(file_kind=NO_KIND)
    rows = []
    for (op, lang), part in table.groupby(["op", "language"], observed=True):
        kinds = sorted(part["file_kind"].astype(str).unique())
        for kind in kinds:
            rows += _pair_rows(part[part["file_kind"].astype(str) == kind], [op, lang, kind])
        if len(kinds) > 1:
            rows += _pair_rows(part, [op, lang, "all"])
    return pd.DataFrame(rows, columns=RATIO_COLUMNS)


#: rows of each crypto table shown in the HTML report and summary.md (the CSVs hold all)
MAX_SHOWN_ROWS = 200
TABLE_SHOWN = [*KEYS, "n", "time_s", "throughput_Bps", "cpu_percent", "system_cpu_percent"]
RATIO_SHOWN = [c for c in RATIO_COLUMNS if not c.startswith("mean_cpu")]


def _shown(df: pd.DataFrame, cols: list[str], csv: str, what: str) -> dict[str, Any]:
    """One table of the report section: its first MAX_SHOWN_ROWS rows, with a note when cut."""
    note = f"{what}: all {len(df)} rows in {csv}."
    if len(df) > MAX_SHOWN_ROWS:
        note = f"{what}: the first {MAX_SHOWN_ROWS} of {len(df)} rows; all in {csv}."
    head = df[cols].head(MAX_SHOWN_ROWS).astype(object)
    rows = head.where(head.notna(), None).to_dict(orient="records")
    return {"caption": what, "columns": cols, "rows": rows, "note": note}


def section(table: pd.DataFrame, ratio: pd.DataFrame) -> dict[str, Any] | None:
    """The report section of the crypto tables (None without crypto cells)."""
    if table.empty:
        return None
    tables = [_shown(table, TABLE_SHOWN, "crypto_table.csv", "Crypto cells (seed-004 table), means")]
    if not ratio.empty:
        tables.append(_shown(ratio, RATIO_SHOWN, "crypto_ratio.csv", "Ratio of averages, label b / a"))
    note = (
        "Per label x language x CPUs x algorithm x key size x file kind x file size x op: mean time per "
        "op (s), throughput (B/s), process CPU % and system-wide CPU %; then the ratio of averages "
        "(mean over the cells two labels share, b / a) of time, CPU % and system CPU %."
    )
    return {"id": "crypto", "title": "Crypto tables", "note": note, "tables": tables}


def write(df: pd.DataFrame, out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Write the crypto CSVs of the report for the cells ``df`` (:func:`cells_of` the records
    ``load`` chose, as ``build`` does, or :func:`cells` of result files), when there are any.

    Returns the seed-004 table and the ratio of averages (both empty without crypto cells).
    """
    table = seed004_table(df)
    ratio = ratio_of_averages(table)
    if df.empty:
        return table, ratio
    out.mkdir(parents=True, exist_ok=True)
    write_frame(df, out / "crypto_cells.csv")
    write_frame(table, out / "crypto_table.csv")
    write_frame(ratio, out / "crypto_ratio.csv")
    return table, ratio
