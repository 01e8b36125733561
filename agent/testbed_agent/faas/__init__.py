"""Local FaaS emulator: platform profiles, instances in cgroups, HTTP invoke API, inspector."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_PORT = 8650


def faas_dir() -> Path:
    """The ``workloads/faas`` directory: $TESTBED_FAAS_DIR, else the one of this checkout."""
    env = os.environ.get("TESTBED_FAAS_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[3] / "workloads" / "faas"
