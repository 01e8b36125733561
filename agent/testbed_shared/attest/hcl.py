"""Azure confidential VMs' HCL report (vTPM NV index 0x01400001): the SNP report or TDREPORT inside
it, the runtime claims it hashes into REPORT_DATA, and the vTPM attestation key (HCLAkPub) those
claims carry."""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from testbed_shared.attest.model import EvidenceError, Result

MAGIC = b"HCLA"
HEADER = 32
HW_SIZE = 1184
_TYPES = {2: "sev-snp", 4: "tdx"}
_HASH_TYPES = {1: "sha256", 2: "sha384", 3: "sha512"}


@dataclass(frozen=True)
class HclReport:
    kind: str
    hw: bytes
    claims_raw: bytes
    hash_type: str

    @property
    def claims(self) -> dict[str, Any]:
        try:
            return json.loads(self.claims_raw)
        except ValueError as exc:
            raise EvidenceError(f"HCL runtime claims are not JSON ({exc})") from exc

    @property
    def report_data(self) -> bytes:
        return self.hw[0x50:0x90] if self.kind == "sev-snp" else self.hw[128:192]

    def ak_jwk(self) -> dict[str, Any] | None:
        return next((k for k in self.claims.get("keys", []) if k.get("kid") == "HCLAkPub"), None)


def parse_hcl(blob: bytes, source: str = "HCL report") -> HclReport:
    if len(blob) < HEADER + HW_SIZE + 20 or blob[:4] != MAGIC:
        raise EvidenceError(f"{source}: not an Azure HCL report (no 'HCLA' header or too short)")
    (rtype,) = struct.unpack_from("<I", blob, 12)
    kind = _TYPES.get(rtype)
    if kind is None:
        raise EvidenceError(f"{source}: hardware report type {rtype} (2 = SEV-SNP, 4 = TDX)")
    hw = blob[HEADER : HEADER + HW_SIZE]
    _size, _ver, _rt, htype, csize = struct.unpack_from("<5I", blob, HEADER + HW_SIZE)
    start = HEADER + HW_SIZE + 20
    claims = blob[start : start + csize]
    if len(claims) != csize:
        raise EvidenceError(f"{source}: runtime claims truncated ({len(claims)} of {csize} bytes)")
    return HclReport(kind, hw, claims, _HASH_TYPES.get(htype, "sha256"))


def verify_hcl(
    blob: bytes,
    pool: Sequence[Any],
    when: datetime,
    *,
    quote: tuple[bytes, bytes] | None = None,
    nonce: bytes | None = None,
    pcrs: Mapping[str, Mapping[int, bytes]] | None = None,
    tdx_quote: bytes | None = None,
    allow_debug: bool = False,
    extra_roots: Sequence[Any] = (),
) -> tuple[Result, Any]:
    """Verify the hardware report, the claims digest and (when given) a TPM quote by HCLAkPub.
    Returns the result and the AK (or None)."""
    from testbed_shared.attest import keys, tpm

    rep = parse_hcl(blob)
    res = Result(f"azure-{rep.kind}", when)
    _hardware(res, rep, pool, when, tdx_quote, allow_debug, extra_roots)
    digest = hashlib.new(rep.hash_type, rep.claims_raw).digest()
    got = rep.report_data[: len(digest)]
    res.add(
        "hcl: REPORT_DATA == hash of runtime claims",
        got == digest,
        f"{rep.hash_type}(claims) {digest.hex()[:16]}... vs REPORT_DATA {got.hex()[:16]}...",
    )
    jwk = rep.ak_jwk()
    res.add(
        "hcl: HCLAkPub in runtime claims",
        jwk is not None,
        "attestation key found" if jwk else "no key with kid HCLAkPub",
    )
    ak = keys.jwk_public_key(jwk) if jwk else None
    res.info["hcl"] = {"claims": rep.claims, "ak_fingerprint": keys.fingerprint(ak) if ak else None}
    if quote is not None and ak is not None:
        tpm.verify_quote(res, quote[0], quote[1], ak, nonce=nonce, pcrs=pcrs, prefix="tpm (HCLAkPub)")
    return res, ak


def _hardware(
    res: Result,
    rep: HclReport,
    pool: Sequence[Any],
    when: datetime,
    tdx_quote: bytes | None,
    allow_debug: bool,
    extra_roots: Sequence[Any],
) -> None:
    if rep.kind == "sev-snp":
        from testbed_shared.attest.snp import verify_snp

        inner = verify_snp(rep.hw, pool, when, allow_debug=allow_debug, extra_roots=extra_roots)
        res.measurement, res.report_data = inner.measurement, inner.report_data
        res.merge(inner)
        return
    res.report_data = rep.report_data.hex()
    if tdx_quote is None:
        res.add(
            "tdx: TDREPORT quoted", False, "the TDREPORT is MAC'd, not signed: give the TD quote made from it"
        )
        return
    from testbed_shared.attest.tdx import verify_tdx

    inner = verify_tdx(tdx_quote, pool, when, allow_debug=allow_debug, extra_roots=extra_roots)
    res.merge(inner)
    res.measurement = inner.measurement
    same = inner.report_data == rep.report_data.hex() and inner.measurement == rep.hw[528:576].hex()
    res.add("tdx: quote is of this TDREPORT", same, "REPORTDATA and MRTD of quote and TDREPORT compared")
