"""Machine fingerprints per label and the check that labels match the confidential-computing evidence."""

from __future__ import annotations

import re
from typing import Any

import pandas as pd

from testbed_shared import groups as inventory_groups
from testbed_shared.virtualization import from_recorded

_ENCRYPTED = re.compile(r"(?<![a-z])(?<!un)(?<!not[-_ ])encrypt", re.IGNORECASE)


def disk_encrypted(value: Any) -> bool | None:
    """Truth of a sysinfo ``disk_encryption`` entry (bool, dict, list or string); None when unknown."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, dict):
        for key in ("active", "encrypted", "enabled"):
            if key in value:
                return bool(value[key])
        for key, devices in value.items():
            if str(key).endswith(("devices", "volumes")) and isinstance(devices, list):
                return bool(devices)
        return None
    if isinstance(value, list):
        return bool(value)
    if isinstance(value, str):
        return value.strip().lower() not in ("", "none", "false", "no", "off")
    return bool(value)


def claimed_technology(label: str, groups: list[str]) -> str | None:
    """What the inventory claims: 'sev', 'tdx', 'none' (a baseline) or None (no claim)
    (:func:`testbed_shared.groups.claimed`, the agent's rule too)."""
    return inventory_groups.claimed(groups, label)


def claims_encryption(label: str) -> bool:
    return bool(_ENCRYPTED.search(label))


def _evidence_text(evidence: Any) -> str:
    if not evidence:
        return ""
    if isinstance(evidence, list):
        parts = []
        for e in evidence:
            if isinstance(e, dict):
                parts.append(", ".join(f"{k}={v}" for k, v in e.items()))
            else:
                parts.append(str(e))
        return "; ".join(parts)
    return str(evidence)


def _hypervisor_text(hv: Any) -> str:
    """The machine's virtualization in words ("KVM guest in a docker container"), from sysinfo's
    ``hypervisor`` section; sections of older agents are named from their raw readings."""
    if isinstance(hv, dict):
        if hv.get("virtualization") or "cpuid_vendor" in hv or "systemd_detect_virt" in hv:
            return from_recorded(hv)
        keys = ("vendor", "name", "type", "detected", "virt")
        parts = [str(hv[k]) for k in keys if hv.get(k)]
        if not parts:
            parts = [f"{k}={v}" for k, v in hv.items() if isinstance(v, (str, int, float, bool))][:4]
        return " ".join(parts)
    return "" if hv is None else str(hv)


def _host_text(host: Any) -> str:
    """The hypervisor side of a guest (``sysinfo.host``, from the kvm_guest role), in one line."""
    if not isinstance(host, dict) or not host:
        return ""
    parts = [str(host.get("virtualization") or host.get("domain_type") or "")]
    versions = [
        f"{name} {host[key]}"
        for name, key in (("QEMU", "qemu_version"), ("libvirt", "libvirt_version"))
        if host.get(key)
    ]
    if versions:
        parts.append(", ".join(versions))
    if host.get("host_cpu_model"):
        parts.append(f"host CPU {host['host_cpu_model']}")
    shape = [
        f"{host['vcpus']} vCPU" if host.get("vcpus") else "",
        f"{host['memory_mib']} MiB" if host.get("memory_mib") else "",
        f"disk cache {host['disk_cache']}" if host.get("disk_cache") else "",
    ]
    if any(shape):
        parts.append(", ".join(x for x in shape if x))
    return "; ".join(p for p in parts if p)


def fingerprints(records: pd.DataFrame, sysinfo: dict[tuple[str, str], dict[str, Any]]) -> pd.DataFrame:
    """One row per (label, run, host): CPU, kernel, hypervisor (and its host side, for KVM guests),
    cc technology and evidence."""
    hosts = records[["label", "run_id", "host", "groups"]].drop_duplicates().sort_values(["label", "host"])
    rows = []
    for label, run_id, host, groups in hosts.itertuples(index=False):
        info = sysinfo.get((run_id, host))
        cc = (info or {}).get("cc") or {}
        cpu = (info or {}).get("cpu") or {}
        kernel = (info or {}).get("kernel") or {}
        enc = disk_encrypted(cc.get("disk_encryption")) if info else None
        rows.append(
            {
                "label": label,
                "run_id": run_id,
                "host": host,
                "groups": groups,
                "cpu_model": cpu.get("model", "") if isinstance(cpu, dict) else str(cpu),
                "kernel": kernel.get("release", "") if isinstance(kernel, dict) else str(kernel),
                "hypervisor": _hypervisor_text((info or {}).get("hypervisor")),
                "hypervisor_host": _host_text((info or {}).get("host")),
                "cc_technology": cc.get("technology", "unknown") if info else "unknown",
                "paravisor": cc.get("paravisor") if info else None,
                "cc_evidence": _evidence_text(cc.get("evidence")),
                "disk_encryption": enc,
                "attestation": "yes" if cc.get("attestation") else "no",
                "sysinfo": info is not None,
                "agent_mismatch": cc.get("label_mismatch") or "",
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "label",
            "run_id",
            "host",
            "groups",
            "cpu_model",
            "kernel",
            "hypervisor",
            "hypervisor_host",
            "cc_technology",
            "paravisor",
            "cc_evidence",
            "disk_encryption",
            "attestation",
            "sysinfo",
            "agent_mismatch",
        ],
    )


def mismatches(fp: pd.DataFrame) -> list[tuple[str, str]]:
    """(label, problem): labels and groups that the recorded evidence contradicts."""
    problems = []
    for row in fp.itertuples(index=False):
        groups = [g for g in str(row.groups).split(",") if g]
        claim = claimed_technology(str(row.label), groups)
        who = f"{row.host} (label {row.label}, run {row.run_id})"
        tech = str(row.cc_technology)

        def flag(text: str, label: str = str(row.label)) -> None:
            problems.append((label, text))

        if claim in inventory_groups.CONFIDENTIAL and not row.sysinfo:
            flag(f"{who} claims {claim.upper()} but has no sysinfo: the protection is unproven")
        elif row.sysinfo and (problem := inventory_groups.contradiction(groups, tech, str(row.label))):
            flag(f"{who} {problem}")
        if claims_encryption(str(row.label)) and row.disk_encryption is False:
            flag(f"{who} claims disk encryption but sysinfo finds none active")
        if row.agent_mismatch:
            flag(f"{who}: the agent reports a label mismatch: {row.agent_mismatch}")
    return problems


def label_factors(fp: pd.DataFrame) -> pd.DataFrame:
    """Per label: protection (confidential/baseline), vendor (amd/intel) and disk (encrypted/plain)."""
    rows = []
    for label, part in fp.groupby("label", observed=True, sort=True):
        groups = sorted({g for gs in part["groups"] for g in str(gs).split(",") if g})
        claim = claimed_technology(str(label), groups)
        protection = {"sev": "confidential", "tdx": "confidential", "none": "baseline"}.get(claim or "")
        vendor = None
        if "sev" in groups or "amd_baseline" in groups:
            vendor = "amd"
        elif "tdx" in groups or "intel_baseline" in groups:
            vendor = "intel"
        else:
            models = " ".join(part["cpu_model"].astype(str)).lower()
            vendor = "amd" if "amd" in models else "intel" if "intel" in models else None
        enc = part["disk_encryption"].dropna()
        if len(enc):
            disk = "encrypted" if bool(enc.iloc[0]) else "plain"
        else:
            disk = "encrypted" if claims_encryption(str(label)) else "plain"
        rows.append(
            {
                "label": label,
                "groups": ",".join(groups),
                "protection": protection,
                "vendor": vendor,
                "disk": disk,
            }
        )
    return pd.DataFrame(rows, columns=["label", "groups", "protection", "vendor", "disk"])
