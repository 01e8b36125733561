"""Azure Functions in the ARM stand-in: the Microsoft.Web and Microsoft.Storage pieces a function
app needs, Kudu's zip deploy, the function's HTTP front and Azure Monitor's metrics of it.

ARM (management.azure.com), bodies validated against azure-mgmt-web's and azure-mgmt-storage's own
models by the stand-in's ``put``: storage accounts (``listKeys``), App Service plans (Linux
Consumption: sku Y1/Dynamic, reserved), sites (kind ``functionapp,linux``, ``linuxFxVersion``
Python|3.x, on a plan of the same OS), ``config/appsettings`` (PUT and ``list``), ``restart``,
``syncfunctiontriggers``, ``functions`` (list), ``host/default/listkeys``,
``functions/{name}/listkeys`` and ``providers/Microsoft.Insights/metrics`` (FunctionExecutionCount
and FunctionExecutionUnits in MB-ms, per minute, from the executions served here).

Kudu (``<site>.scm.azurewebsites.net``, bearer token of ARM): ``POST /api/zipdeploy?isAsync=true``
then ``GET /api/deployments/latest`` (status 4 success, 3 failed). The deployment is checked as the
remote build would: host.json and function_app.py present, requirements.txt satisfiable.

The function front (``<site>.azurewebsites.net/api/<route>``) checks the function key
(``x-functions-key`` or ``?code=``), starts the app's instance if none runs (a cold start: the
stand-in's host, ``funchost.py``, loads function_app.py with the real azure-functions library in
the interpreter given by ``--functions-python``) and passes the request on. What this cannot be:
the Functions host itself (.NET, gRPC to the Python worker); ``funchost.py`` stands in for it.
"""

from __future__ import annotations

import copy
import datetime as dt
import http.client
import io
import json
import math
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from validate import ArmError, check

WEB = re.compile(
    r"^(/subscriptions/[^/]+/resourcegroups/[^/]+/providers/microsoft\.web/sites/[^/]+)"
    r"(/config/appsettings(?:/list)?|/restart|/syncfunctiontriggers|/functions|/host/default/listkeys"
    r"|/functions/[^/]+/listkeys|/providers/microsoft\.insights/metrics)$",
    re.I,
)
KEYS = re.compile(
    r"^(/subscriptions/[^/]+/resourcegroups/[^/]+/providers/microsoft\.storage/storageaccounts/[^/]+)/listkeys$",
    re.I,
)
SITE_HOST = re.compile(r"^([a-z0-9-]+)(\.scm)?\.azurewebsites\.net$")
PYTHONS = ("3.9", "3.10", "3.11", "3.12")
START_TIMEOUT_S = 60.0
DEPLOY_S = 1.0


def owns(path: str) -> bool:
    """Whether an ARM path is one of the sub-resources served here."""
    return bool(WEB.match(path) or KEYS.match(path))


class Site:
    """A function app's data-plane state: content, deployment, keys, instance, executions."""

    def __init__(self, name: str, rid: str, root: Path) -> None:
        self.name, self.rid = name, rid
        self.root = root / name
        self.content: Path | None = None
        self.deployment: dict[str, Any] | None = None
        self.master_key = secrets.token_urlsafe(40)
        self.function_key = secrets.token_urlsafe(40)
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.executions: list[tuple[float, float, float]] = []
        self.lock = threading.Lock()

    def stop(self) -> None:
        with self.lock:
            if self.proc is not None and self.proc.poll() is None:
                os.killpg(self.proc.pid, 15)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, 9)
                    self.proc.wait()
            self.proc = None


