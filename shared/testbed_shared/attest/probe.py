"""Where fresh evidence comes from: configfs-tsm, /dev/sev-guest, the vTPM through tpm2-tools and
Azure IMDS (THIM). Every device read goes through an :class:`EvidenceProbe`, so the binding can be
tested on recorded answers or a software TPM (same seam style as ``sysinfo.probe``)."""

from __future__ import annotations

import base64
import binascii
import ctypes
import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
import textwrap
import urllib.request
from pathlib import Path
from typing import Any

TSM_REPORT = "/sys/kernel/config/tsm/report"
SEV_GUEST = "/dev/sev-guest"
TPM_DEVICE = "/dev/tpmrm0"
IMDS = "http://169.254.169.254"


class ProbeError(Exception):
    """A device or tool that is present refused to give evidence."""


class _SnpReq(ctypes.Structure):
    _fields_ = [("user_data", ctypes.c_uint8 * 64), ("vmpl", ctypes.c_uint32), ("rsvd", ctypes.c_uint8 * 28)]


class _SnpResp(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint8 * 4000)]


class _GuestReq(ctypes.Structure):
    _fields_ = [
        ("msg_version", ctypes.c_uint8),
        ("req_data", ctypes.c_uint64),
        ("resp_data", ctypes.c_uint64),
        ("exitinfo2", ctypes.c_uint64),
    ]


def _iowr(kind: str, nr: int, size: int) -> int:
    return (3 << 30) | (size << 16) | (ord(kind) << 8) | nr


SNP_GET_REPORT = _iowr("S", 0, ctypes.sizeof(_GuestReq))


class EvidenceProbe:
    """The live machine."""

    def __init__(self, tcti: str | None = None, imds: str = IMDS, present: set[str] | None = None) -> None:
        self.tcti = tcti or os.environ.get("TPM2TOOLS_TCTI") or f"device:{TPM_DEVICE}"
        self.imds = imds
        self.present = present  # recorded device nodes (tests: a software TPM stands behind tcti)

    def exists(self, path: str) -> bool:
        return path in self.present if self.present is not None else os.path.exists(path)

    def has_tool(self, name: str) -> bool:
        return shutil.which(name) is not None

    def tsm_report(self, inblob: bytes) -> dict[str, bytes]:
        """A report through configfs-tsm: outblob (report or quote), auxblob (certificates), provider."""
        entry = Path(tempfile.mkdtemp(prefix="testbed-", dir=TSM_REPORT))
        try:
            (entry / "inblob").write_bytes(inblob)
            out = {"outblob": (entry / "outblob").read_bytes(), "provider": (entry / "provider").read_bytes()}
            aux = entry / "auxblob"
            out["auxblob"] = aux.read_bytes() if aux.exists() else b""
            return out
        except OSError as exc:
            raise ProbeError(f"configfs-tsm: {exc}") from exc
        finally:
            os.rmdir(entry)

    def sev_guest_report(self, report_data: bytes) -> bytes:
        """SNP_GET_REPORT on /dev/sev-guest (the report only; the VCEK comes from elsewhere)."""
        req, resp = _SnpReq(), _SnpResp()
        ctypes.memmove(req.user_data, report_data, 64)
        msg = _GuestReq(1, ctypes.addressof(req), ctypes.addressof(resp), 0)
        try:
            with open(SEV_GUEST, "rb", buffering=0) as dev:
                fcntl.ioctl(dev, SNP_GET_REPORT, msg)
        except OSError as exc:
            raise ProbeError(
                f"{SEV_GUEST}: SNP_GET_REPORT failed: {exc} (exitinfo2 0x{msg.exitinfo2:x})"
            ) from exc
        data = bytes(resp.data)
        size = int.from_bytes(data[4:8], "little")
        return data[32 : 32 + size]

    def tpm2(self, *args: str, data: bytes | None = None) -> bytes:
        """Run one tpm2-tools command against the vTPM; stdout bytes."""
        env = dict(os.environ, TPM2TOOLS_TCTI=self.tcti)
        try:
            done = subprocess.run(  # noqa: S603 - tpm2-tools for evidence, bounded (timeout), between benchmarks
                ["tpm2_" + args[0], *args[1:]],
                input=data,
                capture_output=True,
                env=env,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ProbeError(f"tpm2_{args[0]}: {exc}") from exc
        if done.returncode != 0:
            err = done.stderr.decode(errors="replace").strip().splitlines()
            raise ProbeError(f"tpm2_{args[0]} exited {done.returncode}: {err[-1] if err else ''}")
        return done.stdout

    def tdx_quote(self, td_report: bytes) -> bytes:
        """A TD quote of ``td_report`` from Azure IMDS's quote service (``POST /acc/tdquote``)."""

        url = f"{self.imds.rstrip('/')}/acc/tdquote"
        if not url.startswith(("http://", "https://")):
            raise ProbeError(f"TD quote endpoint {url!r} is not an http(s) URL")
        body = json.dumps({"report": base64.urlsafe_b64encode(td_report).rstrip(b"=").decode()}).encode()
        headers = {"Metadata": "true", "Content-Type": "application/json", "Accept": "application/json"}
        req = urllib.request.Request(url, data=body, headers=headers, method="POST")  # noqa: S310 (scheme checked)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(req, timeout=30) as r:
                doc = json.loads(r.read(1 << 20))
            text = doc["quote"]
            return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ProbeError(f"TD quote from {url}: {exc}") from exc

    def thim_certs(self) -> str:
        """The VCEK and its chain (PEM) from Azure IMDS's THIM endpoint."""
        url = f"{self.imds.rstrip('/')}/metadata/THIM/amd/certification"
        if not url.startswith(("http://", "https://")):
            raise ProbeError(f"THIM endpoint {url!r} is not an http(s) URL")
        req = urllib.request.Request(url, headers={"Metadata": "true"})  # noqa: S310 (scheme checked)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(req, timeout=5) as r:
                doc: dict[str, Any] = json.loads(r.read())
        except (OSError, ValueError) as exc:
            raise ProbeError(f"THIM at {url}: {exc}") from exc
        return canonical_pem(str(doc.get("vcekCert", "")) + str(doc.get("certificateChain", "")))


def canonical_pem(text: str) -> str:
    """The certificates of a PEM text re-encoded as plain PEM blocks (64-column base64, one newline
    after each END line, nothing else): what the agent keeps, so that ``attest verify`` has nothing
    to record as ignored in it."""

    out = []
    for body in re.findall(r"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", text, re.S):
        try:
            der = base64.b64decode("".join(body.split()), validate=True)
        except (ValueError, binascii.Error) as exc:
            raise ProbeError(f"certificate text is not base64 ({exc})") from exc
        b64 = "\n".join(textwrap.wrap(base64.b64encode(der).decode(), 64))
        out.append(f"-----BEGIN CERTIFICATE-----\n{b64}\n-----END CERTIFICATE-----\n")
    return "".join(out)
