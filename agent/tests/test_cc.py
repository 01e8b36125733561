"""Confidential-computing detection on recorded inputs of each kind of machine."""

from __future__ import annotations

import struct

import pytest

from testbed_agent.sysinfo.cc import detect, label_mismatch
from testbed_agent.sysinfo.probe import Probe, RecordedProbe


def s2r(text: str) -> tuple[int, ...]:
    """A 4n-char ASCII string as little-endian 32-bit registers."""
    return struct.unpack(f"<{len(text) // 4}I", text.encode())


def vendor_leaf(vendor: str, max_leaf: int) -> tuple[int, int, int, int]:
    ebx, edx, ecx = s2r(vendor)
    return (max_leaf, ebx, ecx, edx)


def hv_leaf(name: str) -> tuple[int, int, int, int]:
    ebx, ecx, edx = s2r(name.ljust(12, "\0"))
    return (0x4000000C, ebx, ecx, edx)


HV_PRESENT = (0, 0, 1 << 31, 0)


def amd(
    msr: int | None, dmesg: str = "", hv: str = "KVMKVMKVM", paths: set[str] | None = None
) -> RecordedProbe:
    return RecordedProbe(
        cpuid_leaves={
            (0, 0): vendor_leaf("AuthenticAMD", 0x10),
            (1, 0): HV_PRESENT,
            (0x40000000, 0): hv_leaf(hv),
            (0x80000000, 0): (0x80000021, 0, 0, 0),
            (0x8000001F, 0): (0x1B, 0, 0, 0),
        },
        msrs={} if msr is None else {0xC0010131: msr},
        dmesg=dmesg,
        paths=paths or set(),
    )


def tdx_guest() -> RecordedProbe:
    ebx, edx, ecx = s2r("IntelTDX    ")
    return RecordedProbe(
        cpuid_leaves={
            (0, 0): vendor_leaf("GenuineIntel", 0x23),
            (1, 0): HV_PRESENT,
            (0x40000000, 0): hv_leaf("KVMKVMKVM"),
            (0x21, 0): (0, ebx, ecx, edx),
        },
        dmesg="[    0.000000] tdx: Guest detected\n[    0.1] Memory Encryption Features active: Intel TDX\n",
        paths={"/dev/tdx_guest"},
    )


def azure(vendor: str, isolation_ebx: int, dmesg: str) -> RecordedProbe:
    """An Azure CVM under a paravisor: the usual SEV/TDX flags hidden, Hyper-V leaves tell."""
    return RecordedProbe(
        cpuid_leaves={
            (0, 0): vendor_leaf(vendor, 0x0D),
            (1, 0): HV_PRESENT,
            (0x40000000, 0): hv_leaf("Microsoft Hv"),
            (0x40000003, 0): (0, 1 << 22, 0, 0),
            (0x4000000C, 0): (0x1, isolation_ebx, 0, 0),
            (0x80000000, 0): (0x80000008, 0, 0, 0),
        },
        dmesg=dmesg,
        paths={"/dev/tpmrm0"},
    )


@pytest.mark.parametrize(
    ("probe", "technology", "paravisor", "confirmed"),
    [
        (amd(0x1, "Memory Encryption Features active: AMD SEV\n"), "sev", False, True),
        (amd(0x3, "AMD Memory Encryption Features active: SEV SEV-ES\n"), "sev-es", False, True),
        (
            amd(
                0x7,
                "Memory Encryption Features active: AMD SEV SEV-ES SEV-SNP\n"
                "SEV: Using SNP CPUID table, 64 entries present.\n",
                paths={"/dev/sev-guest"},
            ),
            "sev-snp",
            False,
            True,
        ),
        (tdx_guest(), "tdx", False, True),
        (
            azure(
                "AuthenticAMD",
                0xBA2,
                "Hyper-V: Isolation Config: Group A 0x1, Group B 0xba2\n"
                "Memory Encryption Features active: AMD SEV\n",
            ),
            "sev-snp",
            True,
            True,
        ),
        (
            azure("GenuineIntel", 0xBE3, "Hyper-V: Isolation Config: Group A 0x1, Group B 0xbe3\n"),
            "tdx",
            True,
            True,
        ),
        (amd(0x0, "Linux version 6.1.0\n"), "none", False, None),
    ],
    ids=["sev", "sev-es", "sev-snp", "tdx", "azure-snp-paravisor", "azure-tdx-paravisor", "none"],
)
def test_detection(probe: RecordedProbe, technology: str, paravisor: bool, confirmed: bool | None) -> None:
    state = detect(probe)
    assert state["technology"] == technology
    assert state["paravisor"] is paravisor
    assert state["kernel_log_confirms"] is confirmed
    if technology != "none":
        assert any(e["technology"] == technology and e["source"] != "kernel-log" for e in state["evidence"])


def test_azure_vtom_is_recorded() -> None:
    state = detect(azure("AuthenticAMD", 0xBA2, ""))
    hv = next(e for e in state["evidence"] if e["source"] == "cpuid-hyperv")
    assert "vtom=True" in hv["detail"] and "paravisor=True" in hv["detail"]
    assert state["hypervisor_vendor"] == "Microsoft Hv"


def test_kernel_log_alone_does_not_raise_the_verdict() -> None:
    probe = amd(None, "Memory Encryption Features active: AMD SEV SEV-ES SEV-SNP\n")
    probe.cpuid_leaves[(0x8000001F, 0)] = (0, 0, 0, 0)  # no SEV advertised, no MSR
    state = detect(probe)
    assert state["technology"] == "none"
    assert [e["source"] for e in state["evidence"]] == ["kernel-log"]


def test_tpm_alone_is_not_confidential() -> None:
    state = detect(amd(0x0, paths={"/dev/tpmrm0"}))
    assert state["technology"] == "none"
    assert {"source": "device", "detail": "/dev/tpmrm0", "technology": None} in state["evidence"]


def test_bare_metal_has_no_hypervisor_vendor() -> None:
    probe = amd(0x0)
    probe.cpuid_leaves[(1, 0)] = (0, 0, 0, 0)
    assert detect(probe)["hypervisor_vendor"] is None


@pytest.mark.parametrize(
    ("groups", "tech", "loud"),
    [
        (["sev"], "none", True),
        (["sev"], "sev-snp", False),
        (["tdx"], "sev-snp", True),
        (["amd_baseline"], "sev-snp", True),
        (["amd_baseline"], "none", False),
        (["local"], "none", False),
    ],
)
def test_label_mismatch(groups: list[str], tech: str, loud: bool) -> None:
    assert (label_mismatch(groups, tech) is not None) is loud


def test_live_probe_runs_here() -> None:
    state = detect(Probe())
    assert state["technology"] in {"none", "sev", "sev-es", "sev-snp", "tdx"}
    assert isinstance(state["evidence"], list)
