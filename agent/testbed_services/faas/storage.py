"""An instance's own /tmp: tmpfs (in-memory kinds) or an ext4 image on a loop device (disk kinds).

Both enforce the size for real: a write past it fails with ENOSPC. tmpfs pages are charged to
the memory cgroup of the writer, so an in-memory /tmp counts against the instance's memory limit.
Without root (no mount) the /tmp is a plain directory and the size is not enforced.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

MIB = 1 << 20


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


def make_tmp(directory: Path, kind: str, size_mb: int, *, mount: bool) -> TmpStore:
    """Create ``directory`` as a /tmp of ``size_mb`` MiB; ``kind`` is ``memory`` or ``disk``."""
    directory.mkdir(parents=True, exist_ok=True)
    size = size_mb * MIB
    if not mount:
        return TmpStore(directory, kind, size, enforced=False)
    if kind == "memory":
        _run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=1777,nosuid,nodev", "tmpfs", str(directory)])
        return TmpStore(directory, kind, size, enforced=True)
    image = directory.with_suffix(".img")
    with open(image, "wb") as fh:
        fh.truncate(size)
    try:
        # no journal and no reserved blocks: nearly all of the image is usable, as on the platforms
        _run(
            [
                "mkfs.ext4",
                "-q",
                "-F",
                "-m",
                "0",
                "-O",
                "^has_journal",
                "-E",
                "lazy_itable_init=1,nodiscard",
                str(image),
            ]
        )
        _run(["mount", "-o", "loop,nosuid,nodev", str(image), str(directory)])
        os.chmod(directory, 0o1777)  # noqa: S103 - a /tmp: world-writable with the sticky bit
    except OSError:
        with contextlib.suppress(OSError):
            image.unlink()
        raise
    return TmpStore(directory, kind, size, enforced=True, image=image)
