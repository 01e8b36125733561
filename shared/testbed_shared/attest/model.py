"""The verification result every verifier fills: named checks, each true or false with a detail."""

from __future__ import annotations

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

    def add(self, name: str, ok: bool, detail: str) -> bool:
        self.checks.append(Check(name, bool(ok), detail))
        return bool(ok)

    def merge(self, other: Result, prefix: str = "") -> None:
        for c in other.checks:
            self.checks.append(Check(prefix + c.name, c.ok, c.detail))
        self.info.update(other.info)
        self.used |= other.used

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
            **({"info": self.info} if self.info else {}),
        }
