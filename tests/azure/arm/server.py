"""A local Azure Resource Manager for rehearsals: run with the python of .venv/azure (it validates
request bodies with the Azure SDK's model classes).

It is an HTTPS proxy on 127.0.0.1 for exactly two hosts, management.azure.com and
login.microsoftonline.com: clients reach it through HTTPS_PROXY, trust its throw-away CA through
REQUESTS_CA_BUNDLE, and keep the real public-cloud endpoints and the real protocols (service
principal token from Entra ID's v2.0 token endpoint, ARM REST with long-running operations). It
never forwards anything: any other host gets 403. Plain-HTTP GET /_rehearsal/stats gives the
counts for the rehearsal's closing line; GET /imds/<vm name>/metadata/instance is the Instance
Metadata Service of that machine (same JSON shape as Azure's, built from the VM resource).
Virtual machines take the power actions of Microsoft.Compute (POST .../start, deallocate, redeploy,
restart, powerOff: 202 and a long-running operation) and GET .../instanceView; each VM runs on a
simulated physical host (hosts.py: seeded placement, the guest's KVP pool file under --guest-root).

    python tests/azure/arm/server.py --dir DIR [--port 0] [--seed N] [--hosts-per-location N]
        [--same-host-p P] [--guest-root DIR]        # writes DIR/endpoint.json when ready
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import socketserver
import ssl
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import catalog
import tls
import web
from hosts import Hosts
from state import Arm
from validate import ArmError

ARM, LOGIN = "management.azure.com", "login.microsoftonline.com"
CLIENT = {"id": "00000000-0000-0000-0000-00000000c11e", "secret": "rehearsal-secret"}
TENANT = "00000000-0000-0000-0000-0000000000aa"
SUBSCRIPTION = "00000000-0000-0000-0000-0000000000bb"
OP_PATH = re.compile(
    r"^/subscriptions/[^/]+/providers/[^/]+/locations/[^/]+/(operations|operationresults)/([^/]+)$", re.I
)
LIST_PATH = re.compile(r"^/subscriptions/[^/]+/(resourcegroups|resources)$", re.I)
RG_PATH = re.compile(r"^/subscriptions/[^/]+/resourcegroups/[^/]+$", re.I)
RES_PATH = re.compile(r"^/subscriptions/[^/]+/resourcegroups/[^/]+/providers/[^/]+/[^/]+/[^/]+$", re.I)
VM_ACTION_PATH = re.compile(
    r"^(/subscriptions/[^/]+/resourcegroups/[^/]+/providers/microsoft\.compute/virtualmachines/[^/]+)"
    r"/(start|deallocate|redeploy|restart|poweroff|instanceview)$",
    re.I,
)
TAG_FILTER = re.compile(r"tagName eq '([^']*)'(?: and tagValue eq '([^']*)')?")


class Handler(BaseHTTPRequestHandler):
    """CONNECT to the two Azure hosts, then ARM / token requests inside the TLS tunnel."""

    protocol_version = "HTTP/1.1"
    server: Server
    host = ""

    def log_message(self, fmt: str, *args: Any) -> None:
        return

    def do_CONNECT(self) -> None:
        host, _, port = self.path.partition(":")
        if (host not in (ARM, LOGIN) and not web.kudu_host(host)) or port != "443":
            self._send(403, {"error": f"the rehearsal proxy serves only {ARM} and {LOGIN}, not {self.path}"})
            self.close_connection = True
            return
        self.send_response(200, "Connection established")
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.wfile.flush()
        conn = self.server.tls.wrap_socket(self.connection, server_side=True)
        self.connection, self.host = conn, host
        self.close_connection = False  # the tunnel carries HTTP/1.1 requests even after a 1.0 CONNECT
        self.rfile = conn.makefile("rb")
        self.wfile = socketserver._SocketWriter(conn)  # type: ignore[attr-defined]

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    # --- plumbing --------------------------------------------------------------------------
    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = body if isinstance(body, bytes) else b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        for k, v in {"Content-Type": "application/json; charset=utf-8", **(headers or {})}.items():
            self.send_header(k, v)
        self.send_header("x-ms-request-id", str(uuid.uuid4()))
        self.send_header("X-Testbed-Standin", "azure")  # records can say they were rehearsed, not real
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _dispatch(self, method: str) -> None:
        raw = self._body()
        url = urlsplit(self.path)
        status = 500
        try:
            if not self.host:
                status, body, headers = self._control(method, url.path)
            elif self.host == LOGIN:
                status, body, headers = self._login(method, url.path, raw)
            elif web.kudu_host(self.host):
                status, body, headers = self._site(method, url, raw)
            else:
                status, body, headers = self._arm(method, url.path, parse_qs(url.query), raw)
        except ArmError as err:
            status, body, headers = err.status, err.body(), {"x-ms-failure-cause": "gateway"}
        self.server.log(
            self.host,
            method,
            self.path,
            status,
            body if status >= 400 and not isinstance(body, bytes) else None,
        )
        self._send(status, body, headers)

    def _control(self, method: str, path: str) -> tuple[int, Any, dict]:
        if method == "GET" and path == "/_rehearsal/stats":
            with self.server.arm.lock:
                self.server.arm.settle()
                return 200, self.server.arm.stats(), {}
        found = re.match(r"^/imds/([^/]+)/metadata/instance$", path)
        if method == "GET" and found:
            if self.headers.get("Metadata") != "true":
                return 400, {"error": "Bad request. Required metadata header not specified"}, {}
            with self.server.arm.lock:
                return 200, self.server.arm.imds(found.group(1)), {}
        return 404, {"error": f"not a rehearsal control path: {path}"}, {}

    # --- Entra ID (service principal, client credentials) ------------------------------------
    def _login(self, method: str, path: str, raw: bytes) -> tuple[int, Any, dict]:
        base = f"https://{LOGIN}"
        tenant = path.strip("/").split("/")[0]
        if method == "GET" and path.endswith("/.well-known/openid-configuration"):
            return 200, self._openid(base, tenant), {}
        if method == "GET" and path.startswith("/common/discovery/instance"):
            meta = [
                {
                    "preferred_network": LOGIN,
                    "preferred_cache": "login.windows.net",
                    "aliases": [LOGIN, "login.windows.net"],
                }
            ]
            return (
                200,
                {
                    "tenant_discovery_endpoint": f"{base}/{TENANT}/v2.0/.well-known/openid-configuration",
                    "metadata": meta,
                },
                {},
            )
        if method == "POST" and path.endswith("/oauth2/v2.0/token"):
            return self._token(tenant, {k: v[0] for k, v in parse_qs(raw.decode()).items()})
        return 404, {"error": "not_found", "error_description": f"no such endpoint: {path}"}, {}

    @staticmethod
    def _openid(base: str, tenant: str) -> dict[str, Any]:
        return {
            "issuer": f"{base}/{tenant}/v2.0",
            "token_endpoint": f"{base}/{tenant}/oauth2/v2.0/token",
            "authorization_endpoint": f"{base}/{tenant}/oauth2/v2.0/authorize",
            "device_authorization_endpoint": f"{base}/{tenant}/oauth2/v2.0/devicecode",
            "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt"],
            "tenant_region_scope": "EU",
        }

    def _token(self, tenant: str, form: dict[str, str]) -> tuple[int, Any, dict]:
        if (
            tenant != TENANT
            or form.get("client_id") != CLIENT["id"]
            or form.get("client_secret") != CLIENT["secret"]
        ):
            desc = (
                "AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request "
                "is the client secret value."
            )
            return 401, {"error": "invalid_client", "error_description": desc, "error_codes": [7000215]}, {}
        token = self.server.issue_token()
        return (
            200,
            {"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599, "access_token": token},
            {},
        )

    # --- Azure Resource Manager ------------------------------------------------------------
    def _arm(self, method: str, path: str, query: dict[str, list[str]], raw: bytes) -> tuple[int, Any, dict]:
        auth = self.headers.get("Authorization", "")
        if auth.removeprefix("Bearer ") not in self.server.tokens:
            raise ArmError(
                401,
                "AuthenticationFailed",
                "Authentication failed. The 'Authorization' header is missing or invalid.",
            )
        if not path.lower().startswith(f"/subscriptions/{SUBSCRIPTION}"):
            raise ArmError(
                404, "SubscriptionNotFound", f"The subscription '{path.split('/')[2]}' could not be found."
            )
        api = (query.get("api-version") or [""])[0]
        if not api:
            raise ArmError(
                400,
                "MissingApiVersionParameter",
                "The api-version query parameter (?api-version=) is required for all requests.",
            )
        arm = self.server.arm
        with arm.lock:
            arm.counts["requests"] += 1
            arm.settle()
            return self._route(arm, method, path.rstrip("/"), query, raw, api)

    def _site(self, method: str, url: Any, raw: bytes) -> tuple[int, Any, dict]:
        """Kudu (bearer token of ARM) or the function front (function keys) of a function app."""
        name, is_kudu = web.kudu_host(self.host)
        srv = self.server
        if not is_kudu:
            headers = {k.lower(): v for k, v in self.headers.items()}
            return srv.web.invoke(srv.arm.lock, srv.arm, name, method, url.path, url.query, headers, raw)
        if self.headers.get("Authorization", "").removeprefix("Bearer ") not in srv.tokens:
            return 401, {"Message": "Unauthorized"}, {}
        with srv.arm.lock:
            srv.arm.counts["requests"] += 1
            site = srv.web.site(srv.arm, name)
            return srv.web.kudu(srv.arm, site, method, url.path, raw)

    def _route(
        self, arm: Arm, method: str, path: str, query: dict, raw: bytes, api: str
    ) -> tuple[int, Any, dict]:
        if web.owns(path):
            return self.server.web.route(arm, method, path, query, raw)
        found = OP_PATH.match(path)
        if found and method == "GET":
            return self._operation(arm, found.group(1).lower(), found.group(2))
        if path.lower() == f"/subscriptions/{SUBSCRIPTION}" and method == "GET":
            sub = {"id": f"/subscriptions/{SUBSCRIPTION}", "subscriptionId": SUBSCRIPTION, "tenantId": TENANT}
            return 200, {**sub, "displayName": "testbed rehearsal", "state": "Enabled"}, {}
        found = VM_ACTION_PATH.match(path)
        if found:
            return self._vm_action(arm, method, found.group(1), found.group(2).lower(), query, raw, api)
        found = LIST_PATH.match(path)
        if found and method == "GET":
            tag = TAG_FILTER.search((query.get("$filter") or [""])[0])
            return 200, {"value": arm.listing(found.group(1).lower(), tag.groups() if tag else None)}, {}
        if not (RG_PATH.match(path) or RES_PATH.match(path)):
            raise ArmError(
                400, "InvalidResourceType", f"The resource path '{path}' is not served by the rehearsal."
            )
        if method == "GET":
            return 200, arm.get(path), {}
        if method == "PUT":
            return self._put(arm, path, raw, api)
        if method == "DELETE":
            status, op = arm.delete(path)
            return status, None, self._lro_headers(path, op, api, location=True) if op else {}
        raise ArmError(405, "MethodNotAllowed", f"The method '{method}' is not allowed here.")

    def _vm_action(
        self, arm: Arm, method: str, vm: str, action: str, query: dict, raw: bytes, api: str
    ) -> tuple[int, Any, dict]:
        """POST of a power action (202 + operation) or GET of the instance view, at the VM's API."""
        catalog.model_of("microsoft.compute/virtualmachines", api)
        wanted = "GET" if action == "instanceview" else "POST"
        if method != wanted:
            raise ArmError(
                405, "MethodNotAllowed", f"The requested resource does not support http method '{method}'."
            )
        if action == "instanceview":
            return 200, arm.instance_view(vm), {}
        op = arm.action(vm, action, query, raw)
        return 202, None, self._lro_headers(vm, op, api, location=True)

    def _put(self, arm: Arm, path: str, raw: bytes, api: str) -> tuple[int, Any, dict]:
        try:
            body = json.loads(raw or b"{}")
        except ValueError as err:
            raise ArmError(
                400,
                "InvalidRequestContent",
                f"The request content was invalid and could not be deserialized: {err}.",
            ) from None
        status, out, op = arm.put(path, body, api)
        return status, out, self._lro_headers(path, op, api, location=status == 202) if op else {}

    @staticmethod
    def _lro_headers(path: str, op: str, api: str, location: bool) -> dict[str, str]:
        parts = path.strip("/").split("/")
        provider = parts[5] if len(parts) > 5 else "Microsoft.Resources"
        base = f"https://{ARM}/subscriptions/{SUBSCRIPTION}/providers/{provider}/locations/westeurope"
        headers = {"Azure-AsyncOperation": f"{base}/operations/{op}?api-version={api}", "Retry-After": "1"}
        if location:
            headers["Location"] = f"{base}/operationresults/{op}?api-version={api}"
        return headers

    @staticmethod
    def _operation(arm: Arm, kind: str, op_id: str) -> tuple[int, Any, dict]:
        body = arm.operation(op_id)
        if kind == "operations":
            return 200, body, {"Retry-After": "1"} if body["status"] == "InProgress" else {}
        if body["status"] == "InProgress":
            return 202, None, {"Retry-After": "1"}
        return 204, None, {}


