"""What a function may touch: its own mount namespace (private /tmp and /var/tmp, the rest of the
host read-only) and an unprivileged user.

The emulator (root) picks the user with :func:`function_user`; the worker process, still root
inside the instance's cgroups, calls :func:`enter` before it loads any function code.
"""

from __future__ import annotations

import ctypes
import os
import pwd

#: the dedicated system user functions run as (created on first use when running as root)
USER = "testbed-faas"
FALLBACK_USER = "nobody"
NOLOGIN = "/usr/sbin/nologin"

CLONE_NEWNS = 0x00020000
MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_RELATIME = 0x200000
MS_STRICTATIME = 0x1000000
PR_SET_NO_NEW_PRIVS = 38
#: where a sandboxed function finds its code (read-only, inside its private /tmp)
CODE_MOUNT = "/tmp/.task"
_FLAGS = {
    "nosuid": MS_NOSUID,
    "nodev": MS_NODEV,
    "noexec": MS_NOEXEC,
    "noatime": MS_NOATIME,
    "nodiratime": MS_NODIRATIME,
    "relatime": MS_RELATIME,
    "strictatime": MS_STRICTATIME,
}
#: mounts left writable: the private /tmp and /var/tmp, kernel interfaces and /dev's device nodes
WRITABLE = ("/tmp", "/var/tmp", "/dev", "/dev/pts", "/dev/shm")
KERNEL_TREES = ("/proc", "/sys")


def function_user() -> tuple[int, int, str] | None:
    """(uid, gid, name) functions run as; None when the emulator is not root (it cannot switch).

    ``testbed-faas`` is created on the first start (before any function runs) and used from then
    on; ``nobody`` only when it cannot be created (the emulator's /info and log then say why)."""
    if os.geteuid() != 0:
        return None
    for attempt in range(2):
        try:
            pw = pwd.getpwnam(USER)
            return pw.pw_uid, pw.pw_gid, USER
        except KeyError:
            if attempt == 0:
                CREATE_ERROR[0] = _create_user()
    try:
        pw = pwd.getpwnam(FALLBACK_USER)
    except KeyError:
        raise RuntimeError(
            f"neither user {USER} nor {FALLBACK_USER} exists and {USER} cannot be created"
        ) from None
    return pw.pw_uid, pw.pw_gid, FALLBACK_USER


#: why ``testbed-faas`` could not be created (empty when it was, or already existed)
CREATE_ERROR = [""]


