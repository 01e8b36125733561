"""The ARM stand-in for fast tests: start it, and talk to it over HTTPS through its proxy with a
service principal's token, as the Azure SDKs do (urllib only: the project venv has no Azure SDK)."""

from __future__ import annotations

import json
import ssl
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from repotest import ROOT

AZURE_PY = ROOT / ".venv/azure/bin/python"
ARM = "https://management.azure.com"
LOGIN = "https://login.microsoftonline.com"
VM_API = "2024-07-01"


@contextmanager
def stand_in(work: Path, *args: str) -> Iterator[dict[str, Any]]:
    """The ARM stand-in (``args``: --seed, --hosts-per-location, --guest-root ...); yields its
    endpoint.json and stops it afterwards."""
    if not AZURE_PY.exists():
        raise AssertionError(".venv/azure is missing: `make test` installs it (make azure-deps)")
    work.mkdir(parents=True, exist_ok=True)
    cmd = [str(AZURE_PY), str(ROOT / "tests/azure/arm/server.py"), "--dir", str(work), *args]
    with (work / "server.log").open("w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 60
        while not (work / "endpoint.json").exists():
            if proc.poll() is not None or time.monotonic() > end:
                raise AssertionError((work / "server.log").read_text())
            time.sleep(0.1)
        yield json.loads((work / "endpoint.json").read_text())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class Client:
    """ARM REST calls with a bearer token from the stand-in's Entra ID, through its proxy."""

    def __init__(self, endpoint: dict[str, Any]) -> None:
        self.endpoint = endpoint
        context = ssl.create_default_context(cafile=endpoint["ca"])
        self.opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({"https": endpoint["proxy"]}),
            urllib.request.HTTPSHandler(context=context),
        )
        form = urllib.parse.urlencode(
            {
                "grant_type": "client_credentials",
                "client_id": endpoint["client_id"],
                "client_secret": endpoint["secret"],
                "scope": f"{ARM}/.default",
            }
        ).encode()
        _, _, body = self._send("POST", f"{LOGIN}/{endpoint['tenant']}/oauth2/v2.0/token", form, {})
        self.token = body["access_token"]
        self.base = f"/subscriptions/{endpoint['subscription_id']}"

    def _send(self, method: str, url: str, data: bytes | None, headers: dict) -> tuple[int, dict, Any]:
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with self.opener.open(request, timeout=30) as response:
                raw = response.read()
                return response.status, dict(response.headers), json.loads(raw) if raw else None
        except urllib.error.HTTPError as err:
            raw = err.read()
            return err.code, dict(err.headers), json.loads(raw) if raw else None

    def call(self, method: str, path: str, api: str, body: Any = None) -> tuple[int, dict, Any]:
        """One ARM request (``path`` below the subscription); Azure's errors raise AssertionError."""
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        data = json.dumps(body).encode() if body is not None else None
        status, head, out = self._send(method, f"{ARM}{self.base}{path}?api-version={api}", data, headers)
        if status >= 400:
            raise AssertionError(f"{method} {path}: {status} {out}")
        return status, head, out

    def wait(self, headers: dict) -> None:
        """Poll an Azure-AsyncOperation until it has succeeded."""
        url = headers.get("Azure-AsyncOperation") or headers.get("azure-asyncoperation")
        auth = {"Authorization": f"Bearer {self.token}"}
        for _ in range(600):
            _, _, body = self._send("GET", url, None, auth)
            if body["status"] != "InProgress":
                assert body["status"] == "Succeeded", body
                return
            time.sleep(0.1)
        raise AssertionError(f"operation {url} did not end")

    def settle(self, path: str, api: str) -> None:
        """Poll a resource until its provisioning state is Succeeded."""
        for _ in range(600):
            _, _, body = self.call("GET", path, api)
            if body["properties"].get("provisioningState", "Succeeded") == "Succeeded":
                return
            time.sleep(0.1)
        raise AssertionError(f"{path} stayed in {body['properties']['provisioningState']}")

    def create_vms(self, group: str, names: list[str], size: str = "Standard_D2as_v5") -> None:
        """A resource group, a network and one VM per name (each with its NIC), all provisioned."""
        rg = f"/resourceGroups/{group}"
        self.call("PUT", rg, "2021-04-01", {"location": "westeurope"})
        net = f"{rg}/providers/Microsoft.Network"
        vnet = {
            "location": "westeurope",
            "properties": {
                "addressSpace": {"addressPrefixes": ["10.77.0.0/16"]},
                "subnets": [{"name": "benchmarks", "properties": {"addressPrefix": "10.77.1.0/24"}}],
            },
        }
        self.call("PUT", f"{net}/virtualNetworks/vnet", "2024-05-01", vnet)
        self.settle(f"{net}/virtualNetworks/vnet", "2024-05-01")
        subnet = f"{self.base}{net}/virtualNetworks/vnet/subnets/benchmarks"
        for name in names:
            nic = {
                "location": "westeurope",
                "properties": {
                    "ipConfigurations": [{"name": "ip", "properties": {"subnet": {"id": subnet}}}]
                },
            }
            self.call("PUT", f"{net}/networkInterfaces/{name}-nic", "2024-05-01", nic)
            self.call("PUT", self.vm(group, name), VM_API, self._vm_body(name, size, f"{self.base}{net}"))
        for name in names:
            self.settle(self.vm(group, name), VM_API)

    @staticmethod
    def vm(group: str, name: str) -> str:
        return f"/resourceGroups/{group}/providers/Microsoft.Compute/virtualMachines/{name}"

    @staticmethod
    def _vm_body(name: str, size: str, net: str) -> dict[str, Any]:
        return {
            "location": "westeurope",
            "properties": {
                "hardwareProfile": {"vmSize": size},
                "storageProfile": {
                    "imageReference": {
                        "publisher": "Canonical",
                        "offer": "ubuntu-24_04-lts",
                        "sku": "server",
                        "version": "latest",
                    }
                },
                "osProfile": {"computerName": name, "adminUsername": "azureuser"},
                "networkProfile": {"networkInterfaces": [{"id": f"{net}/networkInterfaces/{name}-nic"}]},
            },
        }

    def action(self, group: str, name: str, action: str) -> None:
        """A VM's power action (redeploy, deallocate, start ...), waited for."""
        status, headers, _ = self.call("POST", f"{self.vm(group, name)}/{action}", VM_API)
        assert status == 202, status
        self.wait(headers)
