"""Result records (DESIGN.md section 4): JSON Lines, appended and fsynced one at a time."""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from testbed_agent import SCHEMA_VERSION

STATUSES = ("ok", "failed", "timeout", "skipped", "interrupted")
#: statuses that end a benchmark execution for good; ``interrupted`` is re-run on resume
FINAL_STATUSES = frozenset({"ok", "failed", "timeout", "skipped"})
BETTER = ("higher", "lower")


def now_rfc3339() -> str:
    """Current UTC time, RFC 3339 with microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def metric(value: float, unit: str, better: str) -> dict[str, Any]:
    """One metric entry: SI base unit named, direction that wins."""
    if better not in BETTER:
        raise ValueError(f"better must be one of {BETTER}, got {better!r}")
    return {"value": float(value), "unit": unit, "better": better}


@dataclass
class Outcome:
    """What a workload measured in one execution."""

    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    samples: dict[str, Any] = field(default_factory=dict)
    tool: dict[str, Any] = field(default_factory=dict)
    artifacts: list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    status: str = "ok"
    error: str | None = None


@dataclass(frozen=True)
class Identity:
    """Fields every record of one host's run shares."""

    run_id: str
    host: str
    label: str
    groups: tuple[str, ...]
    plan_sha256: str
    plan_name: str = ""


def make_record(
    ident: Identity,
    *,
    benchmark: str,
    btype: str,
    index: int,
    repetition: int,
    params: dict[str, Any],
    started_at: str,
    ended_at: str,
    status: str,
    error: str | None = None,
    metrics: dict[str, Any] | None = None,
    samples: dict[str, Any] | None = None,
    telemetry: dict[str, Any] | None = None,
    tool: dict[str, Any] | None = None,
    artifacts: list[str] | None = None,
) -> dict[str, Any]:
    """Build a schema-1 record."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    return {
        "schema": SCHEMA_VERSION,
        "run_id": ident.run_id,
        "host": ident.host,
        "label": ident.label,
        "groups": list(ident.groups),
        "plan_sha256": ident.plan_sha256,
        "plan": ident.plan_name,
        "benchmark": benchmark,
        "type": btype,
        "index": index,
        "params": params,
        "repetition": repetition,
        "started_at": started_at,
        "ended_at": ended_at,
        "status": status,
        "error": error,
        "metrics": metrics or {},
        "samples": samples or {},
        "telemetry": telemetry or {},
        "tool": tool or {},
        "artifacts": artifacts or [],
    }


class ResultWriter:
    """Appends records to ``<dir>/<host>.jsonl``; each record is flushed and fsynced."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._repair_tail()
        self._fh = open(path, "a", encoding="utf-8")  # noqa: SIM115 - kept open for the run
        try:
            fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._fh.close()
            from testbed_agent.errors import TestbedError

            raise TestbedError(
                f"{path}: another agent is writing this run", hint="wait for it, or use another --run-id"
            ) from None

    def _repair_tail(self) -> None:
        """Cut a half-written last line left by a crash, so appends stay valid JSON Lines."""
        if not self.path.exists():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            keep = data.rfind(b"\n") + 1
            with open(self.path, "r+b") as fh:
                fh.truncate(keep)
                fh.flush()
                os.fsync(fh.fileno())

    def append(self, record: dict[str, Any]) -> None:
        self._fh.write(json.dumps(record, sort_keys=False, default=str) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_records(path: Path) -> list[dict[str, Any]]:
    """Read a JSON Lines result file; a torn last line (crash mid-write) is ignored."""
    if not path.exists():
        return []
    records = []
    lines = path.read_text(encoding="utf-8").splitlines()
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            if i == len(lines) - 1:
                break
            raise
    return records


def completed_executions(path: Path, plan_sha256: str) -> set[tuple[int, str, int]]:
    """(index, benchmark, repetition) of executions already recorded with a final status."""
    done = set()
    for rec in read_records(path):
        if rec.get("plan_sha256") == plan_sha256 and rec.get("status") in FINAL_STATUSES:
            done.add((rec.get("index", -1), rec["benchmark"], rec["repetition"]))
    return done
