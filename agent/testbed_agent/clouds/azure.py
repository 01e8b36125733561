"""Azure, the first cloud: evidence from inside a guest and what a VM size name says.

Evidence is read only when the inventory says the machine is in Azure (``--cloud azure``); nothing
here runs on import. ``imds()`` reads the Instance Metadata Service (VM size, security profile,
a dedicated host's id);
``hardware_report()`` reads the confidential VM's attestation report that the paravisor stores in
the vTPM's NV index 0x01400001 (``tpm2_nvread``) and returns its digests and key fields. Machines
are made by the ``azure_vm`` role; a host with ``azure_vm_size`` is an Azure host.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from testbed_agent.clouds.base import Cloud
from testbed_shared.errors import TestbedError

IMDS_ENDPOINT = "http://169.254.169.254"
IMDS_API_VERSION = "2021-12-13"
HCL_REPORT_NV_INDEX = 0x01400001
TPM_DEVICE = Path("/dev/tpmrm0")

_HCL_SIGNATURE = b"HCLA"
_HCL_HEADER = 32  # signature, version, report size, request type, status, 3 reserved (u32 each)
_HW_REPORT_SIZE = 1184  # room for an SNP report (TDX's 1024-byte TDREPORT is padded to it)
_REPORT_TYPES = {2: "sev-snp", 4: "tdx"}
_HASH_TYPES = {1: "sha256", 2: "sha384", 3: "sha512"}
#: GiB of memory per vCPU of an Azure size family (D: general purpose, E: memory, F: compute)
MEMORY_PER_VCPU_GIB = {"D": 4, "E": 8, "F": 2}


class Azure(Cloud):
    name = "azure"
    role = "azure_vm"
    size_var = "azure_vm_size"
    machine_vars = (
        "azure_vm_size",
        "azure_vm_os_disk_type",
        "azure_vm_os_disk_size_gb",
        "azure_vm_security_type",
        "azure_vm_security_encryption_type",
    )

    @classmethod
    def describe(cls, info: dict[str, Any]) -> None:
        """IMDS into ``info["cloud"]["azure"]``, the vTPM hardware report into the cc state."""
        try:
            info["cloud"]["azure"] = imds()
        except Exception as exc:  # noqa: BLE001 - evidence is best effort, the error is recorded
            info["cloud"]["error"] = f"IMDS: {exc}"
        try:
            info["cc"]["attestation"] = hardware_report()
        except Exception as exc:  # noqa: BLE001
            info["cc"]["attestation"] = {"error": str(exc)}

    @classmethod
    def shape(cls, hostvars: Mapping[str, Any]) -> dict[str, Any]:
        confidential = hostvars.get("azure_vm_security_type") == "ConfidentialVM"
        size, kind = (
            hostvars.get("azure_vm_os_disk_size_gb") or "",
            hostvars.get("azure_vm_os_disk_type") or "",
        )
        disk = f"{size} GB {kind}"
        return {
            "os_disk": disk.strip(),
            "security": hostvars.get("azure_vm_security_type"),
            "encryption": hostvars.get("azure_vm_security_encryption_type") if confidential else "-",
        }

    @classmethod
    def vcpus(cls, size: str) -> int | None:
        """vCPUs from an Azure size name (Standard_DC4as_v5 -> 4; constrained E8-2as_v5 -> 2)."""
        m = re.match(r"^(?:Standard|Basic)_[A-Za-z]+?(\d+)(?:-(\d+))?[a-z]*(?:_v\d+)?$", size)
        return int(m.group(2) or m.group(1)) if m else None

    @classmethod
    def memory_gib(cls, size: str, vcpus: int) -> float | None:
        """Memory of an Azure size from its family letter (Standard_DC2as_v5 -> D -> 4 GiB/vCPU)."""
        m = re.match(r"(?:Standard|Basic)_([A-Z])", size)
        per = MEMORY_PER_VCPU_GIB.get(m.group(1)) if m else None
        return per * vcpus if per else None


def imds(endpoint: str | None = None, timeout: float = 2.0) -> dict[str, Any]:
    """The machine's Azure identity and security profile from IMDS (raises TestbedError).

    The endpoint is Azure's link-local address unless TESTBED_AZURE_IMDS names another (rehearsals).
    """
    endpoint = endpoint or os.environ.get("TESTBED_AZURE_IMDS") or IMDS_ENDPOINT
    if not endpoint.startswith(("http://", "https://")):
        raise TestbedError(f"IMDS endpoint {endpoint!r} is not an http(s) URL")
    url = f"{endpoint.rstrip('/')}/metadata/instance?api-version={IMDS_API_VERSION}"
    request = urllib.request.Request(url, headers={"Metadata": "true"})  # noqa: S310 (scheme checked above)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # IMDS must never be proxied
    try:
        with opener.open(request, timeout=timeout) as response:
            document = json.loads(response.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        raise TestbedError(
            f"Azure IMDS at {endpoint} did not answer: {exc}",
            "is this machine in Azure? run without --cloud azure elsewhere",
        ) from exc
    except (ValueError, UnicodeDecodeError) as exc:
        raise TestbedError(f"Azure IMDS at {endpoint} sent something that is not JSON: {exc}") from exc
    compute = document.get("compute") if isinstance(document, dict) else None
    if not isinstance(compute, dict):
        raise TestbedError(f"Azure IMDS at {endpoint} answered without a 'compute' section")
    return _summarize(compute, endpoint)


def _summarize(compute: dict[str, Any], endpoint: str) -> dict[str, Any]:
    security = compute.get("securityProfile") or {}
    image = (compute.get("storageProfile") or {}).get("imageReference") or {}
    tags = compute.get("tagsList") or []
    return {
        "source": endpoint,
        "api_version": IMDS_API_VERSION,
        "vm_size": compute.get("vmSize"),
        "location": compute.get("location"),
        "zone": compute.get("zone") or None,
        "name": compute.get("name"),
        "vm_id": compute.get("vmId"),
        "resource_id": compute.get("resourceId"),
        # the physical host, for VMs on a dedicated host only (api-version 2021-11-15 and later)
        "host_id": _id_of(compute.get("host")),
        "host_group_id": _id_of(compute.get("hostGroup")),
        "platform_fault_domain": compute.get("platformFaultDomain"),
        "platform_update_domain": compute.get("platformUpdateDomain"),
        "security_type": security.get("securityType") or None,
        "secure_boot": _flag(security.get("secureBootEnabled")),
        "vtpm": _flag(security.get("virtualTpmEnabled")),
        "encryption_at_host": _flag(security.get("encryptionAtHost")),
        "image": {k: image.get(k) for k in ("publisher", "offer", "sku", "version") if image.get(k)},
        "tags": {t["name"]: t.get("value") for t in tags if isinstance(t, dict) and t.get("name")},
    }


def _id_of(ref: Any) -> str | None:
    """The ``id`` of an IMDS reference object (``{"id": ""}`` when there is none)."""
    ident = ref.get("id") if isinstance(ref, dict) else None
    return ident if isinstance(ident, str) and ident.strip() else None


def _flag(value: Any) -> bool | None:
    """IMDS reports booleans as the strings "true"/"false"."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    return None


