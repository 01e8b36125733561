"""Small HTTP/1.1 client of the emulator API: one keep-alive connection, each request sent in one
write (no header/body split), JSON bodies, the emulator's bearer token found by
testbed_services.faas.credentials (looked up again after a 401: the emulator may have restarted).
Not thread-safe: use one client per thread."""

from __future__ import annotations

import json
import socket
import time
from typing import Any
from urllib.parse import quote, urlsplit

from testbed_services.faas import credentials
from testbed_shared.errors import TestbedError


class FaasClient:
    """Calls the emulator at ``url``; ``invoke`` returns (status, body, round-trip seconds)."""

    def __init__(self, url: str, timeout_s: float = 900.0) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise TestbedError(f"bad emulator URL {url!r}", hint="e.g. http://127.0.0.1:8650")
        self.url = url
        self.host, self.port = parts.hostname, parts.port or 80
        self.timeout_s = timeout_s
        self._sock: socket.socket | None = None
        self._rfile: Any = None
        self._token: str | None = None

    def _authorization(self, fresh: bool = False) -> str:
        """The Authorization header line ('' while no credentials are found for the URL)."""
        if self._token is None or fresh:
            creds = credentials.find(self.url)
            self._token = creds.token if creds else None
        return f"Authorization: Bearer {self._token}\r\n" if self._token else ""

    def close(self) -> None:
        if self._sock is not None:
            self._rfile.close()
            self._sock.close()
            self._sock = self._rfile = None

    def _connect(self) -> socket.socket:
        self._sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._rfile = self._sock.makefile("rb")
        return self._sock

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        status, resp = self._request(method, path, body, fresh=False)
        if status == 401:  # credentials of an emulator restarted on this port: look again, once
            status, resp = self._request(method, path, body, fresh=True)
        return status, resp

    def _request(self, method: str, path: str, body: Any, fresh: bool) -> tuple[int, Any]:
        data = b"" if body is None else json.dumps(body).encode()
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n{self._authorization(fresh)}"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        ).encode()
        for attempt in (0, 1):
            reused = self._sock is not None
            try:
                sock = self._sock if self._sock is not None else self._connect()
                sock.sendall(head + data)
                status_line = self._rfile.readline()
                if not status_line:
                    raise ConnectionResetError("connection closed by the emulator")
                return self._response(status_line)
            except (OSError, ValueError) as exc:
                self.close()
                if attempt == 0 and reused and isinstance(exc, ConnectionError):
                    continue  # a kept-alive connection the server had closed: one fresh try
                raise TestbedError(
                    f"FaaS emulator at {self.url} unreachable: {exc}",
                    hint="is `testbed-agent faas serve` running?",
                ) from exc
        raise AssertionError("unreachable")

    def _response(self, status_line: bytes) -> tuple[int, Any]:
        status = int(status_line.split()[1])
        length, close = 0, False
        while True:
            line = self._rfile.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            key, _, value = line.decode("latin-1").partition(":")
            key = key.strip().lower()
            if key == "content-length":
                length = int(value)
            elif key == "connection" and value.strip().lower() == "close":
                close = True
        raw = self._rfile.read(length) if length else b""
        if close:
            self.close()
        return status, json.loads(raw) if raw else None

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

    def delete(self, name: str) -> dict[str, Any]:
        return self._ok("DELETE", f"/functions/{quote(name)}")

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
