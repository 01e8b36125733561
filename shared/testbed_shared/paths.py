"""Where the agent finds its workload definitions and keeps caches."""

from __future__ import annotations

import os
from pathlib import Path


def workloads_dir() -> Path:
    """``$TESTBED_WORKLOADS_DIR``, else ``workloads/`` of the repository (or of the deployed copy)."""
    env = os.environ.get("TESTBED_WORKLOADS_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "workloads"


def notebooks_dir() -> Path:
    """``$TESTBED_NOTEBOOKS_DIR``, else ``kaggle_notebooks/`` of the repository (or deployed copy)."""
    env = os.environ.get("TESTBED_NOTEBOOKS_DIR")
    if env:
        return Path(env).expanduser()
    return Path(__file__).resolve().parents[2] / "kaggle_notebooks"


def roles_dir() -> Path:
    """``$TESTBED_ROLES_DIR``, else ``roles/`` of the repository (the controller's checkout)."""
    env = os.environ.get("TESTBED_ROLES_DIR")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "roles"


def cache_dir() -> Path:
    """Per-user cache (venvs, generated data): ``$TESTBED_CACHE_DIR`` or ``~/.cache/testbed-agent``."""
    env = os.environ.get("TESTBED_CACHE_DIR")
    base = (
        Path(env) if env else Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "testbed-agent"
    )
    base.mkdir(parents=True, exist_ok=True)
    return base
