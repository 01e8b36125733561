"""Which physical host a guest runs on, from what the guest can see (the fingerprint's ``machine``).

Sources, first usable wins (every one found is recorded):

1. the Hyper-V KVP pool 3 (``/var/lib/hyperv/.kvp_pool_3``, "Virtual Machine\\Guest\\Parameter"),
   which Hyper-V and Azure fill for the guest's ``hv_kvp_daemon``: ``PhysicalHostNameFullyQualified``
   (else ``PhysicalHostName``, else ``HostName``) -> ``hyperv-host:NAME``. The file is an array of
   records of a 512-byte key and a 2048-byte value, each NUL-terminated (``struct kvp_record`` of the
   kernel's ``hyperv.h``); trailing bytes that are no whole record are recorded as ignored;
2. Azure IMDS ``compute.host.id`` (VMs on a dedicated host only) -> ``azure-dedicated-host:ID``;
3. the hypervisor-side facts a role wrote into the guest (``--host-facts``; the kvm_guest role
   records the libvirt host's UUID) -> ``kvm-host:UUID``.

Without any the section says why, and the report counts the VM as its own machine
(:mod:`testbed_shared.machines`). TESTBED_HYPERV_KVP_POOL names another pool file (rehearsals).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from testbed_shared.machines import make_id

KVP_POOL = Path("/var/lib/hyperv/.kvp_pool_3")
KEY_SIZE, VALUE_SIZE = 512, 2048
RECORD_SIZE = KEY_SIZE + VALUE_SIZE
#: at most this much of a pool file is read (the daemon keeps a few dozen records)
MAX_POOL_BYTES = 256 * RECORD_SIZE
#: the pool-3 keys naming the host, strongest first, and the ones kept beside them
HOST_KEYS = ("PhysicalHostNameFullyQualified", "PhysicalHostName", "HostName")
KEPT_KEYS = (
    *HOST_KEYS,
    "VirtualMachineId",
    "VirtualMachineName",
    "HostingSystemOsMajor",
    "HostingSystemOsMinor",
)


def kvp_pool_path() -> Path:
    """The KVP pool 3 file of this guest (TESTBED_HYPERV_KVP_POOL for rehearsals)."""
    return Path(os.environ.get("TESTBED_HYPERV_KVP_POOL") or KVP_POOL)


def read_kvp_pool(path: Path) -> tuple[dict[str, str], str | None]:
    """The key/value pairs of a KVP pool file and a note of what was ignored (None: nothing).

    Raises OSError when the file cannot be read."""
    with path.open("rb") as fh:
        data = fh.read(MAX_POOL_BYTES + 1)
    notes = []
    if len(data) > MAX_POOL_BYTES:
        notes.append(f"read the first {MAX_POOL_BYTES} bytes only")
        data = data[:MAX_POOL_BYTES]
    whole = len(data) - len(data) % RECORD_SIZE
    if whole != len(data):
        notes.append(f"{len(data) - whole} trailing bytes are no whole {RECORD_SIZE}-byte record")
    pairs: dict[str, str] = {}
    for at in range(0, whole, RECORD_SIZE):
        key = _text(data[at : at + KEY_SIZE])
        if key:
            pairs[key] = _text(data[at + KEY_SIZE : at + RECORD_SIZE])
    return pairs, "; ".join(notes) or None


def _text(field: bytes) -> str:
    """A NUL-terminated UTF-8 field (bytes that are not UTF-8 are replaced, never fatal)."""
    return field.split(b"\0", 1)[0].decode("utf-8", "replace").strip()


def describe(info: dict[str, Any], host_facts: dict[str, Any] | None, rotation: int = 0) -> dict[str, Any]:
    """The ``machine`` section: the host id, where it came from, the rotation index, the readings."""
    section: dict[str, Any] = {"id": None, "physical_host": None, "source": None, "rotation": rotation}
    candidates: list[tuple[str, str, str]] = []  # (id, host, source), strongest first
    why: list[str] = []
    for source in (_from_kvp, _from_imds, _from_host_facts):
        source(info, host_facts, section, candidates, why)
    if candidates:
        ident, host, where = candidates[0]
        section.update(id=ident, physical_host=host, source=where)
        others = sorted({c[0] for c in candidates[1:]} - {ident})
        if others:
            section["other_ids"] = others
    else:
        section["why_none"] = "; ".join(why) + ": the report counts this VM as its own machine"
    return section


def _from_kvp(info: dict, facts: dict | None, section: dict, found: list, why: list[str]) -> None:
    path = kvp_pool_path()
    try:
        pairs, ignored = read_kvp_pool(path)
    except FileNotFoundError:
        why.append(f"no Hyper-V KVP pool ({path})")
        return
    except OSError as exc:
        why.append(f"Hyper-V KVP pool {path} unreadable: {exc.strerror or exc}")
        return
    section["kvp"] = {"path": str(path), **{k: pairs[k] for k in KEPT_KEYS if k in pairs}}
    if ignored:
        section["kvp"]["ignored"] = ignored
    key = next((k for k in HOST_KEYS if pairs.get(k)), None)
    ident = make_id("hyperv-host", pairs[key]) if key else None
    if key and ident:
        found.append((ident, pairs[key], f"{path} {key}"))
    else:
        why.append(f"the KVP pool {path} names no host ({', '.join(HOST_KEYS)} empty or absent)")


def _from_imds(info: dict, facts: dict | None, section: dict, found: list, why: list[str]) -> None:
    azure = (info.get("cloud") or {}).get("azure")
    if not isinstance(azure, dict):
        return
    ident = make_id("azure-dedicated-host", str(azure.get("host_id") or ""))
    if ident:
        found.append((ident, str(azure["host_id"]), "Azure IMDS compute.host.id"))
    else:
        why.append("Azure IMDS names no host (compute.host.id is for dedicated hosts only)")


def _from_host_facts(info: dict, facts: dict | None, section: dict, found: list, why: list[str]) -> None:
    if not facts:
        return
    uuid = str(facts.get("host_uuid") or "").lower()
    ident = make_id("kvm-host", uuid)
    if not ident:
        why.append("the host facts carry no host_uuid")
        return
    section["kvm_host"] = {"host_uuid": uuid, "host_name": facts.get("host_name")}
    found.append((ident, str(facts.get("host_name") or uuid), "host facts host_uuid (libvirt host)"))
