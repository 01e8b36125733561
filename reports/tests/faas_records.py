"""A faas record of the toolkit's schema for the study views' tests (one builder, three tests)."""

from __future__ import annotations

from typing import Any


def faas_record(
    bench: str,
    params: dict,
    *,
    index: int = 0,
    rep: int = 0,
    metrics: dict[str, float] | None = None,
    calls: list[dict] | None = None,
    started: str = "2026-01-01T10:00:00Z",
    ended: str | None = None,
) -> dict[str, Any]:
    """One ok record; ``metrics`` name -> seconds (default latency_s 1.0), ``calls`` the samples."""
    seconds = metrics or {"latency_s": 1.0}
    return {
        "schema": 1,
        "run_id": "r1",
        "host": "faas",
        "label": "faas",
        "groups": [],
        "plan_sha256": "x",
        "benchmark": bench,
        "type": "faas",
        "index": index,
        "params": params,
        "repetition": rep,
        "started_at": started,
        "ended_at": ended or started,
        "status": "ok",
        "error": None,
        "metrics": {k: {"value": v, "unit": "s", "better": "lower"} for k, v in seconds.items()},
        "samples": {} if calls is None else {"calls": calls},
        "telemetry": {},
        "tool": {"name": "testbed-faas-emulator"},
    }
