"""Action of run_plan.yml: wait for the agent started with `async`, and on every poll show this
host's benchmark, repetition and executions done out of the total from the agent's progress file.

    - ansible.builtin.command: ...   # async: N, poll: 0, register: job
    - agent_wait: {jid: "{{ job.ansible_job_id }}", progress_file: PATH, interval: 5, timeout: N}

Returns the async job's final result (rc, stdout, stderr ...), like `poll:` would.

A poll is one shell command on the target (``cat`` of the async job's status file and of the
progress file over the open connection), not a Python module: each module run starts Python on
the target, which took 7-15 s of the CPU the benchmarks run on in a guest under software
emulation (two modules a poll, polls back to back). While the job's status file says it runs,
that is all; once it says anything else (finished, failed, missing, unreadable),
``async_status`` reads the job as ``poll:`` would and cleans it up.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "filter_plugins"))
from agent_progress import agent_progress_line

display = Display()

#: separates the job's status file from the progress file in a poll's output
MARK = "--testbed-agent-wait--"
#: async_status's own keys, left out of the job's result
BOOKKEEPING = ("started", "finished", "results_file")


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def running(status: Any) -> bool:
    """Whether an async job's status file (parsed) says the job still runs: the async wrapper
    writes ``{"started": 1, "finished": 0, ...}`` until it writes the module's result."""
    return isinstance(status, dict) and "started" in status and not status.get("finished")


class ActionModule(ActionBase):
    """Poll the job's status and the progress file until the job finishes or times out."""

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
        peek = (
            f"cat -- {shlex.quote(os.path.join(async_dir, str(args['jid'])))} 2>/dev/null; "
            f"echo; echo {MARK}; cat -- {shlex.quote(str(args['progress_file']))} 2>/dev/null; true"
        )
        while True:
            # over SSH the command runs on a tty (-tt, for become): its lines end in \r\n
            out = self._low_level_execute_command(peek).get("stdout", "")
            status, _, progress = out.partition(MARK)
            if not running(_json(status)):
                result = self._execute_module("ansible.builtin.async_status", job, task_vars=task_vars)
                if result.get("finished") or result.get("failed"):
                    self._execute_module(
                        "ansible.builtin.async_status", {**job, "mode": "cleanup"}, task_vars=task_vars
                    )
                    return {k: v for k, v in result.items() if k not in BOOKKEEPING}
            if time.monotonic() > end:
                return {
                    "failed": True,
                    "msg": f"the agent did not finish within {timeout:.0f} s (job {args['jid']})",
                }
            line = agent_progress_line(_json(progress), host)
            if line != last:
                display.display(f"  progress {line}")
                last = line
            time.sleep(interval)
