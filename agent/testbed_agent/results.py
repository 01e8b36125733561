"""Result records (docs/design.md section 4): JSON Lines, appended and fsynced one at a time."""

from __future__ import annotations

import fcntl
import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from testbed_shared import records
from testbed_shared.errors import TestbedError
from testbed_shared.records import (
    BETTER,
    FINAL_STATUSES,
    STATUSES,
    Dedupe,
    dedupe,
    execution_key,
    metric,
)

__all__ = [
    "BETTER",
    "FINAL_STATUSES",
    "MAX_ATTEMPTS",
    "STATUSES",
    "Dedupe",
    "Identity",
    "Outcome",
    "ResultWriter",
    "completed_executions",
    "dedupe",
    "execution_key",
    "make_record",
    "metric",
    "now_rfc3339",
    "read_records",
    "resume_state",
    "retryable",
]


def now_rfc3339() -> str:
    """Current UTC time, RFC 3339 with microseconds."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


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


def make_record(ident: Identity, **fields: Any) -> dict[str, Any]:
    """A record of this run: :func:`testbed_shared.records.make` with the run's identity and the
    execution's ``fields`` as ``make`` names them (``primary``: the names of its primary metrics by
    its workload type's rule; ``attempt``: 1 for the first execution, +1 per retry)."""
    return records.make(
        run_id=ident.run_id,
        host=ident.host,
        label=ident.label,
        groups=ident.groups,
        plan_sha256=ident.plan_sha256,
        plan=ident.plan_name,
        **fields,
    )


class ResultWriter:
    """Appends records to ``<dir>/<host>.jsonl``; each record is flushed and fsynced.

    One agent per results file: an exclusive lock on ``<dir>/<host>.lock`` is taken before
    anything else, so only the holder repairs a torn tail and appends. The loser raises
    :class:`~testbed_shared.errors.TestbedError` (exit 2) naming the holder's pid.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._lock = _take_lock(path.with_suffix(".lock"))
        try:
            self._repair_tail()
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self._fh = os.fdopen(fd, "a", encoding="utf-8")
        except BaseException:
            self._lock.close()
            raise

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
        self._lock.close()

    def __enter__(self) -> ResultWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _take_lock(path: Path) -> Any:
    """Open and exclusively lock ``path`` (holding our pid); raise TestbedError if another holds it."""

    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    fh = os.fdopen(fd, "r+", encoding="ascii")
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = fh.read().strip() or "unknown"
        fh.close()
        raise TestbedError(
            f"{path}: another agent (pid {holder}) is writing this run",
            hint="wait for it, or use another --run-id",
        ) from None
    fh.seek(0)
    fh.truncate()
    fh.write(f"{os.getpid()}\n")
    fh.flush()
    return fh


def read_records(path: Path) -> list[dict[str, Any]]:
    """The records of a result file, validated (a torn last line, left by a crash mid-write, is
    ignored); a bad record raises :class:`~testbed_shared.records.RecordError` naming its line."""
    if not path.exists():
        return []
    return [records.validate(rec, str(path), n, metrics=False) for n, _, rec in records.read_lines(path)]


#: executions are retried at most this many times in all when an interrupted attempt failed them
MAX_ATTEMPTS = 3
_KILLED_CHILD = re.compile(r"exited with -\d+")


def retryable(rec: dict[str, Any], killed_sessions: set[str]) -> bool:
    """A failed record an interrupted attempt caused: its child was killed by a signal, or its
    agent session was killed itself."""
    if rec.get("status") != "failed" or int(rec.get("attempt") or 1) >= MAX_ATTEMPTS:
        return False
    return rec.get("session") in killed_sessions or bool(_KILLED_CHILD.search(str(rec.get("error") or "")))


def resume_state(
    path: Path, plan_sha256: str, killed_sessions: set[str] = frozenset()
) -> tuple[dict[tuple[int, str, int], dict[str, Any]], dict[tuple[int, str, int], int]]:
    """For resuming: the final record per (index, benchmark, repetition), and the attempt number
    the next execution of each recorded execution gets."""
    done: dict[tuple[int, str, int], dict[str, Any]] = {}
    attempts: dict[tuple[int, str, int], int] = {}
    recs = [r for r in read_records(path) if r.get("plan_sha256") == plan_sha256]
    for rec in dedupe(recs).kept:
        key = (rec.get("index", -1), rec["benchmark"], rec["repetition"])
        attempts[key] = int(rec.get("attempt") or 1) + 1
        if rec.get("status") in FINAL_STATUSES and not retryable(rec, killed_sessions):
            done[key] = rec
    return done, attempts


def completed_executions(path: Path, plan_sha256: str) -> set[tuple[int, str, int]]:
    """(index, benchmark, repetition) of executions already recorded with a final status."""
    return set(resume_state(path, plan_sha256)[0])
