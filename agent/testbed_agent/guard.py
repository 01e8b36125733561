"""Target guard: I/O workloads write only to test files the agent created itself.

Paths are resolved to their real location first (``//proc`` is ``/proc``; a symbolic link as the
target is refused, whatever it points to). Kernel pseudo-filesystems (/proc, /sys) are never
written; FIFOs, sockets and directories are refused; block and character devices, files under
/dev and existing files without the agent's mark need ``params.allow_device: true``.

A file the agent creates is marked with the identity of its inode: the extended attribute
``user.testbed_agent`` holding ``<dev>:<ino>``, or where the filesystem has no user xattrs a
sidecar ``<file>.testbed-agent`` owned by the agent's user holding the same. A copied file, a
stray sidecar or a sidecar of another file does not match the inode and is not a mark.
See docs/io-guard.md.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
from pathlib import Path

from testbed_shared.errors import TargetRefused

XATTR = "user.testbed_agent"
SIDECAR = ".testbed-agent"
_FORBIDDEN_ROOTS = ("/proc", "/sys")
_ALLOW_HINT = "benchmarks write to their own test files; params.allow_device: true allows a device"


def real_target(path: Path | str) -> Path:
    """Absolute real path of ``path`` with leading ``//`` collapsed; refuse a symlink target."""
    raw = "/" + os.path.abspath(str(path)).lstrip("/")
    if os.path.islink(raw):
        raise TargetRefused(f"refusing to write through symbolic link {raw}", hint="give the real path")
    real = "/" + os.path.realpath(raw).lstrip("/")
    for root in _FORBIDDEN_ROOTS:
        if real == root or real.startswith(root + "/"):
            raise TargetRefused(f"refusing to write to {real}: kernel pseudo-filesystem")
    return Path(real)


def check_target(path: Path | str, allow_device: bool = False) -> Path:
    """Return the real path the agent may write for ``path``; raise :class:`TargetRefused` otherwise."""
    real = real_target(path)
    under_dev = str(real) == "/dev" or str(real).startswith("/dev/")
    try:
        st = os.lstat(real)
    except FileNotFoundError:
        if under_dev and not allow_device:
            raise TargetRefused(
                f"refusing to create {real} under /dev",
                hint="set params.allow_device: true in the plan to allow it",
            ) from None
        return real
    if stat.S_ISBLK(st.st_mode) or stat.S_ISCHR(st.st_mode):
        if not allow_device:
            raise TargetRefused(f"refusing to write to device {real}", hint=_ALLOW_HINT)
        return real
    if not stat.S_ISREG(st.st_mode):
        raise TargetRefused(f"refusing to write to {real}: not a regular file")
    if under_dev and not allow_device:
        raise TargetRefused(f"refusing to write to {real} under /dev", hint=_ALLOW_HINT)
    if not is_marked(real) and not allow_device:
        raise TargetRefused(
            f"refusing to overwrite {real}: existing file not created by the agent",
            hint="remove it, choose a new path, or set params.allow_device: true",
        )
    return real


def _identity(st: os.stat_result) -> bytes:
    return f"{st.st_dev}:{st.st_ino}".encode()


def _sidecar(path: Path) -> Path:
    return Path(str(path) + SIDECAR)


def mark(path: Path) -> None:
    """Mark a file as created by the agent (bound to its inode)."""
    ident = _identity(os.lstat(path))
    try:
        os.setxattr(path, XATTR, ident, follow_symlinks=False)
    except OSError:
        _write_sidecar(path, ident)


def _write_sidecar(path: Path, ident: bytes) -> None:
    side = _sidecar(path)
    fd, tmp = tempfile.mkstemp(dir=side.parent, prefix=".sidecar-")
    try:
        os.write(fd, ident + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, side)


def is_marked(path: Path) -> bool:
    """True if ``path`` is a regular file whose mark matches its own inode."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    try:
        return os.getxattr(path, XATTR, follow_symlinks=False) == _identity(st)
    except OSError:
        pass
    side = _sidecar(Path(path))
    try:
        sst = os.lstat(side)
        if not stat.S_ISREG(sst.st_mode) or sst.st_uid != os.getuid() or sst.st_size > 64:
            return False
        return side.read_bytes().strip() == _identity(st)
    except OSError:
        return False


def unmark(path: Path) -> None:
    """Remove a file's sidecar, if any (the xattr goes with the inode)."""
    with contextlib.suppress(OSError):
        _sidecar(path).unlink()


def create_test_file(path: Path | str, allow_device: bool = False) -> Path:
    """Create (or accept, if already marked) an empty test file and mark it; return its real path."""
    real = check_target(path, allow_device)
    if not os.path.lexists(real):
        real.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(real, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
        os.close(fd)
        mark(real)
    return real


def staging_file(target: Path) -> Path:
    """A fresh, marked file beside ``target`` to build it in and then ``os.replace`` over it."""
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".staging")
    os.close(fd)
    mark(Path(tmp))
    return Path(tmp)


def install_staged(staged: Path, target: Path) -> None:
    """Mark a laid-out staging file (its tool may have recreated it) and move it onto ``target``."""
    mark(staged)
    os.replace(staged, target)
    if _sidecar(staged).exists():
        os.replace(_sidecar(staged), _sidecar(target))


def remove_stale_staging(target: Path) -> None:
    """Remove marked staging files of ``target`` that a killed attempt left."""
    for old in target.parent.glob(f".{target.name}.*.staging"):
        if is_marked(old):
            old.unlink(missing_ok=True)
            unmark(old)


# -- fio's file-name syntax ---------------------------------------------------------------------

#: fio options naming files or running commands; in a job file only ``filename=${FIO_FILENAME}``
#: is accepted, so every file fio touches is the guarded target.
_FIO_PATH_KEYS = {
    "filename",
    "directory",
    "filename_format",
    "opendir",
    "include",
    "exec_prerun",
    "exec_postrun",
    "write_iolog",
    "read_iolog",
    "write_bw_log",
    "write_lat_log",
    "write_iops_log",
    "write_hist_log",
    "ioscheduler",
    "cgroup",
}
_FIO_LINE = re.compile(r"^\s*([A-Za-z_]+)\s*(?:=\s*(.*?))?\s*$")


def check_fio_filename(path: Path) -> Path:
    """fio reads ``:`` in a file name as a list separator: refuse it."""
    if ":" in str(path):
        raise TargetRefused(
            f"refusing fio target {path}: fio reads ':' as a separator between files",
            hint="choose a path without ':'",
        )
    return path


def check_fio_job(text: str, where: str) -> None:
    """Refuse a fio job file that names files or commands itself instead of ``${FIO_FILENAME}``."""
    named = False
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in ";#[":
            continue
        if line.startswith("include ") or line.startswith("$"):
            raise TargetRefused(f"{where}:{lineno}: refusing fio job line {line!r}: includes other files")
        m = _FIO_LINE.match(line)
        key = m.group(1).lower() if m else ""
        if key not in _FIO_PATH_KEYS:
            continue
        if key == "filename" and m and m.group(2) == "${FIO_FILENAME}":
            named = True
            continue
        raise TargetRefused(
            f"{where}:{lineno}: refusing fio job option {key!r}: the agent chooses the file",
            hint="use filename=${FIO_FILENAME} and set params.filename in the plan",
        )
    if not named:
        raise TargetRefused(
            f"{where}: refusing fio job without filename=${{FIO_FILENAME}}: fio would name files itself",
            hint="add filename=${FIO_FILENAME} to the [global] section",
        )