class Server(ThreadingHTTPServer):
    """The proxy/ARM server with its state, TLS context, tokens and request log."""

    daemon_threads = True

    def __init__(
        self,
        port: int,
        directory: Path,
        addresses: list[str],
        functions_python: str = "",
        hosts: Hosts | None = None,
    ) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        names = [*tls.HOSTS, "*.azurewebsites.net", "*.scm.azurewebsites.net"]
        ca, cert, key = tls.make(directory, names)
        self.ca = ca
        self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.tls.load_cert_chain(cert, key)
        self.arm = Arm(SUBSCRIPTION, addresses, hosts)
        self.web = web.Web(directory, functions_python or sys.executable)
        self.arm.web = self.web
        self.tokens: set[str] = set()
        self._log = (directory / "requests.jsonl").open("a", buffering=1)
        self._log_lock = threading.Lock()

    def issue_token(self) -> str:
        """A new opaque bearer token (ARM accepts only tokens issued here)."""
        token = uuid.uuid4().hex + uuid.uuid4().hex
        self.tokens.add(token)
        return token

    def log(self, host: str, method: str, path: str, status: int, error: Any) -> None:
        """One line per request: host, method, path, status, and Azure's error body if any."""
        line = json.dumps(
            {"host": host or "control", "method": method, "path": path, "status": status, "error": error}
        )
        with self._log_lock:
            self._log.write(line + "\n")


