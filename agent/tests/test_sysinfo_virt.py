"""sysinfo names the virtualization from recorded probes: VM and container apart (issue 30)."""

from __future__ import annotations

from testbed_agent.sysinfo import virt
from testbed_agent.sysinfo.probe import RecordedProbe
from testbed_shared import virtualization

#: this project's CI machine (2026-11-26): CPUID leaf 1 ECX bit 31 set, leaf 0x40000000
#: "KVMKVMKVM", systemd-detect-virt printing "docker" (no options) / "kvm" (--vm) / "docker"
#: (--container), /.dockerenv present, no DMI in the container
KVM_IN_DOCKER = RecordedProbe(
    cpuid_leaves={
        (1, 0): (0xA00F11, 0x20800, 0xFFFA3203, 0x178BFBFF),
        (0x40000000, 0): (0x40000001, 0x4B4D564B, 0x564B4D56, 0x4D),
    },
    paths={"/.dockerenv"},
    commands={
        "systemd-detect-virt": "docker",
        "systemd-detect-virt --vm": "kvm",
        "systemd-detect-virt --container": "docker",
    },
)
#: an Azure confidential VM: Hyper-V's signature, no container
AZURE_CVM = RecordedProbe(
    cpuid_leaves={
        (1, 0): (0x806F8, 0x800, 0xFEDA3203, 0x1F8BFBFF),
        (0x40000000, 0): (0x4000000C, 0x7263694D, 0x666F736F, 0x76482074),  # "Microsoft Hv"
    },
    files={
        "/sys/class/dmi/id/sys_vendor": "Microsoft Corporation",
        "/sys/class/dmi/id/product_name": "Virtual Machine",
    },
)
#: a bare-metal server: no hypervisor bit, systemd-detect-virt prints "none" and exits 1
BARE = RecordedProbe(cpuid_leaves={(1, 0): (0x806F8, 0x800, 0x7EDA3203, 0x1F8BFBFF)})


def test_kvm_guest_in_a_container_is_named_by_both_layers() -> None:
    got = virt.detect(KVM_IN_DOCKER)
    assert (got["vm"], got["container"]) == ("KVM", "docker")
    assert got["virtualization"] == "KVM guest in a docker container"
    assert got["vm_source"].startswith("cpuid 0x40000000")


def test_azure_cvm_is_a_hyperv_guest() -> None:
    assert virt.detect(AZURE_CVM)["virtualization"] == "Hyper-V guest"


def test_bare_metal_and_a_container_on_it() -> None:
    assert virt.detect(BARE)["virtualization"] == "bare metal (no hypervisor seen)"
    podman = RecordedProbe(cpuid_leaves=BARE.cpuid_leaves, paths={"/run/.containerenv"})
    assert virt.detect(podman)["virtualization"] == "podman container (no hypervisor seen)"
    lxc = RecordedProbe(
        cpuid_leaves=BARE.cpuid_leaves, files={"/proc/1/environ": "PATH=/bin\x00container=lxc\x00"}
    )
    assert virt.detect(lxc)["container"] == "LXC"


def test_without_cpuid_the_vm_comes_from_systemd_then_dmi() -> None:
    assert virt.detect(RecordedProbe(commands={"systemd-detect-virt --vm": "microsoft"}))["vm"] == "Hyper-V"
    dmi = RecordedProbe(
        files={"/sys/class/dmi/id/product_name": "KVM", "/sys/class/dmi/id/sys_vendor": "QEMU"}
    )
    assert virt.detect(dmi)["virtualization"] == "KVM guest"


def test_software_emulation_and_older_records() -> None:
    assert virtualization.summary("KVM", None, software_emulation=True) == "KVM (software emulation) guest"
    # sysinfo of an agent before this module: the fingerprint said "docker KVMKVMKVM"
    old = {"systemd_detect_virt": "docker", "cpuid_vendor": "KVMKVMKVM"}
    assert virtualization.from_recorded(old) == "KVM guest in a docker container"
    assert virtualization.from_recorded({"systemd_detect_virt": "kvm", "cpuid_vendor": None}) == "KVM guest"
    assert (
        virtualization.from_recorded({"systemd_detect_virt": "none", "cpuid_vendor": None})
        == "bare metal (no hypervisor seen)"
    )
