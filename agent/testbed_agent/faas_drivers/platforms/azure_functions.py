"""Azure Functions (Linux Consumption plan) with azure-mgmt-web and Kudu's zip deploy.

Credentials come from azure-identity's DefaultAzureCredential, limited to a service principal
(AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET or a certificate), workload identity and
``az login``, checked before any request; a managed identity (the metadata service) only when
``options.managed_identity`` is true. The subscription comes from ``options.subscription_id`` or
AZURE_SUBSCRIPTION_ID. The first deployment of a run creates the run's resource group, a storage
account (the Functions runtime needs one) and a Consumption plan (Y1, Linux), all tagged with the
run and its deadline; each function is a function app of its own (kind ``functionapp,linux``,
Python) to which the package is zip-deployed through Kudu (``/api/zipdeploy``, bearer token) and
whose HTTP function ``testbed`` is called with the host's function key. Memory is not configurable
on Consumption (instances of 1.5 GB; the bill counts the observed peak, rounded up to 128 MB);
per call the shim reports instance, cold/warm, init and handler time; the platform's own figures
are Azure Monitor's FunctionExecutionCount and FunctionExecutionUnits (MB-ms) per minute, read
after the calls (:meth:`AzureFunctionsDriver.settle`). A forced cold start restarts the app.
Teardown deletes the run's resource group, which holds everything the run created.
"""

# ruff: noqa: PLW0108 - outside a dry run only are there clients: their methods are looked up when called
from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from testbed_agent.faas_drivers import shim
from testbed_agent.faas_drivers.base import Call, FunctionSpec, Platform, Resource
from testbed_agent.faas_drivers.prices import Pricing
from testbed_agent.faas_drivers.target import OWNER, TAG_OWNER, TAG_RUN, Target, selected
from testbed_services.faas.functions import FunctionCode, default_dirs, find_function
from testbed_shared.errors import TestbedError, WorkloadError

ARM_SCOPE = "https://management.azure.com/.default"
#: memory of a Consumption instance (not configurable); an estimate bills every call at it
INSTANCE_MB = 1536
#: the HTTP function of the package's function_app.py (workloads/faas/shims/azure_function_app.py)
FUNCTION = "testbed"
#: what the platform's remote build installs next to the package
REQUIREMENTS = "azure-functions==1.26.0\n"
HOST_JSON = {
    "version": "2.0",
    "extensionBundle": {"id": "Microsoft.Azure.Functions.ExtensionBundle", "version": "[4.*, 5.0.0)"},
    "logging": {"logLevel": {"default": "Warning"}},
}
DEPLOY_TIMEOUT_S = 900.0
INDEX_TIMEOUT_S = 300.0


