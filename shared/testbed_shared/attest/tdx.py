"""Intel TDX quotes v4 and v5: attestation-key signature, QE report signature with the PCK leaf,
the QE report's binding of the attestation key, the PCK chain to Intel's root, and (with Intel PCS
collateral, see ``collateral``) the TCB status and the quoting enclave's identity.

Every byte of a quote is signed (header, TD report, QE report), bound by a hash (attestation key,
QE authentication data), a certificate of the chain to Intel's root, a size or type checked for
its value, or refused; except bytes outside those structures, which no check reads and which are
accepted and recorded in the result's ``ignored``: what follows the signature data (Azure's quote
service returns quotes in a fixed-size buffer of zeros; go-tdx-guest's production sample carries a
line of text), the NUL that may terminate the PCK chain text (real quotes carry one or none), and
the layout of that PEM text (``pem``)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives import hashes

from testbed_shared.attest import chain, collateral, der, keys
from testbed_shared.attest.layout import Reader
from testbed_shared.attest.model import EvidenceError, Ignored, Result

HEADER = 48
TEE_TDX = 0x81
INTEL_QE_VENDOR = bytes.fromhex("939a7233f79c4ca9940a0db3957f0607")
_BODY_SIZES = {2: 584, 3: 648}  # v5 body types: 2 = TD report 1.0, 3 = TD report 1.5
QE_REPORT = 384
SGX_EXT = "1.2.840.113741.1.13.1"
_TCB, _PCESVN, _PCEID, _FMSPC = SGX_EXT + ".2", SGX_EXT + ".2.17", SGX_EXT + ".3", SGX_EXT + ".4"


@dataclass(frozen=True)
class TdxQuote:
    version: int
    signed: bytes
    body: bytes
    signature: bytes
    attestation_key: bytes
    qe_report: bytes
    qe_signature: bytes
    qe_auth: bytes
    pck_pem: bytes
    pck_offset: int = 0  # where the PCK chain text starts in the quote
    ignored: tuple[Ignored, ...] = ()

    @property
    def tee_tcb_svn(self) -> bytes:
        return self.body[0:16]

    @property
    def mrsignerseam(self) -> bytes:
        return self.body[64:112]

    @property
    def seam_attributes(self) -> bytes:
        return self.body[112:120]

    @property
    def mrtd(self) -> bytes:
        return self.body[136:184]

    @property
    def report_data(self) -> bytes:
        return self.body[520:584]

    def summary(self) -> dict[str, Any]:
        b = self.body
        rtmrs = [b[328 + 48 * i : 376 + 48 * i].hex() for i in range(4)]
        return {
            "version": self.version,
            "tee_tcb_svn": b[0:16].hex(),
            "mrseam": b[16:64].hex(),
            "td_attributes": b[120:128].hex(),
            "debug": bool(b[120] & 1),
            "xfam": b[128:136].hex(),
            "mrconfigid": b[184:232].hex(),
            "mrowner": b[232:280].hex(),
            "rtmrs": rtmrs,
        }


def parse_quote(raw: bytes, source: str = "quote") -> TdxQuote:
    """Split a TDX quote (v4 or v5, ECDSA P-256, certification data type 6 with a PCK chain)."""
    r = Reader(raw, source)
    if len(raw) < HEADER + 584:
        raise EvidenceError(f"{source}: {len(raw)} bytes is too short for a TDX quote")
    version, key_type, tee = r.unpack("<HHI", "quote header")
    if version not in (4, 5) or tee != TEE_TDX:
        raise EvidenceError(f"{source}: not a TDX quote (version {version}, TEE type 0x{tee:x})")
    if key_type != 2:
        raise EvidenceError(f"{source}: attestation key type {key_type} (only 2 = ECDSA P-256)")
    r.take(4, "QE and PCE SVN")
    if r.take(16, "QE vendor id") != INTEL_QE_VENDOR:
        raise r.fail("QE vendor id is not Intel's quoting enclave")
    r.take(20, "user data")
    size = 584
    if version == 5:
        body_type, size = r.unpack("<HI", "v5 body descriptor")
        if _BODY_SIZES.get(body_type) != size:
            raise EvidenceError(f"{source}: v5 body type {body_type} of {size} bytes is not a TD report")
    body = r.take(size, "TD report")
    signed = raw[: r.pos]
    sig_len = r.unpack("<I", "signature data length")
    s = r.sub(sig_len, "signature data")
    ignored = []
    if r.left:
        zero = not any(raw[r.pos :])
        why = "zero padding after the quote" if zero else "bytes after the quote (no signature covers them)"
        ignored.append(Ignored.of(source, why, raw, [(r.pos, r.left)]))
    signature, ak = s.take(64, "quote signature"), s.take(64, "attestation key")
    cert_type, cert_size = s.unpack("<HI", "certification data header")
    if cert_type != 6:
        raise EvidenceError(f"{source}: certification data type {cert_type} (expected 6, QE report)")
    c = s.sub(cert_size, "certification data")
    s.end("the signature data")
    qe_report, qe_sig = c.take(QE_REPORT, "QE report"), c.take(64, "QE report signature")
    auth = c.take(c.unpack("<H", "QE authentication data length"), "QE authentication data")
    inner_type, inner_size = c.unpack("<HI", "PCK certification data header")
    if inner_type != 5:
        raise EvidenceError(f"{source}: inner certification data type {inner_type} (expected 5, PCK chain)")
    at = c.base + c.pos
    pck = c.take(inner_size, "PCK certificate chain")
    c.end("the certification data")
    if pck.endswith(b"\0"):
        why = "the NUL terminating the PCK chain text (a C string's end; real quotes carry it or not)"
        ignored.append(Ignored.of(source, why, raw, [(at + len(pck) - 1, 1)]))
        pck = pck[:-1]
    return TdxQuote(version, signed, body, signature, ak, qe_report, qe_sig, auth, pck, at, tuple(ignored))


def pck_info(leaf: Any) -> dict[str, Any]:
    """FMSPC, PCE id, TCB components and PCESVN from the PCK leaf's SGX extension."""

    raw = chain.raw_extensions(leaf).get(SGX_EXT)
    if raw is None:
        return {}
    top = der.items(raw)
    ext = der.oid_map(top[0][1]) if top else {}
    tcb = ext.get(_TCB, {})
    tcb = tcb if isinstance(tcb, dict) else {}
    comps = [tcb.get(f"{_TCB}.{i}", 0) for i in range(1, 17)]
    fmspc, pceid = ext.get(_FMSPC, b""), ext.get(_PCEID, b"")
    return {
        "fmspc": fmspc.hex() if isinstance(fmspc, bytes) else "",
        "pceid": pceid.hex() if isinstance(pceid, bytes) else "",
        "sgx_tcb": [c if isinstance(c, int) else -1 for c in comps],
        "pcesvn": tcb.get(_PCESVN, 0) if isinstance(tcb.get(_PCESVN, 0), int) else -1,
    }


