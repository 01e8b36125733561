"""What a guest sees of Hyper-V through the hypervisor CPUID leaves (Microsoft's Hypervisor
Top-Level Functional Specification): the version of the hypervisor it runs on, and what the
host told the guest (the host facts the hyperv_guest role writes)."""

from __future__ import annotations

from typing import Any

from testbed_agent.sysinfo.probe import Probe

VENDOR = "Microsoft Hv"
LEAF_INTERFACE = 0x40000001
LEAF_VERSION = 0x40000002
LEAF_FEATURES = 0x40000003
HOST_KEYS = (
    "hyperv_version",
    "host_os",
    "host_os_build",
    "host_cpu_model",
    "host_scheduler_type",
    "host_vbs",
    "host_hvci",
    "host_numa_nodes",
    "host_nested_virtualization",
)


def describe(probe: Probe, vendor: str | None, host_facts: dict[str, Any] | None) -> dict[str, Any]:
    """Hyper-V details for sysinfo's ``hypervisor`` section; empty unless running on Hyper-V."""
    hyperv_host = bool(host_facts and host_facts.get("hypervisor") == "hyperv")
    if vendor != VENDOR and not hyperv_host:
        return {}
    out: dict[str, Any] = {"hyperv": {}}
    version = probe.cpuid(LEAF_VERSION) if vendor == VENDOR else None
    if version:
        build, major_minor, service_pack, branch = version
        out["hyperv"]["cpuid_version"] = f"{major_minor >> 16}.{major_minor & 0xFFFF}.{build}"
        out["hyperv"]["service_pack"] = service_pack
        out["hyperv"]["service_branch"] = branch >> 24
        out["hyperv"]["service_number"] = branch & 0xFFFFFF
    interface = probe.cpuid(LEAF_INTERFACE) if vendor == VENDOR else None
    if interface:
        out["hyperv"]["interface"] = interface[0].to_bytes(4, "little").decode(errors="replace")
    features = probe.cpuid(LEAF_FEATURES) if vendor == VENDOR else None
    if features:
        out["hyperv"]["partition_privileges"] = f"0x{(features[1] << 32) | features[0]:016x}"
    if hyperv_host and host_facts:
        out["hyperv"]["host"] = {key: host_facts[key] for key in HOST_KEYS if key in host_facts}
    return out
