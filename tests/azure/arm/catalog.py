"""What the ARM stand-in serves: resource types with their SDK models and API versions, VM sizes
per location, regional vCPU quotas, and the rules Azure applies to confidential VMs."""

from __future__ import annotations

import importlib
import re
from types import ModuleType
from typing import Any

from validate import ArmError

# type (lower case) -> (models module, model class, API versions Azure accepts for it here).
# azure-mgmt-network 28 ships one model set (API 2024-03-01); 2024-05-01 has the same shapes.
TYPES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "resourcegroups": (
        "azure.mgmt.resource.resources.v2022_09_01.models",
        "ResourceGroup",
        ("2021-04-01", "2022-09-01"),
    ),
    "microsoft.network/publicipaddresses": (
        "azure.mgmt.network.models",
        "PublicIPAddress",
        ("2024-03-01", "2024-05-01"),
    ),
    "microsoft.network/networkinterfaces": (
        "azure.mgmt.network.models",
        "NetworkInterface",
        ("2024-03-01", "2024-05-01"),
    ),
    "microsoft.network/virtualnetworks": (
        "azure.mgmt.network.models",
        "VirtualNetwork",
        ("2024-03-01", "2024-05-01"),
    ),
    "microsoft.network/networksecuritygroups": (
        "azure.mgmt.network.models",
        "NetworkSecurityGroup",
        ("2024-03-01", "2024-05-01"),
    ),
    "microsoft.compute/virtualmachines": (
        "azure.mgmt.compute.v2024_07_01.models",
        "VirtualMachine",
        ("2024-07-01",),
    ),
    "microsoft.devtestlab/schedules": ("azure.mgmt.devtestlabs.models", "Schedule", ("2018-09-15",)),
    # Azure Functions (web.py): the API versions azure-mgmt-web 7.3.1 and azure-mgmt-storage 21.2.1 send
    "microsoft.web/sites": ("azure.mgmt.web.v2023_12_01.models", "Site", ("2023-12-01",)),
    "microsoft.web/serverfarms": ("azure.mgmt.web.v2023_12_01.models", "AppServicePlan", ("2023-12-01",)),
    "microsoft.storage/storageaccounts": (
        "azure.mgmt.storage.v2023_05_01.models",
        "StorageAccountCreateParameters",
        ("2023-05-01",),
    ),
}

# Sizes each location offers (regular expressions), and the regional vCPU quota. northeurope's
# tiny quota is what the failure rehearsal uses to get Azure's quota error.
OFFERS = r"Standard_(D|DC|EC)[0-9]+(a|e)?(d)?s?_v5"
LOCATIONS: dict[str, dict[str, Any]] = {
    "westeurope": {"sizes": OFFERS, "quota": 64},
    "northeurope": {"sizes": OFFERS, "quota": 2},
    "uksouth": {"sizes": r"Standard_D[0-9]+a?s_v5", "quota": 64},
}


def model_of(rtype: str, api_version: str) -> tuple[ModuleType, type]:
    """The SDK models module and class that validate a PUT of ``rtype`` at ``api_version``."""
    if rtype not in TYPES:
        raise ArmError(
            400, "InvalidResourceType", f"The resource type '{rtype}' could not be found in the namespace."
        )
    module, cls, versions = TYPES[rtype]
    if api_version not in versions:
        raise ArmError(
            400,
            "NoRegisteredProviderFound",
            f"No registered resource provider found for API version '{api_version}' and type '{rtype}'. "
            f"The supported api-versions are '{', '.join(versions)}'.",
        )
    models = importlib.import_module(module)
    return models, getattr(models, cls)


def vcpus(size: str) -> int:
    """vCPUs of an Azure size name (Standard_DC4as_v5 -> 4)."""
    found = re.match(r"Standard_[A-Z]+?([0-9]+)", size)
    return int(found.group(1)) if found else 0


def check_size(size: str, location: str, used: int) -> None:
    """Azure's SkuNotAvailable and quota errors for one more VM of ``size`` in ``location``."""
    offer = LOCATIONS.get(location)
    if offer is None:
        raise ArmError(
            400,
            "LocationNotAvailableForResourceType",
            f"The provided location '{location}' is not available for resource type "
            "'Microsoft.Compute/virtualMachines'.",
        )
    if not re.fullmatch(offer["sizes"], size):
        raise ArmError(
            409,
            "SkuNotAvailable",
            "The requested VM size for resource 'Following SKUs have failed for Capacity Restrictions: "
            f"{size}' is currently not available in location '{location}'. Please try another size or "
            "deploy to a different location or different zone.",
        )
    need = vcpus(size)
    if used + need > offer["quota"]:
        raise ArmError(
            409,
            "OperationNotAllowed",
            "Operation could not be completed as it results in exceeding approved Total Regional Cores "
            f"quota. Additional details - Deployment Model: Resource Manager, Location: {location}, "
            f"Current Limit: {offer['quota']}, Current Usage: {used}, Additional Required: {need}, "
            f"(Minimum) New Limit Required: {used + need}.",
        )


def check_confidential(body: dict[str, Any]) -> None:
    """Azure's rules for securityType ConfidentialVM (uefiSettings with vTPM, disk encryption type)."""
    props = body.get("properties") or {}
    security = props.get("securityProfile") or {}
    disk = ((props.get("storageProfile") or {}).get("osDisk") or {}).get("managedDisk") or {}
    encryption = (disk.get("securityProfile") or {}).get("securityEncryptionType")
    if security.get("securityType") != "ConfidentialVM":
        if encryption:
            raise ArmError(
                400,
                "InvalidParameter",
                "securityEncryptionType can be set only for Confidential VMs.",
                "securityEncryptionType",
            )
        return
    uefi = security.get("uefiSettings")
    if not uefi or not uefi.get("vTpmEnabled"):
        raise ArmError(
            400,
            "InvalidParameter",
            "Use of Confidential VMs requires uefiSettings with vTpmEnabled set to true.",
            "uefiSettings",
        )
    if not encryption:
        raise ArmError(
            400,
            "InvalidParameter",
            "Required parameter 'securityEncryptionType' is missing (null).",
            "securityEncryptionType",
        )
    size = (props.get("hardwareProfile") or {}).get("vmSize", "")
    if not re.match(r"Standard_[DE]C[0-9]+", size):
        raise ArmError(
            400,
            "BadRequest",
            f"The VM size '{size}' is not supported for creation of VMs with Confidential security type.",
        )
