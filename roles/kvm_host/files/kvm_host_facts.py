#!/usr/bin/env python3
"""Report what a KVM host can run, as JSON on stdout (used by the kvm_host and kvm_guest roles).

Reads /proc/cpuinfo, /dev/kvm, the kvm_amd / kvm_intel module parameters, ``virsh version``,
``virsh capabilities`` (the host's UUID) and ``virsh domcapabilities`` and answers: is hardware
virtualization usable (else guests run as domain type ``qemu``, i.e. software emulation), and
which confidential modes (sev, sev-es, sev-snp, tdx) could a guest get, with the reasons when not.
Standard library only: it runs with the host's python3.

usage: kvm_host_facts.py [--uri qemu:///system] [--root /]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

#: the first libvirt release whose domain XML knows each confidential mode
LIBVIRT_MIN = {"sev": (4, 5, 0), "sev-es": (4, 5, 0), "sev-snp": (10, 5, 0), "tdx": (11, 7, 0)}
#: the first libvirt release with the passt backend of user-mode interfaces
LIBVIRT_PASST = (9, 2, 0)
CC_MODES = ("sev", "sev-es", "sev-snp", "tdx")


def _read(path: Path) -> str:
    """The text of *path*, stripped, or '' when it cannot be read."""
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return ""


def _param_on(path: Path) -> bool | None:
    """A kvm module boolean parameter (Y/N/1/0): True/False, None when the file is missing."""
    text = _read(path)
    if not text:
        return None
    return text[:1] in ("Y", "y", "1")


def _run(cmd: list[str]) -> tuple[int, str, str]:
    """Run *cmd*; (exit code, stdout, stderr); 127 when the program is missing."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return 127, "", str(exc)
    return proc.returncode, proc.stdout, proc.stderr


def parse_version(text: str) -> tuple[int, ...] | None:
    """The first dotted version number in *text* as a tuple, e.g. (9, 0, 0)."""
    match = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text or "")
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())


def cpu_info(root: Path) -> dict[str, Any]:
    """CPU vendor, model name, the virtualization-related flags and the count of online CPUs
    (its processor entries) from /proc/cpuinfo."""
    text = _read(root / "proc/cpuinfo")
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
        if not line.strip() and fields:
            break
    flags = set(fields.get("flags", "").split())
    vendor = {"AuthenticAMD": "amd", "GenuineIntel": "intel"}.get(fields.get("vendor_id", ""), "unknown")
    count = sum(1 for line in text.splitlines() if line.partition(":")[0].strip() == "processor")
    return {
        "vendor": vendor,
        "model": fields.get("model name", "unknown"),
        "count": max(count, 1),
        "vmx": "vmx" in flags,
        "svm": "svm" in flags,
        "hypervisor_flag": "hypervisor" in flags,
        "cc_flags": sorted(flags & {"sev", "sev_es", "sev_snp", "tdx_host_platform", "tdx_guest"}),
    }


def module_params(root: Path) -> dict[str, bool | None]:
    """The confidential-computing parameters of kvm_amd and kvm_intel (None: not loaded/absent)."""
    amd = root / "sys/module/kvm_amd/parameters"
    intel = root / "sys/module/kvm_intel/parameters"
    return {
        "kvm_amd_loaded": (root / "sys/module/kvm_amd").is_dir(),
        "kvm_intel_loaded": (root / "sys/module/kvm_intel").is_dir(),
        "sev": _param_on(amd / "sev"),
        "sev_es": _param_on(amd / "sev_es"),
        "sev_snp": _param_on(amd / "sev_snp"),
        "tdx": _param_on(intel / "tdx"),
    }


def parse_domcapabilities(xml_text: str) -> dict[str, Any]:
    """What ``virsh domcapabilities`` says about confidential guests and firmware."""
    out: dict[str, Any] = {
        "sev": False,
        "sev_snp": False,
        "tdx": False,
        "sectypes": [],
        "sev_details": {},
        "firmware": [],
    }
    if not xml_text.strip():
        return out
    try:
        doc = ET.fromstring(xml_text)  # noqa: S314 - local virsh output, not untrusted input
    except ET.ParseError:
        return out
    out["firmware"] = [v.text for v in doc.findall("./os/loader/value") if v.text]
    sev = doc.find("./features/sev")
    if sev is not None and sev.get("supported") == "yes":
        out["sev"] = True
        out["sev_details"] = {child.tag: (child.text or "").strip() for child in sev}
    values = doc.findall("./features/launchSecurity/enum[@name='sectype']/value")
    sectypes = [v.text for v in values if v.text]
    out["sectypes"] = sectypes
    out["sev_snp"] = "sev-snp" in sectypes
    tdx = doc.find("./features/tdx")
    out["tdx"] = "tdx" in sectypes or (tdx is not None and tdx.get("supported") == "yes")
    if "sev" in sectypes:
        out["sev"] = True
    return out


def parse_host_uuid(caps_xml: str) -> str | None:
    """The host's UUID from ``virsh capabilities`` (``<host><uuid>``: the SMBIOS system UUID, or
    libvirtd.conf's host_uuid), lower case; None when absent or unreadable."""
    try:
        doc = ET.fromstring(caps_xml) if caps_xml.strip() else None  # noqa: S314 - local virsh output
        found = doc.findtext("host/uuid") if doc is not None else None
    except ET.ParseError:
        return None
    text = (found or "").strip().lower()
    return text if re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", text) else None


