"""Azure confidential VMs' HCL report (vTPM NV index 0x01400001): the SNP report or TDREPORT inside
it, the runtime claims it hashes into REPORT_DATA, and the vTPM attestation key (HCLAkPub) those
claims carry.

Layout (Microsoft's ``az-cvm-vtpm`` crate, checked against reports of real DCasv5 and DCesv5 VMs):

    0     attestation header: "HCLA", version, report size, request type (2), status (0), 12 reserved
    32    hardware report area, 1184 bytes: an SEV-SNP report, or a 1024-byte TDREPORT + zeros
    1216  IGVM request data: data size, version (1), report type (2 SEV-SNP, 4 TDX), hash type,
          variable data size, then the variable data (the runtime claims, JSON)
    ...   zero padding to the end of the NV index

The hardware kind is the request data's report type, not the header's request type (2 on both).
Every byte is signed (SNP report), compared with the TD quote (TDREPORT), hashed into REPORT_DATA
(claims), checked for its value (header, sizes, reserved bytes) or refused. Two kinds are read by
no check and recorded in the result's ``ignored``: the bytes after the report's declared size (the
NV index's zero padding, or anything else there), and the TDREPORT's MAC, which only the TDX module
of the machine can check (the TD quote proves that a TDREPORT with these fields carried a valid
MAC)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from testbed_shared.attest import keys, tpm
from testbed_shared.attest.layout import Reader
from testbed_shared.attest.model import EvidenceError, Ignored, Result
from testbed_shared.attest.snp import verify_snp
from testbed_shared.attest.tdx import parse_quote, verify_tdx

MAGIC = b"HCLA"
HEADER = 32
HW_SIZE = 1184
TD_REPORT = 1024
REQUEST_DATA = HEADER + HW_SIZE
MAC = (HEADER + 224, 32)  # the TDREPORT's MAC: offset in the HCL report, length
MAX_CLAIMS = 64 * 1024
_TYPES = {2: "sev-snp", 4: "tdx"}
_SOURCES = {
    "hcl": "HCL report",
    "td_quote": "TD quote",
    "quote_msg": "quote",
    "quote_sig": "signature",
    "tcb_info": "TCB info",
    "qe_identity": "QE identity",
}
_HASH_TYPES = {1: "sha256", 2: "sha384", 3: "sha512"}
#: byte ranges of the TDREPORT (offsets in the report) that the TD quote body repeats
_TDREPORT_IN_QUOTE = {
    "TEE_TCB_SVN": (256 + 8, 256 + 24, 0, 16),
    "MRSEAM": (256 + 24, 256 + 72, 16, 64),
    "MRSIGNERSEAM": (256 + 72, 256 + 120, 64, 112),
    "SEAMATTRIBUTES": (256 + 120, 256 + 128, 112, 120),
    "TDATTRIBUTES": (512, 520, 120, 128),
    "XFAM": (520, 528, 128, 136),
    "MRTD": (528, 576, 136, 184),
    "MRCONFIGID": (576, 624, 184, 232),
    "MROWNER": (624, 672, 232, 280),
    "MROWNERCONFIG": (672, 720, 280, 328),
    "RTMR0-3": (720, 912, 328, 520),
    "REPORTDATA": (128, 192, 520, 584),
}


@dataclass(frozen=True)
class HclReport:
    kind: str
    hw: bytes
    claims_raw: bytes
    hash_type: str
    version: int = 0
    ignored: tuple[Ignored, ...] = ()

    @property
    def claims(self) -> dict[str, Any]:
        try:
            doc = json.loads(self.claims_raw)
        except (ValueError, RecursionError) as exc:
            raise EvidenceError(f"HCL runtime claims are not JSON ({exc})") from exc
        if not isinstance(doc, dict):
            raise EvidenceError("HCL runtime claims are not a JSON object")
        return doc

    @property
    def report_data(self) -> bytes:
        return self.hw[0x50:0x90] if self.kind == "sev-snp" else self.hw[128:192]

    def ak_jwk(self) -> dict[str, Any] | None:
        keys = self.claims.get("keys", [])
        if not isinstance(keys, list):
            raise EvidenceError("HCL runtime claims: 'keys' is not a list")
        return next((k for k in keys if isinstance(k, dict) and k.get("kid") == "HCLAkPub"), None)


def parse_hcl(blob: bytes, source: str = "HCL report") -> HclReport:
    r = Reader(blob, source)
    if len(blob) < REQUEST_DATA + 20 or blob[:4] != MAGIC:
        raise EvidenceError(f"{source}: not an Azure HCL report (no 'HCLA' header or too short)")
    r.take(4, "magic")
    version, size, request, status = r.unpack("<4I", "attestation header")
    if version not in (1, 2):
        raise r.fail(f"HCL header version {version} (1 or 2 known)")
    if request != 2:
        raise r.fail(f"HCL request type {request} (2 = hardware report)")
    if status != 0:
        raise r.fail(f"HCL status {status} (0 = success)")
    r.zeros(12, "HCL header")
    hw = r.take(HW_SIZE, "hardware report")
    data_size, req_version, rtype, htype, csize = r.unpack("<5I", "IGVM request data")
    kind, hash_type = _TYPES.get(rtype), _HASH_TYPES.get(htype)
    if kind is None:
        raise EvidenceError(f"{source}: hardware report type {rtype} (2 = SEV-SNP, 4 = TDX)")
    if req_version != 1 or hash_type is None:
        raise EvidenceError(f"{source}: IGVM request data version {req_version}, hash type {htype}")
    if csize > MAX_CLAIMS or data_size != 20 + csize:
        raise EvidenceError(f"{source}: runtime claims of {csize} bytes in request data of {data_size}")
    claims = r.take(csize, "runtime claims")
    if size != r.pos:
        raise EvidenceError(f"{source}: header says {size} bytes, the report has {r.pos}")
    ignored = []
    if r.left:
        zero = not any(blob[r.pos :])
        why = (
            "zero padding after the HCL report (the NV index's size)"
            if zero
            else "bytes after the HCL report's size"
        )
        ignored.append(Ignored.of(source, why, blob, [(r.pos, r.left)]))
    if kind == "tdx" and any(hw[TD_REPORT:]):
        raise EvidenceError(f"{source}: bytes after the 1024-byte TDREPORT are not zero")
    if kind == "tdx":
        why = "the TDREPORT's MAC: only its machine's TDX module can check it (the quote covers the fields)"
        ignored.append(Ignored.of(source, why, blob, [MAC]))
    return HclReport(kind, hw, claims, hash_type, version, tuple(ignored))


def verify_hcl(
    blob: bytes,
    pool: Sequence[Any],
    when: datetime,
    *,
    quote: tuple[bytes, bytes] | None = None,
    nonce: bytes | None = None,
    pcrs: Mapping[str, Mapping[int, Any]] | None = None,
    tdx_quote: bytes | None = None,
    tcb_info: bytes | None = None,
    qe_identity: bytes | None = None,
    allow_debug: bool = False,
    extra_roots: Sequence[Any] = (),
    sources: Mapping[str, str] | None = None,
) -> tuple[Result, Any]:
    """Verify the hardware report, the claims digest and (when given) a TPM quote by HCLAkPub.
    Returns the result and the AK (or None). ``sources`` name the files (keys ``hcl``,
    ``td_quote``, ``quote_msg``, ``quote_sig``, ``tcb_info``, ``qe_identity``) in errors and in
    what ``ignored`` records."""

    src = dict(_SOURCES)
    src.update(sources or {})
    rep = parse_hcl(blob, src["hcl"])
    res = Result(f"azure-{rep.kind}", when, ignored=list(rep.ignored))
    collateral = {"tcb_info": tcb_info, "qe_identity": qe_identity}
    _hardware(res, rep, pool, when, tdx_quote, allow_debug, extra_roots, collateral, src)
    digest = hashlib.new(rep.hash_type, rep.claims_raw).digest()
    got = rep.report_data
    res.add(
        "hcl: REPORT_DATA == hash of runtime claims",
        got == digest.ljust(64, b"\0"),
        f"{rep.hash_type}(claims) {digest.hex()[:16]}... (then zeros) vs REPORT_DATA {got.hex()[:16]}...",
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
        tpm.verify_quote(
            res,
            quote[0],
            quote[1],
            ak,
            nonce=nonce,
            pcrs=pcrs,
            prefix="tpm (HCLAkPub)",
            sources=(src["quote_msg"], src["quote_sig"]),
        )
    return res, ak


def _hardware(
    res: Result,
    rep: HclReport,
    pool: Sequence[Any],
    when: datetime,
    tdx_quote: bytes | None,
    allow_debug: bool,
    extra_roots: Sequence[Any],
    collateral: dict[str, bytes | None],
    src: Mapping[str, str],
) -> None:
    if rep.kind == "sev-snp":
        inner = verify_snp(rep.hw, pool, when, allow_debug=allow_debug, extra_roots=extra_roots)
        res.measurement, res.report_data = inner.measurement, inner.report_data
        res.merge(inner)
        return
    td = parse_tdreport(rep.hw[:TD_REPORT])
    res.report_data = rep.report_data.hex()
    res.measurement = td["MRTD"].hex()
    if tdx_quote is None:
        res.add(
            "tdx: TDREPORT quoted", False, "the TDREPORT is MAC'd, not signed: give the TD quote made from it"
        )
        return

    inner = verify_tdx(
        tdx_quote,
        pool,
        when,
        allow_debug=allow_debug,
        extra_roots=extra_roots,
        source=src["td_quote"],
        collateral_sources=(src["tcb_info"], src["qe_identity"]),
        tcb_info=collateral["tcb_info"],
        qe_identity=collateral["qe_identity"],
    )
    res.merge(inner)
    q = parse_quote(tdx_quote, src["td_quote"])
    diffs = [name for name, (a, b, qa, qb) in _TDREPORT_IN_QUOTE.items() if rep.hw[a:b] != q.body[qa:qb]]
    if len(q.body) > 584:  # a TDX 1.5 quote body also repeats TEE_TCB_SVN2 and MRSERVICETD
        diffs += [
            n
            for n, ok in (
                ("TEE_TCB_SVN2", rep.hw[256 + 128 : 256 + 144] == q.body[584:600]),
                ("MRSERVICETD", rep.hw[912:960] == q.body[600:648]),
            )
            if not ok
        ]
    res.add(
        "tdx: quote is of this TDREPORT",
        not diffs,
        "every TDREPORT field the quote repeats is equal" if not diffs else f"differ: {', '.join(diffs)}",
    )
    res.add(
        "tdx: TDREPORT CPUSVN == QE report CPUSVN",
        rep.hw[16:32] == q.qe_report[0:16],
        f"TDREPORT {rep.hw[16:32].hex()} vs QE report {q.qe_report[0:16].hex()}",
    )


def parse_tdreport(td: bytes, source: str = "TDREPORT") -> dict[str, bytes]:
    """The TDREPORT's fields, after checking its type, reserved bytes and the SHA-384 digests of
    TEE_TCB_INFO and TDINFO it carries (the MAC covers those digests; the quote covers the fields)."""
    r = Reader(td, source)
    rtype, subtype, version, reserved = r.unpack("<4B", "REPORTTYPE")
    if rtype != 0x81 or subtype != 0 or version not in (0, 1) or reserved:
        raise r.fail(f"REPORTTYPE {rtype:#x}/{subtype}/{version} is not a TDX report")
    r.zeros(12, "REPORTMACSTRUCT")
    out = {"CPUSVN": r.take(16, "CPUSVN")}
    tcb_hash, info_hash = r.take(48, "TEE_TCB_INFO_HASH"), r.take(48, "TEE_INFO_HASH")
    out["REPORTDATA"] = r.take(64, "REPORTDATA")
    r.zeros(32, "REPORTMACSTRUCT")
    out["MAC"] = r.take(32, "MAC")
    tee_tcb_info = r.take(239, "TEE_TCB_INFO")
    r.zeros(17, "TDREPORT")
    tdinfo = r.take(512, "TDINFO")
    r.end("the TDREPORT")
    if hashlib.sha384(tee_tcb_info).digest() != tcb_hash:
        raise EvidenceError(f"{source}: TEE_TCB_INFO does not match its SHA-384 in REPORTMACSTRUCT")
    if hashlib.sha384(tdinfo).digest() != info_hash:
        raise EvidenceError(f"{source}: TDINFO does not match its SHA-384 in REPORTMACSTRUCT")
    if any(tee_tcb_info[144:]):  # after TEE_TCB_SVN2 (TDX 1.5 modules fill it in version-0 reports too)
        raise EvidenceError(f"{source}: reserved bytes of TEE_TCB_INFO are not zero")
    if any(tdinfo[448:]):  # after SERVTD_HASH
        raise EvidenceError(f"{source}: reserved bytes of TDINFO are not zero")
    out["MRTD"] = tdinfo[16:64]
    return out
