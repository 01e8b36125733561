"""Red team, file-system races (issue 26 finding 6): 1,000 swaps of the test file for a link to a
foreign file and of the scratch directory for a link to a foreign directory, while the agent opens
its target beneath the held scratch descriptor and writes through what it opened (in-process and
with the real dd via ``/proc/self/fd/N``): 0 foreign writes, 0 tracebacks.

A larger loop: ``python agent/tests/fsrace.py 20000``."""

from __future__ import annotations

from pathlib import Path

import pytest
from fsrace import run

SWAPS = 1000


@pytest.mark.slow
def test_swapped_files_and_scratch_redirect_no_write(tmp_path: Path) -> None:
    res = run(SWAPS, tmp_path)
    print(res.summary())
    assert res.swaps == SWAPS
    assert res.foreign_writes == 0
    assert res.tracebacks == [], res.tracebacks[:2]
    assert res.writes > 0 and res.tool_runs > 0 and res.attempts == res.writes + res.refusals
