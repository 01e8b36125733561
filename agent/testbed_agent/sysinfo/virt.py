"""What the machine runs on, named for a person: "KVM guest in a docker container", "bare metal".

Two independent layers, each from the strongest source that answers (all reads through the
:class:`~testbed_agent.sysinfo.probe.Probe` seam, so recorded machines are tested):

- the virtual machine: the hypervisor CPUID leaf 0x40000000 (its vendor signature, present only
  when CPUID leaf 1 ECX bit 31 says "running under a hypervisor"), else ``systemd-detect-virt
  --vm``, else the DMI product and vendor strings;
- the container: ``systemd-detect-virt --container``, else the marker files container engines
  leave (``/.dockerenv``, ``/run/.containerenv``), else ``container=`` in PID 1's environment,
  else the cgroup path of PID 1.

A container is not a hypervisor: a guest in a container is named by both, never by the container
alone (``systemd-detect-virt`` without options prints only the container). The names and the
one-line summary are shared with the report (:mod:`testbed_shared.virtualization`).
"""

from __future__ import annotations

import re
from typing import Any

from testbed_agent.sysinfo.probe import Probe, regs_to_str
from testbed_shared.virtualization import SIGNATURES, SYSTEMD_CONTAINER, SYSTEMD_VM, summary

_DMI = (
    (re.compile(r"KVM|QEMU", re.I), "KVM"),
    (re.compile(r"Virtual Machine", re.I), "Hyper-V"),  # Microsoft Corporation / Virtual Machine
    (re.compile(r"VMware", re.I), "VMware"),
    (re.compile(r"VirtualBox", re.I), "VirtualBox"),
    (re.compile(r"HVM domU|Xen", re.I), "Xen"),
    (re.compile(r"Google Compute Engine", re.I), "KVM (Google Compute Engine)"),
    (re.compile(r"Amazon EC2", re.I), "KVM (AWS Nitro)"),
)


def hypervisor_signature(probe: Probe) -> str | None:
    """The vendor string of CPUID leaf 0x40000000 when leaf 1 says a hypervisor is present."""
    leaf1 = probe.cpuid(1)
    if not leaf1 or not leaf1[2] & (1 << 31):
        return None
    regs = probe.cpuid(0x40000000)
    if not regs or regs[0] < 0x40000000:
        return None
    return regs_to_str(regs[1], regs[2], regs[3]).strip("\x00") or None


def _vm(probe: Probe) -> tuple[str | None, str | None]:
    sig = hypervisor_signature(probe)
    if sig is not None:
        return SIGNATURES.get(sig.strip(), SIGNATURES.get(sig, f"unknown hypervisor '{sig}'")), (
            f"cpuid 0x40000000: {sig!r}"
        )
    found = probe.command(["systemd-detect-virt", "--vm"])
    if found and found != "none":
        return SYSTEMD_VM.get(found, found), f"systemd-detect-virt --vm: {found}"
    dmi = " ".join(
        x
        for x in (probe.read("/sys/class/dmi/id/sys_vendor"), probe.read("/sys/class/dmi/id/product_name"))
        if x
    )
    for rx, name in _DMI:
        if dmi and rx.search(dmi):
            return name, f"DMI: {dmi}"
    return None, None


def _container(probe: Probe) -> tuple[str | None, str | None]:
    found = probe.command(["systemd-detect-virt", "--container"])
    if found and found != "none":
        return SYSTEMD_CONTAINER.get(found, found), f"systemd-detect-virt --container: {found}"
    if probe.exists("/.dockerenv"):
        return "docker", "/.dockerenv"
    if probe.exists("/run/.containerenv"):
        return "podman", "/run/.containerenv"
    env = probe.read("/proc/1/environ") or ""
    m = re.search(r"(?:^|\x00)container=([^\x00]+)", env)
    if m:
        return SYSTEMD_CONTAINER.get(m.group(1), m.group(1)), f"/proc/1/environ: container={m.group(1)}"
    cgroup = probe.read("/proc/1/cgroup") or ""
    for marker, name in (
        ("docker", "docker"),
        ("kubepods", "Kubernetes pod"),
        ("libpod", "podman"),
        ("lxc", "LXC"),
    ):
        if re.search(rf"[/-]{marker}\b", cgroup):
            return name, f"/proc/1/cgroup mentions {marker}"
    return None, None


def detect(probe: Probe) -> dict[str, Any]:
    """``{"vm", "vm_source", "container", "container_source", "virtualization"}``."""
    vm, vm_src = _vm(probe)
    container, c_src = _container(probe)
    return {
        "vm": vm,
        "vm_source": vm_src,
        "container": container,
        "container_source": c_src,
        "virtualization": summary(vm, container),
    }
