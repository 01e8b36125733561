"""While an execution runs, a line every ``every`` seconds on the agent's console, for a console
that is not a terminal (``testbed-agent run ... 2>&1 | tee log``, CI logs), where the progress bar
is off and nothing else would show that a long benchmark is still going:

    [37/37] pyperformance_quick #1/1: running, 1m00s so far (typical 1m41s)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def _dur(s: float) -> str:
    s = max(0, round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


@contextmanager
def heartbeat(
    say: Callable[[str], object], prefix: str, typical_s: float | None, every: float | None
) -> Iterator[None]:
    """Call ``say`` with a progress line every ``every`` s until the block ends (``every`` None:
    nothing, e.g. when a progress bar shows the same)."""
    if not every:
        yield
        return
    done = threading.Event()

    def beat() -> None:
        spent = 0.0
        while not done.wait(every):
            spent += every
            hint = f" (typical {_dur(typical_s)})" if typical_s else ""
            if typical_s and spent > typical_s:
                hint = f" (longer than the typical {_dur(typical_s)})"
            say(f"{prefix}: running, {_dur(spent)} so far{hint}")

    thread = threading.Thread(target=beat, name="heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=5)