def hardware_report(
    tpm2_nvread: str = "tpm2_nvread",
    device: Path = TPM_DEVICE,
    nv_index: int = HCL_REPORT_NV_INDEX,
    timeout: float = 20.0,
) -> dict[str, Any] | None:
    """Digests and fields of the vTPM-held attestation report; None without a TPM or tpm2-tools.

    TESTBED_AZURE_TPM_TCTI names another TPM than ``device`` (e.g. a swtpm in rehearsals).
    """
    tool = shutil.which(tpm2_nvread)
    tcti = os.environ.get("TESTBED_AZURE_TPM_TCTI", "")
    if tool is None or not (tcti or device.exists()):
        return None
    env = dict(os.environ, TPM2TOOLS_TCTI=tcti or f"device:{device}")
    try:
        done = subprocess.run(  # noqa: S603 - a bounded (timeout) read of the vTPM by tpm2_nvread, outside any benchmark
            [tool, "-C", "o", f"0x{nv_index:08x}"], capture_output=True, env=env, timeout=timeout, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"source": f"vtpm-nv:0x{nv_index:08x}", "error": f"{tpm2_nvread}: {exc}"}
    if done.returncode != 0 or not done.stdout:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return {
            "source": f"vtpm-nv:0x{nv_index:08x}",
            "error": f"{tpm2_nvread} exited {done.returncode}: {message[-1] if message else 'no output'}",
        }
    report = parse_hcl_report(done.stdout)
    report["source"] = f"vtpm-nv:0x{nv_index:08x}"
    report["tool"] = {"name": "tpm2_nvread", "path": tool}
    return report


