"""The record schema shared by the agent and the report: one place for what a record holds.

The primary-metric rule of each workload type is its module's (``Workload.primary_metrics``,
looked up by :func:`testbed_agent.workloads.primary_metrics`).
"""

from __future__ import annotations

from typing import Any

#: version of the record layout (DESIGN.md section 4)
SCHEMA_VERSION = 1

__all__ = [
    "BETTER",
    "EXECUTION_KEY",
    "FINAL_STATUSES",
    "MARGIN_FIELD",
    "SCHEMA_VERSION",
    "STATUSES",
    "metric",
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


def metric(value: float, unit: str, better: str) -> dict[str, Any]:
    """One metric entry of a record: its value, the SI base unit named, the direction that wins."""
    if better not in BETTER:
        raise ValueError(f"better must be one of {BETTER}, got {better!r}")
    return {"value": float(value), "unit": unit, "better": better}
