"""Google Cloud Functions (2nd gen) with the official clients: google-cloud-functions (REST
transport) for the control plane, google-cloud-storage for the source upload, google-auth for the
ID token a function's URL requires and for Cloud Logging's REST ``entries:list``.

Credentials and project come from Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS,
``gcloud auth application-default login``; the metadata server only when
``options.metadata_credentials`` is true), checked before any request. A deployment uploads the
package (``main.py`` with the Functions Framework entry point ``testbed_entry`` around the
function, and the shim) to
``gs://<options.source_bucket>/testbed/<run>/<function>.zip`` and creates the function from it;
both carry the run's labels (GCP label values are lower case: the run id is lower-cased and the
deadline is seconds since the epoch). Per call the shim reports the instance, cold/warm, init
and handler time; the platform's own figure is the request log's latency and instance id, read
after the calls (:meth:`GcfDriver.settle`). A forced cold start is a new revision (an updated
environment variable); host scope does not exist.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import threading
import time
import uuid
from pathlib import Path
from typing import Any, TextIO

from testbed_agent.faas_drivers import shim
from testbed_agent.faas_drivers.base import Call, FunctionSpec, Platform, Resource
from testbed_agent.faas_drivers.prices import Pricing, billed_s
from testbed_agent.faas_drivers.target import (
    OWNER,
    TAG_DEADLINE,
    TAG_OWNER,
    TAG_RUN,
    Target,
    label_value,
    selected,
)
from testbed_services.faas.functions import FunctionCode, default_dirs, find_function
from testbed_shared.errors import TestbedError, WorkloadError

SCOPE = "https://www.googleapis.com/auth/cloud-platform"
LOGGING_URL = "https://logging.googleapis.com/v2/entries:list"
OPERATION_TIMEOUT_S = 900.0
#: the Functions Framework entry point of the package's main.py (workloads/faas/shims/gcf_main.py)
ENTRY_POINT = "testbed_entry"
#: what Cloud Build installs next to the package (resolved from PyPI on the platform)
REQUIREMENTS = "functions-framework==3.10.2\n"


def labels(target: Target) -> dict[str, str]:
    """The run's tags as GCP labels."""
    return {
        TAG_RUN: label_value(target.run_id),
        TAG_DEADLINE: str(int(target.deadline.timestamp())),
        TAG_OWNER: OWNER,
        "testbed-host": label_value(target.host),
    }


