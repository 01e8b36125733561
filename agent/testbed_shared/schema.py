"""The record schema shared by the agent and the report: one place for what a record holds.

This module starts with the primary-metric rule (docs/design.md section 6: "the primary metric of each
benchmark first"); the record field definitions and validation join it here so that the agent's
writer and the report's loader read one definition.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: version of the record layout (docs/design.md section 4)
SCHEMA_VERSION = 1

__all__ = [
    "BETTER",
    "EXECUTION_KEY",
    "FINAL_STATUSES",
    "MARGIN_FIELD",
    "PRIMARY_PATTERNS",
    "SCHEMA_VERSION",
    "STATUSES",
    "primary_metrics",
]

#: record statuses; "interrupted" is superseded by a later final record of the same execution
STATUSES = ("ok", "failed", "timeout", "skipped", "interrupted")
FINAL_STATUSES = frozenset({"ok", "failed", "timeout", "skipped"})
#: direction in which a metric wins
BETTER = ("higher", "lower")
#: the fields that identify one execution of one benchmark (a second record with the same key is a
#: duplicate: counted once when identical, flagged when it conflicts)
EXECUTION_KEY = ("run_id", "host", "index", "benchmark", "repetition")
#: optional record field: the equivalence margin in percent of the report's decision (from the plan's
#: defaults or the benchmark entry)
MARGIN_FIELD = "margin_percent"
#: record fields the report reads, with their JSON types (None allowed where listed)
STRING_FIELDS = ("run_id", "host", "benchmark")
OPTIONAL_STRING_FIELDS = ("label", "type", "started_at", "ended_at")

#: per workload type: a regular expression over metric names; every match is a primary metric.
#: fio: bandwidth per direction; dd: dd's own latency (seconds per run); notebook: wall time;
#: crypto: throughput per cell (time per operation where a cell has no byte size); pyperformance:
#: each benchmark's time; faas: the function's own latency (dd's seconds in the I/O study) where it
#: reports one, else the median round trip.
PRIMARY_PATTERNS: dict[str, tuple[str, ...]] = {
    "fio": (r"(read|write|trim)_bw_bytes",),
    "dd": (r"(read|write)_seconds",),
    "kaggle_notebook": (r"wall_s",),
    "notebook": (r"wall_s",),
    "crypto": (r".+\.throughput", r".+\.time_per_op"),
    "pyperformance": (r".+",),
    "faas": (r"latency_s", r"round_trip_p50_s"),
}


def primary_metrics(btype: str, names: Iterable[str]) -> list[str]:
    """The primary metrics among ``names`` for a benchmark of type ``btype`` (sorted).

    For crypto a cell's ``time_per_op`` counts only where the same cell has no ``throughput``; for
    faas the round trip counts only where the function reports no ``latency_s``.
    Types without a rule (sysinfo) have none.
    """
    names = sorted(set(names))
    patterns = PRIMARY_PATTERNS.get(btype, ())
    if not patterns:
        return []
    first = [n for n in names if re.fullmatch(patterns[0], n)]
    if btype == "faas":
        return first or [n for n in names if re.fullmatch(patterns[1], n)]
    if btype != "crypto":
        return first
    cells = {n.rsplit(".", 1)[0] for n in first}
    rest = [n for n in names if re.fullmatch(patterns[1], n) and n.rsplit(".", 1)[0] not in cells]
    return sorted(first + rest)
