"""Target guard: I/O workloads write only to test files the agent created itself.

A file the agent creates is marked (extended attribute ``user.testbed_agent``, or a sidecar
``<file>.testbed-agent`` where the filesystem has no user xattrs). Block and character devices,
and existing files without the mark, are refused unless the plan says ``allow_device: true``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from testbed_agent.errors import TargetRefused

XATTR = "user.testbed_agent"
SIDECAR = ".testbed-agent"
_FORBIDDEN_ROOTS = ("/proc", "/sys")


def check_target(path: Path, allow_device: bool = False) -> Path:
    """Return ``path`` if the agent may write to it; raise :class:`TargetRefused` otherwise."""
    path = Path(os.path.abspath(path))
    if any(str(path) == r or str(path).startswith(r + "/") for r in _FORBIDDEN_ROOTS):
        raise TargetRefused(f"refusing to write to {path}: kernel pseudo-filesystem")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if str(path).startswith("/dev/") and not allow_device:
            raise TargetRefused(
                f"refusing to create {path} under /dev",
                hint="set params.allow_device: true in the plan to allow it",
            ) from None
        return path
    if stat.S_ISBLK(st.st_mode) or stat.S_ISCHR(st.st_mode):
        if not allow_device:
            raise TargetRefused(
                f"refusing to write to device {path}",
                hint="benchmarks write to their own test files; params.allow_device: true allows a device",
            )
        return path
    if not stat.S_ISREG(st.st_mode):
        raise TargetRefused(f"refusing to write to {path}: not a regular file")
    if not is_marked(path) and not allow_device:
        raise TargetRefused(
            f"refusing to overwrite {path}: existing file not created by the agent",
            hint="remove it, choose a new path, or set params.allow_device: true",
        )
    return path


def mark(path: Path) -> None:
    """Mark a file as created by the agent."""
    try:
        os.setxattr(path, XATTR, b"1")
    except OSError:
        Path(str(path) + SIDECAR).write_text("created by testbed-agent\n")


def is_marked(path: Path) -> bool:
    try:
        return os.getxattr(path, XATTR) == b"1"
    except OSError:
        return Path(str(path) + SIDECAR).exists()


def create_test_file(path: Path, allow_device: bool = False) -> Path:
    """Create (or accept, if already marked) an empty test file and mark it."""
    path = check_target(path, allow_device)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
        mark(path)
    return path
