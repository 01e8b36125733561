"""The verification result every verifier fills: named checks, each true or false with a detail, and
the bytes it read but left out of every check (``ignored``)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


class EvidenceError(Exception):
    """Evidence that cannot be read at all (wrong size, unknown format): exit 2, not a failed check."""


@dataclass
class Check:
    name: str
    ok: bool
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass(frozen=True)
class Ignored:
    """Bytes of an input that no check reads (outside every signed or checked structure), or a
    tolerated absence (``spans`` empty: no final newline, no NUL terminator). ``spans`` are
    ``(offset, length)`` in the file ``source``; ``sha256`` and ``head`` (hex of the first 32 bytes)
    say which bytes they were."""

    source: str
    why: str
    spans: tuple[tuple[int, int], ...] = ()
    sha256: str = ""
    head: str = ""

    @classmethod
    def of(
        cls, source: str, why: str, data: bytes, spans: Sequence[tuple[int, int]], base: int = 0
    ) -> Ignored:
        """An entry for the bytes of ``data`` at ``spans`` (offsets in ``data``; ``base`` is where
        ``data`` starts in the file ``source``)."""
        got = b"".join(data[o : o + n] for o, n in spans)
        return cls(
            source,
            why,
            tuple((base + o, n) for o, n in spans),
            hashlib.sha256(got).hexdigest() if spans else "",
            got[:32].hex(),
        )

    @property
    def size(self) -> int:
        return sum(n for _, n in self.spans)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "why": self.why,
            "bytes": self.size,
            "spans": [list(s) for s in self.spans],
            "sha256": self.sha256,
            "head": self.head,
        }


@dataclass
class Result:
    """What ``attest verify`` prints: ``verified`` is true only when every check holds."""

    technology: str
    as_of: datetime
    checks: list[Check] = field(default_factory=list)
    measurement: str | None = None
    report_data: str | None = None
    info: dict[str, Any] = field(default_factory=dict)
    used: set[bytes] = field(default_factory=set)  # SHA-256 of the certificates of checked chains
    ignored: list[Ignored] = field(default_factory=list)

    def add(self, name: str, ok: bool, detail: str) -> bool:
        self.checks.append(Check(name, bool(ok), detail))
        return bool(ok)

    def merge(self, other: Result, prefix: str = "") -> None:
        for c in other.checks:
            self.checks.append(Check(prefix + c.name, c.ok, c.detail))
        self.info.update(other.info)
        self.used |= other.used
        self.ignored += [i for i in other.ignored if i not in self.ignored]

    @property
    def verified(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def as_dict(self) -> dict[str, Any]:
        return {
            "verified": self.verified,
            "technology": self.technology,
            "checks": [c.as_dict() for c in self.checks],
            "measurement": self.measurement,
            "report_data": self.report_data,
            "as_of": self.as_of.isoformat(),
            "ignored": [i.as_dict() for i in self.ignored],
            **({"info": self.info} if self.info else {}),
        }
