"""The resources of the ARM stand-in: PUT/GET/DELETE with provisioning states that advance with
time, long-running operations, reference checks, tags, listings and counts for the rehearsal; the
power actions of virtual machines (start, deallocate, redeploy, restart, powerOff) and their
instance view, with each VM placed on a simulated physical host (hosts.py)."""

from __future__ import annotations

import copy
import json
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import catalog
from hosts import Hosts
from validate import ArmError, check

MACHINE = "microsoft.compute/virtualmachines"
# Seconds a PUT stays Creating/Updating and a DELETE stays Deleting (the client must poll). Azure
# answers most network PUTs with 201 "Updating" too; here only the shared ones are slow, so each
# rehearsal machine costs one poll (its VM) and the run's network another.
CREATE_S = {
    MACHINE: 2.0,
    "microsoft.network/virtualnetworks": 0.5,
    "microsoft.network/networksecuritygroups": 0.5,
    "microsoft.storage/storageaccounts": 1.0,
}
#: types whose creation Azure answers 202 Accepted (no body; poll the Location) instead of 201
ACCEPTED = {"microsoft.storage/storageaccounts"}
#: types whose (synchronous) creation Azure answers 200 OK: App Service's
CREATED_OK = {"microsoft.web/serverfarms", "microsoft.web/sites"}
#: types whose deletion is synchronous (200 OK, no operation to poll; the SDKs' delete() accepts
#: only 200/204 for them): App Service's, and storage accounts
DELETED_OK = {"microsoft.web/serverfarms", "microsoft.web/sites", "microsoft.storage/storageaccounts"}
DEFAULT_CREATE_S = 0.0
DELETE_S = 1.0
#: a VM's power actions (the URL's last segment, lower case) -> (Azure's spelling, seconds it takes)
ACTIONS = {
    "start": ("start", 1.0),
    "deallocate": ("deallocate", 1.0),
    "redeploy": ("redeploy", 2.0),
    "restart": ("restart", 1.0),
    "poweroff": ("powerOff", 1.0),
}
#: boolean query parameters an action takes (azure-mgmt-compute's begin_deallocate, begin_power_off)
ACTION_FLAGS = {"deallocate": "hibernate", "poweroff": "skipShutdown"}
#: power state while an action runs, and after it
POWER_DURING = {
    "start": "starting",
    "deallocate": "deallocating",
    "redeploy": "starting",
    "restart": "starting",
    "poweroff": "stopping",
}
POWER_AFTER = {
    "start": "running",
    "deallocate": "deallocated",
    "redeploy": "running",
    "restart": "running",
    "poweroff": "stopped",
}


def _type_of(rid: str) -> tuple[str, str]:
    """(resource type in lower case, proper-case type) of a resource id."""
    parts = rid.strip("/").split("/")
    if len(parts) == 4:
        return "resourcegroups", "Microsoft.Resources/resourceGroups"
    proper = f"{parts[5]}/{parts[6]}"
    return proper.lower(), proper