def verify_tdx(
    raw: bytes,
    pool: Sequence[Any],
    when: datetime,
    *,
    tcb_info: bytes | None = None,
    qe_identity: bytes | None = None,
    allow_debug: bool = False,
    extra_roots: Sequence[Any] = (),
    source: str = "quote",
    collateral_sources: tuple[str, str] = ("TCB info", "QE identity"),
) -> Result:
    """Verify a TDX quote; ``pool`` holds extra certificates (e.g. Intel's TCB signing chain).
    ``source`` and ``collateral_sources`` name the quote, TCB info and QE identity files."""

    q = parse_quote(raw, source)
    res = Result("tdx", when, measurement=q.mrtd.hex(), report_data=q.report_data.hex())
    res.info["tdx"] = q.summary()
    res.ignored += q.ignored
    try:
        ak = keys.p256_point(q.attestation_key)
        ok = keys.ecdsa_raw_ok(ak, q.signed, q.signature, hashes.SHA256())
        detail = f"ECDSA P-256 over header + TD report ({len(q.signed)} bytes)"
    except ValueError:
        ok, detail = False, "the attestation key is not a P-256 point"
    res.add("tdx: quote signature (attestation key)", ok, detail)
    pck_chain = chain.load_certs(q.pck_pem, source, res.ignored, q.pck_offset, "PCK chain: ")
    leaf = pck_chain[0]
    ok = keys.ecdsa_raw_ok(leaf.public_key(), q.qe_report, q.qe_signature, hashes.SHA256())
    res.add("tdx: QE report signature (PCK leaf)", ok, f"ECDSA P-256 by '{chain.cn(leaf)}'")
    want = hashlib.sha256(q.attestation_key + q.qe_auth).digest() + bytes(32)
    got = q.qe_report[320:384]
    res.add(
        "tdx: QE report binds attestation key",
        got == want,
        f"REPORT_DATA {got.hex()[:16]}... vs SHA-256(AK || QE auth data), zeros {want.hex()[:16]}...",
    )
    roots = chain.intel_roots() + list(extra_roots)
    path = chain.build_path(leaf, list(pck_chain) + list(pool), roots)
    chain.check_chain(res, "tdx PCK chain", path, roots, when)
    extra = [c for c in pck_chain if c not in path]
    if extra:
        names = ", ".join(f"'{chain.cn(c)}'" for c in extra)
        res.add(
            "tdx PCK chain: every certificate of the quote is checked", False, f"not in the chain: {names}"
        )
    res.add(
        "tdx: TD attributes debug",
        allow_debug or not q.body[120] & 1,
        f"TUD.DEBUG={'1' if q.body[120] & 1 else '0'}",
    )
    pck = pck_info(leaf)
    res.info["tdx"]["fmspc"] = pck.get("fmspc")
    if tcb_info is not None:
        collateral.check_tcb_info(res, q, pck, tcb_info, pool, roots, when, collateral_sources[0])
    else:
        res.info["tdx"]["tcb_status"] = "not evaluated (no --tcb-info)"
    if qe_identity is not None:
        collateral.check_qe_identity(res, q, qe_identity, pool, roots, when, collateral_sources[1])
    return res