class AzureFunctionsDriver(Platform):
    """Function apps on a Linux Consumption plan in the run's resource group."""

    name = "azure-functions"
    profiles = ("azure-consumption", "azure-functions")
    default_region = "westeurope"
    default_runtime = "3.11"
    default_memory_mb = INSTANCE_MB
    default_timeout_s = 300.0
    delete_order = ("function-app", "app-service-plan", "storage-account", "resource-group")

    def __init__(self, target: Target, *, dry_run: bool = False, out: TextIO | None = None) -> None:
        super().__init__(target, dry_run=dry_run, out=out)
        self.subscription = _subscription(target)
        if not self.subscription:
            raise TestbedError(
                f"{target.path}: azure-functions needs options.subscription_id (or AZURE_SUBSCRIPTION_ID)"
            )
        tag = hashlib.sha256(f"{self.subscription}/{target.run_id}/{target.host}".encode()).hexdigest()
        self.suffix = tag[:10]
        self.group = f"{target.prefix}-{self.suffix}-rg"
        self.account = f"{target.prefix}{self.suffix}"[:24]
        self.plan = f"{target.prefix}-{self.suffix}-plan"
        self._base: dict[str, Any] | None = None
        self._local = threading.local()
        if not dry_run:
            self.check_credentials(target)
            self.connect()

    @classmethod
    def package_files(cls, code: FunctionCode) -> dict[str, bytes]:
        """The function, the shim, ``function_app.py`` (one HTTP function) and ``host.json``."""
        files = {**super().package_files(code), **shim.files(code)}
        files["function_app.py"] = (shim.shims_dir() / "azure_function_app.py").read_bytes()
        files["host.json"] = (json.dumps(HOST_JSON, indent=2) + "\n").encode()
        files["requirements.txt"] = REQUIREMENTS.encode()
        return files

    @classmethod
    def estimate_memory_mb(cls, memory_mb: float | None) -> float:
        """The instance's memory: the most a call's observed memory can be billed at."""
        return float(INSTANCE_MB)

    @classmethod
    def price(cls, memory_mb: float, duration_s: float, arch: str, pricing: Pricing) -> dict[str, float]:
        """GB-s of the observed memory rounded up to 128 MB steps, at least 100 ms, plus the request."""
        rates = pricing.rates(cls.name)
        step = float(rates.get("memory_step_mb", 128))
        memory = max(step, math.ceil(memory_mb / step) * step)
        return super().price(memory, duration_s, arch, pricing)

    @classmethod
    def check_credentials(cls, target: Target) -> None:
        """A service principal or workload identity in the environment, or ``az login``'s files."""
        where = f"azure-functions ({target.path})"
        hint = (
            "set AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET (a service principal), or run "
            "`az login` (on an Azure VM with a managed identity: options.managed_identity: true); "
            "docs/faas.md, Accounts and permissions"
        )
        if not _subscription(target):
            raise TestbedError(
                f"{where}: no subscription: set options.subscription_id or AZURE_SUBSCRIPTION_ID", hint=hint
            )
        env = os.environ
        if env.get("AZURE_CLIENT_ID") or env.get("AZURE_TENANT_ID"):
            secret = ("AZURE_CLIENT_SECRET", "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_FEDERATED_TOKEN_FILE")
            missing = [v for v in ("AZURE_CLIENT_ID", "AZURE_TENANT_ID") if not env.get(v)]
            if not any(env.get(v) for v in secret):
                missing.append("AZURE_CLIENT_SECRET")
            if missing:
                raise TestbedError(
                    f"{where}: a service principal needs {' and '.join(missing)} too", hint=hint
                )
            return
        profile = Path(env.get("AZURE_CONFIG_DIR") or Path.home() / ".azure") / "azureProfile.json"
        if profile.is_file() or target.options.get("managed_identity"):
            return
        raise TestbedError(
            f"{where}: no Azure credentials: AZURE_CLIENT_ID, AZURE_TENANT_ID and AZURE_CLIENT_SECRET are "
            f"not set and {profile} (az login) does not exist",
            hint=hint,
        )

    @classmethod
    def sdk_errors(cls) -> tuple[type[BaseException], ...]:
        import requests  # noqa: PLC0415 - its SDK only when the platform is used
        from azure.core.exceptions import AzureError  # noqa: PLC0415 - its SDK only when the platform is used

        return (AzureError, requests.RequestException)

    def connect(self) -> None:
        """Read the credentials and make the clients (a dry run of a plan needs none)."""
        from azure.identity import DefaultAzureCredential  # noqa: PLC0415 - its SDK only when used
        from azure.mgmt.monitor import MonitorManagementClient  # noqa: PLC0415 - its SDK only when used
        from azure.mgmt.resource import ResourceManagementClient  # noqa: PLC0415 - its SDK only when used
        from azure.mgmt.storage import StorageManagementClient  # noqa: PLC0415 - its SDK only when used
        from azure.mgmt.web import WebSiteManagementClient  # noqa: PLC0415 - its SDK only when used

        self.credential = DefaultAzureCredential(
            exclude_managed_identity_credential=not self.target.options.get("managed_identity"),
            exclude_interactive_browser_credential=True,
            exclude_shared_token_cache_credential=True,
            exclude_visual_studio_code_credential=True,
            exclude_powershell_credential=True,
            exclude_developer_cli_credential=True,
        )
        self.resources = ResourceManagementClient(self.credential, self.subscription)
        self.storage = StorageManagementClient(self.credential, self.subscription)
        self.web = WebSiteManagementClient(self.credential, self.subscription)
        self.monitor = MonitorManagementClient(self.credential, self.subscription)

    def endpoint(self) -> str:
        return f"https://management.azure.com/subscriptions/{self.subscription}/resourceGroups/{self.group}"

    def describe(self) -> dict[str, Any]:
        return {
            **super().describe(),
            "runtime": f"python{self.target.runtime}",
            "plan": "Consumption (Y1, Linux)",
        }

    # -- the run's shared resources -----------------------------------------------------------

    def _ensure_base(self) -> dict[str, Any]:
        if self._base is not None:
            return self._base
        loc, tags = self.target.region, self.target.tags()
        self.journal.creating("resource-group", self.group)
        self.api(
            "resourceGroups.createOrUpdate",
            lambda **p: self.resources.resource_groups.create_or_update(**p),
            None,
            resource_group_name=self.group,
            parameters={"location": loc, "tags": tags},
        )
        self.journal.creating("storage-account", self.account)
        self._lro(
            "storageAccounts.create",
            lambda **p: self.storage.storage_accounts.begin_create(**p),
            resource_group_name=self.group,
            account_name=self.account,
            parameters={
                "location": loc,
                "sku": {"name": "Standard_LRS"},
                "kind": "StorageV2",
                "tags": tags,
                "minimum_tls_version": "TLS1_2",
                "allow_blob_public_access": False,
            },
        )
        keys = self.api(
            "storageAccounts.listKeys",
            lambda **p: self.storage.storage_accounts.list_keys(**p),
            None,
            resource_group_name=self.group,
            account_name=self.account,
        )
        key = keys.keys[0].value if keys is not None else "<dry-run>"
        self.journal.creating("app-service-plan", self.plan)
        plan = self._lro(
            "serverfarms.createOrUpdate",
            lambda **p: self.web.app_service_plans.begin_create_or_update(**p),
            resource_group_name=self.group,
            name=self.plan,
            app_service_plan={
                "location": loc,
                "kind": "functionapp",
                "sku": {"name": "Y1", "tier": "Dynamic"},
                "reserved": True,
                "tags": tags,
            },
        )
        connection = (
            f"DefaultEndpointsProtocol=https;AccountName={self.account};AccountKey={key};"
            "EndpointSuffix=core.windows.net"
        )
        plan_id = plan.id if plan is not None else f"/subscriptions/{self.subscription}/.../{self.plan}"
        self._base = {"plan_id": plan_id, "storage": connection}
        return self._base

    def _lro(self, op: str, begin: Any, **params: Any) -> Any:
        poller = self.api(op, begin, None, **params)
        return poller.result(timeout=DEPLOY_TIMEOUT_S) if poller is not None else None

    # -- deployment ---------------------------------------------------------------------------

    def deploy(self, spec: FunctionSpec) -> dict[str, Any]:
        base = self._ensure_base()
        site = f"{self.target.prefix}-{self.suffix}-{spec.name}".lower()[:60].rstrip("-")
        code = find_function(spec.function, default_dirs())
        zipped = self.package(code)
        timeout = int(spec.timeout_s or self.default_timeout_s)
        settings = {
            "FUNCTIONS_EXTENSION_VERSION": "~4",
            "FUNCTIONS_WORKER_RUNTIME": "python",
            "AzureWebJobsStorage": base["storage"],
            "SCM_DO_BUILD_DURING_DEPLOYMENT": "true",
            "ENABLE_ORYX_BUILD": "true",
            "AzureFunctionsJobHost__functionTimeout": time.strftime("%H:%M:%S", time.gmtime(timeout)),
            "TESTBED_MEMORY_MB": str(INSTANCE_MB),
            "TESTBED_TIMEOUT_S": str(timeout),
            **spec.env,
        }
        self.journal.creating("function-app", site)
        self._lro(
            "sites.createOrUpdate",
            lambda **p: self.web.web_apps.begin_create_or_update(**p),
            resource_group_name=self.group,
            name=site,
            site_envelope={
                "location": self.target.region,
                "kind": "functionapp,linux",
                "server_farm_id": base["plan_id"],
                "reserved": True,
                "https_only": True,
                "tags": {**self.target.tags(), **spec.tags},
                "site_config": {
                    "linux_fx_version": f"Python|{spec.runtime or self.target.runtime}",
                    "app_settings": [{"name": k, "value": v} for k, v in settings.items()],
                    "ftps_state": "Disabled",
                },
            },
        )
        self._zip_deploy(site, zipped)
        key = self._function_key(site)
        self.deployed[spec.name] = {
            "name": site,
            "function": spec.function,
            "memory_mb": INSTANCE_MB,
            "timeout_s": timeout,
            "url": f"https://{site}.azurewebsites.net/api/{FUNCTION}",
            "key": key,
            "since": dt.datetime.now(dt.UTC),
        }
        shown = {k: v for k, v in self.deployed[spec.name].items() if k not in ("key", "since")}
        return {**shown, "platform": self.name}

    def _token(self) -> str:
        return self.credential.get_token(ARM_SCOPE).token

    def _zip_deploy(self, site: str, zipped: bytes) -> None:
        url = f"https://{site}.scm.azurewebsites.net/api/zipdeploy?isAsync=true"
        self.record("kudu zipdeploy", {"url": url, "zip": zipped})
        if self.dry_run:
            return
        auth = {"Authorization": f"Bearer {self._token()}"}
        resp = shim.http(self._local).post(
            url, data=zipped, headers={**auth, "Content-Type": "application/zip"}, timeout=300
        )
        if resp.status_code not in (200, 202):
            raise WorkloadError(f"zip deploy to {site}: HTTP {resp.status_code} {resp.text[:200]}")
        status_url = (
            resp.headers.get("Location") or f"https://{site}.scm.azurewebsites.net/api/deployments/latest"
        )
        end = time.monotonic() + DEPLOY_TIMEOUT_S
        while True:
            self.record("kudu deployments.latest", {"url": status_url})
            state = shim.http(self._local).get(status_url, headers=auth, timeout=60)
            body = state.json() if state.content else {}
            if body.get("complete") and body.get("status") == 4:
                return
            if body.get("complete") or body.get("status") == 3:
                raise WorkloadError(f"zip deploy to {site} failed: {body.get('message') or body}")
            if time.monotonic() > end:
                raise WorkloadError(f"zip deploy to {site} did not finish in {DEPLOY_TIMEOUT_S:.0f} s")
            time.sleep(2)

    def _function_key(self, site: str) -> str:
        """Sync the triggers, wait until the host lists the function, return the function key."""
        self.api(
            "sites.syncFunctionTriggers",
            lambda **p: self.web.web_apps.sync_function_triggers(**p),
            None,
            resource_group_name=self.group,
            name=site,
        )
        if self.dry_run:
            return "<dry-run>"
        end = time.monotonic() + INDEX_TIMEOUT_S
        while True:
            listed = self.read(
                "sites.listFunctions",
                lambda **p: list(self.web.web_apps.list_functions(**p)),
                resource_group_name=self.group,
                name=site,
            )
            if any(str(f.name).split("/")[-1] == FUNCTION for f in listed):
                break
            if time.monotonic() > end:
                raise WorkloadError(f"{site}: the function {FUNCTION} was not indexed in time")
            time.sleep(3)
        keys = self.read(
            "sites.listHostKeys",
            lambda **p: self.web.web_apps.list_host_keys(**p),
            resource_group_name=self.group,
            name=site,
        )
        return (keys.function_keys or {}).get("default") or keys.master_key

    # -- calls --------------------------------------------------------------------------------

    def invoke(self, name: str, event: Any) -> Call:
        dep = self._deployed(name)
        self.record("function invoke", {"url": dep["url"]})
        if self.dry_run:
            return Call(200, True, 0.0, inspector={"new_instance": False, "handler_s": 0.0})
        t0 = time.perf_counter()
        resp = shim.http(self._local).post(
            dep["url"],
            data=json.dumps(event),
            headers={"x-functions-key": dep["key"], "Content-Type": "application/json"},
            timeout=dep["timeout_s"] + 60,
        )
        rtt = time.perf_counter() - t0
        self.standin = resp.headers.get("X-Testbed-Standin") or self.standin
        try:
            envelope = resp.json()
        except ValueError:
            envelope = None
        rss = (
            ((envelope or {}).get("testbed") or {}).get("max_rss_bytes")
            if isinstance(envelope, dict)
            else None
        )
        billed_mb = rss / (1 << 20) if rss else INSTANCE_MB
        return shim.call(
            self, self.pricing, resp.status_code, envelope, resp.text, rtt, INSTANCE_MB, billed_mb
        )

    def settle(self, name: str, calls: list[Call], wait_s: float | None = None) -> dict[str, Any]:
        """Azure Monitor's FunctionExecutionCount and FunctionExecutionUnits (MB-ms) over the calls'
        minutes, waiting (``options.metrics_wait_s``, default 300 s) until the count covers them."""
        dep = self._deployed(name)
        if self.dry_run or not calls:
            return {}
        start = dep["since"].replace(second=0, microsecond=0)
        end = time.monotonic() + (
            wait_s if wait_s is not None else float(self.target.options.get("metrics_wait_s", 300))
        )
        group = f"/subscriptions/{self.subscription}/resourceGroups/{self.group}"
        rid = f"{group}/providers/Microsoft.Web/sites/{dep['name']}"
        while True:
            stop = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=1)
            span = f"{start.strftime('%Y-%m-%dT%H:%M:%SZ')}/{stop.strftime('%Y-%m-%dT%H:%M:%SZ')}"
            result = self.read(
                "metrics.list",
                lambda **p: self.monitor.metrics.list(**p),
                resource_uri=rid,
                timespan=span,
                interval="PT1M",
                metricnames="FunctionExecutionCount,FunctionExecutionUnits",
                aggregation="Total",
            )
            totals = {
                m.name.value: sum(d.total or 0.0 for ts in m.timeseries for d in ts.data)
                for m in result.value
            }
            count = totals.get("FunctionExecutionCount", 0.0)
            if count >= len(calls) or time.monotonic() > end:
                break
            time.sleep(15)
        units = totals.get("FunctionExecutionUnits", 0.0)
        return {
            "execution_count": count,
            "execution_units_mb_ms": units,
            "gb_seconds": units / 1024.0 / 1000.0,
            "timespan": span,
        }

    def cold(self, name: str | None, scope: str = "function") -> dict[str, Any]:
        names = [name] if name else list(self.deployed)
        for n in names:
            dep = self._deployed(n)
            self.api(
                "sites.restart",
                lambda **p: self.web.web_apps.restart(**p),
                None,
                resource_group_name=self.group,
                name=dep["name"],
            )
        return {"retired": len(names), "scope": "function", "host_scope": scope == "host" and "not available"}

    # -- deletion -----------------------------------------------------------------------------

    def delete(self, name: str) -> None:
        dep = self._deployed(name)
        self.api(
            "sites.delete",
            lambda **p: self.web.web_apps.delete(**p),
            None,
            resource_group_name=self.group,
            name=dep["name"],
        )
        self.journal.deleted("function-app", dep["name"])
        del self.deployed[name]

    def owned(self, run_id: str | None, now: float | None = None) -> list[Resource]:
        """The resource groups tagged as this toolkit's, of ``run_id`` or past their deadline."""
        flt = (
            f"tagName eq '{TAG_RUN}' and tagValue eq '{run_id}'"
            if run_id
            else f"tagName eq '{TAG_OWNER}' and tagValue eq '{OWNER}'"
        )
        groups = self.read(
            "resourceGroups.list", lambda **p: list(self.resources.resource_groups.list(**p)), filter=flt
        )
        found: list[Resource] = []
        for group in groups:
            if selected(group.tags or {}, run_id, now):
                found.append({"kind": "resource-group", "id": group.name})
        return found

    def remove(self, resource: Resource) -> None:
        if resource["kind"] != "resource-group":
            return
        self._lro(
            "resourceGroups.delete",
            lambda **p: self.resources.resource_groups.begin_delete(**p),
            resource_group_name=resource["id"],
        )
        self.journal.deleted("resource-group", resource["id"])
        if resource["id"] == self.group:  # everything in it went with it
            for kind in ("function-app", "app-service-plan", "storage-account"):
                for entry in self.journal.live():
                    if entry["kind"] == kind:
                        self.journal.deleted(kind, entry["id"])


def _subscription(target: Target) -> str:
    return str(target.options.get("subscription_id") or os.environ.get("AZURE_SUBSCRIPTION_ID") or "")
