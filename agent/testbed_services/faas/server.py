"""HTTP API of the emulator (JSON in and out, synchronous calls).

Every caller authenticates (testbed_services.faas.credentials issues the secrets at start): the
emulator's own API wants ``Authorization: Bearer <token>`` (401 otherwise, before any body is
read); the Lambda API wants SigV4 with the issued access key (testbed_services.faas.sigv4).

GET    /info                       profile, limits, uploads, hosts, instances, functions
GET    /functions                  deployed functions
PUT    /functions/NAME             deploy or update (body: function, memory_mb, timeout_s, ...)
DELETE /functions/NAME             remove
GET    /functions/NAME/logs        the kept output tail of each live instance (bounded per instance)
POST   /functions/NAME/invoke      call (body: the event); response: result, error, inspector, billing
POST   /cold                       retire instances
                                   (body: {"function": NAME|null, "scope": "function"|"host"})
GET    /keys/ID                    local key service stand-in: a stable random 256-bit key per ID
GET    /ks/CAPABILITY/keys/ID      the same for functions: the capability URL is their context's
                                   ``key_service`` (functions get no token)

/2015-03-31/..., /2017-03-31/tags/...: the AWS Lambda API on the paths boto3 uses (lambda_api.py);
GET /_lambda/packages/NAME.zip?... is a function's package (GetFunction's Code.Location, a signed
URL valid for 10 minutes); GET /_lambda/stats (bearer token) the Lambda API's request counts.

Uploads (CreateFunction, UpdateFunctionCode) take one of ``--max-uploads`` slots before their body
is read; without a free one they are answered 429 TooManyRequestsException at once.
"""

from __future__ import annotations

import hmac
import json
import math
import secrets
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote

from testbed_services.faas import credentials
from testbed_services.faas.emulator import Emulator, FaasError
from testbed_services.faas.functions import check_name
from testbed_services.faas.lambda_api import UPLOADS, LambdaApi, LambdaError, throttled
from testbed_shared.errors import TestbedError

MAX_BODY = 64 << 20
#: a body is read within this many seconds (a caller that stalls loses its connection, not a slot)
BODY_TIMEOUT_S = 60.0
#: uploads processed at once by default
MAX_UPLOADS = 2
UNAUTHORIZED_HINT = (
    "the toolkit's clients find the emulator's credentials themselves when run as its user; "
    "elsewhere set TESTBED_FAAS_CREDENTIALS to a copy of <state dir>/emu-<id>/credentials.json"
)


