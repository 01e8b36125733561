"""An instance's own /tmp: tmpfs (in-memory kinds) or an ext4 image on a loop device (disk kinds).

Both enforce the size for real: a write past it fails with ENOSPC. tmpfs pages are charged to
the memory cgroup of the writer, so an in-memory /tmp counts against the instance's memory limit.
Without root (no mount) the /tmp is a plain directory and the size is not enforced.

A disk image is a copy of an empty file system made once per size (``templates``: mkfs is a process
of its own, 10-25 ms of every cold start); only its data blocks are copied (~0.3 MB for 512 MB),
the rest stays a hole, so each instance still starts on a fresh, empty file system of its own.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

MIB = 1 << 20
#: one template made at a time (two cold starts of a new size wait for the same mkfs)
_TEMPLATE_LOCK = threading.Lock()
#: no journal and no reserved blocks: nearly all of the image is usable, as on the platforms
MKFS = ["mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal", "-E", "lazy_itable_init=1,nodiscard"]


@dataclass
class TmpStore:
    """A mounted (or plain) directory that becomes the instance's /tmp."""

    path: Path
    kind: str
    size_bytes: int
    enforced: bool
    image: Path | None = None

    def info(self) -> dict[str, object]:
        return {"kind": self.kind, "size_bytes": self.size_bytes, "enforced": self.enforced}

    def release(self) -> None:
        """Unmount (lazily, the instance may still hold it) and delete."""
        if self.enforced:
            subprocess.run(["umount", "-l", str(self.path)], capture_output=True, check=False)  # noqa: S603 - the emulator's /tmp cleanup (umount), inside the launcher-tracked service
        shutil.rmtree(self.path, ignore_errors=True)
        if self.image is not None:
            with contextlib.suppress(OSError):
                self.image.unlink()


def _run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)  # noqa: S603 - the emulator's /tmp mount, inside the launcher-tracked service
    if proc.returncode != 0:
        raise OSError(f"{' '.join(cmd[:2])} failed: {(proc.stderr or proc.stdout).strip()[:200]}")


def make_tmp(
    directory: Path, kind: str, size_mb: int, *, mount: bool, templates: Path | None = None
) -> TmpStore:
    """Create ``directory`` as a /tmp of ``size_mb`` MiB; ``kind`` is ``memory`` or ``disk``. A disk
    image is copied from an empty file system of that size kept in ``templates`` (made there on
    first use), or made by mkfs when no directory is given."""
    directory.mkdir(parents=True, exist_ok=True)
    size = size_mb * MIB
    if not mount:
        return TmpStore(directory, kind, size, enforced=False)
    if kind == "memory":
        _run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=1777,nosuid,nodev", "tmpfs", str(directory)])
        return TmpStore(directory, kind, size, enforced=True)
    image = directory.with_suffix(".img")
    try:
        template = _template(templates, size) if templates is not None else None
        if template is not None:
            _copy_sparse(template, image, size)
        else:
            with open(image, "wb") as fh:
                fh.truncate(size)
            _run([*MKFS, str(image)])
        _run(["mount", "-t", "ext4", "-o", "loop,nosuid,nodev", str(image), str(directory)])
        os.chmod(directory, 0o1777)  # noqa: S103 - a /tmp: world-writable with the sticky bit
    except OSError:
        with contextlib.suppress(OSError):
            image.unlink()
        raise
    return TmpStore(directory, kind, size, enforced=True, image=image)


def _template(templates: Path, size: int) -> Path | None:
    """The empty ext4 image of ``size`` bytes in ``templates`` (made by mkfs on first use); None
    where the file system there cannot tell data from holes (a copy would then write it all)."""
    path = templates / f"ext4-{size}.img"
    with _TEMPLATE_LOCK:
        if not path.exists():
            templates.mkdir(mode=0o700, parents=True, exist_ok=True)
            part = templates / f".{path.name}.{secrets.token_hex(4)}"
            try:
                fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
                try:
                    os.ftruncate(fd, size)
                finally:
                    os.close(fd)
                _run([*MKFS, str(part)])
                os.replace(part, path)
            finally:
                with contextlib.suppress(OSError):
                    part.unlink()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        sparse = os.lseek(fd, 0, os.SEEK_HOLE) < size
    except OSError:
        sparse = False
    finally:
        os.close(fd)
    return path if sparse else None


def _copy_sparse(src: Path, dst: Path, size: int) -> None:
    """A new file ``dst`` of ``size`` bytes holding ``src``'s data extents; its holes stay holes."""
    fin = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        fout = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            os.ftruncate(fout, size)
            offset = 0
            while offset < size:
                try:
                    start = os.lseek(fin, offset, os.SEEK_DATA)
                except OSError as exc:
                    if exc.errno == errno.ENXIO:  # no data after offset
                        break
                    raise
                end = os.lseek(fin, start, os.SEEK_HOLE)
                while start < end:
                    chunk = os.pread(fin, min(end - start, MIB), start)
                    if not chunk:
                        raise OSError(f"{src}: shorter than its extents")
                    start += os.pwrite(fout, chunk, start)
                offset = end
        finally:
            os.close(fout)
    finally:
        os.close(fin)
