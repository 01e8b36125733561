"""Names of what a machine runs on, for a person: "KVM guest in a docker container", "bare metal".

The agent detects the layers (``testbed_agent.sysinfo.virt``) and writes the one-line summary into
the fingerprint (``hypervisor.virtualization``); the report names machines from it, and from the raw
readings of fingerprints written before the summary existed (:func:`from_recorded`). Both sides share
the tables and the wording here.
"""

from __future__ import annotations

from typing import Any

#: CPUID 0x40000000 vendor signatures -> hypervisor
SIGNATURES = {
    "KVMKVMKVM": "KVM",
    "Microsoft Hv": "Hyper-V",
    "VMwareVMware": "VMware",
    "XenVMMXenVMM": "Xen",
    "TCGTCGTCGTCG": "QEMU (TCG software emulation)",
    "bhyve bhyve": "bhyve",
    "ACRNACRNACRN": "ACRN",
    "QNXQVMBSQG": "QNX hypervisor",
    "VBoxVBoxVBox": "VirtualBox",
    " lrpepyh vr": "Parallels",
    "Linux KVM Hv": "KVM (Hyper-V enlightenments)",
}
#: systemd-detect-virt --vm ids -> hypervisor
SYSTEMD_VM = {
    "kvm": "KVM",
    "qemu": "QEMU (TCG software emulation)",
    "microsoft": "Hyper-V",
    "vmware": "VMware",
    "xen": "Xen",
    "oracle": "VirtualBox",
    "amazon": "KVM (AWS Nitro)",
    "google": "KVM (Google Compute Engine)",
    "bhyve": "bhyve",
    "parallels": "Parallels",
    "zvm": "z/VM",
    "powervm": "PowerVM",
    "acrn": "ACRN",
    "apple": "Apple Virtualization",
    "sre": "LMHS SRE",
}
#: systemd-detect-virt --container ids (and our own fallbacks) -> container engine
SYSTEMD_CONTAINER = {
    "docker": "docker",
    "podman": "podman",
    "lxc": "LXC",
    "lxc-libvirt": "libvirt LXC",
    "systemd-nspawn": "systemd-nspawn",
    "openvz": "OpenVZ",
    "rkt": "rkt",
    "wsl": "WSL",
    "proot": "proot",
    "pouch": "pouch",
    "container-other": "container",
}


def summary(vm: str | None, container: str | None, software_emulation: bool = False) -> str:
    """The one line a report shows, e.g. "KVM guest in a docker container", "bare metal"."""
    if software_emulation and vm and "TCG" not in vm:
        vm = f"{vm} (software emulation)"
    where = f"{vm} guest" if vm else ""
    if container:
        engine = container if container.endswith("container") else f"{container} container"
        return f"{where} in a {engine}" if where else f"{engine} (no hypervisor seen)"
    return where or "bare metal (no hypervisor seen)"


def from_recorded(hv: dict[str, Any]) -> str:
    """The summary for a sysinfo ``hypervisor`` section written before this module existed
    (``systemd_detect_virt`` holds the container when there is one, ``cpuid_vendor`` the VM)."""
    if hv.get("virtualization"):
        return str(hv["virtualization"])
    sig = hv.get("cpuid_vendor")
    vm = SIGNATURES.get(str(sig).strip(), f"unknown hypervisor '{sig}'") if sig else None
    detected = hv.get("systemd_detect_virt")
    container = SYSTEMD_CONTAINER.get(str(detected)) if detected in SYSTEMD_CONTAINER else None
    if vm is None and detected and detected != "none" and container is None:
        vm = SYSTEMD_VM.get(str(detected), str(detected))
    return summary(vm, container, bool(hv.get("software_emulation")))