def _create_user() -> str:
    """Create the system user; return useradd's complaint when it fails (empty on success)."""
    import subprocess  # noqa: PLC0415 - the emulator's side only, once; every worker imports this module at start (subprocess alone is ~10 ms of each cold start)

    try:
        done = subprocess.run(  # noqa: S603 - the emulator's sandbox setup, inside the launcher-tracked service
            [
                "useradd",
                "--system",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                NOLOGIN,
                USER,
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"useradd: {exc}"
    return "" if done.returncode == 0 else (done.stderr.strip().splitlines() or ["useradd failed"])[-1]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
    return libc


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def private_tmp(src: str, keep: list[str], code_dir: str | None = None) -> None:
    """New mount namespace in which ``src`` is bind-mounted over /tmp and /var/tmp, and root's
    home is an empty tmpfs.

    Directories in ``keep`` that live under those (the function code, the toolkit, the Python
    installation) are bound back at their own paths (read-only after :func:`read_only_host`);
    everything else there is hidden. ``code_dir`` (which may sit in a state directory only root
    can traverse) is bound read-only at :data:`CODE_MOUNT`.
    """
    libc = _libc()
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    src_fd = os.open(src, os.O_PATH | os.O_DIRECTORY)  # src itself may live under /tmp
    code_fd = os.open(code_dir, os.O_PATH | os.O_DIRECTORY) if code_dir else None
    _mask(libc, "/tmp", f"/proc/self/fd/{src_fd}", keep)
    if os.path.isdir("/var/tmp") and not os.path.islink("/var/tmp"):
        _mask(libc, "/var/tmp", f"/proc/self/fd/{src_fd}", keep)
    os.close(src_fd)
    if code_fd is not None:
        os.mkdir(CODE_MOUNT, 0o755)
        rc = libc.mount(f"/proc/self/fd/{code_fd}".encode(), CODE_MOUNT.encode(), None, MS_BIND, None)
        _check(rc, f"bind the function code on {CODE_MOUNT}")
        os.close(code_fd)
    home = os.path.realpath(os.path.expanduser("~root"))
    if home not in ("/", "/tmp") and os.path.isdir(home):
        _mask(libc, home, None, keep)
    if os.path.isdir("/dev/shm"):  # a fresh one: POSIX semaphores work, nothing is shared with the host
        opts = b"size=64m,mode=1777"
        _check(libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", MS_NOSUID | MS_NODEV, opts), "tmpfs on /dev/shm")


def _mask(libc: ctypes.CDLL, target: str, src: str | None, keep: list[str]) -> None:
    """Cover ``target`` with a bind of ``src`` (or an empty tmpfs), then bind back the ``keep``
    directories below it."""
    inside = sorted({os.path.realpath(k) for k in keep if os.path.realpath(k).startswith(target + "/")})
    tops = [k for k in inside if not any(k.startswith(o + "/") for o in inside)]
    held = [(k, os.open(k, os.O_PATH | os.O_DIRECTORY)) for k in tops if os.path.isdir(k)]
    if src is None:
        opts = b"size=1m,mode=0755"
        rc = libc.mount(b"tmpfs", target.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts)
        _check(rc, f"tmpfs on {target}")
    else:
        _check(libc.mount(src.encode(), target.encode(), None, MS_BIND, None), f"bind on {target}")
    for path, fd in held:
        _traversable_dirs(path)
        _check(
            libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, MS_BIND | MS_REC, None),
            f"bind {path} back",
        )
        os.close(fd)


def _traversable_dirs(path: str) -> None:
    """Create ``path`` and its missing parents 0755 whatever the umask: mount points the function
    user walks through to reach what is bound back (the Python installation under root's home)."""
    parent = os.path.dirname(path)
    if parent != path and not os.path.isdir(parent):
        _traversable_dirs(parent)
    if not os.path.isdir(path):
        os.mkdir(path)
        os.chmod(path, 0o755)  # noqa: S103 - a read-only mount point the function user must traverse


def _unescape(field: str) -> str:
    """Mount points in mountinfo escape space, tab, newline and backslash as octal."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def _mounts() -> list[tuple[str, int]]:
    """(mount point, per-mount flags to keep) of this namespace, parents first."""
    out = []
    with open("/proc/self/mountinfo") as fh:
        for line in fh:
            fields = line.split()
            flags = 0
            for opt in fields[5].split(","):
                flags |= _FLAGS.get(opt, 0)
            out.append((_unescape(fields[4]), flags))
    return out


def _stays_writable(point: str) -> bool:
    if point in WRITABLE:
        return True
    return any(point == t or point.startswith(t + "/") for t in KERNEL_TREES)


def read_only_host() -> list[str]:
    """Remount every mount of this namespace read-only except :data:`WRITABLE` and /proc, /sys.

    Returns the mount points that could not be remounted; fails if the root itself cannot be.
    """
    libc = _libc()
    failed = []
    for point, flags in _mounts():
        if _stays_writable(point):
            continue
        rc = libc.mount(None, point.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, None)
        if rc != 0:
            if point == "/":
                _check(rc, "remount / read-only")
            failed.append(point)
    return failed


def drop_privileges(uid: int, gid: int) -> None:
    """Become ``uid``/``gid`` for good (no supplementary groups, no setuid gains afterwards)."""
    libc = _libc()
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def enter(cfg: dict, keep: list[str]) -> None:
    """The worker's confinement, in order: namespace + private /tmp, the function's code at
    :data:`CODE_MOUNT`, read-only host, user. Updates ``cfg["code_dir"]``."""
    if cfg.get("private_tmp"):
        private_tmp(cfg["tmp_src"], keep, cfg["code_dir"])
        cfg["code_dir"] = CODE_MOUNT
        read_only_host()
    user = cfg.get("run_as")
    if user:
        drop_privileges(int(user[0]), int(user[1]))
