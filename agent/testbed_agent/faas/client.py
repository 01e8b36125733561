"""Small HTTP client of the emulator API (one keep-alive connection; one client per thread)."""

from __future__ import annotations

import http.client
import json
import socket
import time
from typing import Any
from urllib.parse import quote, urlsplit

from testbed_agent.errors import TestbedError


class FaasClient:
    """Calls the emulator at ``url``; ``invoke`` returns (status, body, round-trip seconds)."""

    def __init__(self, url: str, timeout_s: float = 900.0) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise TestbedError(f"bad emulator URL {url!r}", hint="e.g. http://127.0.0.1:8650")
        self.url = url
        self.host, self.port = parts.hostname, parts.port or 80
        self.timeout_s = timeout_s
        self._conn: http.client.HTTPConnection | None = None

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if data is not None else {}
        for attempt in (0, 1):
            try:
                if self._conn is None:
                    self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
                    self._conn.connect()
                    self._conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._conn.request(method, path, body=data, headers=headers)
                resp = self._conn.getresponse()
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
            except (ConnectionError, http.client.HTTPException) as exc:
                self.close()
                if attempt:
                    raise TestbedError(f"FaaS emulator at {self.url} unreachable: {exc}",
                                       hint="is `testbed-agent faas serve` running?") from exc
            except OSError as exc:
                self.close()
                raise TestbedError(f"FaaS emulator at {self.url} unreachable: {exc}",
                                   hint="is `testbed-agent faas serve` running?") from exc
        raise AssertionError("unreachable")

    def _ok(self, method: str, path: str, body: Any = None) -> Any:
        status, resp = self.request(method, path, body)
        if status != 200:
            err = (resp or {}).get("error") or {}
            raise TestbedError(f"{method} {path}: {status} {err.get('message', resp)}", err.get("hint"))
        return resp

    def info(self) -> dict[str, Any]:
        return self._ok("GET", "/info")

    def deploy(self, name: str, **spec: Any) -> dict[str, Any]:
        return self._ok("PUT", f"/functions/{quote(name)}", spec)

    def cold(self, function: str | None = None, scope: str = "function") -> dict[str, Any]:
        return self._ok("POST", "/cold", {"function": function, "scope": scope})

    def invoke(self, name: str, event: Any) -> tuple[int, dict[str, Any], float]:
        t0 = time.perf_counter()
        status, body = self.request("POST", f"/functions/{quote(name)}/invoke", event)
        return status, body, time.perf_counter() - t0

    def wait_ready(self, timeout_s: float = 15.0) -> dict[str, Any]:
        end = time.monotonic() + timeout_s
        while True:
            try:
                return self.info()
            except TestbedError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.05)
