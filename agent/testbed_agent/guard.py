"""Target guard: I/O workloads write only to test files the agent created itself.

Paths are resolved to their real location first (``//proc`` is ``/proc``; a symbolic link as the
target is refused, whatever it points to). Kernel pseudo-filesystems (procfs, sysfs, cgroupfs...,
judged by filesystem type wherever they are mounted, not by path) are never written; FIFOs,
sockets and directories are refused; block and character devices, files on a device filesystem
(devtmpfs, devpts: ``/dev``) and existing files without the agent's mark need
``params.allow_device: true``.

No check is a promise about a path for later: :func:`open_target` opens the target itself,
walking from ``/`` (or from the run's held scratch directory) one component at a time without
following symbolic links, checks type, filesystem and mark on the open descriptor, and the tool
is handed that descriptor (``/proc/self/fd/N``), so swapping a file or a directory for a link
after the check redirects nothing.

A file the agent creates is marked with the identity of its inode: the extended attribute
``user.testbed_agent`` holding ``<dev>:<ino>``, or where the filesystem has no user xattrs a
sidecar ``<file>.testbed-agent`` owned by the agent's user holding the same. A copied file, a
stray sidecar or a sidecar of another file does not match the inode and is not a mark.
See docs/io-guard.md.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

from testbed_shared.atomic import PSEUDO_FILESYSTEMS, fs_type
from testbed_shared.errors import TargetRefused

XATTR = "user.testbed_agent"
SIDECAR = ".testbed-agent"
#: filesystems of device nodes: writing there needs allow_device
DEVICE_FILESYSTEMS = frozenset({"devtmpfs", "devpts", "devfs"})
#: filesystems never written, whatever the plan allows
FORBIDDEN_FILESYSTEMS = PSEUDO_FILESYSTEMS - DEVICE_FILESYSTEMS
_ALLOW_HINT = "benchmarks write to their own test files; params.allow_device: true allows a device"


def _existing(path: str) -> str:
    """``path`` or its nearest existing ancestor."""
    while not os.path.lexists(path) and path != "/":
        path = os.path.dirname(path)
    return path


def filesystem_of(path: Path | str) -> str | None:
    """Filesystem type of ``path``, or of its nearest existing ancestor when it does not exist."""
    try:
        return fs_type(_existing(str(path)))
    except OSError:
        return None


def _refuse_pseudo(real: str, kind: str | None) -> None:
    if kind in FORBIDDEN_FILESYSTEMS:
        raise TargetRefused(f"refusing to write to {real}: kernel pseudo-filesystem ({kind})")


def real_target(path: Path | str) -> Path:
    """Absolute real path of ``path`` with leading ``//`` collapsed; refuse a symlink target and
    any path on a kernel pseudo-filesystem (by filesystem type)."""
    raw = "/" + os.path.abspath(str(path)).lstrip("/")
    if os.path.islink(raw):
        raise TargetRefused(f"refusing to write through symbolic link {raw}", hint="give the real path")
    try:
        real = "/" + os.path.realpath(raw).lstrip("/")
    except OSError as exc:  # a component changing while it is resolved
        raise TargetRefused(f"refusing {raw}: cannot resolve it ({exc.strerror})") from None
    _refuse_pseudo(real, filesystem_of(real))
    return Path(real)


def check_target(path: Path | str, allow_device: bool = False) -> Path:
    """Return the real path the agent may write for ``path``; raise :class:`TargetRefused` otherwise.

    A check of names only: the tools are handed what :func:`open_target` opens, not this path."""
    real = real_target(path)
    under_dev = filesystem_of(real) in DEVICE_FILESYSTEMS
    try:
        st = os.lstat(real)
    except FileNotFoundError:
        if under_dev and not allow_device:
            raise TargetRefused(
                f"refusing to create {real} under /dev (a device filesystem)",
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
        raise TargetRefused(f"refusing to write to {real} under /dev (a device filesystem)", hint=_ALLOW_HINT)
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


# -- opening targets: the descriptor, not the name, is what the tools get -----------------------


@dataclass
class OpenTarget:
    """A target the agent opened and checked: the tool gets :attr:`proc_path`, never the name."""

    fd: int
    path: Path  # the real path it was opened under (for records and messages)
    dir_fd: int
    device: bool = False

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def proc_path(self) -> str:
        """``/proc/self/fd/N``: in a child that inherits ``fd`` (``pass_fds``), the same file."""
        return f"/proc/self/fd/{self.fd}"

    def close(self) -> None:
        for fd in (self.fd, self.dir_fd):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> OpenTarget:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def open_dir(directory: Path, create: bool = True) -> int:
    """A descriptor of ``directory`` (a real path), opened one component at a time without
    following symbolic links: from the run's held scratch descriptor when ``directory`` lies in
    it, else from ``/``. Missing components are created (0700). A component swapped for a link
    (or anything but a directory) since the path was checked is refused."""
    from testbed_agent import scratch  # noqa: PLC0415 - cuts an import cycle of issue 26's code (agent/tests/test_import_graph.py KNOWN_CYCLES)

    held = scratch.held_for(directory)
    if held is not None:
        root, start = held
        cur = os.dup(start)
        parts = directory.relative_to(root).parts
    else:
        cur = os.open("/", _DIR_FLAGS)
        parts = directory.parts[1:]
    try:
        for part in parts:
            try:
                nxt = os.open(part, _DIR_FLAGS, dir_fd=cur)
            except FileNotFoundError:
                if not create:
                    raise TargetRefused(f"directory {directory} does not exist") from None
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, 0o700, dir_fd=cur)
                nxt = os.open(part, _DIR_FLAGS, dir_fd=cur)
            os.close(cur)
            cur = nxt
    except OSError as exc:
        os.close(cur)
        raise TargetRefused(
            f"refusing {directory}: a component is a symbolic link or not a directory "
            f"(changed since it was checked?): {exc.strerror}"
        ) from None
    except BaseException:
        os.close(cur)
        raise
    return cur


def open_target(path: Path | str, allow_device: bool = False) -> OpenTarget:
    """Open (creating and marking it when new) the target ``path`` for reading and writing.

    In the run's held scratch directory the path is taken as written and opened beneath the held
    descriptor; elsewhere (``params.filename``) the names are checked and resolved once
    (:func:`check_target`). Either way the directory is then opened one component at a time
    without following links (:func:`open_dir`), its filesystem type checked on the descriptor,
    the target opened ``O_NOFOLLOW`` beneath it, and its type and the agent's mark checked on the
    open descriptor. What the descriptor refers to cannot change afterwards."""
    from testbed_agent import scratch  # noqa: PLC0415 - cuts an import cycle of issue 26's code (agent/tests/test_import_graph.py KNOWN_CYCLES)

    lexical = Path("/" + os.path.normpath(os.path.abspath(str(path))).lstrip("/"))
    # inside the run's scratch no name is resolved at all: the walk starts at the held descriptor
    # (a scratch or subdirectory swapped for a link is refused, not followed)
    inside = scratch.held_for(lexical.parent) is not None
    real = lexical if inside else check_target(path, allow_device)
    dfd = open_dir(real.parent)
    try:
        kind = fs_type(dfd)
        _refuse_pseudo(str(real), kind)
        on_dev = kind in DEVICE_FILESYSTEMS
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a FIFO must not block
        created = False
        try:
            fd = os.open(real.name, flags, dir_fd=dfd)
        except FileNotFoundError:
            if on_dev and not allow_device:
                raise TargetRefused(
                    f"refusing to create {real} under /dev (a device filesystem)", hint=_ALLOW_HINT
                ) from None
            try:
                fd = os.open(real.name, flags | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dfd)
            except OSError as exc:  # something appeared under that name meanwhile
                raise TargetRefused(
                    f"refusing to create {real}: {exc.strerror} (changed while opened)"
                ) from None
            created = True
        except OSError as exc:
            raise TargetRefused(
                f"refusing to write to {real}: {exc.strerror} (a symbolic link, FIFO or socket swapped in?)"
            ) from None
        try:
            target = _checked(fd, dfd, real, created, allow_device, on_dev)
        except BaseException:
            os.close(fd)
            raise
    except BaseException:
        os.close(dfd)
        raise
    return target


def _checked(fd: int, dfd: int, real: Path, created: bool, allow: bool, on_dev: bool) -> OpenTarget:
    st = os.fstat(fd)
    if stat.S_ISBLK(st.st_mode) or stat.S_ISCHR(st.st_mode):
        if not allow:
            raise TargetRefused(f"refusing to write to device {real}", hint=_ALLOW_HINT)
        return OpenTarget(fd, real, dfd, device=True)
    if not stat.S_ISREG(st.st_mode):
        raise TargetRefused(f"refusing to write to {real}: not a regular file")
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    if on_dev and not allow:
        raise TargetRefused(f"refusing to write to {real} under /dev (a device filesystem)", hint=_ALLOW_HINT)
    if created:
        mark_fd(fd, dfd, real.name)
    elif not is_marked_fd(fd, dfd, real.name) and not allow:
        raise TargetRefused(
            f"refusing to overwrite {real}: existing file not created by the agent",
            hint="remove it, choose a new path, or set params.allow_device: true",
        )
    return OpenTarget(fd, real, dfd)


def mark_fd(fd: int, dir_fd: int, name: str) -> None:
    """Mark the open file ``fd`` (named ``name`` in ``dir_fd``) as the agent's."""
    ident = _identity(os.fstat(fd))
    try:
        os.setxattr(fd, XATTR, ident)
    except OSError:
        tmp = f".sidecar-{os.getpid()}-{fd}-{secrets.token_hex(4)}"
        sfd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd
        )
        try:
            os.write(sfd, ident + b"\n")
            os.fsync(sfd)
        finally:
            os.close(sfd)
        os.replace(tmp, name + SIDECAR, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)