def confidential_support(
    cpu: dict[str, Any],
    params: dict[str, bool | None],
    kvm_usable: bool,
    libvirt_version: tuple[int, ...] | None,
    caps: dict[str, Any],
) -> dict[str, Any]:
    """For each confidential mode: supported (bool) and the reasons it is not."""
    result: dict[str, Any] = {}
    for mode in CC_MODES:
        reasons: list[str] = []
        if not kvm_usable:
            reasons.append(
                "hardware virtualization is not usable here (guests would run as domain type "
                "'qemu', software emulation, which cannot run confidential guests)"
            )
        if mode == "tdx":
            if cpu["vendor"] != "intel":
                reasons.append(f"TDX needs an Intel CPU (this host's CPU vendor: {cpu['vendor']})")
            if params["tdx"] is not True:
                reasons.append(
                    "kvm_intel parameter tdx is not enabled "
                    "(/sys/module/kvm_intel/parameters/tdx missing or N)"
                )
            if not caps["tdx"]:
                reasons.append("libvirt domcapabilities does not offer tdx")
        else:
            if cpu["vendor"] != "amd":
                reasons.append(f"{mode} needs an AMD EPYC CPU (this host's CPU vendor: {cpu['vendor']})")
            param = {"sev": "sev", "sev-es": "sev_es", "sev-snp": "sev_snp"}[mode]
            if params[param] is not True:
                reasons.append(
                    f"kvm_amd parameter {param} is not enabled "
                    f"(/sys/module/kvm_amd/parameters/{param} missing or N)"
                )
            offered, sectype = (caps["sev_snp"], "sev-snp") if mode == "sev-snp" else (caps["sev"], "sev")
            if not offered:
                reasons.append(f"libvirt domcapabilities does not offer {sectype}")
        need = LIBVIRT_MIN[mode]
        if libvirt_version is None or libvirt_version < need:
            have = ".".join(map(str, libvirt_version)) if libvirt_version else "unknown"
            reasons.append(
                f"libvirt {have} is older than {'.'.join(map(str, need))}, "
                f"the first release that knows <launchSecurity type='{mode.replace('-es', '')}'>"
            )
        result[mode] = {"supported": not reasons, "reasons": reasons}
    return result


def collect(uri: str, root: Path) -> dict[str, Any]:
    """All the host facts as one JSON-ready dict."""
    cpu = cpu_info(root)
    params = module_params(root)
    dev_kvm = (root / "dev/kvm").exists()
    kvm_usable = dev_kvm and (cpu["vmx"] or cpu["svm"])
    rc, out, err = _run(["virsh", "-c", uri, "version"])
    versions = {}
    for line in out.splitlines():
        key, _, value = line.partition(":")
        versions[key.strip()] = value.strip()
    libvirt_version = parse_version(versions.get("Using library", ""))
    qemu_version = parse_version(versions.get("Running hypervisor", ""))
    virttype = "kvm" if kvm_usable else "qemu"
    _, caps_xml, caps_err = _run(["virsh", "-c", uri, "domcapabilities", "--virttype", virttype])
    caps = parse_domcapabilities(caps_xml)
    _, host_caps_xml, _ = _run(["virsh", "-c", uri, "capabilities"])
    if not kvm_usable:
        domain_type_reason = (
            "no vmx/svm flag in /proc/cpuinfo" if dev_kvm else "/dev/kvm is missing"
        ) + ": guests run as domain type 'qemu' (TCG software emulation)"
    else:
        domain_type_reason = "hardware virtualization usable: guests run as domain type 'kvm'"
    return {
        "hostname": platform.node(),
        # the physical host's identity a guest's fingerprint records (issue 34: machines by host)
        "host_uuid": parse_host_uuid(host_caps_xml),
        "kernel": platform.release(),
        "cpu": cpu,
        "dev_kvm": dev_kvm,
        "kvm_usable": kvm_usable,
        "domain_type": virttype,
        "domain_type_reason": domain_type_reason,
        "kvm_module_params": params,
        "libvirt_uri": uri,
        "libvirt_reachable": rc == 0,
        "libvirt_error": err.strip() if rc else "",
        "libvirt_version": ".".join(map(str, libvirt_version)) if libvirt_version else None,
        "qemu_version": ".".join(map(str, qemu_version)) if qemu_version else None,
        "passt": {
            "binary": shutil.which("passt") is not None,
            "libvirt_backend": bool(libvirt_version and libvirt_version >= LIBVIRT_PASST),
        },
        "domcapabilities": caps if caps_xml else {"error": caps_err.strip()},
        "confidential": confidential_support(cpu, params, kvm_usable, libvirt_version, caps),
        "virt_xml_validate": shutil.which("virt-xml-validate") is not None,
        "systemd": (root / "run/systemd/system").is_dir(),
        "euid": os.geteuid(),
    }


def main(argv: list[str] | None = None) -> int:
    """Print the host facts as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--uri", default="qemu:///system", help="libvirt connection URI")
    parser.add_argument("--root", type=Path, default=Path("/"), help="file system root (tests)")
    args = parser.parse_args(argv)
    json.dump(collect(args.uri, args.root), sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
