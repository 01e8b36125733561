"""What a run created on a platform, and what it has spent there.

:class:`Journal` is an append-only JSON-lines file (one fsynced line per create and delete), written
*before* a resource is requested, so a run killed at any point leaves a journal naming everything it
may have created; teardown reads it beside the platform's own tag query. :class:`Budget` keeps the
run's spending (the platform's billed figures of each call, priced from the pricing table) in a
file beside it and refuses a benchmark whose ceiling would take the run over its cost cap.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import threading
from pathlib import Path
from typing import Any

from testbed_shared.atomic import check_output_path, write_atomically
from testbed_shared.errors import TestbedError, WorkloadError


class CostCapExceeded(WorkloadError):
    """The run would spend more than its cap; nothing more is started."""


class LedgerError(WorkloadError):
    """The run's spending cannot be accounted (a corrupt ledger, a price that is no amount)."""


class Journal:
    """Create/delete records of one run on one target."""

    def __init__(self, path: Path, enabled: bool = True) -> None:
        self.path = path
        #: a dry run creates nothing and journals nothing
        self.enabled = enabled
        self._lock = threading.Lock()

    def _append(self, entry: dict[str, Any]) -> None:
        if not self.enabled:
            return
        entry = {"at": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), **entry}
        with self._lock:
            check_output_path(self.path, "resource journal", make_parents=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, (json.dumps(entry, sort_keys=True) + "\n").encode())
                os.fsync(fd)
            finally:
                os.close(fd)

    def creating(self, kind: str, ident: str, **extra: Any) -> None:
        """Record that ``ident`` (a ``kind`` of resource) is about to be created."""
        self._append({"op": "create", "kind": kind, "id": ident, **extra})

    def deleted(self, kind: str, ident: str) -> None:
        self._append({"op": "delete", "kind": kind, "id": ident})

    def entries(self) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        out = []
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line cut by a kill: the entries before it stand
        return out

    def live(self) -> list[dict[str, Any]]:
        """Resources recorded as created and not (yet) as deleted, in creation order."""
        state: dict[tuple[str, str], dict[str, Any] | None] = {}
        for e in self.entries():
            key = (e.get("kind", ""), e.get("id", ""))
            if e.get("op") == "create":
                state[key] = e
            elif e.get("op") == "delete":
                state[key] = None
        return [e for e in state.values() if e is not None]


def usd_amount(value: Any) -> bool:
    """Whether ``value`` is a finite number of dollars >= 0 (not NaN, not infinite, not a bool)."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value >= 0
    )


def check_cap(value: Any, where: str = "cost cap") -> float:
    """``value`` as a cost cap: a finite positive number of US dollars, else a one-line error."""
    if not usd_amount(value) or value == 0:
        raise TestbedError(
            f"{where} {value!r}: a cost cap is a finite positive number of US dollars",
            hint="e.g. cost_cap_usd: 5 (faas_platform_cost_cap_usd); NaN, infinity, 0 and negative caps "
            "would disable it",
        )
    return float(value)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not an amount")


class Budget:
    """Spending of one run against its cap, kept in ``path`` across benchmarks and processes.

    The file is the record of the money spent: a ledger that cannot be read as finite amounts
    stops the run (:class:`LedgerError`) instead of starting again from zero, and a charge that is
    not a finite amount >= 0 is refused, so no value can lower the total or disable the cap.
    """

    def __init__(self, cap_usd: float, path: Path) -> None:
        self.cap = check_cap(cap_usd)
        self.path = path
        self._lock = threading.Lock()
        self.spent, self.calls = self._load()

    def _load(self) -> tuple[float, int]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return 0.0, 0
        except (OSError, UnicodeDecodeError) as exc:
            raise LedgerError(f"{self.path}: cannot read the cost ledger: {exc}", hint=_LEDGER_HINT) from None
        try:
            data = json.loads(text, parse_constant=_no_constant)
            spent, calls = data["spent_usd"], data["calls"]
        except (ValueError, TypeError, KeyError) as exc:
            what = f"no {exc}" if isinstance(exc, KeyError) else str(exc)
            raise LedgerError(f"{self.path}:1: not a cost ledger ({what})", hint=_LEDGER_HINT) from None
        if not usd_amount(spent):
            why = f"field 'spent_usd' is {spent!r}, not a finite amount >= 0"
            raise LedgerError(f"{self.path}:1: {why}", hint=_LEDGER_HINT)
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0:
            raise LedgerError(f"{self.path}:1: field 'calls' is {calls!r}, not a count", hint=_LEDGER_HINT)
        return float(spent), calls

    def check(self, estimate_usd: float, what: str) -> None:
        """Refuse ``what`` when its ceiling ``estimate_usd`` would take the run over the cap."""
        if not usd_amount(estimate_usd):
            raise CostCapExceeded(f"{what}: its cost estimate {estimate_usd!r} is not a finite amount >= 0")
        if self.spent + estimate_usd > self.cap:
            raise CostCapExceeded(
                f"{what}: up to ${estimate_usd:.4f} on top of ${self.spent:.4f} spent exceeds the "
                f"run's cost cap of ${self.cap:.2f}",
                hint="raise cost_cap_usd (faas_platform_cost_cap_usd) explicitly, or run fewer calls",
            )

    def charge(self, usd: float) -> None:
        """Add one call's price; raise once the run is over its cap (the calls stop there)."""
        if not usd_amount(usd) or not math.isfinite(self.spent + usd):
            raise LedgerError(
                f"a call's price {usd!r} (from the platform's billed figures) is not a finite amount >= 0: "
                "the cost ledger refuses it; no more calls",
                hint="the call was made and cannot be accounted: check the platform's bill",
            )
        with self._lock:
            self.spent += usd
            self.calls += 1
            text = json.dumps({"spent_usd": self.spent, "calls": self.calls, "cap_usd": self.cap})
            write_atomically(self.path, text + "\n", mode=0o600, what="cost ledger", make_parents=True)
        if self.spent > self.cap:
            raise CostCapExceeded(
                f"the run has spent ${self.spent:.4f}, over its cost cap of ${self.cap:.2f}; no more calls",
                hint="raise cost_cap_usd (faas_platform_cost_cap_usd) explicitly to go on",
            )


_LEDGER_HINT = "the ledger is the record of this run's spending: restore it, or start a new run id"