def is_marked_fd(fd: int, dir_fd: int, name: str) -> bool:
    """Whether the open file ``fd`` carries a mark naming its own inode (checked on descriptors)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        return False
    try:
        return os.getxattr(fd, XATTR) == _identity(st)
    except OSError:
        pass
    try:
        sfd = os.open(
            name + SIDECAR, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, dir_fd=dir_fd
        )
    except OSError:
        return False
    try:
        sst = os.fstat(sfd)
        if not stat.S_ISREG(sst.st_mode) or sst.st_uid != os.getuid() or sst.st_size > 64:
            return False
        return os.read(sfd, 65).strip() == _identity(st)
    finally:
        os.close(sfd)


def open_staging(target: OpenTarget) -> OpenTarget:
    """A new marked file beside ``target`` (same directory descriptor) to lay the target out in."""
    name = f".{target.name}.{secrets.token_hex(4)}.staging"
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(name, flags, 0o600, dir_fd=target.dir_fd)
    mark_fd(fd, target.dir_fd, name)
    return OpenTarget(fd, target.path.with_name(name), os.dup(target.dir_fd))


def install_staging(staged: OpenTarget, target: OpenTarget) -> None:
    """Move a laid-out staging file over the target (names within one directory descriptor) and
    make ``target``'s descriptor number refer to it (``dup2``), so what was checked with that
    number stays valid. ``staged`` is closed."""
    d = target.dir_fd
    os.replace(staged.name, target.name, src_dir_fd=staged.dir_fd, dst_dir_fd=d)
    with contextlib.suppress(FileNotFoundError):
        os.replace(staged.name + SIDECAR, target.name + SIDECAR, src_dir_fd=staged.dir_fd, dst_dir_fd=d)
    os.dup2(staged.fd, target.fd, inheritable=False)
    staged.close()


def remove_stale_staging_fd(target: OpenTarget) -> None:
    """Remove marked staging files of ``target`` that a killed attempt left (beneath its directory
    descriptor; a file counts only when its own mark names it)."""
    prefix = f".{target.name}."
    for name in os.listdir(target.dir_fd):
        if not (name.startswith(prefix) and name.endswith(".staging")):
            continue
        try:
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
            fd = os.open(name, flags, dir_fd=target.dir_fd)
        except OSError:
            continue
        try:
            ours = is_marked_fd(fd, target.dir_fd, name)
        finally:
            os.close(fd)
        if ours:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=target.dir_fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name + SIDECAR, dir_fd=target.dir_fd)
