"""HTTP API of the emulator (JSON in and out, synchronous calls).

GET    /info                       profile, limits, hosts, instances, functions
GET    /functions                  deployed functions
PUT    /functions/NAME             deploy or update (body: function, memory_mb, timeout_s, ...)
DELETE /functions/NAME             remove
POST   /functions/NAME/invoke      call (body: the event); response: result, error, inspector, billing
POST   /cold                       retire instances
                                   (body: {"function": NAME|null, "scope": "function"|"host"})
GET    /keys/ID                    local key service stand-in: a stable random 256-bit key per ID
"""

from __future__ import annotations

import json
import secrets
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from testbed_agent.faas.emulator import Emulator, FaasError

MAX_BODY = 64 << 20


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    #: buffered writes: status line, headers and body leave in one send (flushed after each request)
    wbufsize = 1 << 16
    server: FaasServer

    def setup(self) -> None:
        super().setup()
        # one small response is two writes (headers, body): without NODELAY, Nagle + delayed ACK add ~40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:
        if self.server.verbose:
            super().log_message(format, *args)

    def _send(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body, default=str).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise FaasError(413, f"request body over {MAX_BODY} bytes")
        raw = self.rfile.read(length) if length else b""
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            raise FaasError(400, f"request body is not JSON: {exc}") from exc

    def _dispatch(self, method: str) -> None:
        emu = self.server.emulator
        parts = [unquote(p) for p in self.path.split("?", 1)[0].strip("/").split("/") if p]
        try:
            body = self._body() if method in ("PUT", "POST") else None
            if method == "GET" and parts == ["info"]:
                return self._send(200, emu.info())
            if method == "GET" and parts == ["functions"]:
                return self._send(200, emu.info()["functions"])
            if len(parts) == 2 and parts[0] == "functions" and method == "PUT":
                return self._send(200, emu.deploy(parts[1], body or {}))
            if len(parts) == 2 and parts[0] == "functions" and method == "DELETE":
                emu.delete(parts[1])
                return self._send(200, {"deleted": parts[1]})
            if len(parts) == 3 and parts[0] == "functions" and parts[2] == "invoke" and method == "POST":
                status, resp = emu.invoke(parts[1], body)
                return self._send(status, resp)
            if parts == ["cold"] and method == "POST":
                body = body or {}
                return self._send(200, emu.cold(body.get("function"), body.get("scope", "function")))
            if len(parts) == 2 and parts[0] == "keys" and method == "GET":
                return self._send(200, {"key_id": parts[1], "key_hex": self.server.key(parts[1])})
            raise FaasError(404, f"no route {method} {self.path}")
        except Exception as exc:  # noqa: BLE001 - answer every request; the emulator keeps serving
            if not isinstance(exc, FaasError):
                exc = FaasError(500, f"emulator error: {type(exc).__name__}: {exc}")
            self._send(
                exc.status,
                {"status": "error", "error": {"type": "ApiError", "message": exc.message, "hint": exc.hint}},
            )

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")


class FaasServer(ThreadingHTTPServer):
    """ThreadingHTTPServer serving one :class:`Emulator`."""

    daemon_threads = True
    request_queue_size = 256

    def __init__(self, emulator: Emulator, host: str, port: int, verbose: bool = False) -> None:
        self.emulator = emulator
        self.verbose = verbose
        self._keys: dict[str, str] = {}
        self._keys_lock = threading.Lock()
        super().__init__((host, port), _Handler)

    def key(self, key_id: str) -> str:
        with self._keys_lock:
            return self._keys.setdefault(key_id, secrets.token_hex(32))

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"