class UploadGate:
    """At most ``slots`` uploads at once; counts for /info (in flight, peak, refused)."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.in_flight = self.peak = self.refused = 0
        self._lock = threading.Lock()

    def enter(self) -> bool:
        with self._lock:
            if self.in_flight >= self.slots:
                self.refused += 1
                return False
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            return True

    def leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {
                "slots": self.slots,
                "in_flight": self.in_flight,
                "peak": self.peak,
                "refused": self.refused,
            }


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
        try:  # JSON has no NaN/Infinity: a response that would carry one is an error instead
            data = json.dumps(body, default=str, allow_nan=False).encode()
        except ValueError as exc:
            status = 500
            err = {"type": "ApiError", "message": f"response not representable as JSON: {exc}", "hint": None}
            data = json.dumps({"status": "error", "error": err}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors the HTTP layer finds itself (bad request line, headers): JSON too, then close."""
        self.close_connection = True
        text = message or HTTPStatus(code).phrase
        err = {"type": "ApiError", "message": text, "hint": explain}
        data = json.dumps({"status": "error", "error": err})
        self.send_response(code, text)
        self.send_header("Content-Type", "application/json")
        self.send_header("Connection", "close")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if getattr(self, "command", None) != "HEAD" and code >= 200 and code not in (204, 304):
            self.wfile.write(data.encode())

    def _send_raw(self, status: int, headers: dict[str, str], data: bytes) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _lambda(self, method: str) -> None:
        """A request of the Lambda API (raw body: Invoke's payload is any bytes)."""
        api = self.server.lambda_api()
        path, _, query = self.path.partition("?")
        if path == "/_lambda/stats" and method == "GET":
            if not self._bearer_ok():
                return self._unauthorized()
            data = json.dumps({"requests": api.stats()}).encode()
            return self._send_raw(200, {"Content-Type": "application/json"}, data)
        if path.startswith("/_lambda/packages/") and method == "GET":
            name = unquote(path.removeprefix("/_lambda/packages/").removesuffix(".zip"))
            if not api.location_valid(name, query):
                body = json.dumps({"message": "Request has expired or its signature does not match"}).encode()
                return self._send_raw(403, {"Content-Type": "application/json"}, body)
            data = api.package_zip(name)
            if data is None:
                return self._send_raw(404, {}, b"")
            return self._send_raw(200, {"Content-Type": "application/zip"}, data)
        items = list(self.headers.items())
        try:
            signed = api.authenticate(items)  # before the body: strangers get no read and no slot
        except LambdaError as err:
            self._discard_body()
            return self._send_raw(*api.refusal(err))
        gated = api.operation(method, path) in UPLOADS
        if gated and not self.server.uploads.enter():
            self._discard_body()
            return self._send_raw(*api.refusal(throttled()))
        try:
            try:
                raw = self._raw_body() if method in ("PUT", "POST") else b""
            except FaasError as exc:
                return self._send_raw(exc.status, {"x-amzn-ErrorType": "InvalidRequestContentException"}, b"")
            status, headers, body = api.handle(method, self.path, items, raw, signed)
        finally:
            if gated:
                self.server.uploads.leave()
        self._send_raw(status, headers, body)

    def _length(self) -> int:
        text = self.headers.get("Content-Length") or "0"
        if not text.isascii() or not text.strip().isdigit():
            self.close_connection = True  # where the body ends is unknown: no further request
            raise FaasError(400, f"bad Content-Length {text[:40]!r}")
        return int(text)

    def _raw_body(self) -> bytes:
        length = self._length()
        if length > MAX_BODY:
            self.close_connection = True  # the unread body must not be parsed as the next request
            raise FaasError(413, f"request body over {MAX_BODY} bytes")
        self.connection.settimeout(BODY_TIMEOUT_S)
        try:
            raw = self.rfile.read(length) if length else b""
        except TimeoutError:
            self.close_connection = True
            raise FaasError(408, f"request body not received within {BODY_TIMEOUT_S:g} s") from None
        finally:
            self.connection.settimeout(None)
        if len(raw) < length:
            self.close_connection = True
            raise FaasError(400, f"request body shorter than Content-Length ({len(raw)} < {length})")
        return raw

    def _discard_body(self) -> None:
        """Read and drop the body of a refused request in 1 MiB pieces (never kept) within
        BODY_TIMEOUT_S in all, so the caller gets the answer rather than a reset; a body of unknown
        length, over MAX_BODY or not sent in time closes the connection."""
        try:
            left = self._length()
        except FaasError:
            return
        if left > MAX_BODY:
            self.close_connection = True
            return
        deadline = time.monotonic() + BODY_TIMEOUT_S
        try:
            while left > 0 and time.monotonic() < deadline:
                self.connection.settimeout(max(0.01, deadline - time.monotonic()))
                piece = self.rfile.read1(min(left, 1 << 20))
                if not piece:
                    break
                left -= len(piece)
        except OSError:
            left = 1
        finally:
            self.connection.settimeout(None)
        if left > 0:
            self.close_connection = True

    def _bearer_ok(self) -> bool:
        """Whether the request carries the emulator's bearer token (constant-time comparison)."""
        scheme, _, token = (self.headers.get("Authorization") or "").strip().partition(" ")
        expected = self.server.credentials.token
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), expected.encode())

    def _unauthorized(self) -> None:
        self._discard_body()
        body = {
            "status": "error",
            "error": {
                "type": "Unauthorized",
                "message": "missing or wrong bearer token: the emulator's API needs its credentials",
                "hint": UNAUTHORIZED_HINT,
            },
        }
        data = json.dumps(body).encode()
        self._send_raw(
            401,
            {"Content-Type": "application/json", "WWW-Authenticate": 'Bearer realm="testbed-faas"'},
            data,
        )

    def _body(self) -> Any:
        raw = self._raw_body()
        if not raw.strip():
            return None
        try:
            return json.loads(raw, parse_constant=_no_constant, parse_float=_finite_float)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, NaN, 1e999, huge ints
            raise FaasError(400, f"request body is not JSON: {str(exc)[:200]}") from exc

    def _own(self, method: str) -> None:
        """A request of the emulator's own API: the key capability path, else the bearer token."""
        parts = [unquote(p) for p in self.path.split("?", 1)[0].strip("/").split("/") if p]
        if len(parts) == 4 and parts[0] == "ks" and parts[2] == "keys" and method == "GET":
            if not hmac.compare_digest(parts[1].encode(), self.server.keys_capability.encode()):
                return self._unauthorized()
            return self._send(200, {"key_id": parts[3], "key_hex": self.server.key(parts[3])})
        if not self._bearer_ok():
            return self._unauthorized()
        return self._dispatch(method, parts)

    def _dispatch(self, method: str, parts: list[str]) -> None:
        emu = self.server.emulator
        try:
            body = self._body() if method in ("PUT", "POST") else None
            if len(parts) >= 2 and parts[0] == "functions":
                _check_name(parts[1])
            if method == "GET" and parts == ["info"]:
                return self._send(200, {**emu.info(), "uploads": self.server.uploads.stats()})
            if method == "GET" and parts == ["functions"]:
                return self._send(200, emu.info()["functions"])
            if len(parts) == 2 and parts[0] == "functions" and method == "PUT":
                return self._send(200, emu.deploy(parts[1], {} if body is None else body))
            if len(parts) == 2 and parts[0] == "functions" and method == "DELETE":
                emu.delete(parts[1])
                return self._send(200, {"deleted": parts[1]})
            if len(parts) == 3 and parts[0] == "functions" and parts[2] == "invoke" and method == "POST":
                status, resp = emu.invoke(parts[1], _event(body))
                return self._send(status, resp)
            if len(parts) == 3 and parts[0] == "functions" and parts[2] == "logs" and method == "GET":
                return self._send(200, emu.logs_of(parts[1]))
            if parts == ["cold"] and method == "POST":
                body = {} if body is None else body
                if not isinstance(body, dict):
                    raise FaasError(400, "body of /cold must be a JSON object")
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

    def _entry(self, method: str) -> None:
        """The Lambda API's paths, else the emulator's own API."""
        if LambdaApi.owns(self.path) or self.path.startswith("/_lambda/"):
            self._lambda(method)
        else:
            self._own(method)

    def do_GET(self) -> None:
        self._entry("GET")

    def do_PUT(self) -> None:
        self._entry("PUT")

    def do_POST(self) -> None:
        self._entry("POST")

    def do_DELETE(self) -> None:
        self._entry("DELETE")


