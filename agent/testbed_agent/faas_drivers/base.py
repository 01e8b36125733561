"""A FaaS platform: one class per platform (``faas_drivers/platforms/<name>.py``), SeBS's model.

The class holds what is true of the platform whatever the target (class attributes and class
methods: its name, whether it is real and billed, the emulator profiles that model it, its default
region, runtime, architectures, memory and timeout, its package format, its price rule, where its
credentials come from); an instance is the driver of one target: it deploys a function of
``workloads/faas/functions`` (:class:`FunctionSpec`), invokes it (:class:`Call`), forces the next
call cold, deletes it, and lists and removes what a run created (teardown). Every platform API
request goes through :meth:`Platform.api`, which counts it per operation and, in a dry run,
prints it instead of sending it.
"""

from __future__ import annotations

import contextlib
import json
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, TextIO

from testbed_agent.faas_drivers.ledger import Budget, Journal
from testbed_agent.faas_drivers.prices import Pricing, billed_s, load_pricing
from testbed_agent.faas_drivers.target import Target
from testbed_services.faas import package
from testbed_services.faas.functions import FunctionCode
from testbed_shared.errors import TestbedError, WorkloadError

#: what :meth:`Platform.owned` returns and :meth:`Platform.remove` takes: ``kind``, ``id`` (and
#: the resource's tags where the platform lists them)
Resource = dict[str, Any]


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


