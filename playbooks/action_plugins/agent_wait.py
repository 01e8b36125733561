"""Action of run_plan.yml: wait for the agent started with `async`, and on every poll show this
host's benchmark, repetition and executions done out of the total from the agent's progress file.

    - ansible.builtin.command: ...   # async: N, poll: 0, register: job
    - agent_wait: {jid: "{{ job.ansible_job_id }}", progress_file: PATH, interval: 5, timeout: N}

Returns the async job's final result (rc, stdout, stderr ...), like `poll:` would.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "filter_plugins"))
from agent_progress import agent_progress_line

display = Display()


class ActionModule(ActionBase):
    """Poll async_status and the progress file until the job finishes or times out."""

    _VALID_ARGS = frozenset(("jid", "results_file", "progress_file", "interval", "timeout"))

    def run(self, tmp: Any = None, task_vars: dict | None = None) -> dict:
        super().run(tmp, task_vars)
        args = self._task.args
        interval, timeout = float(args.get("interval", 5)), float(args.get("timeout", 86400))
        host = task_vars.get("inventory_hostname", "") if task_vars else ""
        end, last = time.monotonic() + timeout, ""
        # the directory the async wrapper wrote the job to (it expands ~ with $HOME, which can
        # differ from the user's home in /etc/passwd that a remote ~ expansion gives)
        async_dir = (
            os.path.dirname(args["results_file"])
            if args.get("results_file")
            else self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))
        )
        job = {"jid": args["jid"], "_async_dir": async_dir}
        while True:
            status = self._execute_module("ansible.builtin.async_status", job, task_vars=task_vars)
            if status.get("finished") or status.get("failed"):
                self._execute_module(
                    "ansible.builtin.async_status", {**job, "mode": "cleanup"}, task_vars=task_vars
                )
                return {k: v for k, v in status.items() if k not in ("started", "finished", "results_file")}
            if time.monotonic() > end:
                return {
                    "failed": True,
                    "msg": f"the agent did not finish within {timeout:.0f} s (job {args['jid']})",
                }
            line = agent_progress_line(self._slurp(args["progress_file"], task_vars), host)
            if line != last:
                display.display(f"  progress {line}")
                last = line
            time.sleep(interval)

    def _slurp(self, path: str, task_vars: dict | None) -> Any:
        got = self._execute_module("ansible.builtin.slurp", {"src": path}, task_vars=task_vars)
        return None if got.get("failed") else got
