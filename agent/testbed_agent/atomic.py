"""Files replaced whole: a reader sees the old content or the new, never part of a write."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def write_atomically(path: Path, text: str, mode: int = 0o666) -> None:
    """Write ``text`` to ``path`` through a uniquely named temporary file beside it and a rename.

    ``mode`` is filtered by the umask, as for ``open()`` (the agent runs with 077). The temporary
    name is hidden and unique, so concurrent writers (agent and watchdog) never share one.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