class Web:
    """Function apps of the stand-in's subscription (data plane; the resources live in ``Arm``)."""

    def __init__(self, directory: Path, functions_python: str) -> None:
        self.root = directory / "sites"
        self.python = functions_python
        self.sites: dict[str, Site] = {}
        self.counts = {
            "zip_deploys": 0,
            "deploys_failed": 0,
            "executions": 0,
            "cold_starts": 0,
            "restarts": 0,
        }

    def site(self, arm: Any, name: str) -> Site:
        """The data-plane state of site ``name`` (404 as the front answers when there is none)."""
        item = next(
            (
                i
                for i in arm.items.values()
                if i["rtype"] == "microsoft.web/sites" and i["name"].lower() == name
            ),
            None,
        )
        if item is None:
            self.sites.pop(name, None)
            raise ArmError(404, "NotFound", f"The site {name} does not exist.")
        site = self.sites.get(name)
        if site is None or site.rid.lower() != item["id"].lower():
            site = self.sites[name] = Site(name, item["id"], self.root)
        return site

    # -- ARM resources: the service's rules beyond the models ---------------------------------
    def check_put(self, arm: Any, rid: str, rtype: str, body: dict[str, Any]) -> None:
        props = body.get("properties") or {}
        name = rid.rstrip("/").split("/")[-1]
        if rtype == "microsoft.storage/storageaccounts":
            if not re.fullmatch(r"[a-z0-9]{3,24}", name):
                raise ArmError(400, "AccountNameInvalid", f"{name} is not a valid storage account name.")
            taken = [
                i
                for k, i in arm.items.items()
                if i["rtype"] == rtype and i["name"] == name and k != rid.lower()
            ]
            if taken:
                raise ArmError(
                    409, "StorageAccountAlreadyTaken", f"The storage account named {name} is already taken."
                )
        elif rtype == "microsoft.web/serverfarms":
            sku = body.get("sku") or {}
            if (sku.get("name"), sku.get("tier")) not in (("Y1", "Dynamic"),):
                raise ArmError(
                    400, "BadRequest", "The rehearsal serves Consumption plans only (sku Y1, tier Dynamic)."
                )
            if props.get("reserved") is not True:
                raise ArmError(
                    400, "BadRequest", "A Linux plan needs reserved: true (Python runs on Linux only)."
                )
        elif rtype == "microsoft.web/sites":
            self._check_site(arm, body, props)

    def _check_site(self, arm: Any, body: dict[str, Any], props: dict[str, Any]) -> None:
        kind = str(body.get("kind", ""))
        if "functionapp" not in kind.split(",") or "linux" not in kind.split(","):
            raise ArmError(
                400,
                "BadRequest",
                f"The rehearsal serves Linux function apps (kind functionapp,linux), not {kind!r}.",
            )
        farm = arm.items.get(str(props.get("serverFarmId", "")).lower())
        if farm is None or farm["rtype"] != "microsoft.web/serverfarms":
            raise ArmError(
                404,
                "NotFound",
                f"Cannot find ServerFarm with name {str(props.get('serverFarmId')).split('/')[-1]}.",
            )
        if bool(props.get("reserved")) != bool(farm["properties"].get("reserved")):
            raise ArmError(
                400, "BadRequest", "The site's reserved (Linux) setting must match its App Service plan's."
            )
        fx = (props.get("siteConfig") or {}).get("linuxFxVersion", "")
        m = re.fullmatch(r"(?i)python\|(\d+\.\d+)", fx or "")
        if not m or m.group(1) not in PYTHONS:
            raise ArmError(
                400, "BadRequest", f"LinuxFxVersion has an invalid value {fx!r} (Python|{'|'.join(PYTHONS)})."
            )

    def view(self, item: dict[str, Any], view: dict[str, Any]) -> dict[str, Any]:
        """Read-only properties Azure fills in (host names, state)."""
        if item["rtype"] == "microsoft.web/sites":
            host = f"{item['name']}.azurewebsites.net"
            props = view["properties"]
            props.setdefault("state", "Running")
            props["defaultHostName"] = host
            props["hostNames"] = [host]
            props["enabledHostNames"] = [host, f"{item['name']}.scm.azurewebsites.net"]
        return view

    # -- sub-resources ------------------------------------------------------------------------
    def route(
        self, arm: Any, method: str, path: str, query: dict[str, list[str]], raw: bytes
    ) -> tuple[int, Any, dict]:
        found = KEYS.match(path)
        if found and method == "POST":
            item = arm.items.get(found.group(1).lower())
            if item is None:
                raise ArmError(404, "ResourceNotFound", "The storage account was not found.")
            key = item.setdefault("secret_key", secrets.token_urlsafe(48))
            return 200, {"keys": [{"keyName": "key1", "value": key, "permissions": "FULL"}]}, {}
        found = WEB.match(path)
        if not found:
            raise ArmError(404, "NotFound", f"No route for {path}")
        rid, sub = found.group(1), found.group(2).lower()
        item = arm.items.get(rid.lower())
        if item is None:
            raise ArmError(
                404,
                "ResourceNotFound",
                f"The Resource 'Microsoft.Web/sites/{rid.split('/')[-1]}' was not found.",
            )
        site = self.site(arm, item["name"].lower())
        settings = {
            p["name"]: p["value"]
            for p in (item["properties"].get("siteConfig") or {}).get("appSettings") or []
        }
        settings |= item.get("appsettings_override") or {}
        if sub == "/config/appsettings" and method == "PUT":
            body = json.loads(raw or b"{}")
            models, model = _web_model("StringDictionary")
            check(body, model, models)
            item["appsettings_override"] = dict(body.get("properties") or {})
            item["properties"].setdefault("siteConfig", {})["appSettings"] = [
                {"name": k, "value": v} for k, v in item["appsettings_override"].items()
            ]
            site.stop()  # changed settings restart the app
            return 200, _settings_view(item, item["appsettings_override"]), {}
        if sub == "/config/appsettings/list" and method == "POST":
            return 200, _settings_view(item, settings), {}
        return self._site_action(item, site, sub, method, query)

    def _site_action(
        self, item: dict[str, Any], site: Site, sub: str, method: str, query: dict[str, list[str]]
    ) -> tuple[int, Any, dict]:
        if sub == "/restart" and method == "POST":
            site.stop()
            self.counts["restarts"] += 1
            return 200, None, {}
        if sub == "/syncfunctiontriggers" and method == "POST":
            return 204, None, {}
        if sub == "/functions" and method == "GET":
            return 200, {"value": self._functions(item, site)}, {}
        if sub == "/host/default/listkeys" and method == "POST":
            return (
                200,
                {
                    "masterKey": site.master_key,
                    "functionKeys": {"default": site.function_key},
                    "systemKeys": {},
                },
                {},
            )
        if sub.endswith("/listkeys") and method == "POST":
            fn = sub.split("/")[2]
            if fn not in [f["properties"]["name"] for f in self._functions(item, site)]:
                raise ArmError(404, "NotFound", f"Function {fn} not found.")
            return 200, {"default": site.function_key}, {}
        if sub == "/providers/microsoft.insights/metrics" and method == "GET":
            return 200, self._metrics(item, site, query), {}
        raise ArmError(405, "MethodNotAllowed", f"The method '{method}' is not allowed on {sub}.")

    def _functions(self, item: dict[str, Any], site: Site) -> list[dict[str, Any]]:
        if site.content is None or not (site.deployment or {}).get("complete"):
            return []
        routes = _routes(site.content)
        return [
            {
                "id": f"{item['id']}/functions/{name}",
                "name": f"{item['name']}/{name}",
                "type": "Microsoft.Web/sites/functions",
                "properties": {
                    "name": name,
                    "invoke_url_template": f"https://{item['name']}.azurewebsites.net/api/{route}",
                    "language": "python",
                    "isDisabled": False,
                },
            }
            for name, route in routes.items()
        ]

    def _metrics(self, item: dict[str, Any], site: Site, query: dict[str, list[str]]) -> dict[str, Any]:
        names = (query.get("metricnames") or [""])[0].split(",")
        known = {"FunctionExecutionCount": "Count", "FunctionExecutionUnits": "Count"}
        for n in names:
            if n not in known:
                raise ArmError(
                    400,
                    "BadRequest",
                    "Failed to find metric configuration for provider: Microsoft.Web, resource Type: sites, "
                    f"metric: {n}",
                )
        if (query.get("interval") or ["PT1M"])[0] != "PT1M":
            raise ArmError(400, "BadRequest", "the rehearsal serves interval PT1M")
        span = (query.get("timespan") or [""])[0]
        try:
            start_s, end_s = (
                dt.datetime.fromisoformat(t.replace("Z", "+00:00")).timestamp() for t in span.split("/")
            )
        except ValueError:
            raise ArmError(400, "BadRequest", f"Invalid timespan {span!r}: start/end in ISO 8601") from None
        minutes: dict[int, list[tuple[float, float]]] = {}
        for when, ms, mb in site.executions:
            if start_s <= when < end_s:
                minutes.setdefault(int(when // 60), []).append((ms, mb))
        out = []
        for n in names:
            data = []
            for minute in range(int(start_s // 60), math.ceil(end_s / 60)):
                rows = minutes.get(minute, [])
                total = len(rows) if n == "FunctionExecutionCount" else sum(_units(ms, mb) for ms, mb in rows)
                stamp = dt.datetime.fromtimestamp(minute * 60, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                data.append({"timeStamp": stamp, "total": float(total)})
            out.append(
                {
                    "id": f"{item['id']}/providers/Microsoft.Insights/metrics/{n}",
                    "type": "Microsoft.Insights/metrics",
                    "name": {"value": n, "localizedValue": n},
                    "unit": known[n],
                    "timeseries": [{"metadatavalues": [], "data": data}],
                    "errorCode": "Success",
                }
            )
        return {
            "cost": 0,
            "timespan": span,
            "interval": "PT1M",
            "value": out,
            "namespace": "Microsoft.Web/sites",
            "resourceregion": item["location"],
        }

    # -- Kudu and the function front ----------------------------------------------------------
    def kudu(self, arm: Any, site: Site, method: str, path: str, raw: bytes) -> tuple[int, Any, dict]:
        if method == "POST" and path == "/api/zipdeploy":
            self.counts["zip_deploys"] += 1
            site.stop()
            site.deployment = {
                "id": uuid.uuid4().hex,
                "status": 1,
                "complete": False,
                "received": time.monotonic(),
                "zip": raw,
            }
            host = f"https://{site.name}.scm.azurewebsites.net"
            return 202, None, {"Location": f"{host}/api/deployments/latest"}
        if method == "GET" and path == "/api/deployments/latest":
            dep = site.deployment
            if dep is None:
                raise ArmError(404, "NotFound", "No deployment found.")
            if not dep["complete"] and time.monotonic() - dep["received"] >= DEPLOY_S:
                self._build(site, dep)
            return 202 if not dep["complete"] else 200, _deployment_view(dep), {}
        raise ArmError(404, "NotFound", f"Kudu has no {method} {path} in the rehearsal")

    def _build(self, site: Site, dep: dict[str, Any]) -> None:
        """The remote build: unpack, check the app's files and its requirements."""
        target = site.root / dep["id"]
        message = "Deployment successful."
        try:
            with zipfile.ZipFile(io.BytesIO(dep.pop("zip"))) as zf:
                if any(n.startswith("/") or ".." in n.split("/") for n in zf.namelist()):
                    raise ValueError("the zip has paths outside wwwroot")
                zf.extractall(target)
            for needed in ("host.json", "function_app.py"):
                if not (target / needed).is_file():
                    raise ValueError(f"{needed} not found in the package root")
            json.loads((target / "host.json").read_text())
            self._requirements(target)
            if not _routes(target):
                raise ValueError("function_app.py defines no HTTP function")
            site.content = target
            dep.update(status=4, complete=True)
        except (ValueError, zipfile.BadZipFile, OSError) as exc:
            self.counts["deploys_failed"] += 1
            message = f"Deployment Failed. {exc}"
            dep.update(status=3, complete=True)
        dep["message"] = message

    def _requirements(self, target: Path) -> None:
        req = target / "requirements.txt"
        lines = [ln.split("#")[0].strip() for ln in (req.read_text().splitlines() if req.is_file() else [])]
        pins = [ln.partition("==") for ln in lines if ln]
        code = (
            "import importlib.metadata as m, json, sys\nout = {}\nfor n in sys.argv[1:]:\n"
            "    try: out[n] = m.version(n)\n    except m.PackageNotFoundError: out[n] = None\n"
            "print(json.dumps(out))"
        )
        done = subprocess.run(
            [self.python, "-c", code, *(n for n, _, _ in pins)], capture_output=True, text=True, timeout=60
        )
        have = json.loads(done.stdout or "{}")
        for name, _, version in pins:
            if have.get(name) is None or (version and have[name] != version):
                raise ValueError(f"remote build: no matching distribution for {name}=={version}")

    def invoke(
        self,
        arm_lock: Any,
        arm: Any,
        name: str,
        method: str,
        path: str,
        query: str,
        headers: dict[str, str],
        raw: bytes,
    ) -> tuple[int, Any, dict]:
        """The function front: key check, instance (cold start when none runs), forward."""
        with arm_lock:
            site = self.site(arm, name)
            item = arm.items[site.rid.lower()]
            settings = {
                p["name"]: p["value"]
                for p in (item["properties"].get("siteConfig") or {}).get("appSettings") or []
            }
            storage_ok = self._storage_ok(arm, settings.get("AzureWebJobsStorage", ""))
        key = headers.get("x-functions-key") or (parse_qs(query).get("code") or [""])[0]
        if key not in (site.function_key, site.master_key):
            return 401, b"", {}
        if site.content is None:
            return 404, b"", {}
        if not storage_ok or settings.get("FUNCTIONS_WORKER_RUNTIME") != "python":
            return 503, {"error": "Function host is not running."}, {}
        self._ensure(site, settings)  # a cold start is the host's, not the execution's time
        t0 = time.perf_counter()
        conn = http.client.HTTPConnection("127.0.0.1", site.port, timeout=600)
        try:
            conn.request(
                method,
                f"{path}?{query}" if query else path,
                body=raw,
                headers={"Content-Type": headers.get("content-type", "application/json")},
            )
            resp = conn.getresponse()
            data, status, ctype = resp.read(), resp.status, resp.getheader("Content-Type", "application/json")
        finally:
            conn.close()
        elapsed_ms = (time.perf_counter() - t0) * 1000
        with site.lock:
            peak = _peak_mb(site.proc.pid) if site.proc else 0.0
            site.executions.append((time.time(), elapsed_ms, peak))
        self.counts["executions"] += 1
        return status, data, {"Content-Type": ctype}

    @staticmethod
    def _storage_ok(arm: Any, conn: str) -> bool:
        parts = dict(p.partition("=")[::2] for p in conn.split(";") if "=" in p)
        for item in arm.items.values():
            if item["rtype"] == "microsoft.storage/storageaccounts" and item["name"] == parts.get(
                "AccountName"
            ):
                return item.get("secret_key") == parts.get("AccountKey")
        return False

    def _ensure(self, site: Site, settings: dict[str, str]) -> None:
        with site.lock:
            if site.proc is not None and site.proc.poll() is None:
                return
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                site.port = s.getsockname()[1]
            env = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
            env |= {**settings, "WEBSITE_SITE_NAME": site.name, "HOME": str(site.content)}
            script = str(Path(__file__).with_name("funchost.py"))
            log = open(site.root / "host.log", "a")  # noqa: SIM115 - the child keeps it
            site.proc = subprocess.Popen(
                [self.python, script, str(site.content), str(site.port)],
                cwd=site.content,
                env=env,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
            log.close()
            self.counts["cold_starts"] += 1
            end = time.monotonic() + START_TIMEOUT_S
            while True:
                if site.proc.poll() is not None:
                    raise ArmError(503, "ServiceUnavailable", "Function host is not running.")
                try:
                    with socket.create_connection(("127.0.0.1", site.port), timeout=0.2):
                        return
                except OSError:
                    if time.monotonic() > end:
                        raise ArmError(503, "ServiceUnavailable", "Function host did not start.") from None
                    time.sleep(0.05)

    def removed(self, name: str) -> None:
        """A site was deleted: stop its instance, forget its data plane."""
        site = self.sites.pop(name.lower(), None)
        if site is not None:
            site.stop()

    def stop_all(self) -> None:
        for site in self.sites.values():
            site.stop()


def _web_model(name: str) -> tuple[Any, type]:
    import importlib

    models = importlib.import_module("azure.mgmt.web.v2023_12_01.models")
    return models, getattr(models, name)


def _settings_view(item: dict[str, Any], settings: dict[str, str]) -> dict[str, Any]:
    return {
        "id": f"{item['id']}/config/appsettings",
        "name": "appsettings",
        "type": "Microsoft.Web/sites/config",
        "location": item["location"],
        "properties": copy.deepcopy(settings),
    }


def _deployment_view(dep: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": dep["id"],
        "status": dep["status"],
        "complete": dep["complete"],
        "message": dep.get("message", ""),
        "author": "testbed",
        "deployer": "ZipDeploy",
    }


def _routes(content: Path) -> dict[str, str]:
    """Function name -> route of the HTTP functions function_app.py declares (read, not run)."""
    import ast

    try:
        tree = ast.parse((content / "function_app.py").read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return {}
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "route":
                    route = next(
                        (
                            k.value.value
                            for k in deco.keywords
                            if k.arg == "route" and isinstance(k.value, ast.Constant)
                        ),
                        node.name,
                    )
                    out[node.name] = route
    return out


def _units(ms: float, mb: float) -> float:
    """Execution units of one execution (MB-ms): memory rounded up to 128 MB, at least 100 ms."""
    return max(128.0, math.ceil(mb / 128.0) * 128.0) * max(100.0, ms)


def _peak_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def kudu_host(host: str) -> tuple[str, bool] | None:
    """(site name, is Kudu) of a ``*.azurewebsites.net`` host."""
    m = SITE_HOST.match(host)
    return (m.group(1), bool(m.group(2))) if m else None


if __name__ == "__main__":  # pragma: no cover - a library of server.py
    sys.exit("run tests/azure/arm/server.py")
