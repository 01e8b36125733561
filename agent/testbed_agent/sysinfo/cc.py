"""Confidential-computing state (docs/design.md section 5): what protection is active and how we know.

Sources, strongest first: CPUID/MSR as ``systemd-detect-virt --cvm`` reads them, the Hyper-V
isolation leaves (Azure CVMs run under a paravisor that hides the usual flags), device nodes,
and the kernel log (which only confirms).
"""

from __future__ import annotations

import re
from typing import Any

from testbed_agent.sysinfo.probe import CC_PATHS, Probe, regs_to_str
from testbed_shared.groups import contradiction

MSR_AMD64_SEV = 0xC0010131
HV_VENDOR = "Microsoft Hv"
HV_ISOLATION_TYPES = {0: "none", 1: "vbs", 2: "sev-snp", 3: "tdx"}

#: kernel log wording across versions -> technology it confirms
_KLOG_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Memory Encryption Features active:.*SEV-SNP"), "sev-snp"),
    (re.compile(r"Memory Encryption Features active:.*SEV-ES"), "sev-es"),
    (re.compile(r"Memory Encryption Features active:.*\bSEV\b"), "sev"),
    (re.compile(r"Memory Encryption Features active:.*Intel TDX"), "tdx"),
    (re.compile(r"\bSEV: (Using SNP CPUID table|SNP running at VMPL|SNP guest platform device)"), "sev-snp"),
    (re.compile(r"\b(tdx|TDX): Guest detected"), "tdx"),
    (re.compile(r"Hyper-V: Isolation Config: Group A 0x[0-9a-f]+, Group B (0x[0-9a-f]+)"), "hyperv"),
)
_RANK = {"none": 0, "sev": 1, "sev-es": 2, "sev-snp": 3, "tdx": 3}


def _amd_sev(probe: Probe, evidence: list[dict[str, Any]]) -> str:
    """AMD SEV: CPUID 0x8000001F advertises, MSR 0xC0010131 (SEV_STATUS) says what is on."""
    ext = probe.cpuid(0x80000000)
    if not (ext and ext[0] >= 0x8000001F):
        return "none"
    leaf = probe.cpuid(0x8000001F)
    if not (leaf and leaf[0] & 0b10):
        return "none"
    status = probe.msr(MSR_AMD64_SEV)
    if status is None:
        evidence.append(
            {
                "source": "cpuid",
                "detail": "0x8000001F: SEV supported; MSR unreadable",
                "technology": None,
            }
        )
        return "none"
    found = (
        "sev-snp" if status & 0b100 else "sev-es" if status & 0b10 else ("sev" if status & 0b1 else "none")
    )
    evidence.append({"source": "msr", "detail": f"SEV_STATUS=0x{status:x}", "technology": found})
    return found


def _intel_tdx(probe: Probe, evidence: list[dict[str, Any]]) -> str:
    """Intel TDX: CPUID leaf 0x21 carries "IntelTDX    "."""
    basic = probe.cpuid(0)
    if basic and basic[0] >= 0x21:
        leaf21 = probe.cpuid(0x21, 0)
        if leaf21 and regs_to_str(leaf21[1], leaf21[3], leaf21[2]) == "IntelTDX    ":
            evidence.append({"source": "cpuid", "detail": "leaf 0x21: IntelTDX", "technology": "tdx"})
            return "tdx"
    return "none"


def _hyperv_isolation(probe: Probe, evidence: list[dict[str, Any]]) -> tuple[str, bool]:
    """Hyper-V isolation (Azure CVMs under a paravisor, vTOM): (technology, paravisor)."""
    features = probe.cpuid(0x40000003)
    if not (features and features[1] & (1 << 22)):
        return "none", False
    iso = probe.cpuid(0x4000000C)
    if not iso:
        return "none", False
    itype = HV_ISOLATION_TYPES.get(iso[1] & 0xF, f"unknown({iso[1] & 0xF})")
    paravisor = bool(iso[0] & 0x1)
    vtom = bool(iso[1] & (1 << 5))
    evidence.append(
        {
            "source": "cpuid-hyperv",
            "detail": f"0x4000000C eax=0x{iso[0]:x} ebx=0x{iso[1]:x}: isolation={itype}"
            f" paravisor={paravisor} vtom={vtom}",
            "technology": itype if itype in _RANK else None,
        }
    )
    return (itype if itype in _RANK else "none"), paravisor


