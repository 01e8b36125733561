"""roles/azure_vm filters: vCPU counts, ARM VM bodies, teardown plans, expired groups."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    path = ROOT / "roles/azure_vm/filter_plugins/azure_vm_arm.py"
    spec = importlib.util.spec_from_file_location("azure_vm_arm", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


arm = _load()
SUB = "/subscriptions/00000000-0000-0000-0000-000000000000"


@pytest.mark.parametrize(
    ("size", "vcpus"),
    [
        ("Standard_DC4as_v5", 4),
        ("Standard_DC96es_v5", 96),
        ("Standard_D4s_v5", 4),
        ("Standard_EC2ads_v5", 2),
        ("Standard_E8-2as_v5", 2),
        ("Standard_DC16ads_v6", 16),
        ("Standard_D2as_v5", 2),
    ],
)
def test_vcpus_from_size_name(size: str, vcpus: int) -> None:
    assert arm.azure_vm_vcpus(size) == vcpus


def test_unreadable_size_is_refused() -> None:
    with pytest.raises(ValueError, match="vCPU count"):
        arm.azure_vm_vcpus("DC4as_v5")


def _params(**over: Any) -> dict[str, Any]:
    params = {
        "location": "westeurope",
        "size": "Standard_DC4es_v5",
        "security_type": "ConfidentialVM",
        "encryption_type": "DiskWithVMGuestState",
        "secure_boot": True,
        "vtpm": True,
        "encryption_at_host": False,
        "image": {"publisher": "Canonical", "offer": "ubuntu-24_04-lts", "sku": "cvm", "version": "latest"},
        "admin_username": "azureuser",
        "ssh_public_key": "ssh-ed25519 AAAA k\n",
        "nic_id": f"{SUB}/x/nic",
        "os_disk_name": "tdx-enc-1-osdisk",
        "os_disk_type": "Premium_LRS",
        "os_disk_size_gb": "64",
        "computer_name": "tdx-enc-1",
        "tags": {"testbed": True, "testbed_run": "r1"},
    }
    params.update(over)
    return params


def test_confidential_vm_body() -> None:
    body = arm.azure_vm_body(_params())
    props = body["properties"]
    assert props["securityProfile"] == {
        "securityType": "ConfidentialVM",
        "uefiSettings": {"secureBootEnabled": True, "vTpmEnabled": True},
    }
    disk = props["storageProfile"]["osDisk"]
    assert disk["managedDisk"] == {
        "storageAccountType": "Premium_LRS",
        "securityProfile": {"securityEncryptionType": "DiskWithVMGuestState"},
    }
    assert disk["diskSizeGB"] == 64 and disk["deleteOption"] == "Delete"
    assert props["hardwareProfile"] == {"vmSize": "Standard_DC4es_v5"}
    assert props["osProfile"]["linuxConfiguration"]["ssh"]["publicKeys"][0]["keyData"] == "ssh-ed25519 AAAA k"
    assert body["tags"] == {"testbed": "true", "testbed_run": "r1"}


def test_standard_twin_has_no_security_profile() -> None:
    body = arm.azure_vm_body(_params(security_type="Standard", size="Standard_D4s_v5"))
    assert "securityProfile" not in body["properties"]
    assert "securityProfile" not in body["properties"]["storageProfile"]["osDisk"]["managedDisk"]
    trusted = arm.azure_vm_body(_params(security_type="TrustedLaunch", encryption_at_host=True))
    assert trusted["properties"]["securityProfile"] == {
        "securityType": "TrustedLaunch",
        "encryptionAtHost": True,
        "uefiSettings": {"secureBootEnabled": True, "vTpmEnabled": True},
    }


def test_bad_confidential_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="encryption type 'Everything'"):
        arm.azure_vm_body(_params(encryption_type="Everything"))
    with pytest.raises(ValueError, match="vTPM"):
        arm.azure_vm_body(_params(vtpm=False))
    with pytest.raises(ValueError, match="security type"):
        arm.azure_vm_body(_params(security_type="Confidential"))


def _res(rg: str, kind: str, name: str, run: str | None) -> dict[str, Any]:
    provider, rtype = kind.split("/")
    return {
        "id": f"{SUB}/resourceGroups/{rg}/providers/{provider}/{rtype}/{name}",
        "type": kind,
        "tags": {"testbed_run": run} if run else {},
    }


def test_teardown_plan_deletes_exactly_the_run() -> None:
    groups = [
        {"id": f"{SUB}/resourceGroups/testbed-r1", "name": "testbed-r1", "tags": {"testbed_run": "r1"}},
        {"id": f"{SUB}/resourceGroups/testbed-r2", "name": "testbed-r2", "tags": {"testbed_run": "r2"}},
        {"id": f"{SUB}/resourceGroups/prod", "name": "prod", "tags": {}},
    ]
    resources = [
        _res("testbed-r1", "Microsoft.Compute/virtualMachines", "sev-1", "r1"),  # goes with its group
        _res("shared", "Microsoft.Network/virtualNetworks", "vnet", "r1"),
        _res("shared", "Microsoft.Compute/disks", "d", "r1"),
        _res("shared", "Microsoft.Network/networkInterfaces", "nic", "r1"),
        _res("shared", "Microsoft.Compute/virtualMachines", "vm", "r1"),
        _res("shared", "Microsoft.Compute/virtualMachines", "other", "r2"),
        _res("shared", "Microsoft.Compute/virtualMachines", "untagged", None),
    ]
    plan = arm.azure_vm_teardown_plan(groups, resources, "r1")
    assert [p["url"].split("/", 3)[-1] for p in plan] == [
        "resourceGroups/testbed-r1",
        "resourceGroups/shared/providers/Microsoft.Compute/virtualMachines/vm",
        "resourceGroups/shared/providers/Microsoft.Network/networkInterfaces/nic",
        "resourceGroups/shared/providers/Microsoft.Compute/disks/d",
        "resourceGroups/shared/providers/Microsoft.Network/virtualNetworks/vnet",
    ]
    assert {p["method"] for p in plan} == {"DELETE"}
    assert plan[0]["api_version"] == "2021-04-01" and plan[1]["api_version"] == "2024-07-01"
    assert arm.azure_vm_teardown_plan(groups, resources, "r9") == []
    with pytest.raises(ValueError, match="run id"):
        arm.azure_vm_teardown_plan(groups, resources, "")


def test_expired_groups_and_deadline_helpers() -> None:
    groups = [
        {"name": "a", "tags": {"testbed": "true", "testbed_deadline": "2026-01-01T10:00:00Z"}},
        {"name": "b", "tags": {"testbed": "true", "testbed_deadline": "2026-01-01T14:00:00Z"}},
        {"name": "c", "tags": {"testbed_deadline": "2020-01-01T00:00:00Z"}},  # not the testbed's
        {"name": "d", "tags": {"testbed": "true", "testbed_deadline": "soon"}},
        {"name": "e", "tags": None},
    ]
    assert [g["name"] for g in arm.azure_vm_expired(groups, "2026-01-01T12:00:00Z")] == ["a"]
    assert arm.azure_vm_hours_until("2026-01-01T14:00:00Z", "2026-01-01T12:00:00Z") == pytest.approx(2.0)
    assert arm.azure_vm_hhmm("2026-01-01T14:05:00+01:00") == "1305"


def test_cost_estimate_is_prices_times_hours_and_refuses_what_is_no_price() -> None:
    assert arm.azure_vm_cost([0.5, 1.25, 0], 4) == pytest.approx(7.0)
    assert arm.azure_vm_cost([], 4) == 0
    for prices, hours, cap, word in (
        ([float("nan")], 1, 0, "azure_vm_hour_price nan"),
        ([-1], 1, 0, "azure_vm_hour_price -1"),
        (["two"], 1, 0, "azure_vm_hour_price 'two'"),
        ([1], float("inf"), 0, "hours inf"),
        ([1], 1, -5, "azure_vm_max_cost -5"),
    ):
        with pytest.raises(ValueError, match=word):
            arm.azure_vm_cost(prices, hours, cap)
