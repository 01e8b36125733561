"""Cloud Functions v2 (REST) and the functions' revisions: create/get/patch/delete/list with
long-running operations, request bodies parsed strictly into the client library's own protobuf
message (``google.cloud.functions_v2.Function``: unknown fields, wrong types and enum values are
refused as the API refuses them) plus the service's rules; a "build" that checks the uploaded
source as Cloud Build's Python buildpack would (main.py defines the entry point, requirements.txt
resolvable); and each revision run by the real Functions Framework in a process of its own.
"""

from __future__ import annotations

import ast
import copy
import datetime as dt
import hashlib
import io
import os
import re
import socket
import subprocess
import sys
import threading
import time
import uuid
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any, ClassVar

from google.cloud import functions_v2
from google.protobuf import json_format

ID_RE = re.compile(r"^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$")
LABEL_KEY = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
LABEL_VALUE = re.compile(r"^[a-z0-9_-]{0,63}$")
RUNTIMES = ("python38", "python39", "python310", "python311", "python312", "python313")
REGIONS = ("us-central1", "us-east1", "europe-west1", "europe-west3", "asia-northeast1")
REGION_CODE = {
    "us-central1": "uc",
    "us-east1": "ue",
    "europe-west1": "ew",
    "europe-west3": "ey",
    "asia-northeast1": "an",
}
MEMORY = re.compile(r"^(\d+)(k|M|G|Mi|Gi)?$")
UNITS = {None: 1, "k": 1000, "M": 1000**2, "G": 1000**3, "Mi": 1 << 20, "Gi": 1 << 30}
#: seconds an operation stays running (the client polls)
OPERATION_S = 1.0
START_TIMEOUT_S = 60.0


class ApiError(Exception):
    """A Google API error: HTTP status, canonical status name, message."""

    STATUS: ClassVar[dict[int, str]] = {
        400: "INVALID_ARGUMENT",
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        409: "ALREADY_EXISTS",
        412: "FAILED_PRECONDITION",
        501: "UNIMPLEMENTED",
    }

    def __init__(self, code: int, message: str, status: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message = code, message
        self.status = status or self.STATUS.get(code, "UNKNOWN")

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "status": self.status}}


def memory_bytes(text: str) -> int:
    m = MEMORY.match(text or "")
    if not m:
        raise ApiError(400, f"Invalid value specified for container memory: {text!r}")
    return int(m.group(1)) * UNITS[m.group(2)]


def parse_function(body: Any, where: str = "function") -> dict[str, Any]:
    """The body as the API reads it: into the Function message (strict), back to JSON."""
    if not isinstance(body, dict):
        raise ApiError(400, f"Invalid JSON payload received. Expected an object at '{where}'.")
    msg = functions_v2.Function.pb()()
    try:
        json_format.ParseDict(body, msg, ignore_unknown_fields=False)
    except json_format.ParseError as exc:
        raise ApiError(400, f"Invalid JSON payload received. {exc}") from None
    return json_format.MessageToDict(msg)


class Revision:
    """One revision's instance: the Functions Framework serving the unpacked source."""

    def __init__(
        self, name: str, revision: str, source: Path, entry: str, env: dict[str, str], log: Path
    ) -> None:
        self.name, self.revision, self.source, self.entry = name, revision, source, entry
        self.env, self.log = env, log
        self.proc: subprocess.Popen | None = None
        self.port = 0
        self.instance_id = ""
        self.last_used = time.monotonic()
        self.lock = threading.Lock()

    def ensure(self) -> bool:
        """Start an instance if none runs; True when this call started it (a cold start)."""
        with self.lock:
            if self.proc is not None and self.proc.poll() is None:
                return False
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
            env = {k: os.environ[k] for k in ("PATH", "LANG", "VIRTUAL_ENV") if k in os.environ}
            env |= {**self.env, "K_SERVICE": self.name, "K_REVISION": self.revision, "PORT": str(self.port)}
            env |= {"FUNCTION_TARGET": self.entry, "HOME": str(self.source), "PYTHONDONTWRITEBYTECODE": "1"}
            cmd = [sys.executable, "-m", "functions_framework", "--target", self.entry, "--source", "main.py"]
            cmd += ["--host", "127.0.0.1", "--port", str(self.port)]
            with open(self.log, "a") as fh:
                self.proc = subprocess.Popen(
                    cmd, cwd=self.source, env=env, stdout=fh, stderr=fh, start_new_session=True
                )
            self.instance_id = "00" + uuid.uuid4().hex + uuid.uuid4().hex[:30]
            end = time.monotonic() + START_TIMEOUT_S
            while True:
                if self.proc.poll() is not None:
                    raise ApiError(
                        503, f"the revision {self.revision} failed to start (see {self.log})", "UNAVAILABLE"
                    )
                try:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                        return True
                except OSError:
                    if time.monotonic() > end:
                        raise ApiError(503, "the revision did not listen in time", "UNAVAILABLE") from None
                    time.sleep(0.05)

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


