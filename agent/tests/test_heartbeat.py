"""While an execution runs and no terminal shows a progress bar (``run | tee``), the agent prints a
line per interval with the time so far and the workload's typical duration (issue 30)."""

from __future__ import annotations

import time

from testbed_agent.heartbeat import heartbeat


def test_lines_while_the_block_runs_and_none_after() -> None:
    lines: list[str] = []
    with heartbeat(lines.append, "[3/9] fio_4k_randread #1/3", 0.12, 0.05):
        time.sleep(0.28)
    n = len(lines)
    time.sleep(0.15)
    assert len(lines) == n >= 4
    assert lines[0] == "[3/9] fio_4k_randread #1/3: running, 0s so far (typical 0s)"
    assert lines[-1].endswith("(longer than the typical 0s)")


def test_nothing_without_an_interval() -> None:
    lines: list[str] = []
    with heartbeat(lines.append, "x", 10.0, None):
        time.sleep(0.05)
    assert lines == []
