"""Target guard: I/O workloads write only to test files the agent created itself.

A target is taken as written: made absolute and normalised (``//proc`` is ``/proc``, ``a/../b`` is
``b``), no component resolved. The agent opens it one component at a time without following a
link (:func:`testbed_shared.atomic.open_dir_nofollow`), from the run's held scratch descriptor
when the target lies in the scratch directory, else from ``/``: a symbolic link anywhere in the
path is refused, never followed (issue 40 finding 5: a plan's ``filename`` through a linked
directory made the agent, as root, create and write its file where the link pointed), and so is
a directory on a kernel pseudo-filesystem on the way.

The entry itself is opened ``O_PATH|O_NOFOLLOW`` and judged on that descriptor (:func:`_rules`):
kernel pseudo-filesystems (procfs, sysfs, cgroupfs..., by filesystem type wherever they are
mounted) never; symbolic links, FIFOs, sockets and directories never; block and character devices,
files on a device filesystem (devtmpfs, devpts: ``/dev``) and existing files without the agent's
mark only with ``params.allow_device: true``. Only then is it opened for writing, through its
``O_PATH`` descriptor (so no name can be swapped in between), or created ``O_EXCL`` and marked;
the tool is handed that descriptor as ``/proc/self/fd/N``.

:func:`check_target` (the plan check: ``validate``, ``plan derive``, a run's plan loading) is the
same walk and the same rules, creating nothing and opening nothing for writing, so what a plan
check accepts the run accepts, unless the machine changed in between.

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
from dataclasses import dataclass
from pathlib import Path

from testbed_agent import scratch
from testbed_shared.atomic import PSEUDO_FILESYSTEMS, fs_type, open_dir_nofollow, walk_nofollow
from testbed_shared.errors import TargetRefused

XATTR = "user.testbed_agent"
SIDECAR = ".testbed-agent"
#: filesystems of device nodes: writing there needs allow_device
DEVICE_FILESYSTEMS = frozenset({"devtmpfs", "devpts", "devfs"})
#: filesystems never written, whatever the plan allows
FORBIDDEN_FILESYSTEMS = PSEUDO_FILESYSTEMS - DEVICE_FILESYSTEMS
_ALLOW_HINT = "benchmarks write to their own test files; params.allow_device: true allows a device"
_ENTRY = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC


def lexical(path: Path | str) -> Path:
    """``path`` made absolute and normalised, nothing resolved (``//proc/x`` is ``/proc/x``)."""
    return Path("/" + os.path.normpath(os.path.abspath(str(path))).lstrip("/"))


def _rules(target: Path, st: os.stat_result | None, kinds: tuple[str | None, ...], allow: bool) -> bool:
    """The table of docs/io-guard.md for ``target`` but the mark: ``st`` is its ``fstat`` (None:
    it does not exist and would be created), ``kinds`` the filesystem types of its directory and
    of itself. Returns whether it is a device the plan allows; raises :class:`TargetRefused`."""
    for kind in kinds:
        if kind in FORBIDDEN_FILESYSTEMS:
            raise TargetRefused(f"refusing to write to {target}: kernel pseudo-filesystem ({kind})")
    on_dev = any(kind in DEVICE_FILESYSTEMS for kind in kinds)
    if st is None:
        if on_dev and not allow:
            raise TargetRefused(
                f"refusing to create {target} under /dev (a device filesystem)",
                hint="set params.allow_device: true in the plan to allow it",
            )
        return False
    if stat.S_ISLNK(st.st_mode):
        raise TargetRefused(f"refusing to write through symbolic link {target}", hint="give the real path")
    if stat.S_ISBLK(st.st_mode) or stat.S_ISCHR(st.st_mode):
        if not allow:
            raise TargetRefused(f"refusing to write to device {target}", hint=_ALLOW_HINT)
        return True
    if not stat.S_ISREG(st.st_mode):
        raise TargetRefused(f"refusing to write to {target}: not a regular file")
    if on_dev and not allow:
        raise TargetRefused(
            f"refusing to write to {target} under /dev (a device filesystem)", hint=_ALLOW_HINT
        )
    return False


def _require_mark(target: Path, fd: int, dir_fd: int, allow: bool) -> None:
    if not allow and not is_marked_fd(fd, dir_fd, target.name):
        raise TargetRefused(
            f"refusing to overwrite {target}: existing file not created by the agent",
            hint="remove it, choose a new path, or set params.allow_device: true",
        )


def _entry(dir_fd: int, target: Path) -> int | None:
    """An ``O_PATH`` descriptor of the entry ``target`` beneath ``dir_fd`` (a link is the link
    itself), or None when there is none."""
    if not target.name:
        raise TargetRefused(f"refusing to write to {target}: not a regular file")
    try:
        return os.open(target.name, _ENTRY, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise TargetRefused(f"refusing {target}: {exc.strerror}") from None


def _reopen(entry: int, st: os.stat_result, flags: int, target: Path) -> int:
    """The file of the ``O_PATH`` descriptor ``entry``, opened with ``flags`` (the same inode
    whatever its name has become since)."""
    try:
        fd = os.open(f"/proc/self/fd/{entry}", flags | os.O_CLOEXEC | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise TargetRefused(f"refusing {target}: {exc.strerror}") from None
    now = os.fstat(fd)
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):  # cannot happen: the same descriptor
        os.close(fd)
        raise TargetRefused(f"refusing {target}: it changed while it was opened")
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd


def check_target(path: Path | str, allow_device: bool = False) -> Path:
    """What :func:`open_target` would decide for ``path``, creating nothing and opening nothing
    for writing (the plan check); returns the target as the run names it, or raises
    :class:`TargetRefused`."""
    target = lexical(path)
    held = scratch.held_for(target.parent)
    dfd, reached = walk_nofollow(target.parent, start=held, refuse=TargetRefused, partial=True)
    try:
        if reached != target.parent:  # the run creates the rest beneath ``reached``
            _rules(target, None, (fs_type(dfd),), allow_device)
            return target
        entry = _entry(dfd, target)
        if entry is None:
            _rules(target, None, (fs_type(dfd),), allow_device)
            return target
        try:
            st = os.fstat(entry)
            device = _rules(target, st, (fs_type(dfd), fs_type(entry)), allow_device)
            if not device and not allow_device:
                fd = _reopen(entry, st, os.O_RDONLY, target)
                try:
                    _require_mark(target, fd, dfd, allow_device)
                finally:
                    os.close(fd)
        finally:
            os.close(entry)
    finally:
        os.close(dfd)
    return target


# -- opening targets: the descriptor, not the name, is what the tools get -----------------------


@dataclass
class OpenTarget:
    """A target the agent opened and checked: the tool gets :attr:`proc_path`, never the name."""

    fd: int
    path: Path  # the path it was opened under, absolute and without links (records, messages)
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


def open_target(path: Path | str, allow_device: bool = False) -> OpenTarget:
    """Open (creating and marking it when new) the target ``path`` for reading and writing, by
    the rules of the module docstring; what the descriptor refers to cannot change afterwards."""
    target = lexical(path)
    dfd = open_dir_nofollow(target.parent, True, start=scratch.held_for(target.parent), refuse=TargetRefused)
    try:
        entry = _entry(dfd, target)
        if entry is None:
            _rules(target, None, (fs_type(dfd),), allow_device)
            flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(target.name, flags, 0o600, dir_fd=dfd)
            except OSError as exc:  # something appeared under that name meanwhile
                raise TargetRefused(
                    f"refusing to create {target}: {exc.strerror} (changed while opened)"
                ) from None
            try:
                mark_fd(fd, dfd, target.name)
            except BaseException:
                os.close(fd)
                raise
            return OpenTarget(fd, target, dfd)
        try:
            st = os.fstat(entry)
            device = _rules(target, st, (fs_type(dfd), fs_type(entry)), allow_device)
            fd = _reopen(entry, st, os.O_RDWR, target)
        finally:
            os.close(entry)
        try:
            if not device:
                _require_mark(target, fd, dfd, allow_device)
        except BaseException:
            os.close(fd)
            raise
        return OpenTarget(fd, target, dfd, device=device)
    except BaseException:
        os.close(dfd)
        raise


def create_test_file(path: Path | str, allow_device: bool = False) -> Path:
    """Create (or accept, if already marked) a test file through :func:`open_target`; its path."""
    with open_target(path, allow_device) as t:
        return t.path


def _identity(st: os.stat_result) -> bytes:
    return f"{st.st_dev}:{st.st_ino}".encode()


def is_marked(path: Path) -> bool:
    """True if ``path`` is a regular file (not a link) whose mark matches its own inode."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        dfd = os.open(Path(path).parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        os.close(fd)
        return False
    try:
        return is_marked_fd(fd, dfd, Path(path).name)
    finally:
        os.close(fd)
        os.close(dfd)


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


def _gone(target: OpenTarget) -> TargetRefused:
    return TargetRefused(
        f"the directory of {target.path} changed while the agent was laying the file out",
        hint="another process removed or replaced it; nothing was written elsewhere, run again",
    )


def open_staging(target: OpenTarget) -> OpenTarget:
    """A new marked file beside ``target`` (same directory descriptor) to lay the target out in."""
    name = f".{target.name}.{secrets.token_hex(4)}.staging"
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, 0o600, dir_fd=target.dir_fd)
    except FileNotFoundError:  # the opened directory was removed by someone else
        raise _gone(target) from None
    try:
        mark_fd(fd, target.dir_fd, name)
    except FileNotFoundError:
        os.close(fd)
        raise _gone(target) from None
    return OpenTarget(fd, target.path.with_name(name), os.dup(target.dir_fd))


def install_staging(staged: OpenTarget, target: OpenTarget) -> None:
    """Move a laid-out staging file over the target (names within one directory descriptor) and
    make ``target``'s descriptor number refer to it (``dup2``), so what was checked with that
    number stays valid. ``staged`` is closed."""
    d = target.dir_fd
    try:
        os.replace(staged.name, target.name, src_dir_fd=staged.dir_fd, dst_dir_fd=d)
    except FileNotFoundError:  # the staging file or its directory was removed by someone else
        raise _gone(target) from None
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
