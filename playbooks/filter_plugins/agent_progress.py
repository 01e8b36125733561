"""Filter of run_plan.yml: one readable line from the agent's progress file
(``<results>/<host>.progress.json``, written by testbed_agent.progress)."""

from __future__ import annotations

import base64
import json
from typing import Any


def agent_progress_line(progress: Any, host: str = "") -> str:
    """``host: benchmark rep 2/3, 4/12 done`` from the parsed progress file (or its slurp result)."""
    if isinstance(progress, dict) and "content" in progress:
        try:
            progress = json.loads(base64.b64decode(progress["content"]))
        except ValueError:
            progress = None
    prefix = f"{host}: " if host else ""
    if not isinstance(progress, dict) or "total" not in progress:
        return f"{prefix}starting (no progress yet)"
    done, total = progress.get("done", 0), progress.get("total", 0)
    if progress.get("state") != "running":
        return f"{prefix}{progress.get('state', '?')}, {done}/{total} executions"
    rep = progress.get("repetition")
    reps = f" rep {rep}/{progress.get('repetitions')}" if rep else ""
    return f"{prefix}{progress.get('benchmark') or '-'}{reps}, {done}/{total} done{_estimate(progress)}"


def _dur(s: float) -> str:
    s = max(0, round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _estimate(progress: dict) -> str:
    """ ", 1m10s elapsed, about 2m50s left" from the mean time per execution so far (a rough
    estimate: executions differ; none before the first one ends)."""
    elapsed, here = progress.get("elapsed_s"), progress.get("done_here")
    if not isinstance(elapsed, (int, float)) or not isinstance(here, int):
        return ""
    left_n = progress.get("total", 0) - progress.get("done", 0)
    if here <= 0:
        return f", {_dur(elapsed)} elapsed"
    return f", {_dur(elapsed)} elapsed, about {_dur(elapsed / here * left_n)} left"


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"agent_progress_line": agent_progress_line}
