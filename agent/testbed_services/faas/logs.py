"""Function output: each instance's stdout/stderr pipe drained into a bounded in-memory ring.

One collector thread serves every instance of an emulator, so a function that prints without end
costs a fixed amount of memory and no disk; what was dropped is counted and shown as a marker.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
from typing import IO

#: bytes of output kept per instance (the most recent ones)
LOG_CAP = 256 << 10
CHUNK = 1 << 16


class LogRing:
    """The last ``cap`` bytes written to one instance's output, and how many were dropped."""

    def __init__(self, cap: int = LOG_CAP) -> None:
        self.cap = cap
        self.total = 0
        self._buf = bytearray()
        self._lock = threading.Lock()
        self.closed = threading.Event()

    def append(self, data: bytes) -> None:
        with self._lock:
            self.total += len(data)
            self._buf += data
            if len(self._buf) > self.cap:
                del self._buf[: len(self._buf) - self.cap]

    @property
    def truncated(self) -> int:
        return self.total - len(self._buf)

    def since(self, offset: int) -> str:
        """What was written after byte ``offset`` of the stream, as far as the ring still holds it."""
        with self._lock:
            start = max(0, offset - (self.total - len(self._buf)))
            return bytes(self._buf[start:]).decode("utf-8", "replace")

    def text(self) -> str:
        """The kept tail, after a ``[... N bytes truncated ...]`` line when some was dropped."""
        with self._lock:
            tail = bytes(self._buf).decode("utf-8", "replace")
            dropped = self.total - len(self._buf)
        return (f"[... {dropped} bytes truncated ...]\n" if dropped else "") + tail


class LogCollector:
    """Drains registered pipes into their rings until EOF (or until the ring is closed)."""

    def __init__(self) -> None:
        self._sel = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="function-logs", daemon=True)
        self._thread.start()

    def add(self, pipe: IO[bytes], ring: LogRing) -> None:
        with self._lock:
            self._sel.register(pipe, selectors.EVENT_READ, ring)

    def _drop(self, pipe: IO[bytes]) -> None:
        with self._lock, contextlib.suppress(KeyError, ValueError):
            self._sel.unregister(pipe)
        pipe.close()

    def _loop(self) -> None:
        while not self._stop.is_set():
            with self._lock:
                keys = list(self._sel.get_map().values()) if self._sel.get_map() else []
            for key in keys:
                if key.data.closed.is_set():
                    self._drop(key.fileobj)
            if not keys:
                self._stop.wait(0.2)
                continue
            for key, _ in self._sel.select(timeout=0.2):
                try:
                    data = os.read(key.fd, CHUNK)
                except (OSError, ValueError):
                    data = b""
                if data:
                    key.data.append(data)
                else:
                    self._drop(key.fileobj)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        with self._lock:
            pipes = [k.fileobj for k in self._sel.get_map().values()]
        for pipe in pipes:
            self._drop(pipe)
        self._sel.close()