def _device_nodes(probe: Probe, evidence: list[dict[str, Any]], tech: str) -> str:
    """Device nodes (weaker: a node can exist without protection); they only fill a ``none``."""
    for path in CC_PATHS:
        if probe.exists(path):
            implied = {"/dev/sev-guest": "sev-snp", "/dev/tdx_guest": "tdx", "/dev/tdx-guest": "tdx"}.get(
                path
            )
            evidence.append({"source": "device", "detail": path, "technology": implied})
            if implied and tech == "none":
                tech = implied
    return tech


def _kernel_log(probe: Probe, evidence: list[dict[str, Any]]) -> None:
    """Kernel log: confirms only; recorded, never raises the verdict on its own."""
    for line in probe.kernel_log().splitlines():
        for pattern, meaning in _KLOG_PATTERNS:
            m = pattern.search(line)
            if not m:
                continue
            found = meaning
            if meaning == "hyperv":
                found = HV_ISOLATION_TYPES.get(int(m.group(1), 16) & 0xF, "none")
            evidence.append(
                {
                    "source": "kernel-log",
                    "detail": line.strip()[:200],
                    "technology": found if found in _RANK else None,
                }
            )
            break


def detect(probe: Probe) -> dict[str, Any]:
    """Return ``{"technology", "evidence", "paravisor", "isolation", "hypervisor_vendor"}``."""
    evidence: list[dict[str, Any]] = []
    tech = "none"
    paravisor = False

    vendor = _hypervisor_vendor(probe)
    cpu_vendor = _cpu_vendor(probe)

    # 1. AMD SEV, 2. Intel TDX, 3. Hyper-V isolation, 4. device nodes, 5. kernel log (confirms only).
    if cpu_vendor == "AuthenticAMD":
        tech = _stronger(tech, _amd_sev(probe, evidence))
    tech = _stronger(tech, _intel_tdx(probe, evidence))
    if vendor == HV_VENDOR:
        found, paravisor = _hyperv_isolation(probe, evidence)
        tech = _stronger(tech, found)
    tech = _device_nodes(probe, evidence, tech)
    _kernel_log(probe, evidence)

    confirmed = any(e["technology"] == tech for e in evidence if e["source"] == "kernel-log")
    return {
        "technology": tech,
        "evidence": evidence,
        "paravisor": paravisor,
        "hypervisor_vendor": vendor,
        "cpu_vendor": cpu_vendor,
        "kernel_log_confirms": confirmed if tech != "none" else None,
    }


def label_mismatch(groups: list[str] | tuple[str, ...], technology: str, label: str = "") -> str | None:
    """A loud message when the inventory claims protection the evidence does not show (the one
    judgement: :func:`testbed_shared.groups.contradiction`, the report's too)."""
    problem = contradiction(groups, technology, label)
    return f"host {problem}" if problem else None


def _stronger(current: str, new: str) -> str:
    return new if _RANK.get(new, 0) > _RANK.get(current, 0) else current


def _cpu_vendor(probe: Probe) -> str | None:
    regs = probe.cpuid(0)
    return regs_to_str(regs[1], regs[3], regs[2]) if regs else None


def _hypervisor_vendor(probe: Probe) -> str | None:
    leaf1 = probe.cpuid(1)
    present = bool(leaf1[2] & (1 << 31)) if leaf1 else "hypervisor" in probe.cpuinfo_flags()
    if not present:
        return None
    regs = probe.cpuid(0x40000000)
    if not regs or regs[0] < 0x40000000:
        return None
    name = regs_to_str(regs[1], regs[2], regs[3]).strip("\x00")
    return name or None
