"""Filters of the azure_vm role: ARM request bodies, vCPU counts, teardown plans.

Pure functions (no Azure SDK, no network), so tests can import and check them directly.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any

#: ARM API versions the role sends, by resource type (lower case).
API_VERSIONS = {
    "microsoft.resources/resourcegroups": "2021-04-01",
    "microsoft.compute/virtualmachines": "2024-07-01",
    "microsoft.compute/disks": "2024-03-02",
    "microsoft.network/networkinterfaces": "2024-05-01",
    "microsoft.network/publicipaddresses": "2024-05-01",
    "microsoft.network/networksecuritygroups": "2024-05-01",
    "microsoft.network/virtualnetworks": "2024-05-01",
    "microsoft.devtestlab/schedules": "2018-09-15",
}

#: Deletion order for resources outside a run-owned resource group: dependants first.
DELETE_ORDER = (
    "microsoft.devtestlab/schedules",
    "microsoft.compute/virtualmachines",
    "microsoft.network/networkinterfaces",
    "microsoft.network/publicipaddresses",
    "microsoft.compute/disks",
    "microsoft.network/networksecuritygroups",
    "microsoft.network/virtualnetworks",
)

ENCRYPTION_TYPES = ("VMGuestStateOnly", "DiskWithVMGuestState", "NonPersistedTPM")
SECURITY_TYPES = ("ConfidentialVM", "TrustedLaunch", "Standard")

_SIZE = re.compile(r"^(?:Standard|Basic)_[A-Za-z]+?(\d+)(?:-(\d+))?[a-z]*(?:_v\d+)?$")


def azure_vm_vcpus(size: str) -> int:
    """vCPUs of an Azure size from its name (Standard_DC4as_v5 -> 4, Standard_E8-2as_v5 -> 2)."""
    match = _SIZE.match(str(size))
    if not match:
        raise ValueError(
            f"cannot read the vCPU count from the VM size {size!r} (expected e.g. Standard_DC4as_v5)"
        )
    return int(match.group(2) or match.group(1))


def azure_vm_total_vcpus(sizes: list[str]) -> int:
    """Sum of the vCPUs of several sizes."""
    return sum(azure_vm_vcpus(s) for s in sizes)


def azure_vm_body(p: dict[str, Any]) -> dict[str, Any]:
    """The body of the ARM PUT that creates (or re-asserts) one virtual machine.

    ``p`` keys: location, size, security_type, encryption_type, secure_boot, vtpm, image (dict of
    publisher/offer/sku/version), admin_username, ssh_public_key, nic_id, os_disk_name,
    os_disk_type, os_disk_size_gb, encryption_at_host, tags, computer_name, extra_properties
    (merged into properties as given).
    """
    security_type = p["security_type"]
    if security_type not in SECURITY_TYPES:
        raise ValueError(f"security type {security_type!r} is not one of {', '.join(SECURITY_TYPES)}")
    managed_disk: dict[str, Any] = {"storageAccountType": p["os_disk_type"]}
    properties: dict[str, Any] = {
        "hardwareProfile": {"vmSize": p["size"]},
        "storageProfile": {
            "imageReference": dict(p["image"]),
            "osDisk": {
                "name": p["os_disk_name"],
                "createOption": "FromImage",
                "caching": "ReadWrite",
                "deleteOption": "Delete",
                "diskSizeGB": int(p["os_disk_size_gb"]),
                "managedDisk": managed_disk,
            },
        },
        "osProfile": {
            "computerName": p["computer_name"],
            "adminUsername": p["admin_username"],
            "linuxConfiguration": {
                "disablePasswordAuthentication": True,
                "ssh": {
                    "publicKeys": [
                        {
                            "path": f"/home/{p['admin_username']}/.ssh/authorized_keys",
                            "keyData": p["ssh_public_key"].strip(),
                        }
                    ]
                },
            },
        },
        "networkProfile": {
            "networkInterfaces": [
                {"id": p["nic_id"], "properties": {"primary": True, "deleteOption": "Delete"}},
            ]
        },
        "diagnosticsProfile": {"bootDiagnostics": {"enabled": True}},
    }
    security: dict[str, Any] = {}
    if security_type != "Standard":
        security["securityType"] = security_type
        security["uefiSettings"] = {
            "secureBootEnabled": bool(p["secure_boot"]),
            "vTpmEnabled": bool(p["vtpm"]),
        }
    if security_type == "ConfidentialVM":
        encryption = p["encryption_type"]
        if encryption not in ENCRYPTION_TYPES:
            raise ValueError(f"encryption type {encryption!r} is not one of {', '.join(ENCRYPTION_TYPES)}")
        if not p["vtpm"]:
            raise ValueError("a ConfidentialVM needs the vTPM (azure_vm_vtpm: true)")
        managed_disk["securityProfile"] = {"securityEncryptionType": encryption}
    if p.get("encryption_at_host"):
        security["encryptionAtHost"] = True
    if security:
        properties["securityProfile"] = security
    _merge(properties, p.get("extra_properties") or {})
    return {"location": p["location"], "tags": _string_tags(p.get("tags") or {}), "properties": properties}


def _merge(into: dict[str, Any], extra: dict[str, Any]) -> None:
    """Deep-merge ``extra`` into ``into`` (dicts merged key by key, anything else replaced)."""
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def _string_tags(tags: dict[str, Any]) -> dict[str, str]:
    out = {}
    for key, value in tags.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        out[str(key)] = text[:256]
    return out


def azure_vm_tags(tags: dict[str, Any]) -> dict[str, str]:
    """Tags as ARM wants them: string values (booleans as true/false), at most 256 characters."""
    return _string_tags(tags)


def _rg_of(resource_id: str) -> str:
    parts = resource_id.split("/")
    lowered = [x.lower() for x in parts]
    return parts[lowered.index("resourcegroups") + 1].lower() if "resourcegroups" in lowered else ""


def azure_vm_teardown_plan(
    groups: list[dict[str, Any]], resources: list[dict[str, Any]], run_id: str
) -> list[dict[str, Any]]:
    """The DELETE requests that remove exactly what run ``run_id`` created, in a safe order.

    ``groups``: resource groups ({id, name, tags}); ``resources``: resources ({id, type, tags}).
    Only items whose ``testbed_run`` tag equals ``run_id`` are deleted. A tagged resource group goes
    whole (with everything in it); tagged resources elsewhere go one by one, dependants first.
    """
    run_id = str(run_id)
    if not run_id:
        raise ValueError("teardown needs a run id (the testbed_run tag value)")
    plan: list[dict[str, Any]] = []
    doomed_groups = set()
    for group in groups:
        if (group.get("tags") or {}).get("testbed_run") == run_id:
            doomed_groups.add(str(group["name"]).lower())
            plan.append(
                {
                    "method": "DELETE",
                    "url": group["id"],
                    "type": "Microsoft.Resources/resourceGroups",
                    "api_version": API_VERSIONS["microsoft.resources/resourcegroups"],
                }
            )
    mine = [
        r
        for r in resources
        if (r.get("tags") or {}).get("testbed_run") == run_id and _rg_of(r["id"]) not in doomed_groups
    ]

    def rank(resource: dict[str, Any]) -> int:
        kind = str(resource.get("type", "")).lower()
        return DELETE_ORDER.index(kind) if kind in DELETE_ORDER else len(DELETE_ORDER)

    for resource in sorted(mine, key=lambda r: (rank(r), r["id"])):
        kind = str(resource.get("type", ""))
        plan.append(
            {
                "method": "DELETE",
                "url": resource["id"],
                "type": kind,
                "api_version": API_VERSIONS.get(kind.lower(), "2021-04-01"),
            }
        )
    return plan


def azure_vm_teardown_plan_for(
    run_id: str, groups: list[dict[str, Any]], resources: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """``azure_vm_teardown_plan`` with the run id first (for Jinja's ``map``)."""
    return azure_vm_teardown_plan(groups, resources, run_id)


def azure_vm_expired(groups: list[dict[str, Any]], now: str) -> list[dict[str, Any]]:
    """Resource groups made by the testbed (tag testbed=true) whose testbed_deadline has passed."""
    current = _parse_time(now)
    out = []
    for group in groups:
        tags = group.get("tags") or {}
        if tags.get("testbed") != "true" or not tags.get("testbed_deadline"):
            continue
        try:
            deadline = _parse_time(tags["testbed_deadline"])
        except ValueError:
            continue
        if deadline <= current:
            out.append(group)
    return out


def _parse_time(text: str) -> datetime:
    value = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def azure_vm_hours_until(deadline: str, now: str) -> float:
    """Hours from ``now`` to ``deadline`` (negative when the deadline has passed)."""
    return (_parse_time(deadline) - _parse_time(now)).total_seconds() / 3600.0


def azure_vm_cost(prices: list[Any], hours: Any, cap: Any = 0) -> float:
    """The worst-case cost of machines at ``prices`` (per machine-hour) running ``hours``; each
    price a finite number >= 0, ``hours`` too, and ``cap`` (azure_vm_max_cost, 0 = none) finite >= 0."""
    for what, value in [
        *(("azure_vm_hour_price", p) for p in prices),
        ("hours", hours),
        ("azure_vm_max_cost", cap),
    ]:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or number < 0:
            raise ValueError(f"{what} {value!r} is not a finite number >= 0")
    return sum(float(p) for p in prices) * float(hours)


def azure_vm_hhmm(deadline: str) -> str:
    """The UTC time of day of a deadline as HHMM (Azure auto-shutdown's dailyRecurrence.time)."""
    return _parse_time(deadline).astimezone(UTC).strftime("%H%M")


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {
            "azure_vm_vcpus": azure_vm_vcpus,
            "azure_vm_cost": azure_vm_cost,
            "azure_vm_total_vcpus": azure_vm_total_vcpus,
            "azure_vm_body": azure_vm_body,
            "azure_vm_tags": azure_vm_tags,
            "azure_vm_teardown_plan": azure_vm_teardown_plan,
            "azure_vm_teardown_plan_for": azure_vm_teardown_plan_for,
            "azure_vm_expired": azure_vm_expired,
            "azure_vm_hours_until": azure_vm_hours_until,
            "azure_vm_hhmm": azure_vm_hhmm,
        }
