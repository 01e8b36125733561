"""The ARM stand-in's VM power actions, driven by the real azure-mgmt-compute SDK (its long-running
operation pollers) through the stand-in's proxy: each VM is placed on a simulated host, redeploy
moves it, restart keeps it, deallocate releases it, the guest's KVP pool file names the host in
hv_kvp_daemon's format, and what Azure refuses is refused in Azure's words."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from repotest import ROOT

from testbed_agent.sysinfo import identity

pytestmark = [pytest.mark.slow, pytest.mark.integration]
AZURE_PY = ROOT / ".venv/azure/bin/python"

CLIENT = r"""
import json, sys
from azure.core.exceptions import HttpResponseError
from azure.identity import ClientSecretCredential
from azure.mgmt.compute import ComputeManagementClient
from azure.mgmt.network import NetworkManagementClient
from azure.mgmt.resource import ResourceManagementClient

ep = json.load(open(sys.argv[1]))
cred = ClientSecretCredential(ep["tenant"], ep["client_id"], ep["secret"])
sub = ep["subscription_id"]
poll = {"polling_interval": 0.2}
rg, loc = "testbed-actions", "westeurope"
ResourceManagementClient(cred, sub).resource_groups.create_or_update(rg, {"location": loc})
net = NetworkManagementClient(cred, sub)
vnet = net.virtual_networks.begin_create_or_update(rg, "vnet", {"location": loc,
    "address_space": {"address_prefixes": ["10.77.0.0/16"]},
    "subnets": [{"name": "benchmarks", "address_prefix": "10.77.1.0/24"}]}, **poll).result()
nic = net.network_interfaces.begin_create_or_update(rg, "vm1-nic", {"location": loc,
    "ip_configurations": [{"name": "ipconfig1", "subnet": {"id": vnet.subnets[0].id}}]}, **poll).result()
compute = ComputeManagementClient(cred, sub)
vms = compute.virtual_machines
vms.begin_create_or_update(rg, "vm1", {"location": loc,
    "hardware_profile": {"vm_size": "Standard_D2as_v5"},
    "storage_profile": {"image_reference": {"publisher": "Canonical", "offer": "ubuntu-24_04-lts",
                                            "sku": "server", "version": "latest"}},
    "os_profile": {"computer_name": "vm1", "admin_username": "azureuser",
                   "linux_configuration": {"disable_password_authentication": True,
                       "ssh": {"public_keys": [{"path": "/home/azureuser/.ssh/authorized_keys",
                                                "key_data": "ssh-ed25519 AAAA test"}]}}},
    "network_profile": {"network_interfaces": [{"id": nic.id}]}}, **poll).result()

def power():
    return [s.code for s in vms.instance_view(rg, "vm1").statuses if s.code.startswith("PowerState/")][0]

out = {"created": power()}
for step in ("redeploy", "restart", "deallocate", "start", "power_off", "start"):
    getattr(vms, "begin_" + step)(rg, "vm1", **poll).result()
    out[step + "_" + str(len(out))] = power()
vms.begin_deallocate(rg, "vm1", **poll).result()
errors = {}
try:
    vms.begin_restart(rg, "vm1", **poll).result()
except HttpResponseError as exc:
    errors["restart_deallocated"] = f"{exc.status_code} {exc.error.code}: {exc.error.message}"
try:
    vms.begin_deallocate(rg, "vm1", hibernate=True, **poll).result()
except HttpResponseError as exc:
    errors["hibernate"] = f"{exc.status_code} {exc.error.code}"
try:
    vms.begin_start(rg, "nope", **poll).result()
except HttpResponseError as exc:
    errors["missing"] = f"{exc.status_code} {exc.error.code}"
vms.begin_start(rg, "vm1", **poll).result()
poller = vms.begin_redeploy(rg, "vm1", **poll)
try:
    vms.begin_restart(rg, "vm1", **poll).result()
except HttpResponseError as exc:
    errors["busy"] = f"{exc.status_code} {exc.error.code}"
poller.result()
out["errors"] = errors
print(json.dumps(out))
"""


@pytest.fixture
def stand_in(tmp_path: Path):
    if not AZURE_PY.exists():
        pytest.fail(".venv/azure is missing: `make test` installs it (make azure-deps)")
    work = tmp_path / "arm"
    work.mkdir()
    args = [str(AZURE_PY), str(ROOT / "tests/azure/arm/server.py"), "--dir", str(work)]
    args += ["--seed", "7", "--hosts-per-location", "3", "--guest-root", str(tmp_path / "guests")]
    with (work / "server.log").open("w") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 60
        while not (work / "endpoint.json").exists():
            assert proc.poll() is None and time.monotonic() < end, (work / "server.log").read_text()
            time.sleep(0.1)
        yield work, json.loads((work / "endpoint.json").read_text())
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _stats(endpoint: dict) -> dict:
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(endpoint["proxy"] + "/_rehearsal/stats", timeout=10) as response:
        return json.loads(response.read())


def test_power_actions_move_the_vm_between_simulated_hosts(stand_in, tmp_path: Path) -> None:
    work, endpoint = stand_in
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env |= {"HTTPS_PROXY": endpoint["proxy"], "NO_PROXY": "127.0.0.1", "REQUESTS_CA_BUNDLE": endpoint["ca"]}
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    done = subprocess.run(
        [str(AZURE_PY), str(script), str(work / "endpoint.json")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["created"] == "PowerState/running"
    assert out["deallocate_3"] == "PowerState/deallocated"
    assert out["power_off_5"] == "PowerState/stopped"
    assert out["start_6"] == "PowerState/running"
    errors = out["errors"]
    assert errors["restart_deallocated"] == (
        "409 OperationNotAllowed: The operation requires the VM to be running (or set to run)."
    )
    assert errors["hibernate"] == "409 OperationNotAllowed"
    assert errors["missing"] == "404 ResourceNotFound"
    assert errors["busy"] == "409 Conflict"

    s = _stats(endpoint)
    log = [(p["why"], p["host"]) for p in s["placements"]]
    whys = [w for w, _ in log]
    assert whys == ["create", "redeploy", "restart", "start", "start", "start", "redeploy"]
    hosts = [h for _, h in log]
    assert hosts[1] != hosts[0]  # redeploy moves the VM
    assert hosts[2] == hosts[1]  # restart keeps it
    assert hosts[4] == hosts[3]  # a start after powerOff (still allocated) keeps it
    assert hosts[6] != hosts[5]
    assert set(hosts) <= {"SIM-WESTEUROPE-001", "SIM-WESTEUROPE-002", "SIM-WESTEUROPE-003"}
    assert s["actions"] == {"start": 3, "deallocate": 2, "redeploy": 2, "restart": 1, "powerOff": 1}

    # The guest reads its host the way a real agent does: the KVP pool of its last placement.
    pool = tmp_path / "guests/vm1/.kvp_pool_3"
    pairs, ignored = identity.read_kvp_pool(pool)
    assert ignored is None
    assert pairs["PhysicalHostNameFullyQualified"] == hosts[-1]
    assert pool.stat().st_size == 16 * 2560
