"""``verify_file``: recognise a piece of evidence and run its verifier; the library entry point the
CLI and ``testbed-report audit`` share."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from testbed_shared.attest.evidence import Options, read_option, verify_bytes
from testbed_shared.attest.manifest import verify_manifest
from testbed_shared.attest.model import EvidenceError, Result

__all__ = ["Options", "dumps", "kind_of", "verify_bytes", "verify_file"]


def kind_of(data: bytes) -> str:
    """'manifest', 'azure-hcl', 'tpm-quote', 'sev-snp' or 'tdx' from the first bytes."""
    if data[:1] == b"{":
        return "manifest"
    if data[:4] == b"HCLA":
        return "azure-hcl"
    if data[:4] == b"\xffTCG":
        return "tpm-quote"
    if len(data) >= 8:
        version, _k, tee = struct.unpack_from("<HHI", data, 0)
        if version in (4, 5) and tee == 0x81:
            return "tdx"
        if len(data) >= 1184 and 2 <= struct.unpack_from("<I", data, 0)[0] <= 5:
            return "sev-snp"
    raise EvidenceError(
        "not a recognised evidence format "
        "(SEV-SNP report, Azure HCL report, TDX quote, TPM quote, evidence manifest)"
    )


def verify_file(path: Path, opts: Options | None = None) -> Result:
    """Verify the evidence in ``path`` (a file, or an evidence directory with manifest.json)."""
    opts = opts or Options()
    path = Path(path)
    if path.is_dir():
        path = path / "manifest.json"
    data = read_option(path, "evidence") or b""
    try:
        kind = kind_of(data)
    except EvidenceError as exc:
        raise EvidenceError(f"{path}: {exc}") from exc
    if kind == "manifest":
        return verify_manifest(path, opts)
    return verify_bytes(kind, data, opts, str(path))


def dumps(res: Result) -> str:
    return json.dumps(res.as_dict(), indent=2, default=str)
