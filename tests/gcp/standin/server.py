"""A local Google Cloud for rehearsing the Cloud Functions (2nd gen) driver: run with the project's
venv (it validates with google-cloud-functions' own messages and runs revisions with the real
Functions Framework).

It is an HTTPS proxy on 127.0.0.1 for the hosts the driver reaches: oauth2.googleapis.com (service
account JWT grants: access and ID tokens), cloudfunctions.googleapis.com (Cloud Functions v2 REST
with long-running operations), storage.googleapis.com (JSON API uploads of the source),
logging.googleapis.com (``entries:list`` over the request logs) and ``*.a.run.app`` (the functions'
URLs: an ID token for the URL is required, as Cloud Run requires it). Clients reach it through
HTTPS_PROXY, trust its throw-away CA through REQUESTS_CA_BUNDLE, and keep the real endpoints,
credentials flow and protocols. It never forwards anything outside; any other host gets 403.
Plain-HTTP GET /_rehearsal/stats gives request counts per operation and what is left.

    python tests/gcp/standin/server.py --dir DIR [--port 0]   # writes DIR/endpoint.json when ready
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import re
import signal
import socketserver
import ssl
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent.parent / "azure" / "arm")]

import tls  # noqa: E402 - the ARM stand-in's throw-away CA
from functions import ApiError, Functions  # noqa: E402
from identity import PROJECT, Identity, TokenError  # noqa: E402
from storage import RequestLog, Storage  # noqa: E402

TOKEN, FUNCTIONS, STORAGE, LOGGING = (
    "oauth2.googleapis.com",
    "cloudfunctions.googleapis.com",
    "storage.googleapis.com",
    "logging.googleapis.com",
)
RUN_APP = re.compile(r"^[a-z0-9-]+\.a\.run\.app$")
BUCKET = f"{PROJECT}-sources"
FN_PATH = re.compile(r"^/v2/projects/([^/]+)/locations/([^/]+)/functions(?:/([^/:]+))?$")
OP_PATH = re.compile(r"^/v2/(projects/[^/]+/locations/[^/]+/operations/[^/]+)$")
OBJ_PATH = re.compile(r"^/storage/v1/b/([^/]+)/o(?:/(.+))?$")
BUCKET_PATH = re.compile(r"^/storage/v1/b/([^/]+)$")
UPLOAD_PATH = re.compile(r"^/upload/storage/v1/b/([^/]+)/o$")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server
    host = ""

    def log_message(self, fmt: str, *args: Any) -> None:
        return

    def do_CONNECT(self) -> None:
        host, _, port = self.path.partition(":")
        if (host not in (TOKEN, FUNCTIONS, STORAGE, LOGGING) and not RUN_APP.match(host)) or port != "443":
            self._send(403, {"error": f"the rehearsal proxy serves only Google's API hosts, not {self.path}"})
            self.close_connection = True
            return
        self.send_response(200, "Connection established")
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.wfile.flush()
        conn = self.server.tls.wrap_socket(self.connection, server_side=True)
        self.connection, self.host = conn, host
        self.close_connection = False
        self.rfile = conn.makefile("rb")
        self.wfile = socketserver._SocketWriter(conn)  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else (b"" if body is None else json.dumps(body).encode())
        self.send_response(status)
        for k, v in {"Content-Type": "application/json; charset=UTF-8", **(headers or {})}.items():
            self.send_header(k, v)
        self.send_header("X-Testbed-Standin", "gcp")  # records can say they were rehearsed, not real
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self, raw: bytes) -> Any:
        try:
            return json.loads(raw or b"{}")
        except ValueError:
            raise ApiError(400, "Invalid JSON payload received.") from None

    def _dispatch(self, method: str) -> None:
        raw = self._body()
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        headers: dict[str, str] = {}
        op = f"{self.host or 'control'} {method}"
        self.op: str | None = None  # the operation, once the path names one (errors count under it)
        try:
            if not self.host:
                status, body = self._control(method, url.path)
            elif self.host == TOKEN:
                op, (status, body) = "oauth2 token", self._token(method, url.path, raw)
            elif RUN_APP.match(self.host):
                op = "function invoke"
                status, body, headers = self._invoke(method, url.path, raw)
            else:
                with self.server.lock:
                    self.server.functions.settle()
                    op, status, body, headers = self._api(method, url.path, query, raw)
        except ApiError as err:
            status, body = err.code, err.body()
            op = self.op or f"{op} {url.path}"
        except TokenError as err:
            status, body = (
                401,
                {"error": {"code": 401, "message": err.description, "status": "UNAUTHENTICATED"}},
            )
        self.server.count(op, status)
        self._send(status, body, headers)

    def _control(self, method: str, path: str) -> tuple[int, Any]:
        if method == "GET" and path == "/_rehearsal/stats":
            return 200, self.server.stats()
        return 404, {"error": f"not a rehearsal control path: {path}"}

    def _token(self, method: str, path: str, raw: bytes) -> tuple[int, Any]:
        if method != "POST" or path != "/token":
            return 404, {"error": "not_found"}
        form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        try:
            return 200, self.server.identity.token(form)
        except TokenError as err:
            return 400, {"error": err.error, "error_description": err.description}

    def _api(self, method: str, path: str, query: dict[str, str], raw: bytes) -> tuple[str, int, Any, dict]:
        srv = self.server
        srv.identity.check_bearer(self.headers.get("Authorization", ""), f"https://{self.host}/")
        if self.host == FUNCTIONS:
            return self._functions(method, path, query, raw)
        if self.host == LOGGING and method == "POST" and path == "/v2/entries:list":
            self.op = "logging entries.list"
            return "logging entries.list", 200, srv.log.query(self._json(raw)), {}
        if self.host == STORAGE:
            return self._storage(method, path, query, raw)
        raise ApiError(404, f"The requested URL {path} was not found on this server.")

    def _functions(
        self, method: str, path: str, query: dict[str, str], raw: bytes
    ) -> tuple[str, int, Any, dict]:
        fns = self.server.functions
        found = OP_PATH.match(path)
        if found and method == "GET":
            self.op = "functions operations.get"
            return "functions operations.get", 200, fns.operation(found.group(1)), {}
        found = FN_PATH.match(path)
        if not found:
            raise ApiError(404, f"The requested URL {path} was not found on this server.")
        project, location, fid = found.groups()
        if fid is None and method == "POST":
            self.op = "functions.create"
            body = self._json(raw)
            return (
                "functions.create",
                200,
                fns.create(project, location, query.get("functionId", ""), body),
                {},
            )
        if fid is None and method == "GET":
            self.op = "functions.list"
            return "functions.list", 200, fns.listing(project, location, query.get("filter", "")), {}
        if fid and method == "GET":
            self.op = "functions.get"
            return "functions.get", 200, fns.get(project, location, fid), {}
        if fid and method == "PATCH":
            self.op = "functions.patch"
            body = self._json(raw)
            return (
                "functions.patch",
                200,
                fns.patch(project, location, fid, body, query.get("updateMask", "")),
                {},
            )
        if fid and method == "DELETE":
            self.op = "functions.delete"
            return "functions.delete", 200, fns.delete(project, location, fid), {}
        raise ApiError(404, f"The requested URL {path} was not found on this server.")

    def _storage(
        self, method: str, path: str, query: dict[str, str], raw: bytes
    ) -> tuple[str, int, Any, dict]:
        st = self.server.storage
        found = UPLOAD_PATH.match(path)
        if found and method == "POST":
            ctype = self.headers.get("Content-Type", "")
            self.op = "storage objects.insert"
            return "storage objects.insert", 200, st.upload(found.group(1), query, ctype, raw), {}
        found = BUCKET_PATH.match(path)
        if found and method == "GET":
            self.op = "storage buckets.get"
            return "storage buckets.get", 200, st.bucket(found.group(1)), {}
        found = OBJ_PATH.match(path)
        if not found:
            raise ApiError(404, f"The requested URL {path} was not found on this server.")
        bucket, name = found.group(1), unquote(found.group(2) or "")
        if not name and method == "GET":
            self.op = "storage objects.list"
            return "storage objects.list", 200, st.listing(bucket, query.get("prefix", "")), {}
        if name and method == "GET" and query.get("alt") == "media":
            return (
                "storage objects.get (media)",
                200,
                st.read(bucket, name),
                {"Content-Type": "application/zip"},
            )
        if name and method == "GET":
            self.op = "storage objects.get"
            return "storage objects.get", 200, st.resource(bucket, name), {}
        if name and method == "DELETE":
            st.delete(bucket, name)
            self.op = "storage objects.delete"
            return "storage objects.delete", 204, None, {}
        raise ApiError(404, f"The requested URL {path} was not found on this server.")

    def _invoke(self, method: str, path: str, raw: bytes) -> tuple[int, Any, dict]:
        """The function's URL: Cloud Run's ID-token check, then the revision's instance."""
        srv = self.server
        audience = f"https://{self.host}"
        t0 = time.perf_counter()
        received = dt.datetime.now(dt.UTC)
        with srv.lock:
            fn_path, rev = srv.functions.revision_for(self.host)
        try:
            srv.identity.check_id_token(self.headers.get("Authorization", ""), audience)
        except TokenError as err:
            return (
                403,
                {"error": {"code": 403, "message": err.description, "status": "PERMISSION_DENIED"}},
                {},
            )
        rev.ensure()
        rev.last_used = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", rev.port, timeout=3600)
        forward = {
            k: v
            for k, v in self.headers.items()
            if k.lower() not in ("host", "authorization", "content-length")
        }
        try:
            conn.request(method, path, body=raw, headers=forward)
            resp = conn.getresponse()
            data, status = resp.read(), resp.status
            ctype = resp.getheader("Content-Type", "application/octet-stream")
        finally:
            conn.close()
        latency = time.perf_counter() - t0
        trace = self.headers.get("X-Cloud-Trace-Context", "").split("/")[0] or uuid.uuid4().hex
        location = fn_path.split("/")[3]
        srv.log.add(
            {
                "logName": f"projects/{PROJECT}/logs/run.googleapis.com%2Frequests",
                "resource": {
                    "type": "cloud_run_revision",
                    "labels": {
                        "service_name": rev.name,
                        "revision_name": rev.revision,
                        "location": location,
                        "project_id": PROJECT,
                        "configuration_name": rev.name,
                    },
                },
                "timestamp": received.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "receiveTimestamp": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                "severity": "ERROR" if status >= 500 else "INFO",
                "insertId": uuid.uuid4().hex[:16],
                "trace": f"projects/{PROJECT}/traces/{trace}",
                "labels": {"instanceId": rev.instance_id},
                "httpRequest": {
                    "requestMethod": method,
                    "requestUrl": f"{audience}{path}",
                    "status": status,
                    "responseSize": str(len(data)),
                    "latency": f"{latency:.9f}s",
                    "protocol": "HTTP/1.1",
                },
            }
        )
        return status, data, {"Content-Type": ctype}


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, directory: Path) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        hosts = [TOKEN, FUNCTIONS, STORAGE, LOGGING, "*.a.run.app", "localhost"]
        ca, cert, key = tls.make(directory, hosts)
        self.ca = ca
        self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.tls.load_cert_chain(cert, key)
        self.identity = Identity(directory)
        self.storage = Storage([BUCKET])
        self.functions = Functions(PROJECT, directory, self.storage)
        self.log = RequestLog(PROJECT)
        self.lock = threading.Lock()
        self.requests: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self._count_lock = threading.Lock()

    def count(self, op: str, status: int) -> None:
        with self._count_lock:
            self.requests[op] = self.requests.get(op, 0) + 1
            if status >= 400:
                self.errors[f"{op} {status}"] = self.errors.get(f"{op} {status}", 0) + 1

    def stats(self) -> dict[str, Any]:
        with self.lock:
            self.functions.settle()
            return {
                "requests": dict(self.requests),
                "errors": dict(self.errors),
                "tokens": dict(self.identity.counts),
                **self.functions.counts,
                "functions_left": sorted(self.functions.items),
                "objects_left": self.storage.count(),
                "log_entries": len(self.log.entries),
            }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--dir", type=Path, required=True, help="directory for the CA, keys, logs and endpoint.json"
    )
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    args.dir.mkdir(parents=True, exist_ok=True)
    server = Server(args.port, args.dir)
    endpoint = {
        "proxy": f"http://127.0.0.1:{server.server_address[1]}",
        "ca": str(server.ca),
        "credentials": str(server.identity.key_file),
        "project": PROJECT,
        "bucket": BUCKET,
    }
    tmp = args.dir / "endpoint.json.tmp"
    tmp.write_text(json.dumps(endpoint, indent=1) + "\n")
    tmp.rename(args.dir / "endpoint.json")
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.functions.stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