class Platform(ABC):
    """One FaaS platform (class attributes) and the driver of one target (an instance)."""

    #: the platform's name in targets and records; its module is ``platforms/<name with _>.py``
    name: ClassVar[str] = ""
    #: a real provider that bills the calls (False: the emulator, which models one)
    real: ClassVar[bool] = True
    #: emulator profiles that model this platform: a profile named one of these, or one of these
    #: and a dash (``aws-lambda-2017``)
    profiles: ClassVar[tuple[str, ...]] = ()
    default_region: ClassVar[str] = ""
    default_runtime: ClassVar[str] = ""
    architectures: ClassVar[tuple[str, ...]] = ("x86_64",)
    #: memory and timeout of a deployment when the plan gives none
    default_memory_mb: ClassVar[int] = 128
    default_timeout_s: ClassVar[float] = 60.0
    #: the metric of round trip minus handler time: what lies between the caller and the function
    overhead_metric: ClassVar[str] = "platform_overhead_s"
    #: kinds of resources, in the order teardown deletes them (dependents first)
    delete_order: ClassVar[tuple[str, ...]] = ("function",)

    def __init__(self, target: Target, *, dry_run: bool = False, out: TextIO | None = None) -> None:
        self.target = target
        #: a dry run prints each request (to ``out``) instead of sending it
        self.dry_run = dry_run
        self.out = out or sys.stdout
        self._counts: dict[str, int] = {}
        self.pricing = load_pricing()
        #: what this run created (a dry run creates nothing and journals nothing)
        self.journal = Journal(target.journal_path(), enabled=self.real and not dry_run)
        #: the run's spending against its cap (a platform that bills nothing keeps no ledger)
        self.budget: Budget | None = (
            Budget(target.cost_cap_usd, target.journal_path().with_suffix(".cost.json"))
            if self.real
            else None
        )
        #: what this driver deployed, by the benchmark's name for it
        self.deployed: dict[str, dict[str, Any]] = {}
        #: set when the answering endpoint is one of the toolkit's local stand-ins (it says so)
        self.standin: str | None = None

    # -- what is true of the platform ---------------------------------------------------------

    @classmethod
    def models(cls, profile: str) -> bool:
        """Whether the emulator profile ``profile`` models this platform."""
        return any(profile == p or profile.startswith(p + "-") for p in cls.profiles)

    @classmethod
    def package_files(cls, code: FunctionCode) -> dict[str, bytes]:
        """The deployment package's files (zip name -> content): the function's directory and its
        ``python_path`` libraries; a platform that needs an entry point adds it."""
        return package.files(code)

    @classmethod
    def package(cls, code: FunctionCode) -> bytes:
        """The zip a driver uploads for ``code`` (byte for byte the same from the same files)."""
        return package.build_zip(cls.package_files(code))

    @classmethod
    def estimate_memory_mb(cls, memory_mb: float | None) -> float:
        """The memory a call is billed at when the plan asks for ``memory_mb`` (None: the default)."""
        return float(memory_mb or cls.default_memory_mb)

    @classmethod
    def vcpus(cls, memory_mb: float, pricing: Pricing) -> float:
        """vCPUs an instance of ``memory_mb`` gets (what a call's duration scales with)."""
        return 1.0

    @classmethod
    def price(cls, memory_mb: float, duration_s: float, arch: str, pricing: Pricing) -> dict[str, float]:
        """GB-seconds and price of one call of ``duration_s`` at ``memory_mb``: GB-s of the memory
        at the table's per-GB-second rate of ``arch``, billed as the table rounds, plus the
        per-request fee (a platform with another rule overrides this)."""
        rates = pricing.rates(cls.name)
        per = rates["per_gb_second"]
        if arch not in per:
            raise TestbedError(f"{cls.name} has no price for architecture {arch!r} ({', '.join(per)})")
        gb_s = memory_mb / 1024.0 * billed_s(duration_s, rates)
        return {"gb_seconds": gb_s, "price": gb_s * float(per[arch]) + float(rates.get("per_request", 0.0))}

    @classmethod  # noqa: B027 - optional: the emulator needs no credentials
    def check_credentials(cls, target: Target) -> None:
        """Raise a one-line :class:`TestbedError` naming what is missing (which variable or file)
        when no credentials for this platform are found here; contacts nothing."""

    @classmethod
    def sdk_errors(cls) -> tuple[type[BaseException], ...]:
        """The SDK's exception classes a command reports as one line (refused credentials, denied
        requests, an unreachable endpoint)."""
        return ()

    # -- the driver of one target -------------------------------------------------------------

    def record(self, op: str, params: dict[str, Any]) -> None:
        """Count one platform API request ``op``; in a dry run, print it (packages as byte counts)."""
        self._counts[op] = self._counts.get(op, 0) + 1
        if self.dry_run:
            shown = json.dumps(params, sort_keys=True, default=_short)
            print(f"[dry-run] {self.name} {op} {shown}", file=self.out, flush=True)

    def api(self, op: str, call: Callable[..., Any], dry: Any = None, /, **params: Any) -> Any:
        """Send one platform request ``op`` (``call(**params)``), counted; in a dry run print it
        and return ``dry`` (a stand-in answer) instead."""
        self.record(op, params)
        if self.dry_run:
            return dry
        return call(**params)

    def read(self, op: str, call: Callable[..., Any], /, **params: Any) -> Any:
        """A read-only request: counted and, in a dry run, printed and still sent (teardown's
        listing shows what it would delete)."""
        self.record(op, params)
        return call(**params)

    def connect(self) -> None:  # noqa: B027 - optional: the emulator needs no credentials
        """Read the credentials and make the clients (a dry run of a plan needs none)."""

    @contextlib.contextmanager
    def reporting(self, what: str) -> Iterator[None]:
        """Turn the SDK's errors while doing ``what`` into one line naming the platform."""
        errors = self.sdk_errors()
        try:
            yield
        except TestbedError:
            raise
        except errors as exc:
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            raise TestbedError(
                f"{self.name} ({self.target.path}): {what}: {type(exc).__name__}: {first}",
                hint=f"check the credentials and permissions of {self.name} (docs/faas.md, Accounts and "
                "permissions); --debug shows the traceback",
            ) from exc

    @abstractmethod
    def endpoint(self) -> str:
        """The URL of the platform's API this driver talks to."""

    def describe(self) -> dict[str, Any]:
        """platform, region, architecture, runtime, real (not a dry run, no stand-in answered), the
        stand-in that answered, the driver and the endpoint, for the record."""
        return {
            "platform": self.name,
            "region": self.target.region,
            "architecture": self.target.architecture,
            "runtime": self.target.runtime,
            "real": self.real and not self.dry_run and self.standin is None,
            **({"standin": self.standin} if self.standin else {}),
            "driver": self.name,
            "endpoint": self.endpoint(),
        }

    def _deployed(self, name: str) -> dict[str, Any]:
        if name not in self.deployed:
            raise WorkloadError(f"function {name} was not deployed by this driver")
        return self.deployed[name]

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

    @abstractmethod
    def owned(self, run_id: str | None, now: float | None = None) -> list[Resource]:
        """What the platform's own tag query finds of run ``run_id`` (None: every resource of the
        toolkit past its deadline at ``now``), each ``{"kind", "id", ...}``."""

    @abstractmethod
    def remove(self, resource: Resource) -> None:
        """Delete one resource :meth:`owned` found, and journal it as deleted."""

    def charged(self, call: Call) -> Call:
        """``call``, its price charged to the run's ledger (which stops the calls past the cap)."""
        if self.budget is not None and call.billing:
            self.budget.charge(call.billing["price"])
        return call

    def finish(self, name: str) -> None:
        """What a benchmark does with its deployment when it ends: delete it (teardown takes what
        a killed run left)."""
        self.delete(name)

    def info(self) -> dict[str, Any]:
        """The target's state (the emulator's /info; for real platforms the description)."""
        return self.describe()

    def settle(self, name: str, calls: list[Call], wait_s: float | None = None) -> dict[str, Any]:
        """The platform's late figures of the calls (request logs, metrics): added to each call's
        ``platform`` or returned for the record; none by default."""
        return {}

    def where(self, info: dict[str, Any]) -> dict[str, Any]:
        """What a record says about where the benchmark ran (``resolved_*`` in its params)."""
        desc = self.describe()
        out = {k: desc.get(k) for k in ("platform", "region", "architecture", "runtime", "real", "driver")}
        out["real"] = bool(out["real"])
        if not out["real"]:
            out["rehearsal"] = desc.get("standin") or "dry run"
        return out

    def samples(self, info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(samples, tool) of a record: the target and its API requests per operation."""
        samples = {"target": self.describe(), "requests": self.counts()}
        return samples, {"name": f"testbed-faas-driver-{self.name}"}

    def close(self) -> None:  # noqa: B027 - optional: most drivers hold nothing to release
        """Release clients (the deployed functions stay until :meth:`delete` or teardown)."""

    def release_thread(self) -> None:  # noqa: B027 - optional: most drivers share one client
        """Release what the calling thread holds (a caller thread of a parallel phase ends)."""

    def counts(self) -> dict[str, int]:
        """The platform API requests made, per operation."""
        return dict(self._counts)


def _short(value: Any) -> str:
    return f"<{len(value)} bytes>" if isinstance(value, (bytes, bytearray)) else str(value)
