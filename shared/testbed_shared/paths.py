"""Where the agent finds its workload definitions and keeps caches."""

from __future__ import annotations

import os
from pathlib import Path

#: the repository (or the deployed copy) this package sits in
_ROOT = Path(__file__).resolve().parents[2]


def _given(variable: str, default: Path) -> Path:
    """``$variable`` (``~`` expanded) when it is set, else ``default``."""
    value = os.environ.get(variable)
    return Path(value).expanduser() if value else default


def workloads_dir() -> Path:
    """``$TESTBED_WORKLOADS_DIR``, else ``workloads/`` of the repository (or of the deployed copy)."""
    return _given("TESTBED_WORKLOADS_DIR", _ROOT / "workloads")


def notebooks_dir() -> Path:
    """``$TESTBED_NOTEBOOKS_DIR``, else ``kaggle_notebooks/`` of the repository (or deployed copy)."""
    return _given("TESTBED_NOTEBOOKS_DIR", _ROOT / "kaggle_notebooks")


def roles_dir() -> Path:
    """``$TESTBED_ROLES_DIR``, else ``roles/`` of the repository (the controller's checkout)."""
    return _given("TESTBED_ROLES_DIR", _ROOT / "roles")


def user_cache() -> Path:
    """The user's cache directory: ``$XDG_CACHE_HOME``, else ``~/.cache`` (unset or empty alike)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")


def build_cache() -> Path:
    """What the checkouts on this machine build once and share, keyed by what makes it (the
    Makefile's ``TESTBED_CACHE``: the Rust programs' cargo target, the KVM guest images)."""
    return user_cache() / "testbed"


def cache_dir() -> Path:
    """Per-user cache (venvs, generated data): ``$TESTBED_CACHE_DIR`` or ``~/.cache/testbed-agent``."""
    base = _given("TESTBED_CACHE_DIR", user_cache() / "testbed-agent")
    base.mkdir(parents=True, exist_ok=True)
    return base
