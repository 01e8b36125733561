"""The local emulator through its own HTTP API: everything its inspector sees, host-cold included."""

from __future__ import annotations

import platform as _platform
import sys
import threading
from typing import Any

from testbed_agent.faas_drivers.base import Call, Driver, FunctionSpec
from testbed_services.faas.client import FaasClient


def machine() -> str:
    """This machine's architecture with Lambda's names (x86_64, arm64)."""
    m = _platform.machine().lower()
    return {"amd64": "x86_64", "aarch64": "arm64"}.get(m, m)


class EmulatorDriver(Driver):
    """``testbed-agent faas serve`` at ``options.url`` (one client per calling thread)."""

    platform = "emulator"
    host_cold = True

    def __init__(
        self, target: Any, *, dry_run: bool = False, out: Any = None, timeout_s: float = 900.0
    ) -> None:
        super().__init__(target, dry_run=dry_run, out=out)
        self.url = str(target.options.get("url") or "")
        self.timeout_s = timeout_s
        self._local = threading.local()
        self._clients: list[FaasClient] = []
        self._lock = threading.Lock()
        self._info: dict[str, Any] | None = None

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

    def describe(self) -> dict[str, Any]:
        info = self._info or self.info()
        return {
            "platform": info["profile"]["name"],
            "region": "local",
            "architecture": machine(),
            "runtime": f"python{sys.version_info.major}.{sys.version_info.minor}",
            "real": False,
            "driver": self.platform,
            "endpoint": self.url,
        }

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
        self.log.record("Invoke", {"name": name})
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
