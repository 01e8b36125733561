"""The agent's progress as a small JSON file next to its results, for whoever watches the run
(run_plan.yml reads it on every poll): ``<out>/<host>.progress.json``.

    {"run_id": ..., "host": ..., "state": "running|done|interrupted", "benchmark": "fio_4k_randread",
     "repetition": 2, "repetitions": 3, "done": 4, "total": 12, "updated_at": "RFC3339",
     "elapsed_s": 61.2}

``elapsed_s`` counts from this process's first update, so a watcher can estimate what is left
(run_plan.yml: the mean time per execution so far times the executions left).

Written atomically (temporary file + rename), so a reader never sees half a file.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from testbed_agent.results import now_rfc3339
from testbed_agent.telemetry import ProgressExporter
from testbed_shared.atomic import write_atomically


class ProgressFileExporter(ProgressExporter):
    """ProgressExporter that also writes ``<out>/<host>.progress.json``."""

    def __init__(self, directory: Path | None, run_id: str, host: str, out: Path) -> None:
        super().__init__(directory, run_id, host)
        self.file = out / f"{host}.progress.json"
        self.started: float | None = None
        self.first_done = 0

    def update(
        self,
        done: int,
        total: int,
        current: str,
        status: str = "running",
        repetition: int | None = None,
        repetitions: int | None = None,
    ) -> None:
        """Record the state of the run (and update the textfile metrics)."""
        super().update(done, total, current, status)
        if self.started is None:
            self.started, self.first_done = time.monotonic(), done  # a resumed run starts at its done
        state = {
            "run_id": self.run_id,
            "host": self.host,
            "state": status,
            "benchmark": current or None,
            "repetition": repetition,
            "repetitions": repetitions,
            "done": done,
            "total": total,
            "updated_at": now_rfc3339(),
            "elapsed_s": round(time.monotonic() - self.started, 1),
            "done_here": done - self.first_done,
        }
        self.file.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(self.file, json.dumps(state) + "\n")
