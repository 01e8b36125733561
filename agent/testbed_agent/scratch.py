"""Scratch directories and names that become paths: the agent removes only what it created.

A scratch directory is made by the agent and marked with a file ``.testbed-agent-dir`` written at
creation (holding the owner uid, the directory's device and inode, so a mark copied elsewhere is
no mark, and whether the agent created the directory itself). At the end of
a run only a directory carrying that mark is cleaned; a directory the agent adopted (it existed and
was empty) is emptied, never removed. Run ids and host names, which become path components, are
validated names.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import IO

from testbed_shared.errors import TestbedError

MARKER = ".testbed-agent-dir"
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
DEFAULT_ROOT = "/var/tmp/testbed-agent"


def check_name(value: str, what: str) -> str:
    """Return ``value`` if it is a safe path component (run id, host); raise TestbedError otherwise."""
    if not isinstance(value, str) or not NAME_RE.fullmatch(value) or ".." in value:
        raise TestbedError(
            f"{what} {value!r} is not a valid name",
            hint="use 1-128 characters of A-Z a-z 0-9 . _ -, starting with a letter or digit, no '..'",
        )
    return value


def default_scratch(run_id: str, out: Path, host: str) -> Path:
    """``$TESTBED_SCRATCH/<run_id>-<hash of results dir and host>`` (root /var/tmp/testbed-agent):
    two runs with the same id into different results directories never share a scratch."""
    where = hashlib.sha256(f"{os.path.realpath(out)}\0{host}".encode()).hexdigest()[:10]
    return Path(os.environ.get("TESTBED_SCRATCH", DEFAULT_ROOT)) / f"{check_name(run_id, 'run id')}-{where}"


def lock(path: Path) -> IO[str]:
    """Hold an exclusive lock on a marked scratch directory for the run; refuse one in use."""
    fh = open(path / MARKER, encoding="utf-8")  # noqa: SIM115 - held for the run
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.close()
        raise TestbedError(
            f"--scratch {path} is in use by another agent", hint="give each run its own scratch"
        ) from None
    return fh


def _related(a: Path, b: Path) -> bool:
    return a == b or a.is_relative_to(b) or b.is_relative_to(a)


def prepare(path: Path, out: Path) -> Path:
    """Create (or adopt, if empty or already ours) the scratch directory and mark it; return it."""
    real = Path(os.path.realpath(path))
    real_out = Path(os.path.realpath(out))
    if _related(real, real_out):
        raise TestbedError(
            f"--scratch {path} overlaps the results directory {out}",
            hint="scratch is removed after the run: give a directory outside --out",
        )
    if os.path.lexists(path) and Path(path).is_symlink():
        raise TestbedError(f"--scratch {path} is a symbolic link", hint="give a real directory")
    if real.exists():
        if not real.is_dir():
            raise TestbedError(f"--scratch {path} exists and is not a directory")
        if is_marked(real):
            return real
        if any(real.iterdir()):
            raise TestbedError(
                f"--scratch {path} is an existing non-empty directory the agent did not create",
                hint="scratch is removed after the run: give a new or empty directory",
            )
        _write_marker(real, created=False)
        return real
    real.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    real.mkdir(mode=0o700)
    _write_marker(real, created=True)
    return real


def _write_marker(path: Path, *, created: bool) -> None:
    st = os.lstat(path)
    doc = {"testbed_agent": True, "uid": os.getuid(), "dir": f"{st.st_dev}:{st.st_ino}", "created": created}
    body = json.dumps(doc) + "\n"
    fd = os.open(path / MARKER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(body)


def _marker(path: Path) -> dict | None:
    try:
        st = os.lstat(path / MARKER)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            return None
        doc = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("testbed_agent") is not True:
        return None
    dst = os.lstat(path)
    return doc if doc.get("dir") == f"{dst.st_dev}:{dst.st_ino}" else None  # a copied mark is no mark


def is_marked(path: Path) -> bool:
    """True if ``path`` is a real directory carrying the agent's mark."""
    return not Path(path).is_symlink() and Path(path).is_dir() and _marker(Path(path)) is not None


def remove(path: Path) -> bool:
    """Remove a marked scratch directory's contents, and the directory if the agent created it.

    Returns False (and touches nothing) when the directory does not carry the mark.
    """
    path = Path(path)
    doc = _marker(path) if is_marked(path) else None
    if doc is None:
        return False
    for child in path.iterdir():
        if child.name == MARKER:
            continue
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
    if doc.get("created"):
        (path / MARKER).unlink(missing_ok=True)
        try:
            path.rmdir()
        except OSError:
            return False
    return True
