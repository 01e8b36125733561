"""Ansible callback of the Azure rehearsal: one JSON line per task result (host, action, status,
and the message of a failure), so the rehearsal can prove that no task talking to Azure was skipped."""

from __future__ import annotations

import json
import os
from typing import Any

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
    name: rehearsal_tasks
    type: aggregate
    short_description: record every task result as JSON lines in $TESTBED_REHEARSAL_TASKS
    requirements: [enable in ansible.cfg or ANSIBLE_CALLBACKS_ENABLED]
"""


class CallbackModule(CallbackBase):
    """Write host, task name, action and status of every result."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "rehearsal_tasks"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self) -> None:
        super().__init__()
        self._path = os.environ.get("TESTBED_REHEARSAL_TASKS", "")

    def _write(self, result: Any, status: str) -> None:
        if not self._path:
            return
        task = result._task
        line = {
            "host": result._host.get_name(),
            "task": task.get_name(),
            "action": task.action,
            "status": status,
        }
        if status == "failed":
            line["msg"] = str(result._result.get("msg", ""))
        with open(self._path, "a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")

    def v2_runner_on_ok(self, result: Any) -> None:
        self._write(result, "ok")

    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        self._write(result, "ignored" if ignore_errors else "failed")

    def v2_runner_on_skipped(self, result: Any) -> None:
        self._write(result, "skipped")

    def v2_runner_on_unreachable(self, result: Any) -> None:
        self._write(result, "unreachable")
