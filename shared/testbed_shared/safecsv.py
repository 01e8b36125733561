"""The one CSV writer of the toolkit: cells a spreadsheet would run as a formula are neutralised.

A label, benchmark name or parameter taken from a plan or results file can be ``=HYPERLINK(...)``
or ``=cmd|' /C calc'!A0``; opened in a spreadsheet, such a cell runs. Following OWASP's CSV
injection rule, a text cell that begins with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
is written with a leading ``'`` (shown as text by spreadsheets, and stripped by none of them).
Numbers stay numbers: ints, floats (NaN and infinities too) and text that is exactly a decimal
number (``-1.5``, ``+3e-2``) are written as they are. Header cells are text like any other.

Lines end with CRLF (RFC 4180), so that a cell holding a carriage return or a newline is quoted
(Python's csv module quotes only the characters of its line terminator).

Every CSV file goes through :func:`write_csv` or :func:`write_frame`, which write atomically
(:func:`testbed_shared.atomic.write_atomically`: only over a regular file or to a new path)."""

from __future__ import annotations

import csv
import io
import math
import numbers
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from testbed_shared.atomic import write_atomically

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def neutralise(value: Any) -> Any:
    """``value`` made safe for a spreadsheet: a formula-looking text cell gets a leading ``'``."""
    if isinstance(value, (bool, numbers.Number)) or value is None:
        return value
    text = value if isinstance(value, str) else str(value)
    if text[:1] in TRIGGERS and not _NUMBER.fullmatch(text):
        return "'" + text
    return value


def is_safe(value: Any) -> bool:
    """What a test checks: the cell as written cannot start a formula."""
    text = "" if value is None else str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return True
    return text[:1] not in TRIGGERS or bool(_NUMBER.fullmatch(text))


def rows_text(rows: Iterable[Sequence[Any]], header: Sequence[Any] | None = None) -> str:
    """CSV text of ``rows`` (and ``header``), every cell neutralised; None is an empty cell."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n")
    if header is not None:
        w.writerow([neutralise(h) for h in header])
    for row in rows:
        w.writerow(["" if v is None else neutralise(v) for v in row])
    return buf.getvalue()


def write_csv(
    path: Path, rows: Iterable[Sequence[Any]], header: Sequence[Any] | None = None, what: str = "CSV"
) -> None:
    """Write ``rows`` as CSV to ``path`` (atomically; cells neutralised)."""
    write_atomically(Path(path), rows_text(rows, header), what=what)


def frame_text(frame: Any, index: bool = False) -> str:
    """CSV text of a pandas DataFrame: object cells, column names and the index neutralised; numeric
    columns are left to pandas (numbers stay numbers)."""
    from pandas.api.types import is_bool_dtype, is_numeric_dtype  # noqa: PLC0415 - pandas is the controller's; targets write CSV without it

    safe = frame.copy()
    for i in range(len(safe.columns)):
        column = safe.iloc[:, i]
        if not (is_numeric_dtype(column) or is_bool_dtype(column)):  # text (object, str, category)
            safe.isetitem(i, column.astype(object).map(neutralise))
    safe.columns = [neutralise(c) for c in safe.columns]
    if index:
        safe.index = safe.index.map(neutralise)
    return safe.to_csv(index=index, lineterminator="\r\n")


def write_frame(frame: Any, path: Path, index: bool = False, what: str = "CSV") -> None:
    """Write a pandas DataFrame as CSV to ``path`` (atomically; text cells neutralised)."""
    write_atomically(Path(path), frame_text(frame, index), what=what)
