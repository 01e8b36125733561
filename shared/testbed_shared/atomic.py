"""Files the toolkit writes: replaced whole, only over a regular file or at a new path.

A reader sees the old content or the new, never part of a write. An output path given by a user
(a derived plan, a report, an export, evidence) must name a regular file or a new name in an
existing directory on a real filesystem: a symbolic link, a directory, a device, a FIFO or a
socket at that name is refused, and so is any directory on a kernel pseudo-filesystem (procfs,
sysfs, devtmpfs, cgroupfs...), judged by the filesystem type of the directory's device, not by
its path (procfs mounted at ``/mnt/p`` is refused as ``/proc`` is).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import secrets
import stat
from pathlib import Path

from testbed_shared.errors import TestbedError

#: filesystem types that hold kernel objects, not files: nothing is ever written there
PSEUDO_FILESYSTEMS = frozenset(
    {
        "proc",
        "sysfs",
        "devtmpfs",
        "devpts",
        "cgroup",
        "cgroup2",
        "debugfs",
        "tracefs",
        "securityfs",
        "configfs",
        "bpf",
        "efivarfs",
        "pstore",
        "fusectl",
        "mqueue",
        "binfmt_misc",
        "autofs",
        "hugetlbfs",
        "rpc_pipefs",
        "nsfs",
    }
)
_MOUNTINFO = "/proc/self/mountinfo"


class OutputRefused(TestbedError):
    """An output path that must not be written (special file, symbolic link, pseudo-filesystem)."""


#: statfs(2) f_type magic numbers of the pseudo-filesystems (linux/magic.h); devtmpfs reports
#: tmpfs's magic, so it is told by /proc/self/mountinfo only
_MAGIC = {
    0x9FA0: "proc",
    0x62656572: "sysfs",
    0x1CD1: "devpts",
    0x27E0EB: "cgroup",
    0x63677270: "cgroup2",
    0x64626720: "debugfs",
    0x74726163: "tracefs",
    0x73636673: "securityfs",
    0x62656570: "configfs",
    0xCAFE4A11: "bpf",
    0xDE5E81E4: "efivarfs",
    0x6165676C: "pstore",
    0x65735543: "fusectl",
    0x19800202: "mqueue",
    0x42494E4D: "binfmt_misc",
    0x0187: "autofs",
    0x958458F6: "hugetlbfs",
    0x67596969: "rpc_pipefs",
    0x6E736673: "nsfs",
}


def _statfs_type(path: Path | str | int) -> str | None:
    """The pseudo-filesystem named by statfs(2)'s magic number, or None (a real or unknown one)."""

    class Statfs(ctypes.Structure):
        _fields_ = [("f_type", ctypes.c_long), ("_rest", ctypes.c_byte * 256)]

    buf = Statfs()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        rc = (
            libc.fstatfs(path, ctypes.byref(buf))
            if isinstance(path, int)
            else libc.statfs(os.fsencode(str(path)), ctypes.byref(buf))
        )
    except (OSError, AttributeError):
        return None
    return _MAGIC.get(buf.f_type & 0xFFFFFFFF) if rc == 0 else None


