"""Machine fingerprint (the classic ``systeminfo`` benchmark): CPU, kernel, memory, disks,
hypervisor, clocksource, confidential-computing state, the physical host (``machine``: identity.py),
tool versions.

One producer: :func:`fingerprint` makes it from a run's options (cloud, hypervisor facts, what
the inventory declares), for ``testbed-agent sysinfo``, the runner's ``<host>.sysinfo.json`` and
the ``sysinfo`` workload alike (the workload passes the same options on: :func:`option_args`)."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any

from testbed_agent import __version__, clouds
from testbed_agent.sysinfo import cc, hyperv, identity, virt
from testbed_agent.sysinfo.probe import Probe
from testbed_shared.virtualization import summary

TOOLS = {
    "fio": ["fio", "--version"],
    "dd": ["dd", "--version"],
    "openssl": ["openssl", "version"],
    "qemu": ["qemu-system-x86_64", "--version"],
    "node_exporter": ["prometheus-node-exporter", "--version"],
    "go": ["go", "version"],
    "rustc": ["rustc", "--version"],
    "java": ["java", "-version"],
    "node": ["node", "--version"],
}


def options_from_args(args: Any) -> dict[str, Any]:
    """A run's fingerprint options from the command line (``--cloud``, ``--host-facts``,
    ``--disk-encryption``, ``--rotation``)."""
    options: dict[str, Any] = {
        "cloud": args.cloud,
        "host_facts": str(args.host_facts) if args.host_facts else None,
        "rotation": getattr(args, "rotation", 0) or 0,
    }
    if getattr(args, "disk_encryption", None) is not None:
        options["declared"] = {"disk_encryption": args.disk_encryption == "true"}
    return options


def option_args(options: Mapping[str, Any]) -> list[str]:
    """The command-line arguments that give ``testbed-agent sysinfo`` the same options."""
    args = ["--cloud", options.get("cloud") or "none"]
    if options.get("host_facts"):
        args += ["--host-facts", str(options["host_facts"])]
    declared = (options.get("declared") or {}).get("disk_encryption")
    if declared is not None:
        args += ["--disk-encryption", "true" if declared else "false"]
    if options.get("rotation"):
        args += ["--rotation", str(options["rotation"])]
    return args


def fingerprint(options: Mapping[str, Any], probe: Probe | None = None) -> dict[str, Any]:
    """This machine's fingerprint with a run's options (:func:`options_from_args`)."""
    host_facts = options.get("host_facts")
    facts = json.loads(Path(host_facts).read_text()) if host_facts else None
    return collect(
        cloud=options.get("cloud") or "none",
        host_facts=facts,
        probe=probe,
        declared=options.get("declared"),
        rotation=options.get("rotation") or 0,
    )


def collect(
    cloud: str = "none",
    host_facts: dict[str, Any] | None = None,
    probe: Probe | None = None,
    declared: dict[str, Any] | None = None,
    rotation: int = 0,
) -> dict[str, Any]:
    """Everything known about this machine, as one JSON-serialisable dict (``rotation``: how many
    times the orchestration rotated it onto a new placement, recorded in ``machine``)."""
    probe = probe or Probe()
    cc_state = cc.detect(probe)
    cc_state["disk_encryption"] = _disk_encryption(declared)
    cc_state["attestation"] = None
    info: dict[str, Any] = {
        "schema": 1,
        "hostname": socket.gethostname(),
        "agent_version": __version__,
        "cpu": _cpu(),
        "kernel": _kernel(),
        "memory": _memory(),
        "disks": _disks(),
        "hypervisor": _hypervisor(cc_state, probe),
        "clocksource": _read("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        "cc": cc_state,
        "python": {"version": platform.python_version(), "executable": sys.executable},
        "tools": tool_versions(),
        "cloud": {"provider": cloud},
    }
    provider = clouds.get(cloud)
    if provider is not None:
        provider.describe(info)
    info["hypervisor"] |= hyperv.describe(probe, cc_state.get("hypervisor_vendor"), host_facts)
    if host_facts:
        info["host"] = host_facts
        if host_facts.get("domain_type"):
            info["hypervisor"]["domain_type"] = host_facts["domain_type"]
            info["hypervisor"]["software_emulation"] = host_facts["domain_type"] == "qemu"
    hv = info["hypervisor"]
    hv["virtualization"] = summary(hv.get("vm"), hv.get("container"), bool(hv.get("software_emulation")))
    info["machine"] = identity.describe(info, host_facts, rotation)
    return info


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _run(cmd: list[str], timeout: float = 10) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)  # noqa: S603 - a read-only version probe, bounded by its timeout
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    text = (out.stdout or out.stderr).strip()
    return text or None


def _cpu() -> dict[str, Any]:
    text = _read("/proc/cpuinfo") or ""
    first = text.split("\n\n", 1)[0]
    fields = dict(
        (k.strip(), v.strip())
        for k, _, v in (line.partition(":") for line in first.splitlines())
        if k.strip()
    )
    return {
        "model": fields.get("model name"),
        "vendor": fields.get("vendor_id"),
        "family": fields.get("cpu family"),
        "model_id": fields.get("model"),
        "stepping": fields.get("stepping"),
        "microcode": fields.get("microcode"),
        "flags": sorted(fields.get("flags", "").split()),
        "bugs": sorted(fields.get("bugs", "").split()),
        "logical_cpus": os.cpu_count(),
        "affinity": sorted(os.sched_getaffinity(0)),
        "hardware_virtualization": bool({"vmx", "svm"} & set(fields.get("flags", "").split())),
    }


def _kernel() -> dict[str, Any]:
    u = platform.uname()
    return {
        "release": u.release,
        "version": u.version,
        "machine": u.machine,
        "cmdline": _read("/proc/cmdline"),
        "os_release": _os_release(),
    }


def _os_release() -> dict[str, str]:
    text = _read("/etc/os-release") or ""
    return {k: v.strip('"') for k, _, v in (line.partition("=") for line in text.splitlines()) if v}


def _memory() -> dict[str, Any]:
    text = _read("/proc/meminfo") or ""
    kb = {m.group(1): int(m.group(2)) * 1024 for m in re.finditer(r"^(\w+):\s+(\d+) kB", text, re.M)}
    return {
        "total_bytes": kb.get("MemTotal"),
        "available_bytes": kb.get("MemAvailable"),
        "swap_bytes": kb.get("SwapTotal"),
        "hugepage_size_bytes": kb.get("Hugepagesize"),
    }


def _disks() -> list[dict[str, Any]]:
    out = _run(["lsblk", "-J", "-b", "-o", "NAME,TYPE,SIZE,MODEL,ROTA,FSTYPE,MOUNTPOINT,SCHED"])
    if not out:
        return []
    try:
        return json.loads(out).get("blockdevices", [])
    except json.JSONDecodeError:
        return []


def _hypervisor(cc_state: dict[str, Any], probe: Probe) -> dict[str, Any]:
    """The virtualization layers (``virt.detect``: VM and container apart, and their one-line name)
    and the raw readings they came from."""
    return {
        **virt.detect(probe),
        "cpuid_vendor": cc_state.get("hypervisor_vendor"),
        "systemd_detect_virt": probe.command(["systemd-detect-virt"]),
        "systemd_detect_virt_cvm": probe.command(["systemd-detect-virt", "--cvm"]),
        "sys_hypervisor_type": probe.read("/sys/hypervisor/type"),
        "dmi_product": probe.read("/sys/class/dmi/id/product_name"),
        "dmi_vendor": probe.read("/sys/class/dmi/id/sys_vendor"),
    }


def _disk_encryption(declared: dict[str, Any] | None) -> dict[str, Any]:
    """dm-crypt devices seen in the guest, plus what the inventory declares (Azure CVM disk
    encryption is invisible from inside the guest)."""
    out = _run(["lsblk", "-J", "-o", "NAME,TYPE,MOUNTPOINT"]) or "{}"
    try:
        devs = json.loads(out).get("blockdevices", [])
    except json.JSONDecodeError:
        devs = []
    crypt: list[str] = []

    def walk(nodes: list[dict[str, Any]]) -> None:
        for n in nodes:
            if n.get("type") == "crypt":
                crypt.append(n.get("name", "?"))
            walk(n.get("children") or [])

    walk(devs)
    said = (declared or {}).get("disk_encryption")
    if crypt:
        active, source = True, "dm-crypt"
    elif said is not None:
        active, source = bool(said), "inventory"
    else:
        active, source = None, None
    return {"active": active, "source": source, "dm_crypt_devices": crypt, "declared": said}


def tool_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {}
    for name, cmd in TOOLS.items():
        out = _run(cmd)
        versions[name] = out.splitlines()[0] if out else None
    try:
        for pkg in ("pyperformance", "pyperf", "nbclient", "cryptography", "psutil"):
            try:
                versions[pkg] = version(pkg)
            except Exception:  # noqa: BLE001 - not installed
                versions[pkg] = None
    except ImportError:
        pass
    return versions
