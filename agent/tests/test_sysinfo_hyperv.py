"""sysinfo inside a Hyper-V guest: the hypervisor version from CPUID and the host facts."""

from __future__ import annotations

from testbed_agent.sysinfo import hyperv
from testbed_agent.sysinfo.probe import RecordedProbe

# Windows Server 2022 (build 20348): leaf 0x40000002 = build, major.minor, service pack, branch/number
LEAVES = {
    (0x40000001, 0): (0x31237648, 0, 0, 0),  # "Hv#1"
    (0x40000002, 0): (20348, (10 << 16) | 0, 0, (0 << 24) | 2849),
    (0x40000003, 0): (0x00002E7F, 0x003B8030, 0, 0),
}
HOST = {
    "hypervisor": "hyperv",
    "hyperv_version": "10.0.20348.2849",
    "host_os_build": 20348,
    "host_scheduler_type": "core",
    "host_vbs": "running",
    "domain_xml": "not copied",
}


def test_hyperv_guest_records_version_and_host_facts() -> None:
    out = hyperv.describe(RecordedProbe(cpuid_leaves=LEAVES), "Microsoft Hv", HOST)["hyperv"]
    assert out["cpuid_version"] == "10.0.20348"
    assert out["service_number"] == 2849 and out["service_branch"] == 0
    assert out["interface"] == "Hv#1"
    assert out["partition_privileges"] == "0x003b803000002e7f"
    assert out["host"] == {
        "hyperv_version": "10.0.20348.2849",
        "host_os_build": 20348,
        "host_scheduler_type": "core",
        "host_vbs": "running",
    }


def test_other_hypervisors_get_nothing() -> None:
    assert hyperv.describe(RecordedProbe(cpuid_leaves=LEAVES), "KVMKVMKVM", {"hypervisor": "kvm"}) == {}
    assert hyperv.describe(RecordedProbe(), None, None) == {}


def test_host_facts_alone_when_cpuid_is_not_readable() -> None:
    out = hyperv.describe(RecordedProbe(), None, HOST)["hyperv"]
    assert "cpuid_version" not in out and out["host"]["hyperv_version"] == "10.0.20348.2849"
