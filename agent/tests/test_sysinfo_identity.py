"""The fingerprint's machine section: the physical host from the Hyper-V KVP pool, IMDS or the KVM
host facts, and the report's key for it (testbed_shared.machines)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed_agent.sysinfo import collect, identity
from testbed_shared import machines

# Pool 3 of an Azure VM as published (keys and values of a real guest, in the daemon's order).
AZURE_POOL = [
    ("HostName", "CO2AA1050611004"),
    ("HostingSystemEditionId", "168"),
    ("HostingSystemNestedLevel", "0"),
    ("HostingSystemOsMajor", "10"),
    ("HostingSystemOsMinor", "0"),
    ("HostingSystemProcessorArchitecture", "9"),
    ("PhysicalHostName", "CO2AA1050611004"),
    ("PhysicalHostNameFullyQualified", "CO2AA1050611004"),
    ("VirtualMachineDynamicMemoryBalancingEnabled", "0"),
    ("VirtualMachineId", "670093CC-C644-4167-8076-E9678D22C459"),
    ("VirtualMachineName", "902d6ba5-9ac4-4223-a8d9-1c7ca05a9a2c"),
]


def pool_bytes(pairs: list[tuple[str, str]]) -> bytes:
    """Records as hv_kvp_daemon writes them: a 512-byte key and a 2048-byte value, NUL-padded."""
    return b"".join(k.encode().ljust(512, b"\0") + v.encode().ljust(2048, b"\0") for k, v in pairs)


@pytest.fixture
def pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / ".kvp_pool_3"
    monkeypatch.setenv("TESTBED_HYPERV_KVP_POOL", str(path))
    return path


def test_the_kvp_pool_is_read_record_by_record(pool: Path) -> None:
    pool.write_bytes(pool_bytes(AZURE_POOL) + b"\x01" * 100)
    pairs, ignored = identity.read_kvp_pool(pool)
    assert pairs == dict(AZURE_POOL)
    assert ignored == "100 trailing bytes are no whole 2560-byte record"


def test_a_value_that_is_not_utf8_is_kept_replaced(pool: Path) -> None:
    raw = pool_bytes([("PhysicalHostName", "X")]).replace(b"X\0", b"\xffA\0", 1)
    pool.write_bytes(raw)
    assert identity.read_kvp_pool(pool)[0] == {"PhysicalHostName": "\ufffdA"}


def test_azure_guest_is_keyed_by_the_physical_host(pool: Path) -> None:
    pool.write_bytes(pool_bytes(AZURE_POOL))
    info = {"cloud": {"provider": "azure", "azure": {"vm_id": "670093cc", "host_id": None}}}
    section = identity.describe(info, None, rotation=2)
    assert section["id"] == "hyperv-host:CO2AA1050611004"
    assert section["physical_host"] == "CO2AA1050611004"
    assert section["rotation"] == 2
    assert section["source"].endswith("PhysicalHostNameFullyQualified")
    assert section["kvp"]["VirtualMachineId"] == "670093CC-C644-4167-8076-E9678D22C459"
    assert machines.machine_key({"machine": section}, "sev-1") == "hyperv-host:CO2AA1050611004"


def test_the_short_name_serves_when_the_fully_qualified_one_is_empty(pool: Path) -> None:
    pool.write_bytes(pool_bytes([("PhysicalHostNameFullyQualified", ""), ("PhysicalHostName", "NODE7")]))
    assert identity.describe({}, None)["id"] == "hyperv-host:NODE7"


def test_a_dedicated_host_from_imds_counts_when_there_is_no_pool(pool: Path) -> None:
    info = {"cloud": {"azure": {"host_id": "/subscriptions/s/resourceGroups/g/hostGroups/hg/hosts/h1"}}}
    section = identity.describe(info, None)
    assert section["id"] == "azure-dedicated-host:/subscriptions/s/resourceGroups/g/hostGroups/hg/hosts/h1"
    assert section["source"] == "Azure IMDS compute.host.id"


def test_a_kvm_guest_is_keyed_by_its_libvirt_host(pool: Path) -> None:
    facts = {"hypervisor": "kvm", "host_uuid": "4C4C4544-004A-3510-8043-CAC04F563533", "host_name": "lab1"}
    section = identity.describe({}, facts)
    assert section["id"] == "kvm-host:4c4c4544-004a-3510-8043-cac04f563533"
    assert section["physical_host"] == "lab1"


def test_without_any_source_the_vm_is_its_own_machine_and_the_section_says_why(pool: Path) -> None:
    section = identity.describe({"cloud": {"azure": {"host_id": None}}}, {"hypervisor": "kvm"})
    assert section["id"] is None
    assert "no Hyper-V KVP pool" in section["why_none"]
    assert "compute.host.id is for dedicated hosts only" in section["why_none"]
    assert "no host_uuid" in section["why_none"]
    assert machines.machine_key({"machine": section}, "sev-1") == "sev-1"


def test_the_fingerprint_carries_the_machine_section(pool: Path, tmp_path: Path) -> None:
    pool.write_bytes(pool_bytes(AZURE_POOL))
    info = collect(rotation=1)
    assert info["machine"]["id"] == "hyperv-host:CO2AA1050611004"
    assert info["machine"]["rotation"] == 1
    json.dumps(info)


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ({"id": "no colon"}, "is not KIND:VALUE"),
        ({"id": "hyperv-host:a b"}, "is not KIND:VALUE"),
        ({"id": 7}, "is not KIND:VALUE"),
        ("text", "is not an object"),
    ],
)
def test_an_unusable_id_is_ignored_with_a_reason(section: object, problem: str) -> None:
    ident, why = machines.machine_id({"machine": section})
    assert ident is None and problem in why
    assert machines.machine_key({"machine": section}, "vm-1") == "vm-1"


def test_ids_are_made_printable() -> None:
    assert machines.make_id("hyperv-host", " NODE 7\n") == "hyperv-host:NODE_7"
    assert machines.make_id("hyperv-host", "  ") is None
    assert machines.rotation({"machine": {"rotation": 3}}) == 3
    assert machines.rotation({"machine": {"rotation": True}}) is None
