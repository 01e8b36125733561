"""Scratch directories and names that become paths: the agent removes only what it created.

A scratch directory is made by the agent and marked with a file ``.testbed-agent-dir`` written at
creation (holding the owner uid, the directory's device and inode, so a mark copied elsewhere is
no mark, and whether the agent created the directory itself). At the end of
a run only a directory carrying that mark is cleaned; a directory the agent adopted (it existed and
was empty) is emptied, never removed. Run ids and host names, which become path components, are
validated names.

While a run uses its scratch the agent holds a descriptor of the directory, opened without
following links and checked against the mark (:func:`lock`); the I/O workloads open their files
beneath that descriptor (``guard.open_target``) and the final cleaning removes entries through it,
so a scratch directory swapped for a symbolic link redirects no write and no removal.
(:func:`testbed_shared.atomic.open_dir_nofollow` is the walk; the guard starts it at the held
descriptor through :func:`held_for`.)
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
from pathlib import Path
from typing import IO

from testbed_shared.atomic import open_dir_nofollow
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


#: scratch directories held by this process: real path -> descriptor (see :func:`lock`)
_HELD: dict[Path, int] = {}


class Held:
    """The lock on a scratch directory and its descriptor, for the length of a run."""

    def __init__(self, path: Path, dir_fd: int, marker: IO[bytes]) -> None:
        self.path, self.dir_fd, self.marker = path, dir_fd, marker

    def close(self) -> None:
        if _HELD.get(self.path) == self.dir_fd:
            del _HELD[self.path]
        self.marker.close()  # releases the flock
        os.close(self.dir_fd)

    def __enter__(self) -> Held:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _open_dir(path: Path) -> int:
    """The directory ``path`` (its links resolved once), opened without following links."""
    return open_dir_nofollow(Path(os.path.realpath(path)), refuse=TestbedError)


def lock(path: Path) -> Held:
    """Open the marked scratch directory (no links followed), check the mark on the descriptor,
    take an exclusive lock on it for the run and keep the descriptor; refuse one in use."""
    real = Path(os.path.realpath(path))
    if Path(path).is_symlink():
        raise TestbedError(f"--scratch {path} is a symbolic link", hint="give a real directory")
    dfd = _open_dir(real)
    try:
        if _marker_fd(dfd) is None:
            raise TestbedError(f"--scratch {path} does not carry the agent's mark")
        mfd = os.open(MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dfd)
        fh = os.fdopen(mfd, "rb")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            raise TestbedError(
                f"--scratch {path} is in use by another agent", hint="give each run its own scratch"
            ) from None
    except BaseException:
        os.close(dfd)
        raise
    _HELD[real] = dfd
    return Held(real, dfd, fh)


def held_for(directory: Path) -> tuple[Path, int] | None:
    """(scratch root, descriptor) of a held scratch directory that contains ``directory``."""
    for root, fd in _HELD.items():
        if directory == root or directory.is_relative_to(root):
            return root, fd
    return None


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
    _check_root(real.parent)
    real.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    real.mkdir(mode=0o700)
    _write_marker(real, created=True)
    return real


def _check_root(parent: Path) -> None:
    """The default root lies in world-writable /var/tmp: it must be a directory of the agent's
    user (or root), not a link someone else planted there."""
    if str(parent) != os.environ.get("TESTBED_SCRATCH", DEFAULT_ROOT):
        return
    try:
        st = os.lstat(parent)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (os.getuid(), 0):
        raise TestbedError(
            f"scratch root {parent} is not a directory of this user (a link or someone else's?)",
            hint="remove it, or give --scratch",
        )


def _write_marker(path: Path, *, created: bool) -> None:
    dfd = _open_dir(path)  # the directory itself, not whatever its name points to later
    try:
        st = os.fstat(dfd)
        doc = {
            "testbed_agent": True,
            "uid": os.getuid(),
            "dir": f"{st.st_dev}:{st.st_ino}",
            "created": created,
        }
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(MARKER, flags, 0o600, dir_fd=dfd)
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(doc) + "\n")
    finally:
        os.close(dfd)


def _marker_fd(dfd: int) -> dict | None:
    """The mark of the directory open as ``dfd``, checked on descriptors: a regular file of the
    agent's user naming this directory's own device and inode."""
    try:
        fd = os.open(MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dfd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size > 4096:
            return None
        doc = json.loads(os.read(fd, 4097))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(doc, dict) or doc.get("testbed_agent") is not True:
        return None
    dst = os.fstat(dfd)
    return doc if doc.get("dir") == f"{dst.st_dev}:{dst.st_ino}" else None  # a copied mark is no mark


def _marker(path: Path) -> dict | None:
    try:
        dfd = _open_dir(path)
    except (OSError, TestbedError):
        return None
    try:
        return _marker_fd(dfd)
    finally:
        os.close(dfd)


def is_marked(path: Path) -> bool:
    """True if ``path`` is a real directory carrying the agent's mark."""
    return not Path(path).is_symlink() and Path(path).is_dir() and _marker(Path(path)) is not None


def remove(path: Path) -> bool:
    """Remove a marked scratch directory's contents, and the directory if the agent created it.

    Works on descriptors: the held descriptor of the run (or the directory opened now without
    following links), entries removed beneath it, the directory itself removed by name from its
    parent only while that name still is this directory. Returns False (and touches nothing)
    when the directory does not carry the mark.
    """
    path = Path(path)
    if path.is_symlink():
        return False
    real = Path(os.path.realpath(path))
    held = _HELD.get(real)
    try:
        dfd = os.dup(held) if held is not None else _open_dir(real)
    except (OSError, TestbedError):
        return False
    try:
        doc = _marker_fd(dfd)
        if doc is None:
            return False
        for entry in os.listdir(dfd):
            if entry == MARKER:
                continue
            st = os.lstat(entry, dir_fd=dfd)
            if stat.S_ISDIR(st.st_mode):
                shutil.rmtree(entry, dir_fd=dfd, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry, dir_fd=dfd)
        if not doc.get("created"):
            return True
        os.unlink(MARKER, dir_fd=dfd)
        me = os.fstat(dfd)
    finally:
        os.close(dfd)
    pfd = _open_dir(real.parent)
    try:
        st = os.lstat(real.name, dir_fd=pfd)
        if (st.st_dev, st.st_ino) != (me.st_dev, me.st_ino):
            return False  # the name now is something else: leave it
        os.rmdir(real.name, dir_fd=pfd)
    except OSError:
        return False
    finally:
        os.close(pfd)
    return True