def fs_type(path: Path | str | int) -> str | None:
    """Filesystem type of the mount holding ``path`` (which must exist; or an open descriptor).

    statfs(2)'s magic number names procfs, sysfs, cgroupfs... wherever they are mounted, even from
    another mount namespace (``/proc/1/root/proc``); otherwise the device of ``path`` is matched
    against ``major:minor`` in /proc/self/mountinfo (which tells devtmpfs from tmpfs), so the answer
    does not depend on where a filesystem is mounted. None when it cannot be told.
    """
    magic = _statfs_type(path)
    if magic is not None:
        return magic
    st = os.fstat(path) if isinstance(path, int) else os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    try:
        with open(_MOUNTINFO, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    found = None
    for line in lines:
        left, sep, right = line.partition(" - ")
        fields = left.split()
        if sep and len(fields) >= 3 and fields[2] == dev:
            found = right.split()[0] if right.split() else None  # the last mount of that device wins
    return found


def is_pseudo_fs(path: Path | str | int) -> bool:
    """True when ``path`` lies on a kernel pseudo-filesystem (see :data:`PSEUDO_FILESYSTEMS`)."""
    return fs_type(path) in PSEUDO_FILESYSTEMS


def check_output_path(
    path: Path | str, what: str = "output", make_parents: bool = False, dry: bool = False
) -> Path:
    """``path`` if the toolkit may write a file there; raise :class:`OutputRefused` (one line).

    With ``make_parents`` missing directories are created, below an existing real directory;
    with ``dry`` too nothing is created (they are judged by that directory).
    """
    text = str(path)
    if not text.strip():
        raise OutputRefused(f"{what} path is empty", hint="name a file, e.g. -o plan.derived.yml")
    p = Path(text)
    _check_existing(p, what)
    parent = p.parent
    existing = parent
    while make_parents and not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise OutputRefused(f"cannot write {what} {p}: directory {existing} does not exist")
    _check_real_fs(existing, p, what)
    if os.path.islink(parent):
        raise OutputRefused(
            f"refusing to write {what} {p}: its directory {parent} is a symbolic link",
            hint="name the real directory",
        )
    if existing != parent and not dry:
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputRefused(f"cannot create directory {parent} for {what}: {exc.strerror}") from None
        _check_real_fs(parent, p, what)
    return p


def _check_existing(p: Path, what: str) -> None:
    """An existing entry at ``p`` must be a regular file (not a link, directory or special file)."""
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise OutputRefused(f"cannot use {what} {p}: {exc.strerror}") from None
    if stat.S_ISLNK(st.st_mode):
        raise OutputRefused(f"refusing to write {what} {p}: it is a symbolic link", hint="name the real file")
    if stat.S_ISDIR(st.st_mode):
        raise OutputRefused(f"refusing to write {what} {p}: it is a directory", hint="name a file in it")
    if not stat.S_ISREG(st.st_mode):
        raise OutputRefused(
            f"refusing to write {what} {p}: it is a {_kind(st.st_mode)}, not a regular file",
            hint="name a regular file or a new path",
        )


def _check_real_fs(directory: Path, p: Path, what: str) -> None:
    try:
        kind = fs_type(directory)
    except OSError as exc:
        raise OutputRefused(f"cannot write {what} {p}: {directory}: {exc.strerror}") from None
    if kind in PSEUDO_FILESYSTEMS:
        raise OutputRefused(
            f"refusing to write {what} {p}: {directory} is on a kernel pseudo-filesystem ({kind})",
            hint="name a file on a real filesystem",
        )


def _kind(mode: int) -> str:
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    return "special file"


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_dir_nofollow(
    directory: Path,
    create: bool = False,
    *,
    start: tuple[Path, int] | None = None,
    refuse: type[TestbedError] = OutputRefused,
) -> int:
    """A descriptor of the directory ``directory`` (absolute; its components are taken as written,
    none is resolved), opened one component at a time with ``O_NOFOLLOW|O_DIRECTORY``: from ``/``,
    or from ``start`` = (a directory, an open descriptor of it) when ``directory`` lies in it.

    A component that is a symbolic link or not a directory, or a directory on a kernel
    pseudo-filesystem (by its statfs magic), is refused with ``refuse`` naming it, never
    followed; a missing one is created (0700) with ``create``, else refused. The one walk of the
    toolkit: outputs (:func:`write_atomically`), the agent's scratch directories and the I/O
    guard's targets all go through it (:func:`walk_nofollow`)."""
    return walk_nofollow(directory, create, start=start, refuse=refuse)[0]


def walk_nofollow(
    directory: Path,
    create: bool = False,
    *,
    start: tuple[Path, int] | None = None,
    refuse: type[TestbedError] = OutputRefused,
    partial: bool = False,
) -> tuple[int, Path]:
    """:func:`open_dir_nofollow`, also returning the directory reached; with ``partial`` a missing
    component ends the walk instead (the deepest existing directory and its path are returned)."""
    if start is not None and (directory == start[0] or directory.is_relative_to(start[0])):
        here, parts = start[0], directory.relative_to(start[0]).parts
        cur = os.dup(start[1])
    else:
        here, parts = Path("/"), directory.parts[1:]
        cur = os.open("/", _DIR_FLAGS)
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=cur)
            except FileNotFoundError:
                if partial:
                    break
                if not create:
                    raise refuse(f"refusing {directory}: {here / part} does not exist") from None
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=cur)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=cur)
            os.close(cur)
            cur, here = nxt, here / part
            kind = _statfs_type(cur)
            if kind is not None:
                raise refuse(f"refusing {directory}: {here} is on a kernel pseudo-filesystem ({kind})")
    except OSError as exc:
        name = exc.filename if isinstance(exc.filename, str) else ""
        what = _component(cur, name, exc)
        os.close(cur)
        hint = "give the real path, without links"
        raise refuse(f"refusing {directory}: {here / name} {what}", hint=hint) from None
    except BaseException:
        os.close(cur)
        raise
    return cur, here


def _component(dir_fd: int, name: str, exc: OSError) -> str:
    """What the entry ``name`` that could not be opened as a directory is."""
    try:
        st = os.lstat(name, dir_fd=dir_fd)
    except OSError:
        return f"cannot be opened ({exc.strerror})"
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link (links are not followed)"
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    return f"cannot be opened ({exc.strerror})"


def write_atomically(
    path: Path, text: str | bytes, mode: int = 0o666, what: str = "output", make_parents: bool = False
) -> None:
    """Write ``text`` to ``path`` through a uniquely named temporary file beside it and a rename.

    ``path`` is checked by :func:`check_output_path` first. The directory is then resolved once
    and opened without following links (:func:`open_dir_nofollow`); its filesystem type and the
    entry at ``path`` are checked again on that descriptor, and the temporary file is created and
    renamed beneath it, so a directory swapped for a link after the check redirects nothing.
    ``mode`` is filtered by the umask, as for ``open()`` (the agent runs with 077). The temporary
    name is hidden and unique, so concurrent writers (agent and watchdog) never share one; the
    rename replaces the directory entry itself, so a link swapped in for the file is replaced,
    never written through.
    """
    path = check_output_path(path, what, make_parents)
    data = text.encode("utf-8") if isinstance(text, str) else text
    parent = path.absolute().parent
    try:  # links above the output directory are resolved once; the directory itself is not
        real_parent = Path(os.path.realpath(parent.parent, strict=True)) / parent.name
    except OSError as exc:
        raise OutputRefused(f"cannot write {what} {path}: its directory is gone ({exc.strerror})") from None
    dfd = open_dir_nofollow(real_parent)
    try:
        kind = fs_type(dfd)
        if kind in PSEUDO_FILESYSTEMS:
            raise OutputRefused(f"refusing to write {what} {path}: on a kernel pseudo-filesystem ({kind})")
        try:
            st = os.lstat(path.name, dir_fd=dfd)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise OutputRefused(f"refusing to write {what} {path}: it is no longer a regular file")
        tmp = f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dfd
        )
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path.name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
    finally:
        os.close(dfd)