class GcfDriver(Platform):
    """Cloud Functions 2nd gen in ``options.project`` (else the credentials' project), region
    ``target.region``, sources in ``options.source_bucket``."""

    name = "gcf-gen2"
    profiles = ("gcf-gen2",)
    default_region = "us-central1"
    default_runtime = "python312"
    default_memory_mb = 256
    default_timeout_s = 60.0
    delete_order = ("function", "source-object")

    def __init__(self, target: Target, *, dry_run: bool = False, out: TextIO | None = None) -> None:
        super().__init__(target, dry_run=dry_run, out=out)
        self.bucket_name = str(target.options.get("source_bucket") or "")
        if not self.bucket_name:
            raise TestbedError(
                f"{target.path}: gcf-gen2 needs options.source_bucket (a bucket for the sources)"
            )
        self.project = str(target.options.get("project") or "")
        self._local = threading.local()
        self._tokens: dict[str, tuple[str, float]] = {}
        self._lock = threading.Lock()
        self.credentials: Any = None
        self._service_account = False
        if dry_run and not self.project:
            raise TestbedError(f"{target.path}: a dry run needs options.project (no credentials are read)")
        if not dry_run:
            self.check_credentials(target)
            self.connect()

    @classmethod
    def package_files(cls, code: FunctionCode) -> dict[str, bytes]:
        """The function, the shim and ``main.py`` (the Functions Framework entry point)."""
        files = {**super().package_files(code), **shim.files(code)}
        files["main.py"] = (shim.shims_dir() / "gcf_main.py").read_bytes()
        files["requirements.txt"] = REQUIREMENTS.encode()
        return files

    @classmethod
    def vcpus(cls, memory_mb: float, pricing: Pricing) -> float:
        """The default vCPU of the memory size's tier (the pricing table's ``vcpus``)."""
        table = {int(k): float(v) for k, v in pricing.rates(cls.name)["vcpus"].items()}
        return next((table[size] for size in sorted(table) if memory_mb <= size), max(table.values()))

    @classmethod
    def price(cls, memory_mb: float, duration_s: float, arch: str, pricing: Pricing) -> dict[str, float]:
        """vCPU-seconds of the memory's tier plus GiB-seconds, in 100 ms steps, plus the request."""
        rates = pricing.rates(cls.name)
        seconds = billed_s(duration_s, rates)
        gb_s = memory_mb / 1024.0 * seconds
        price = cls.vcpus(memory_mb, pricing) * seconds * float(rates["per_vcpu_second"])
        price += gb_s * float(rates["per_gib_second"]) + float(rates.get("per_request", 0.0))
        return {"gb_seconds": gb_s, "price": price}

    @classmethod
    def check_credentials(cls, target: Target) -> None:
        """Application Default Credentials in a file: GOOGLE_APPLICATION_CREDENTIALS or gcloud's."""
        hint = (
            "set GOOGLE_APPLICATION_CREDENTIALS to a service account key file, or run `gcloud auth "
            "application-default login` (on a Google Cloud VM: options.metadata_credentials: true); "
            "docs/faas.md, Accounts and permissions"
        )
        where = f"gcf-gen2 ({target.path})"
        given = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
        if given:
            if not (Path(given).is_file() and os.access(given, os.R_OK)):
                raise TestbedError(
                    f"{where}: GOOGLE_APPLICATION_CREDENTIALS names {given}, not a readable file", hint=hint
                )
            return
        gcloud = Path(os.environ.get("CLOUDSDK_CONFIG") or Path.home() / ".config" / "gcloud")
        adc = gcloud / "application_default_credentials.json"
        if adc.is_file() or target.options.get("metadata_credentials"):
            return
        raise TestbedError(
            f"{where}: no Google credentials: GOOGLE_APPLICATION_CREDENTIALS is not set and {adc} does "
            "not exist",
            hint=hint,
        )

    @classmethod
    def sdk_errors(cls) -> tuple[type[BaseException], ...]:
        import google.auth.exceptions  # noqa: PLC0415 - its SDK only when the platform is used
        import requests  # noqa: PLC0415 - its SDK only when the platform is used
        from google.api_core import exceptions  # noqa: PLC0415 - its SDK only when the platform is used

        return (google.auth.exceptions.GoogleAuthError, exceptions.GoogleAPIError, requests.RequestException)

    def connect(self) -> None:
        """Read the credentials and make the clients (a dry run of a plan needs none)."""
        import google.auth  # noqa: PLC0415 - its SDK only when the platform is used
        from google.auth.transport.requests import AuthorizedSession  # noqa: PLC0415 - its SDK only when used
        from google.cloud import functions_v2, storage  # noqa: PLC0415 - its SDK only when the platform is used
        from google.oauth2 import service_account  # noqa: PLC0415 - its SDK only when the platform is used

        with self.reporting("reading the credentials"):
            self.credentials, project = google.auth.default(scopes=[SCOPE])
        self._service_account = isinstance(self.credentials, service_account.Credentials)
        self.project = self.project or str(project or "")
        if not self.project:
            raise TestbedError(
                f"{self.target.path}: no GCP project: set options.project (faas_platform_options)"
            )
        self.functions = functions_v2.FunctionServiceClient(credentials=self.credentials, transport="rest")
        self.storage = storage.Client(project=self.project, credentials=self.credentials)
        self.session = AuthorizedSession(self.credentials)
        self.types = functions_v2

    @property
    def parent(self) -> str:
        return f"projects/{self.project}/locations/{self.target.region}"

    def endpoint(self) -> str:
        return f"https://cloudfunctions.googleapis.com/v2/{self.parent}"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "project": self.project}

    # -- deployment ---------------------------------------------------------------------------

    def deploy(self, spec: FunctionSpec) -> dict[str, Any]:
        if spec.name in self.deployed and self.deployed[spec.name]["function"] == spec.function:
            return self._reconfigure(spec)  # the same code: a configuration change (memory sweep)
        fid = self.target.resource_name(spec.name, limit=63, lower=True)
        path = f"{self.parent}/functions/{fid}"
        code = find_function(spec.function, default_dirs())
        zipped = self.package(code)
        memory = int(spec.memory_mb or self.default_memory_mb)
        timeout = int(spec.timeout_s or self.default_timeout_s)
        env = {**spec.env, "TESTBED_MEMORY_MB": str(memory), "TESTBED_TIMEOUT_S": str(timeout)}
        obj = f"testbed/{self.target.run_id}/{fid}.zip"
        generation = self._upload(obj, zipped)
        body = {
            "name": path,
            "description": f"testbed {spec.function} (run {self.target.run_id})",
            "environment": "GEN_2",
            "labels": labels(self.target),
            "build_config": {
                "runtime": spec.runtime or self.target.runtime,
                "entry_point": ENTRY_POINT,
                "source": {
                    "storage_source": {"bucket": self.bucket_name, "object_": obj, "generation": generation}
                },
            },
            "service_config": {
                "available_memory": f"{memory}Mi",
                "timeout_seconds": timeout,
                "environment_variables": env,
                "max_instance_count": int(self.target.options.get("max_instances", 100)),
                "max_instance_request_concurrency": 1,
                "ingress_settings": "ALLOW_ALL",
                "all_traffic_on_latest_revision": True,
            },
        }
        if self.target.options.get("service_account"):
            body["service_config"]["service_account_email"] = self.target.options["service_account"]
        self.journal.creating("function", path)
        result = self._operation(
            "functions.create", "create_function", parent=self.parent, function=body, function_id=fid
        )
        uri = result.service_config.uri if result is not None else f"https://{fid}-dryrun.a.run.app"
        self.deployed[spec.name] = {
            "name": path,
            "function_id": fid,
            "function": spec.function,
            "memory_mb": memory,
            "timeout_s": timeout,
            "env": env,
            "uri": uri,
            "object": obj,
            "since": dt.datetime.now(dt.UTC),
        }
        return {
            **{k: v for k, v in self.deployed[spec.name].items() if k != "since"},
            "platform": self.name,
        }

    def _reconfigure(self, spec: FunctionSpec) -> dict[str, Any]:
        """A new revision of a function this driver deployed with another memory, timeout or
        environment (the old revision's instances retire)."""
        dep = self.deployed[spec.name]
        memory = int(spec.memory_mb or dep["memory_mb"])
        timeout = int(spec.timeout_s or dep["timeout_s"])
        env = {**spec.env, "TESTBED_MEMORY_MB": str(memory), "TESTBED_TIMEOUT_S": str(timeout)}
        dep.update(memory_mb=memory, timeout_s=timeout, env=env)
        config = {"available_memory": f"{memory}Mi", "timeout_seconds": timeout, "environment_variables": env}
        return self._patch(dep, "functions.patch (configuration)", config)

    def _patch(self, dep: dict[str, Any], op: str, config: dict[str, Any]) -> dict[str, Any]:
        """functions.patch of the fields ``config`` gives of the service configuration (its update
        mask): a new revision."""
        body = {"name": dep["name"], "service_config": config}
        mask = [f"service_config.{k}" for k in config]
        result = self._operation(op, "update_function", function=body, update_mask=mask)
        if result is not None:
            dep["uri"] = result.service_config.uri
        return {**{k: v for k, v in dep.items() if k != "since"}, "platform": self.name}

    def _upload(self, obj: str, data: bytes) -> int:
        self.journal.creating("source-object", f"{self.bucket_name}/{obj}")
        params = {
            "bucket": self.bucket_name,
            "name": obj,
            "bytes": len(data),
            "metadata": labels(self.target),
        }
        self.record("storage objects.insert", params)
        if self.dry_run:
            return 0
        blob = self.storage.bucket(self.bucket_name).blob(obj)
        blob.metadata = labels(self.target)
        blob.upload_from_string(data, content_type="application/zip")
        return int(blob.generation or 0)

    def _operation(self, op: str, method: str, **params: Any) -> Any:
        """A long-running call: sent, then polled to its end; the response (None in a dry run).
        ``update_mask`` is given as its list of paths."""
        self.record(op, params)
        if self.dry_run:
            return None
        from google.protobuf import field_mask_pb2  # noqa: PLC0415 - its SDK only when the platform is used

        request = {k: (self.types.Function(v) if k == "function" else v) for k, v in params.items()}
        if "update_mask" in request:
            request["update_mask"] = field_mask_pb2.FieldMask(paths=request["update_mask"])
        operation = getattr(self.functions, method)(**request)
        try:
            return operation.result(timeout=OPERATION_TIMEOUT_S)
        except Exception as exc:
            raise WorkloadError(f"{op}: {exc}") from exc

    # -- calls --------------------------------------------------------------------------------

    def _id_token(self, audience: str) -> str:
        with self._lock:
            token, until = self._tokens.get(audience, ("", 0.0))
            if token and until > time.time():
                return token
        from google.auth.transport.requests import Request  # noqa: PLC0415 - its SDK only when used
        from google.oauth2 import id_token  # noqa: PLC0415 - its SDK only when the platform is used

        if self._service_account or self.target.options.get("metadata_credentials"):
            token = id_token.fetch_id_token(Request(), audience)
        else:  # user credentials carry an ID token of their own (no metadata server is asked)
            self.credentials.refresh(Request())
            token = getattr(self.credentials, "id_token", None)
            if not token:
                raise TestbedError(
                    "no ID token for the function's URL from these credentials",
                    hint="use a service account key (GOOGLE_APPLICATION_CREDENTIALS) or gcloud user login",
                )
        with self._lock:
            self._tokens[audience] = (token, time.time() + 3000)
        return token

    def invoke(self, name: str, event: Any) -> Call:
        dep = self._deployed(name)
        trace = uuid.uuid4().hex
        self.record("function invoke", {"url": dep["uri"], "trace": trace})
        if self.dry_run:
            return Call(200, True, 0.0, inspector={"new_instance": False, "handler_s": 0.0})
        headers = {
            "Authorization": f"Bearer {self._id_token(dep['uri'])}",
            "Content-Type": "application/json",
            "X-Cloud-Trace-Context": f"{trace}/1;o=1",
        }
        t0 = time.perf_counter()
        resp = shim.http(self._local).post(
            dep["uri"], data=json.dumps(event), headers=headers, timeout=dep["timeout_s"] + 60
        )
        rtt = time.perf_counter() - t0
        self.standin = resp.headers.get("X-Testbed-Standin") or self.standin
        return self._call(dep, resp, rtt, trace)

    def _call(self, dep: dict[str, Any], resp: Any, rtt: float, trace: str) -> Call:
        try:
            envelope = resp.json()
        except ValueError:
            envelope = None
        extra = {"trace": trace}
        return shim.call(
            self, self.pricing, resp.status_code, envelope, resp.text, rtt, dep["memory_mb"], None, extra
        )

    def settle(self, name: str, calls: list[Call], wait_s: float | None = None) -> dict[str, Any]:
        """Add the request log's latency, status and instance id to each call (matched by trace)."""
        dep = self._deployed(name)
        pending = {c.platform.get("trace"): c for c in calls if c.platform.get("trace")}
        if self.dry_run or not pending:
            return {}
        since = dep["since"].strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        log_name = f"projects/{self.project}/logs/run.googleapis.com%2Frequests"
        flt = (
            f'resource.type="cloud_run_revision" AND resource.labels.service_name="{dep["function_id"]}" '
            f'AND logName="{log_name}" AND timestamp>="{since}"'
        )
        end = time.monotonic() + (
            wait_s if wait_s is not None else float(self.target.options.get("log_wait_s", 120))
        )
        while pending:
            token = None
            while True:
                body = {"resourceNames": [f"projects/{self.project}"], "filter": flt, "pageSize": 1000}
                if token:
                    body["pageToken"] = token
                self.record("logging entries.list", {"filter": flt})
                page = self.session.post(LOGGING_URL, json=body, timeout=60)
                page.raise_for_status()
                data = page.json()
                for entry in data.get("entries", []):
                    trace = str(entry.get("trace", "")).rsplit("/", 1)[-1]
                    call = pending.pop(trace, None)
                    if call is not None:
                        req = entry.get("httpRequest") or {}
                        call.platform.update(
                            latency_s=float(str(req.get("latency", "0s")).rstrip("s") or 0),
                            status=req.get("status"),
                            instance_id=(entry.get("labels") or {}).get("instanceId"),
                            revision=(entry.get("resource") or {}).get("labels", {}).get("revision_name"),
                        )
                token = data.get("nextPageToken")
                if not token:
                    break
            if not pending or time.monotonic() > end:
                break
            time.sleep(5)
        return {}

    def cold(self, name: str | None, scope: str = "function") -> dict[str, Any]:
        """A new revision (an updated environment variable): its instances start cold."""
        names = [name] if name else list(self.deployed)
        for n in names:
            dep = self._deployed(n)
            dep["env"] = {**dep["env"], "TESTBED_COLD": uuid.uuid4().hex[:12]}
            self._patch(dep, "functions.patch (new revision)", {"environment_variables": dep["env"]})
        return {"retired": len(names), "scope": "function", "host_scope": scope == "host" and "not available"}

    # -- deletion -----------------------------------------------------------------------------

    def delete(self, name: str) -> None:
        dep = self._deployed(name)
        self._delete_function(dep["name"])
        self._delete_object(dep["object"])
        del self.deployed[name]

    def _delete_function(self, path: str) -> None:
        try:
            self._operation("functions.delete", "delete_function", name=path)
        except WorkloadError as exc:
            from google.api_core import exceptions  # noqa: PLC0415 - its SDK only when the platform is used

            if not isinstance(exc.__cause__, exceptions.NotFound):
                raise
        self.journal.deleted("function", path)

    def _delete_object(self, obj: str) -> None:
        self.record("storage objects.delete", {"bucket": self.bucket_name, "name": obj})
        if not self.dry_run:
            from google.api_core import exceptions  # noqa: PLC0415 - its SDK only when the platform is used

            with contextlib.suppress(exceptions.NotFound):
                self.storage.bucket(self.bucket_name).blob(obj).delete()
        self.journal.deleted("source-object", f"{self.bucket_name}/{obj}")

    def owned(self, run_id: str | None, now: float | None = None) -> list[Resource]:
        """Functions and source objects labelled as this toolkit's, of ``run_id`` or expired."""
        run = label_value(run_id) if run_id is not None else None
        found: list[Resource] = []
        self.record("functions.list", {"parent": self.parent})
        for fn in self.functions.list_functions(parent=self.parent):
            if selected(dict(fn.labels), run, now):
                found.append({"kind": "function", "id": fn.name})
        self.record("storage objects.list", {"bucket": self.bucket_name, "prefix": "testbed/"})
        for blob in self.storage.list_blobs(self.bucket_name, prefix="testbed/"):
            if selected(blob.metadata or {}, run, now):
                found.append({"kind": "source-object", "id": f"{self.bucket_name}/{blob.name}"})
        return found

    def remove(self, resource: Resource) -> None:
        if resource["kind"] == "function":
            self._delete_function(resource["id"])
        elif resource["kind"] == "source-object":
            self._delete_object(resource["id"].split("/", 1)[1])