def _event(body: Any) -> Any:
    """An invocation event: a JSON object (or no body); the functions read fields of it."""
    if body is not None and not isinstance(body, dict):
        raise FaasError(400, f"the event must be a JSON object, not {type(body).__name__}")
    return body


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    """A JSON number as a float; one beyond the float range (``1e999``) is refused, not infinity."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]} is out of range")
    return value


def _check_name(name: str) -> None:
    try:
        check_name(name)
    except TestbedError as exc:
        raise FaasError(400, exc.message, exc.hint) from exc


class FaasServer(ThreadingHTTPServer):
    """ThreadingHTTPServer serving one :class:`Emulator`."""

    daemon_threads = True
    request_queue_size = 256

    def __init__(
        self, emulator: Emulator, host: str, port: int, verbose: bool = False, max_uploads: int = MAX_UPLOADS
    ) -> None:
        self.emulator = emulator
        self.verbose = verbose
        self._keys: dict[str, str] = {}
        self._keys_lock = threading.Lock()
        self._lambda: LambdaApi | None = None
        self.uploads = UploadGate(max_uploads)
        super().__init__((host, port), _Handler)
        #: the secrets of this run (written to the state directory by ``faas serve``)
        self.credentials = credentials.issue(self.url)
        #: the key service's capability, handed to functions as their ``key_service`` URL
        self.keys_capability = secrets.token_urlsafe(24)
        emulator.key_service = f"{self.url}/ks/{self.keys_capability}"

    def lambda_api(self) -> LambdaApi:
        """The Lambda API front of the emulator (made on first use: it loads botocore's model)."""
        with self._keys_lock:
            if self._lambda is None:
                self._lambda = LambdaApi(self.emulator, self.url, self.credentials)
            return self._lambda

    def key(self, key_id: str) -> str:
        with self._keys_lock:
            return self._keys.setdefault(key_id, secrets.token_hex(32))

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"
