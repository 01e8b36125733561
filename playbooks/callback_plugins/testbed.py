"""Stdout callback ``testbed``: Ansible's default output, with the pre-flight plays quiet.

A play whose name starts with ``Pre-flight`` (run.yml's first play, the lab teardowns' first play:
playbooks/tasks/preflight.yml) checks the inputs before any work: the inventory's example
addresses, the plan, the Azure credentials and SSH key. Such a play prints nothing while its checks
pass; the first check that fails prints its message as one line on stderr (``[ERROR]: ...``), once,
and the run ends there with exit status 2 (the play is ``any_errors_fatal``), without the task
banners, the result dump and the recap that the default callback would print around it. With
``-v`` and more the pre-flight plays print as every other play. Every other play is the default
callback's output, unchanged.

ansible.cfg makes it the stdout callback (``stdout_callback = testbed``, ``callback_plugins =
playbooks/callback_plugins``).
"""

from __future__ import annotations

from typing import Any

from ansible import constants as C
from ansible.plugins.callback.default import CallbackModule as DefaultCallback

DOCUMENTATION = """
name: testbed
type: stdout
short_description: default output, with the pre-flight plays quiet and their failure one line
description:
  - The default callback's output, except for plays named "Pre-flight ...", which print nothing
    while they pass and one line on stderr when a check fails (see the module docstring).
extends_documentation_fragment:
  - default_callback
  - result_format_callback
requirements:
  - set as stdout_callback in ansible.cfg
"""

#: plays whose name starts with this are pre-flight checks
PREFLIGHT = "Pre-flight"


def one_line(result: dict[str, Any]) -> str:
    """A failed result's message on one line (assert's fail_msg, fail's msg, a module's msg)."""
    msg = result.get("msg") or result.get("message") or result.get("stderr") or "check failed"
    if isinstance(msg, (list, tuple)):
        msg = "; ".join(str(m) for m in msg)
    return " ".join(str(msg).split())


class CallbackModule(DefaultCallback):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "testbed"

    def __init__(self) -> None:
        super().__init__()
        self._quiet = False
        self._stopped = False

    # --- plays ----------------------------------------------------------------------------------
    def v2_playbook_on_play_start(self, play: Any) -> None:
        self._quiet = play.get_name().strip().startswith(PREFLIGHT) and self._display.verbosity < 1
        if self._quiet:
            self._play = play
            return
        super().v2_playbook_on_play_start(play)

    def v2_playbook_on_stats(self, stats: Any) -> None:
        if not self._stopped:
            super().v2_playbook_on_stats(stats)

    def v2_playbook_on_no_hosts_remaining(self) -> None:
        if not (self._quiet or self._stopped):
            super().v2_playbook_on_no_hosts_remaining()

    # --- what a pre-flight play keeps to itself ---------------------------------------------------
    def v2_runner_on_failed(self, result: Any, ignore_errors: bool = False) -> None:
        if not self._quiet:
            super().v2_runner_on_failed(result, ignore_errors)
        elif not ignore_errors and not self._stopped:
            self._stopped = True
            self._display.display(f"[ERROR]: {one_line(result.result)}", color=C.COLOR_ERROR, stderr=True)

    def v2_runner_on_unreachable(self, result: Any) -> None:
        if not self._quiet:
            super().v2_runner_on_unreachable(result)
        elif not self._stopped:
            self._stopped = True
            self._display.display(f"[ERROR]: {one_line(result.result)}", color=C.COLOR_ERROR, stderr=True)

    def v2_playbook_on_task_start(self, task: Any, is_conditional: bool) -> None:
        if not self._quiet:
            super().v2_playbook_on_task_start(task, is_conditional)

    def v2_playbook_on_handler_task_start(self, task: Any) -> None:
        if not self._quiet:
            super().v2_playbook_on_handler_task_start(task)

    def v2_runner_on_start(self, host: Any, task: Any) -> None:
        if not self._quiet:
            super().v2_runner_on_start(host, task)

    def v2_runner_on_ok(self, result: Any) -> None:
        if not self._quiet:
            super().v2_runner_on_ok(result)

    def v2_runner_on_skipped(self, result: Any) -> None:
        if not self._quiet:
            super().v2_runner_on_skipped(result)

    def v2_runner_item_on_ok(self, result: Any) -> None:
        if not self._quiet:
            super().v2_runner_item_on_ok(result)

    def v2_runner_item_on_failed(self, result: Any) -> None:
        if not self._quiet:
            super().v2_runner_item_on_failed(result)

    def v2_runner_item_on_skipped(self, result: Any) -> None:
        if not self._quiet:
            super().v2_runner_item_on_skipped(result)

    def v2_playbook_on_include(self, included_file: Any) -> None:
        if not self._quiet:
            super().v2_playbook_on_include(included_file)

    def v2_playbook_on_no_hosts_matched(self) -> None:
        if not self._quiet:
            super().v2_playbook_on_no_hosts_matched()

    def v2_runner_retry(self, result: Any) -> None:
        if not self._quiet:
            super().v2_runner_retry(result)

    def v2_on_file_diff(self, result: Any) -> None:
        if not self._quiet:
            super().v2_on_file_diff(result)
