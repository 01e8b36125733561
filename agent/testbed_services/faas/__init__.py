"""Local FaaS emulator: platform profiles, instances in cgroups, HTTP invoke API, inspector."""

from __future__ import annotations

import os
from pathlib import Path

from testbed_shared.paths import workloads_dir

DEFAULT_PORT = 8650


def faas_dir() -> Path:
    """``workloads/faas``: ``$TESTBED_FAAS_DIR``, else under the agent's workloads directory."""
    env = os.environ.get("TESTBED_FAAS_DIR")
    if env:
        return Path(env)

    return workloads_dir() / "faas"
