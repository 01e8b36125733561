"""The local emulator through its own HTTP API: everything its inspector sees, host-cold included.

Not a real platform: it bills nothing (no ledger), tags nothing (a teardown has nothing to find:
its deployments end with it) and keeps a benchmark's deployment for the next call of a shared
emulator service. Its records name the platform the emulator's profile models.
"""

from __future__ import annotations

import platform as _platform
import sys
import threading
from typing import Any, TextIO

from testbed_agent.faas_drivers import platforms
from testbed_agent.faas_drivers.base import Call, FunctionSpec, Platform, Resource
from testbed_agent.faas_drivers.target import Target
from testbed_services.faas.client import FaasClient


def machine() -> str:
    """This machine's architecture with Lambda's names (x86_64, arm64)."""
    m = _platform.machine().lower()
    return {"amd64": "x86_64", "aarch64": "arm64"}.get(m, m)


class EmulatorDriver(Platform):
    """``testbed-agent faas serve`` at ``options.url`` (one client per calling thread)."""

    name = "emulator"
    real = False
    default_region = "local"
    architectures = ("x86_64", "arm64")
    overhead_metric = "emulator_overhead_s"

    def __init__(
        self, target: Target, *, dry_run: bool = False, out: TextIO | None = None, timeout_s: float = 900.0
    ) -> None:
        super().__init__(target, dry_run=dry_run, out=out)
        self.url = str(target.options.get("url") or "")
        self.timeout_s = timeout_s
        self._local = threading.local()
        self._clients: list[FaasClient] = []
        self._lock = threading.Lock()
        self._info: dict[str, Any] | None = None

    @classmethod
    def at(cls, url: str, timeout_s: float) -> EmulatorDriver:
        """The driver of the emulator at ``url`` (a benchmark's endpoint)."""
        return cls(Target(cls.name, region=cls.default_region, options={"url": url}), timeout_s=timeout_s)

    def _client(self) -> FaasClient:
        client = getattr(self._local, "client", None)
        if client is None:
            client = FaasClient(self.url, timeout_s=self.timeout_s)
            self._local.client = client
            with self._lock:
                self._clients.append(client)
        return client

    def info(self) -> dict[str, Any]:
        self._info = self.api("GetInfo", self._client().info, {"profile": {"name": "?"}})
        return self._info

    def endpoint(self) -> str:
        return self.url

    def describe(self) -> dict[str, Any]:
        info = self._info or self.info()
        return {
            "platform": info["profile"]["name"],
            "region": "local",
            "architecture": machine(),
            "runtime": f"python{sys.version_info.major}.{sys.version_info.minor}",
            "real": False,
            "driver": self.name,
            "endpoint": self.url,
        }

    def where(self, info: dict[str, Any]) -> dict[str, Any]:
        """The record's target, with the platform the profile models and whether limits held."""
        models = platforms.modelled_by((info.get("profile") or {}).get("name", ""))
        out = {k: v for k, v in super().where(info).items() if k != "rehearsal"}
        return {
            **out,
            "models": models,
            "limits_enforced": info.get("limits_enforced"),
            "cgroup": info.get("cgroup"),
        }

    def samples(self, info: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The emulator's state (profile, limits, CPU) and the profile as the tool's."""
        keys = ("emulator_id", "profile", "limits_enforced", "cgroup", "warnings", "cpu_model", "host_cpus")
        summary = {k: info.get(k) for k in (*keys, "keep_alive_s")}
        return {"emulator": summary}, {"name": "testbed-faas-emulator", "profile": info["profile"]["name"]}

    def deploy(self, spec: FunctionSpec) -> dict[str, Any]:
        body = {
            "function": spec.function,
            "memory_mb": spec.memory_mb,
            "timeout_s": spec.timeout_s,
            "tmp_mb": spec.tmp_mb,
            "keep_alive_s": spec.keep_alive_s,
            "env": dict(spec.env),
        }
        body = {k: v for k, v in body.items() if v is not None}
        return self.api("PutFunction", lambda **b: self._client().deploy(spec.name, **b), {}, **body)

    def invoke(self, name: str, event: Any) -> Call:
        self.record("Invoke", {"name": name})
        if self.dry_run:
            return Call(200, True, 0.0, inspector={"new_instance": False, "handler_s": 0.0})
        status, body, rtt = self._client().invoke(name, event)
        err = body.get("error") or {}
        return Call(
            status=status,
            ok=status == 200,
            round_trip_s=rtt,
            result=body.get("result"),
            error=f"{err.get('type')}: {err.get('message')}" if status != 200 else None,
            inspector=body.get("inspector") or {},
            billing=body.get("billing") or {},
        )

    def cold(self, name: str | None, scope: str = "function") -> dict[str, Any]:
        return self.api(
            "Cold", lambda **b: self._client().cold(b["function"], b["scope"]), {}, function=name, scope=scope
        )

    def delete(self, name: str) -> None:
        self.api("DeleteFunction", lambda **b: self._client().delete(b["name"]), None, name=name)

    def finish(self, name: str) -> None:
        """Keep the deployment: a private emulator ends with the benchmark, a shared one keeps it
        warm for the next benchmark that deploys the same name."""

    def owned(self, run_id: str | None, now: float | None = None) -> list[Resource]:
        """Nothing: the emulator tags nothing and keeps nothing after it stops."""
        return []

    def remove(self, resource: Resource) -> None:
        """Nothing to remove (:meth:`owned` finds nothing)."""

    def release_thread(self) -> None:
        client = getattr(self._local, "client", None)
        if client is not None:
            self._local.client = None
            with self._lock:
                self._clients.remove(client)
            client.close()

    def close(self) -> None:
        with self._lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()
