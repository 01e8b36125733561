"""Exact parsing of evidence bytes: every byte is read into a field, checked for its required value
(reserved bytes zero, sizes consistent) or refused. Used by the TDX and HCL parsers, so that bytes
nobody signed or checked cannot ride along inside evidence that verifies; what follows a structure
is the caller's to record as ignored (``model.Ignored``)."""

from __future__ import annotations

import struct
from typing import Any

from testbed_shared.attest.model import EvidenceError


class Reader:
    """Reads ``data`` front to back; ``source`` names the evidence in every error."""

    def __init__(self, data: bytes, source: str, base: int = 0) -> None:
        self.data, self.source, self.pos, self.base = bytes(data), source, 0, base

    def fail(self, what: str) -> EvidenceError:
        return EvidenceError(f"{self.source}: {what} (at byte {self.base + self.pos})")

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > len(self.data):
            raise self.fail(f"truncated: {what} needs {n} bytes, {len(self.data) - self.pos} left")

    def take(self, n: int, what: str) -> bytes:
        self.need(n, what)
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str) -> Any:
        raw = self.take(struct.calcsize(fmt), what)
        vals = struct.unpack(fmt, raw)
        return vals if len(vals) > 1 else vals[0]

    def zeros(self, n: int, what: str) -> None:
        """``n`` reserved bytes that must be zero."""
        at = self.pos
        if any(self.take(n, what)):
            self.pos = at
            raise self.fail(f"{what}: reserved bytes are not zero")

    def sub(self, n: int, what: str) -> Reader:
        """A reader over the next ``n`` bytes (which this reader then skips)."""
        start = self.pos
        return Reader(self.take(n, what), self.source, self.base + start)

    @property
    def left(self) -> int:
        return len(self.data) - self.pos

    def end(self, what: str = "the data") -> None:
        """Nothing may follow."""
        if self.left:
            raise self.fail(f"{self.left} bytes after the end of {what}")