def parse_hcl_report(blob: bytes) -> dict[str, Any]:
    """Read the Azure HCL report: header, hardware (SNP/TDX) report, runtime data (best effort)."""
    out: dict[str, Any] = {"size": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}
    if len(blob) < _HCL_HEADER + _HW_REPORT_SIZE or blob[:4] != _HCL_SIGNATURE:
        out.update(format="unknown", report_type="unknown")
        return out
    version, report_size, request_type, status = struct.unpack_from("<4I", blob, 4)
    hw = blob[_HCL_HEADER : _HCL_HEADER + _HW_REPORT_SIZE]
    out.update(
        format="azure-hcl",
        hcl_version=version,
        hcl_report_size=report_size,
        request_type=request_type,
        status=status,
    )
    runtime = _runtime_data(blob[_HCL_HEADER + _HW_REPORT_SIZE :])
    kind = _REPORT_TYPES.get(runtime.pop("report_type_code", 0), "unknown")
    out["report_type"] = kind
    out["runtime"] = runtime
    if kind == "tdx":
        tdreport = hw[:1024]
        out["hardware_report_sha256"] = hashlib.sha256(tdreport).hexdigest()
        out["report_data"] = tdreport[128:192].hex()
        out["measurement"] = tdreport[528:576].hex()  # TDINFO.MRTD
    else:
        out["hardware_report_sha256"] = hashlib.sha256(hw).hexdigest()
        if kind == "sev-snp":
            snp_version, guest_svn, policy = struct.unpack_from("<IIQ", hw, 0)
            out.update(
                snp_version=snp_version,
                guest_svn=guest_svn,
                policy=f"0x{policy:x}",
                report_data=hw[0x50:0x90].hex(),
                measurement=hw[0x90:0xC0].hex(),
                chip_id=hw[0x1A0:0x1E0].hex(),
            )
    return out


def _runtime_data(tail: bytes) -> dict[str, Any]:
    """IGVM request data after the hardware report: sizes, report type and the JSON claims."""
    if len(tail) < 20:
        return {}
    data_size, version, report_type, hash_type, variable_size = struct.unpack_from("<5I", tail, 0)
    variable = tail[20 : 20 + variable_size]
    result: dict[str, Any] = {
        "version": version,
        "data_size": data_size,
        "report_type_code": report_type,
        "report_data_hash": _HASH_TYPES.get(hash_type, str(hash_type)),
        "claims_sha256": hashlib.sha256(variable).hexdigest(),
    }
    try:
        claims = json.loads(variable.rstrip(b"\0").decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return result
    if isinstance(claims, dict):
        result["vm_configuration"] = claims.get("vm-configuration")
        result["key_ids"] = [k.get("kid") for k in claims.get("keys", []) if isinstance(k, dict)]
    return result