class Functions:
    """The functions of the stand-in's project, their operations and revisions."""

    def __init__(self, project: str, directory: Path, storage: Any) -> None:
        self.project = project
        self.dir = directory
        self.storage = storage
        self.items: dict[str, dict[str, Any]] = {}
        self.ops: dict[str, dict[str, Any]] = {}
        self.revisions: dict[str, Revision] = {}
        self.counts = {"functions_created": 0, "functions_deleted": 0, "revisions": 0, "builds_failed": 0}

    # -- operations -------------------------------------------------------------------------
    def _op(self, location: str, verb: str, target: str, apply: Any) -> dict[str, Any]:
        name = f"projects/{self.project}/locations/{location}/operations/operation-{uuid.uuid4().hex[:20]}"
        self.ops[name] = {
            "done_at": time.monotonic() + OPERATION_S,
            "apply": apply,
            "result": None,
            "error": None,
        }
        self.ops[name]["meta"] = {
            "@type": "type.googleapis.com/google.cloud.functions.v2.OperationMetadata",
            "createTime": _now(),
            "target": target,
            "verb": verb,
            "apiVersion": "v2",
        }
        return self.operation(name)

    def settle(self) -> None:
        now = time.monotonic()
        for op in self.ops.values():
            if op["apply"] is not None and now >= op["done_at"]:
                apply, op["apply"] = op["apply"], None
                try:
                    op["result"] = apply()
                except ApiError as err:
                    op["error"] = {"code": 3 if err.code == 400 else 9, "message": err.message}

    def operation(self, name: str) -> dict[str, Any]:
        op = self.ops.get(name)
        if op is None:
            raise ApiError(404, f"Operation {name} not found")
        out: dict[str, Any] = {"name": name, "metadata": op["meta"], "done": op["apply"] is None}
        if out["done"] and op["error"]:
            out["error"] = op["error"]
        elif out["done"]:
            out["response"] = op["result"] or {"@type": "type.googleapis.com/google.protobuf.Empty"}
        return out

    # -- functions ----------------------------------------------------------------------------
    def _path(self, location: str, fid: str) -> str:
        return f"projects/{self.project}/locations/{location}/functions/{fid}"

    def _check_location(self, project: str, location: str) -> None:
        if project != self.project:
            raise ApiError(403, f"Permission 'cloudfunctions.functions.list' denied on 'projects/{project}'")
        if location not in REGIONS:
            raise ApiError(400, f"Location {location} is not a valid Cloud Functions region")

    def get(self, project: str, location: str, fid: str) -> dict[str, Any]:
        self._check_location(project, location)
        item = self.items.get(self._path(location, fid))
        if item is None:
            raise ApiError(404, f"Resource '{self._path(location, fid)}' was not found")
        return copy.deepcopy(item)

    def listing(self, project: str, location: str, flt: str) -> dict[str, Any]:
        self._check_location(project, location)
        want = re.fullmatch(r'labels\.([a-z0-9_-]+)\s*=\s*"?([a-z0-9_-]*)"?', flt.strip()) if flt else None
        if flt and want is None:
            raise ApiError(400, f"Invalid filter: {flt!r} (the rehearsal takes labels.KEY=VALUE)")
        out = [
            copy.deepcopy(f)
            for path, f in sorted(self.items.items())
            if path.startswith(f"projects/{project}/locations/{location}/")
            and (want is None or (f.get("labels") or {}).get(want.group(1)) == want.group(2))
        ]
        return {"functions": out}

    def create(self, project: str, location: str, fid: str, body: Any) -> dict[str, Any]:
        self._check_location(project, location)
        if not ID_RE.match(fid or ""):
            raise ApiError(400, f"Invalid function id '{fid}': must match {ID_RE.pattern}")
        fn = parse_function(body)
        path = self._path(location, fid)
        if fn.get("name") not in (None, path):
            raise ApiError(400, f"Function name {fn['name']!r} does not match the request's {path!r}")
        if path in self.items:
            raise ApiError(409, f"Function {fid} in region {location} in project {project} already exists")
        self._check(fn)
        fn = {**fn, "name": path, "environment": fn.get("environment", "GEN_2"), "state": "DEPLOYING"}
        fn["createTime"] = fn["updateTime"] = _now()
        self.items[path] = fn
        return self._op(location, "create", path, lambda: self._deploy(path, location, fid))

    def patch(self, project: str, location: str, fid: str, body: Any, mask: str) -> dict[str, Any]:
        current = self.get(project, location, fid)
        fn = parse_function(body)
        paths = [p.strip() for p in mask.split(",") if p.strip()]
        if not paths:
            raise ApiError(400, "update_mask is required (the rehearsal does not infer it)")
        merged = copy.deepcopy(current)
        for p in paths:
            keys = [_camel(k) for k in p.split(".")]
            src, dst = fn, merged
            for k in keys[:-1]:
                src = src.get(k) or {}
                dst = dst.setdefault(k, {})
            if keys[-1] in src:
                dst[keys[-1]] = src[keys[-1]]
            else:
                dst.pop(keys[-1], None)
        parse_function({k: v for k, v in merged.items() if k not in ("state", "updateTime", "createTime")})
        self._check(merged)
        merged["state"] = "DEPLOYING"
        path = self._path(location, fid)
        self.items[path] = merged
        return self._op(location, "update", path, lambda: self._deploy(path, location, fid))

    def delete(self, project: str, location: str, fid: str) -> dict[str, Any]:
        self.get(project, location, fid)
        path = self._path(location, fid)
        self.items[path]["state"] = "DELETING"

        def gone() -> None:
            self.items.pop(path, None)
            rev = self.revisions.pop(path, None)
            if rev is not None:
                rev.stop()
            self.counts["functions_deleted"] += 1

        return self._op(location, "delete", path, gone)

    def _check(self, fn: dict[str, Any]) -> None:
        """The service's rules beyond the message's shape."""
        build, service = fn.get("buildConfig") or {}, fn.get("serviceConfig") or {}
        if fn.get("environment", "GEN_2") != "GEN_2":
            raise ApiError(400, "The v2 API creates 2nd gen functions only (environment GEN_2)")
        if build.get("runtime") not in RUNTIMES:
            raise ApiError(
                400, f"Runtime {build.get('runtime')!r} is not supported; supported: {', '.join(RUNTIMES)}"
            )
        if not build.get("entryPoint"):
            raise ApiError(400, "build_config.entry_point is required")
        src = (build.get("source") or {}).get("storageSource") or {}
        if not src.get("bucket") or not src.get("object"):
            raise ApiError(400, "build_config.source.storage_source (bucket, object) is required")
        memory = memory_bytes(service.get("availableMemory", "256M"))
        if not 128 * (1 << 20) <= memory <= 32 * (1 << 30):
            raise ApiError(400, f"available_memory {service.get('availableMemory')} outside 128Mi..32Gi")
        timeout = int(service.get("timeoutSeconds", 60))
        if not 1 <= timeout <= 3600:
            raise ApiError(400, f"timeout_seconds {timeout} outside 1..3600 for HTTP functions")
        cpu = float(service.get("availableCpu") or _default_cpu(memory))
        if int(service.get("maxInstanceRequestConcurrency", 1)) > 1 and cpu < 1:
            raise ApiError(400, "max_instance_request_concurrency > 1 requires at least 1 available_cpu")
        for key, value in (fn.get("labels") or {}).items():
            if not LABEL_KEY.match(key) or not LABEL_VALUE.match(str(value)):
                raise ApiError(
                    400, f"Invalid label {key}={value!r}: lower-case letters, digits, _ and -, 63 max"
                )
        for key in service.get("environmentVariables") or {}:
            if key.startswith("X_GOOGLE_") or key in ("PORT", "K_SERVICE", "K_REVISION", "K_CONFIGURATION"):
                raise ApiError(400, f"Environment variable {key} is reserved")

    def _deploy(self, path: str, location: str, fid: str) -> dict[str, Any]:
        """The build (source checks) and a new revision; the Function as the operation's response."""
        fn = self.items[path]
        build, service = fn["buildConfig"], fn.setdefault("serviceConfig", {})
        src = build["source"]["storageSource"]
        try:
            data = self.storage.read(src["bucket"], src["object"], src.get("generation"))
            source = self._build(path, data, build["entryPoint"])
        except ApiError as err:
            self.counts["builds_failed"] += 1
            fn["state"] = "FAILED"
            fn["stateMessages"] = [{"severity": "ERROR", "type": "BuildFailed", "message": err.message}]
            raise
        old = self.revisions.pop(path, None)
        if old is not None:
            old.stop()
        number = (
            int(service.get("revision", f"{fid}-00000-x").split("-")[-2]) + 1
            if service.get("revision")
            else 1
        )
        revision = f"{fid}-{number:05d}-{uuid.uuid4().hex[:3]}"
        url_hash = hashlib.sha256(path.encode()).hexdigest()[:10]
        uri = f"https://{fid}-{url_hash}-{REGION_CODE[location]}.a.run.app"
        env = {str(k): str(v) for k, v in (service.get("environmentVariables") or {}).items()}
        self.revisions[path] = Revision(
            fid, revision, source, build["entryPoint"], env, self.dir / f"{revision}.log"
        )
        service.update(
            service=f"projects/{self.project}/locations/{location}/services/{fid}",
            revision=revision,
            uri=uri,
            availableMemory=service.get("availableMemory", "256M"),
            timeoutSeconds=int(service.get("timeoutSeconds", 60)),
            maxInstanceCount=int(service.get("maxInstanceCount", 100)),
            ingressSettings=service.get("ingressSettings", "ALLOW_ALL"),
            allTrafficOnLatestRevision=True,
            serviceAccountEmail=service.get(
                "serviceAccountEmail", f"{self.project}@appspot.gserviceaccount.com"
            ),
        )
        fn.update(
            state="ACTIVE",
            updateTime=_now(),
            url=f"https://{location}-{self.project}.cloudfunctions.net/{fid}",
        )
        fn.pop("stateMessages", None)
        self.counts["functions_created" if number == 1 else "revisions"] += 1
        return {"@type": "type.googleapis.com/google.cloud.functions.v2.Function", **copy.deepcopy(fn)}

    def _build(self, path: str, data: bytes, entry: str) -> Path:
        """Unpack the source and check it as the Python buildpack would; the directory."""
        target = self.dir / "sources" / hashlib.sha256(path.encode() + data).hexdigest()[:16]
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                names = zf.namelist()
                if any(n.startswith("/") or ".." in n.split("/") for n in names):
                    raise ApiError(400, "Build failed: the source archive has paths outside its root")
                zf.extractall(target)
        except zipfile.BadZipFile:
            raise ApiError(400, "Build failed: the source is not a zip archive") from None
        main = target / "main.py"
        if not main.is_file():
            raise ApiError(400, "Build failed: missing main.py; a Python function's entry module is main.py")
        tree = ast.parse(main.read_text(encoding="utf-8"))
        if entry not in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}:
            raise ApiError(
                400, f"Function failed on loading user code. Function '{entry}' is not defined in main.py"
            )
        req = target / "requirements.txt"
        for raw in req.read_text().splitlines() if req.is_file() else []:
            line = raw.split("#")[0].strip()
            if not line:
                continue
            name, _, version = line.partition("==")
            try:
                installed = metadata.version(name.strip())
            except metadata.PackageNotFoundError:
                raise ApiError(400, f"Build failed: could not find a version that satisfies {line}") from None
            if version and installed != version.strip():
                raise ApiError(400, f"Build failed: {line} (the rehearsal has {name.strip()}=={installed})")
        return target

    def revision_for(self, host: str) -> tuple[str, Revision]:
        """The function (path) and revision whose URI host is ``host``."""
        for path, fn in self.items.items():
            uri = (fn.get("serviceConfig") or {}).get("uri", "")
            if uri == f"https://{host}" and path in self.revisions and fn.get("state") == "ACTIVE":
                return path, self.revisions[path]
        raise ApiError(404, f"no service at {host}")

    def stop_all(self) -> None:
        for rev in self.revisions.values():
            rev.stop()


def _default_cpu(memory: int) -> float:
    mib = memory / (1 << 20)
    for limit, cpu in (
        (128, 0.083),
        (256, 0.167),
        (512, 0.333),
        (1024, 0.583),
        (2048, 1),
        (8192, 2),
        (16384, 4),
    ):
        if mib <= limit:
            return cpu
    return 8


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(w.title() for w in rest)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
