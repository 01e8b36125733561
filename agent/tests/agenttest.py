"""Helpers of the agent tests (a uniquely named module, importable from every test file)."""

from __future__ import annotations

import subprocess
import sys


def agent(*args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess[str]:
    """Run the real agent CLI in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "testbed_agent", *args], capture_output=True, text=True, timeout=timeout, **kw
    )