class Arm:
    """All resources of one subscription, guarded by one lock."""

    def __init__(self, subscription: str, address_pool: list[str], hosts: Hosts | None = None) -> None:
        self.subscription = subscription
        self.hosts = hosts or Hosts(seed=1, per_location=16, same_host_p=0.25, guest_root=None)
        self.items: dict[str, dict[str, Any]] = {}
        self.ops: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        self.free_addresses = list(address_pool)
        self.counts = {"requests": 0, "machines_created": 0, "machines_deleted": 0}
        self.actions = {spelling: 0 for spelling, _ in ACTIONS.values()}
        #: the Azure Functions data plane (web.Web), when the server serves it
        self.web: Any = None

    # --- time ------------------------------------------------------------------------------
    def settle(self) -> None:
        """Finish the operations whose time has come (deletions remove their resources)."""
        now = time.monotonic()
        for op in self.ops.values():
            if op["status"] == "InProgress" and now >= op["done_at"]:
                op["status"] = "Succeeded"
                item = self.items.get(op["rid"].lower())
                if item is not None:  # the instance view stamps the provisioning state's change
                    item["changed_at"] = datetime.now(UTC).isoformat()
                if op["kind"] == "delete":
                    self._remove(op["rid"])
                elif op["kind"] == "action":
                    self._finish_action(op)

    def _remove(self, rid: str) -> None:
        key = rid.lower()
        doomed = [k for k in self.items if k == key or k.startswith(key + "/")]
        for k in doomed:
            item = self.items.pop(k)
            if self.web is not None and item["rtype"] == "microsoft.web/sites":
                self.web.removed(item["name"])
            if item["rtype"] == MACHINE:
                self.counts["machines_deleted"] += 1
                self.hosts.forget(item)
            address = (item["properties"] or {}).get("ipAddress")
            if address:
                self.free_addresses.append(address)

    # --- operations --------------------------------------------------------------------------
    def _op(self, kind: str, rid: str, seconds: float) -> str:
        op_id = str(uuid.uuid4())
        self.ops[op_id] = {
            "kind": kind,
            "rid": rid,
            "status": "InProgress",
            "done_at": time.monotonic() + seconds,
        }
        return op_id

    def operation(self, op_id: str) -> dict[str, Any]:
        """The Azure-AsyncOperation body of one operation."""
        op = self.ops.get(op_id)
        if op is None:
            raise ArmError(404, "OperationNotFound", f"The operation '{op_id}' was not found.")
        return {"name": op_id, "status": op["status"]}

    # --- resources ---------------------------------------------------------------------------
    def get(self, rid: str) -> dict[str, Any]:
        """GET of one resource as Azure shows it."""
        item = self.items.get(rid.lower())
        if item is None:
            raise self._not_found(rid)
        return self._view(item)

    def _not_found(self, rid: str) -> ArmError:
        rtype, proper = _type_of(rid)
        name = rid.rstrip("/").split("/")[-1]
        if rtype == "resourcegroups":
            return ArmError(404, "ResourceGroupNotFound", f"Resource group '{name}' could not be found.")
        return ArmError(
            404, "ResourceNotFound", f"The Resource '{proper}/{name}' under resource group was not found."
        )

    def _view(self, item: dict[str, Any]) -> dict[str, Any]:
        out = {k: copy.deepcopy(item[k]) for k in ("id", "name", "type", "location", "tags")}
        out |= copy.deepcopy(item.get("extra") or {})
        props = copy.deepcopy(item["properties"] or {})
        props["provisioningState"] = self._state(item)
        out["properties"] = props
        return self.web.view(item, out) if self.web is not None else out

    def _state(self, item: dict[str, Any]) -> str:
        op = self.ops.get(item.get("op") or "")
        if op is None or op["status"] == "Succeeded":
            return "Succeeded"
        return {
            "create": "Creating" if item["rtype"] == MACHINE else "Updating",
            "delete": "Deleting",
            "action": "Updating",
        }[op["kind"]]

    def put(self, rid: str, body: dict[str, Any], api_version: str) -> tuple[int, dict[str, Any], str | None]:
        """Create or update; returns (status, body, operation id or None)."""
        rtype, proper = _type_of(rid)
        models, model = catalog.model_of(rtype, api_version)
        check(body, model, models)
        if self.web is not None:
            self.web.check_put(self, rid, rtype, body)
        if not body.get("location"):
            raise ArmError(400, "LocationRequired", "The location property is required for this definition.")
        existing = self.items.get(rid.lower())
        if existing and self._state(existing) == "Deleting":
            raise ArmError(
                409, "Conflict", f"The resource '{proper}' is being deleted and cannot be updated."
            )
        self._check_parent(rid, rtype)
        props = copy.deepcopy(body.get("properties") or {})
        self._check_kind(rid, rtype, body, props, existing)
        item = existing or {"id": rid, "name": rid.rstrip("/").split("/")[-1], "type": proper, "rtype": rtype}
        item.update(location=body["location"], tags=body.get("tags") or {}, properties=props)
        item["extra"] = {k: body[k] for k in ("kind", "sku") if k in body}
        if existing:
            return 200, self._view(item), None
        seconds = CREATE_S.get(rtype, DEFAULT_CREATE_S)
        item["op"] = self._op("create", rid, seconds) if seconds > 0 else None
        self.items[rid.lower()] = item
        if rtype == MACHINE:
            self.counts["machines_created"] += 1
            item["power"] = "running"
            self.hosts.place(item, "create")
        if rtype in ACCEPTED and item["op"]:
            return 202, None, item["op"]
        return 200 if rtype in CREATED_OK else 201, self._view(item), item["op"]

    def _check_parent(self, rid: str, rtype: str) -> None:
        if rtype == "resourcegroups":
            return
        rg = "/".join(rid.strip("/").split("/")[:4])
        if ("/" + rg).lower() not in self.items:
            raise ArmError(
                404, "ResourceGroupNotFound", f"Resource group '{rg.split('/')[-1]}' could not be found."
            )

    def _check_kind(self, rid: str, rtype: str, body: dict, props: dict, existing: dict | None) -> None:
        if rtype == "microsoft.network/publicipaddresses" and not existing:
            if not self.free_addresses:
                raise ArmError(
                    409, "PublicIPCountLimitReached", "Cannot create more public IP addresses in this region."
                )
            props["ipAddress"] = self.free_addresses.pop(0)
        elif rtype == "microsoft.network/networkinterfaces":
            for conf in props.get("ipConfigurations") or []:
                cp = conf.get("properties") or {}
                self._require(rid, (cp.get("subnet") or {}).get("id"), subnet=True)
                self._require(rid, (cp.get("publicIPAddress") or {}).get("id"))
                cp["privateIPAddress"] = "10.77.1.4"
        elif rtype == MACHINE:
            self._check_machine(rid, body, props, existing)
        elif rtype == "microsoft.devtestlab/schedules":
            self._require(rid, props.get("targetResourceId"))

    def _require(self, rid: str, ref: str | None, subnet: bool = False) -> None:
        if not ref:
            return
        target = ref.rsplit("/subnets/", 1) if subnet else [ref]
        item = self.items.get(target[0].lower())
        names = [s.get("name") for s in ((item or {}).get("properties") or {}).get("subnets") or []]
        if item is None or (subnet and target[-1] not in names):
            raise ArmError(
                400, "InvalidResourceReference", f"Resource {ref} referenced by resource {rid} was not found."
            )

    def _check_machine(self, rid: str, body: dict, props: dict, existing: dict | None) -> None:
        catalog.check_confidential(body)
        size = (props.get("hardwareProfile") or {}).get("vmSize", "")
        used = sum(
            catalog.vcpus((i["properties"].get("hardwareProfile") or {}).get("vmSize", ""))
            for k, i in self.items.items()
            if i["rtype"] == MACHINE and i["location"] == body["location"] and k != rid.lower()
        )
        catalog.check_size(size, body["location"], used)
        for nic in (props.get("networkProfile") or {}).get("networkInterfaces") or []:
            self._require(rid, nic.get("id"))
            holder = self._nic_holder(nic.get("id", ""), rid)
            if holder:
                raise ArmError(
                    400, "NicInUse", f"Network Interface {nic['id']} is used by existing resource {holder}."
                )
        props["vmId"] = (existing or {}).get("properties", {}).get("vmId") or str(uuid.uuid4())

    def _nic_holder(self, nic_id: str, rid: str) -> str | None:
        for key, item in self.items.items():
            nics = ((item["properties"] or {}).get("networkProfile") or {}).get("networkInterfaces") or []
            if (
                item["rtype"] == MACHINE
                and key != rid.lower()
                and any(n.get("id", "").lower() == nic_id.lower() for n in nics)
            ):
                return item["id"]
        return None

    def delete(self, rid: str) -> tuple[int, str | None]:
        """Start a deletion; (202, operation id), (200, None) for a synchronous type, or (204, None)
        when there is nothing to delete."""
        item = self.items.get(rid.lower())
        if item is None:
            return 204, None
        rtype, _ = _type_of(rid)
        if rtype == "microsoft.network/networkinterfaces" and self._nic_holder(rid, ""):
            raise ArmError(
                400,
                "NicInUse",
                f"Network Interface {rid} is used by existing resource {self._nic_holder(rid, '')}.",
            )
        if rtype in DELETED_OK:
            self._remove(rid)
            return 200, None
        item["op"] = self._op("delete", rid, DELETE_S)
        return 202, item["op"]

    # --- power actions of virtual machines ----------------------------------------------------
    def action(self, rid: str, name: str, query: dict[str, list[str]], raw: bytes) -> str:
        """Start a power action on the VM ``rid`` (``name`` lower case); its operation id. Refused as
        Azure refuses: an unknown VM (404), a flag that is no boolean (400), a VM that is being
        created, deleted or is in another action (409, the stand-in's rule: it never queues), a
        restart of a VM that is not running (409 OperationNotAllowed), hibernation the VM was not
        created for (409)."""
        item = self.items.get(rid.lower())
        if item is None or item["rtype"] != MACHINE:
            raise self._not_found(rid)
        spelling, seconds = ACTIONS[name]
        flag = ACTION_FLAGS.get(name)
        for key in query:
            if key.lower() == "api-version":
                continue
            if key != flag:
                raise ArmError(
                    400,
                    "InvalidParameter",
                    f"The query parameter '{key}' is not valid for '{spelling}'.",
                    key,
                )
            if query[key][0].lower() not in ("true", "false"):
                raise ArmError(
                    400, "InvalidParameter", f"The value '{query[key][0]}' of '{key}' is not a boolean.", key
                )
        if raw.strip():
            try:
                json.loads(raw)
            except ValueError as err:
                raise ArmError(
                    400,
                    "InvalidRequestContent",
                    f"The request content was invalid and could not be deserialized: {err}.",
                ) from None
        state = self._state(item)
        if state != "Succeeded":
            raise ArmError(
                409,
                "Conflict",
                f"Operation '{spelling}' is not allowed on VM '{item['name']}' while its provisioning state "
                f"is {state}; wait for the operation in progress to end.",
            )
        if name == "restart" and item.get("power") != "running":
            raise ArmError(
                409, "OperationNotAllowed", "The operation requires the VM to be running (or set to run)."
            )
        hibernate = (query.get("hibernate") or ["false"])[0].lower() == "true"
        caps = (item["properties"].get("additionalCapabilities") or {}).get("hibernationEnabled")
        if hibernate and not caps:
            raise ArmError(
                409,
                "OperationNotAllowed",
                f"Hibernation is not enabled on VM '{item['name']}' "
                "(additionalCapabilities.hibernationEnabled).",
            )
        self.actions[spelling] += 1
        item["power"] = POWER_DURING[name]
        if name == "deallocate":
            self.hosts.release(item)
        item["op"] = self._op("action", rid, seconds)
        self.ops[item["op"]]["action"] = name
        return item["op"]

    def _finish_action(self, op: dict[str, Any]) -> None:
        item = self.items.get(op["rid"].lower())
        if item is None:
            return
        name = op["action"]
        item["power"] = POWER_AFTER[name]
        if item["power"] == "running":
            self.hosts.place(item, ACTIONS[name][0])

    def instance_view(self, rid: str) -> dict[str, Any]:
        """GET .../virtualMachines/{vm}/instanceView: provisioning and power state (no host: Azure
        names one only for dedicated hosts)."""
        item = self.items.get(rid.lower())
        if item is None or item["rtype"] != MACHINE:
            raise self._not_found(rid)
        state = self._state(item)
        power = item.get("power", "running")
        provisioning = {
            "code": f"ProvisioningState/{state.lower()}",
            "level": "Info",
            "displayStatus": f"Provisioning {state.lower()}",
        }
        if state == "Succeeded":
            provisioning["time"] = item.setdefault("changed_at", datetime.now(UTC).isoformat())
        return {
            "computerName": ((item["properties"].get("osProfile") or {}).get("computerName")),
            "platformUpdateDomain": 0,
            "platformFaultDomain": 0,
            "statuses": [
                provisioning,
                {"code": f"PowerState/{power}", "level": "Info", "displayStatus": f"VM {power}"},
            ],
        }

    # --- listings ----------------------------------------------------------------------------
    def listing(self, what: str, tag: tuple[str, str | None] | None) -> list[dict[str, Any]]:
        """Resource groups or resources of the subscription, optionally filtered by a tag."""
        want_groups = what == "resourcegroups"
        out = []
        for item in self.items.values():
            if (item["rtype"] == "resourcegroups") != want_groups:
                continue
            if tag and (
                tag[0] not in item["tags"] or (tag[1] is not None and item["tags"][tag[0]] != tag[1])
            ):
                continue
            view = self._view(item)
            if not want_groups:
                view.pop("properties")
            out.append(view)
        return out

    def imds(self, name: str) -> dict[str, Any]:
        """The IMDS instance document of the VM called ``name`` (as Azure's IMDS shapes it)."""
        for item in self.items.values():
            if item["rtype"] == MACHINE and item["name"].lower() == name.lower():
                return {"compute": _compute(item)}
        raise ArmError(404, "NotFound", f"no virtual machine named {name}")

    def stats(self) -> dict[str, Any]:
        """Counts for the rehearsal's closing line, and what is left."""
        machines = [i["id"] for i in self.items.values() if i["rtype"] == MACHINE]
        return {
            **self.counts,
            "actions": dict(self.actions),
            **self.hosts.stats(),
            **({"functions": dict(self.web.counts)} if self.web is not None else {}),
            "machines_left": machines,
            "resources_left": [i["id"] for i in self.items.values()],
        }


def _compute(item: dict[str, Any]) -> dict[str, Any]:
    props = item["properties"]
    security = props.get("securityProfile") or {}
    uefi = security.get("uefiSettings") or {}
    flag = {True: "true", False: "false"}
    return {
        "name": item["name"],
        "location": item["location"],
        "vmSize": (props.get("hardwareProfile") or {}).get("vmSize"),
        "vmId": props.get("vmId"),
        "resourceId": item["id"],
        "zone": "",
        # Azure's IMDS: the host only for VMs on a dedicated host (none here), fault and update
        # domains as strings
        "host": {"id": ""},
        "hostGroup": {"id": ""},
        "platformFaultDomain": "0",
        "platformUpdateDomain": "0",
        "securityProfile": {
            "securityType": security.get("securityType", ""),
            "secureBootEnabled": flag[bool(uefi.get("secureBootEnabled"))],
            "virtualTpmEnabled": flag[bool(uefi.get("vTpmEnabled"))],
            "encryptionAtHost": flag[bool(security.get("encryptionAtHost"))],
        },
        "storageProfile": {"imageReference": (props.get("storageProfile") or {}).get("imageReference") or {}},
        "tagsList": [{"name": k, "value": v} for k, v in item["tags"].items()],
    }
