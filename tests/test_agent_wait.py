"""playbooks/action_plugins/agent_wait.py: a poll reads the job's status and the progress file with
one shell command; async_status (a Python module on the target) runs only once the job's status
file no longer says it runs."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from ansible.plugins.action import ActionBase

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("agent_wait", ROOT / "playbooks/action_plugins/agent_wait.py")
WAIT = importlib.util.module_from_spec(spec)
spec.loader.exec_module(WAIT)

RUNNING = json.dumps({"started": 1, "finished": 0, "ansible_job_id": "j1"})
DONE = json.dumps({"rc": 0, "stdout": "", "stderr": "results: ok", "changed": True})
PROGRESS = json.dumps({"state": "running", "benchmark": "dd", "done": 1, "total": 3})


class _Task:
    def __init__(self) -> None:
        self.args = {"jid": "j1", "results_file": "/root/.ansible_async/j1", "interval": 0}
        self.args["progress_file"] = "/r/h.progress.json"


def _action(
    statuses: list[str], modules: list[dict], eol: str = "\n"
) -> tuple[Any, list[str], list[tuple[str, dict]]]:
    """The action with the target's answers scripted: one status file text a poll, lines ending in
    ``eol`` (SSH runs the command on a tty: \\r\\n)."""
    action = object.__new__(WAIT.ActionModule)
    action._task = _Task()
    commands: list[str] = []
    calls: list[tuple[str, dict]] = []

    def peek(cmd: str, **_kw: Any) -> dict:
        commands.append(cmd)
        return {"rc": 0, "stdout": f"{statuses.pop(0)}{eol}{WAIT.MARK}{eol}{PROGRESS}{eol}", "stderr": ""}

    def module(name: str, args: dict, task_vars: Any = None) -> dict:
        calls.append((name, args))
        return modules.pop(0)

    action._low_level_execute_command = peek
    action._execute_module = module
    return action, commands, calls


@pytest.fixture(autouse=True)
def _no_base_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})


def test_running_reads_the_async_wrappers_status_file() -> None:
    assert WAIT.running({"started": 1, "finished": 0})
    assert not WAIT.running({"started": 1, "finished": 1})
    assert not WAIT.running(json.loads(DONE)) and not WAIT.running(None) and not WAIT.running([])


@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_polls_are_shell_reads_and_async_status_runs_once_at_the_end(
    eol: str, capsys: pytest.CaptureFixture[str]
) -> None:
    final = {**json.loads(DONE), "finished": True, "started": True, "results_file": "x"}
    action, commands, calls = _action([RUNNING, RUNNING, DONE], [final, {"erased": "x"}], eol)
    result = action.run(task_vars={"inventory_hostname": "h"})
    assert "progress h: dd, 1/3 done" in capsys.readouterr().out
    assert len(commands) == 3 and all("cat -- /root/.ansible_async/j1" in c for c in commands)
    assert [(n, a.get("mode")) for n, a in calls] == [
        ("ansible.builtin.async_status", None),
        ("ansible.builtin.async_status", "cleanup"),
    ]
    assert result == json.loads(DONE)  # the job's result, without async_status's bookkeeping


def test_a_missing_job_is_async_status_s_answer() -> None:
    missing = {"failed": True, "msg": "could not find job", "started": True, "finished": True}
    action, _commands, calls = _action([""], [missing, {}])
    assert action.run(task_vars={})["msg"] == "could not find job"
    assert calls[0][0] == "ansible.builtin.async_status"
