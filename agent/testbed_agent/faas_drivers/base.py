"""The driver interface every FaaS target implements, and what its calls return.

A driver deploys a function of ``workloads/faas/functions`` (:class:`FunctionSpec`: memory,
architecture, runtime, timeout, tags), invokes it (:class:`Call`), forces the next call cold,
and deletes exactly what it created. Every platform API request goes through :meth:`Driver.api`,
which counts it per operation and, in a dry run, prints it instead of sending it.
"""

from __future__ import annotations

import json
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TextIO

from testbed_agent.faas_drivers.target import Target


@dataclass(frozen=True)
class FunctionSpec:
    """What to deploy: ``function`` (a name under workloads/faas/functions) as ``name``."""

    name: str
    function: str
    memory_mb: int | None = None
    timeout_s: float | None = None
    architecture: str | None = None
    runtime: str | None = None
    tags: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    #: emulator and Lambda (EphemeralStorage): /tmp size
    tmp_mb: int | None = None
    #: emulator only: fixed idle lifetime of its instances
    keep_alive_s: float | None = None


@dataclass
class Call:
    """One invocation as the workload records it.

    ``inspector`` holds what is known about the instance that served the call (all of the
    emulator's inspector; on real platforms what the platform or the shim reports: at least
    ``new_instance`` and ``handler_s``); ``platform`` the platform's own measurements (Lambda's
    REPORT fields, the request log's latency, ...); ``billing`` duration, memory, GB-s and price.
    """

    status: int
    ok: bool
    round_trip_s: float
    result: Any = None
    error: str | None = None
    inspector: dict[str, Any] = field(default_factory=dict)
    billing: dict[str, Any] = field(default_factory=dict)
    platform: dict[str, Any] = field(default_factory=dict)


class DryRun(Exception):
    """Raised by :meth:`Driver.api` in a dry run when a later step needs an answer it cannot have."""


class ApiLog:
    """Counts of platform API requests per operation; in a dry run, every request printed."""

    def __init__(self, platform: str, dry_run: bool = False, out: TextIO | None = None) -> None:
        self.platform = platform
        self.dry_run = dry_run
        self.out = out or sys.stdout
        self.counts: dict[str, int] = {}

    def record(self, op: str, params: dict[str, Any]) -> None:
        self.counts[op] = self.counts.get(op, 0) + 1
        if self.dry_run:
            shown = json.dumps(params, sort_keys=True, default=_short)
            print(f"[dry-run] {self.platform} {op} {shown}", file=self.out, flush=True)


def _short(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    return str(value)


class Driver(ABC):
    """One FaaS target. Subclasses set ``platform`` and implement the abstract methods."""

    platform = ""
    #: whether the target can retire its hosts too (``cold(scope="host")``): the emulator only
    host_cold = False

    def __init__(self, target: Target, *, dry_run: bool = False, out: TextIO | None = None) -> None:
        self.target = target
        self.log = ApiLog(self.platform, dry_run, out)

    @property
    def dry_run(self) -> bool:
        return self.log.dry_run

    def api(self, op: str, call: Callable[..., Any], dry: Any = None, /, **params: Any) -> Any:
        """Send one platform request ``op`` (``call(**params)``), counted; in a dry run print it
        and return ``dry`` (a stand-in answer) instead."""
        self.log.record(op, params)
        if self.dry_run:
            return dry
        return call(**params)

    def read(self, op: str, call: Callable[..., Any], /, **params: Any) -> Any:
        """A read-only request: counted and, in a dry run, printed and still sent (teardown's
        listing shows what it would delete)."""
        self.log.record(op, params)
        return call(**params)

    # -- the interface ------------------------------------------------------------------------

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """platform, region, architecture, runtime, real (bool) and the endpoint, for the record."""

    @abstractmethod
    def deploy(self, spec: FunctionSpec) -> dict[str, Any]:
        """Create (or update) the function; return its description once it can be invoked."""

    @abstractmethod
    def invoke(self, name: str, event: Any) -> Call:
        """Call the function once, synchronously."""

    @abstractmethod
    def cold(self, name: str | None, scope: str = "function") -> dict[str, Any]:
        """Make the next call of ``name`` (of every deployed function: None) start a new instance."""

    @abstractmethod
    def delete(self, name: str) -> None:
        """Delete the function and everything deployed with it."""

    def info(self) -> dict[str, Any]:
        """The target's state (the emulator's /info; for real platforms the description)."""
        return self.describe()

    def close(self) -> None:  # noqa: B027 - optional: most drivers hold nothing to release
        """Release clients (the deployed functions stay until :meth:`delete` or teardown)."""

    def release_thread(self) -> None:  # noqa: B027 - optional: most drivers share one client
        """Release what the calling thread holds (a caller thread of a parallel phase ends)."""

    def counts(self) -> dict[str, int]:
        return dict(self.log.counts)


def timed(call: Callable[[], Any]) -> tuple[Any, float]:
    """``call()`` and its wall-clock seconds."""
    t0 = time.perf_counter()
    out = call()
    return out, time.perf_counter() - t0