def main(argv: list[str] | None = None) -> int:
    """Start the server; write DIR/endpoint.json (proxy URL, CA file, credentials) when ready."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, required=True, help="directory for the CA, the log and endpoint.json")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument(
        "--addresses", default="127.0.0.1", help="comma-separated public IPs to hand out (loopback)"
    )
    ap.add_argument(
        "--functions-python",
        default="",
        help="Python with azure-functions that runs the function apps' instances (default this one)",
    )
    ap.add_argument("--seed", type=int, default=1, help="seed of the VMs' placement on simulated hosts")
    ap.add_argument(
        "--hosts-per-location", type=int, default=16, help="simulated physical hosts per location (>= 2)"
    )
    ap.add_argument(
        "--same-host-p",
        type=float,
        default=0.25,
        help="probability that a start after deallocate lands on the host the VM left (a simulation "
        "parameter, not a measurement of Azure)",
    )
    ap.add_argument(
        "--guest-root", type=Path, help="write each VM's KVP pool 3 as GUEST_ROOT/<vm>/.kvp_pool_3"
    )
    args = ap.parse_args(argv)
    try:
        hosts = Hosts(args.seed, args.hosts_per_location, args.same_host_p, args.guest_root)
    except ValueError as exc:
        ap.error(str(exc))
    server = Server(args.port, args.dir, args.addresses.split(",") * 64, args.functions_python, hosts)
    endpoint = {
        "proxy": f"http://127.0.0.1:{server.server_address[1]}",
        "ca": str(server.ca),
        "client_id": CLIENT["id"],
        "secret": CLIENT["secret"],
        "tenant": TENANT,
        "subscription_id": SUBSCRIPTION,
    }
    tmp = args.dir / "endpoint.json.tmp"
    tmp.write_text(json.dumps(endpoint, indent=1) + "\n")
    tmp.rename(args.dir / "endpoint.json")
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        return 0
    finally:
        server.web.stop_all()
    return 0


if __name__ == "__main__":
    sys.exit(main())
