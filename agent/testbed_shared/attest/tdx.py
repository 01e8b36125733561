"""Intel TDX quotes v4 and v5: attestation-key signature, QE report signature with the PCK leaf,
the QE report's binding of the attestation key, the PCK chain to Intel's root, and the TCB status
from TCB info collateral."""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from testbed_shared.attest.model import EvidenceError, Result

HEADER = 48
TEE_TDX = 0x81
_BODY_SIZES = {2: 584, 3: 648}  # v5 body types: 2 = TD report 1.0, 3 = TD report 1.5
QE_REPORT = 384
SGX_EXT = "1.2.840.113741.1.13.1"
_TCB, _PCESVN, _FMSPC = SGX_EXT + ".2", SGX_EXT + ".2.17", SGX_EXT + ".4"


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

    def field(self, start: int, end: int) -> bytes:
        return self.body[start:end]

    @property
    def tee_tcb_svn(self) -> bytes:
        return self.body[0:16]

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
    if len(raw) < HEADER + 584:
        raise EvidenceError(f"{source}: {len(raw)} bytes is too short for a TDX quote")
    version, key_type, tee = struct.unpack_from("<HHI", raw, 0)
    if version not in (4, 5) or tee != TEE_TDX:
        raise EvidenceError(f"{source}: not a TDX quote (version {version}, TEE type 0x{tee:x})")
    if key_type != 2:
        raise EvidenceError(f"{source}: attestation key type {key_type} (only 2 = ECDSA P-256)")
    pos = HEADER
    if version == 5:
        body_type, size = struct.unpack_from("<HI", raw, pos)
        if _BODY_SIZES.get(body_type) != size:
            raise EvidenceError(f"{source}: v5 body type {body_type} of {size} bytes is not a TD report")
        pos += 6
    else:
        size = 584
    body = raw[pos : pos + size]
    signed = raw[: pos + size]
    pos += size
    try:
        (sig_len,) = struct.unpack_from("<I", raw, pos)
        sig = raw[pos + 4 : pos + 4 + sig_len]
        cert_type, cert_size = struct.unpack_from("<HI", sig, 128)
        cert = sig[134 : 134 + cert_size]
        if cert_type != 6:
            raise EvidenceError(f"{source}: certification data type {cert_type} (expected 6, QE report)")
        qe_report, qe_sig = cert[:QE_REPORT], cert[QE_REPORT : QE_REPORT + 64]
        (auth_len,) = struct.unpack_from("<H", cert, QE_REPORT + 64)
        auth = cert[QE_REPORT + 66 : QE_REPORT + 66 + auth_len]
        p = QE_REPORT + 66 + auth_len
        inner_type, inner_size = struct.unpack_from("<HI", cert, p)
        pck = cert[p + 6 : p + 6 + inner_size]
    except struct.error as exc:
        raise EvidenceError(f"{source}: truncated signature data ({exc})") from exc
    if inner_type != 5:
        raise EvidenceError(f"{source}: inner certification data type {inner_type} (expected 5, PCK chain)")
    return TdxQuote(version, signed, body, sig[:64], sig[64:128], qe_report, qe_sig, auth, pck)


def pck_info(leaf: Any) -> dict[str, Any]:
    """FMSPC, TCB components and PCESVN from the PCK leaf's SGX extension."""
    from testbed_shared.attest import chain, der

    raw = chain.raw_extensions(leaf).get(SGX_EXT)
    if raw is None:
        return {}
    top = der.items(raw)
    ext = der.oid_map(top[0][1]) if top else {}
    tcb = ext.get(_TCB, {})
    comps = [tcb.get(f"{_TCB}.{i}", 0) for i in range(1, 17)]
    return {"fmspc": ext.get(_FMSPC, b"").hex(), "sgx_tcb": comps, "pcesvn": tcb.get(_PCESVN, 0)}


def verify_tdx(
    raw: bytes,
    pool: Sequence[Any],
    when: datetime,
    *,
    tcb_info: bytes | None = None,
    allow_debug: bool = False,
    extra_roots: Sequence[Any] = (),
    source: str = "quote",
) -> Result:
    """Verify a TDX quote; ``pool`` holds extra certificates (e.g. a TCB signing chain)."""
    from cryptography.hazmat.primitives import hashes

    from testbed_shared.attest import chain, keys

    q = parse_quote(raw, source)
    res = Result("tdx", when, measurement=q.mrtd.hex(), report_data=q.report_data.hex())
    res.info["tdx"] = q.summary()
    try:
        ak = keys.p256_point(q.attestation_key)
        ok = keys.ecdsa_raw_ok(ak, q.signed, q.signature, hashes.SHA256())
        detail = f"ECDSA P-256 over header + TD report ({len(q.signed)} bytes)"
    except ValueError:
        ok, detail = False, "the attestation key is not a P-256 point"
    res.add("tdx: quote signature (attestation key)", ok, detail)
    pck_chain = chain.load_certs(q.pck_pem.rstrip(b"\0"), f"{source}: PCK chain")
    leaf = pck_chain[0]
    ok = keys.ecdsa_raw_ok(leaf.public_key(), q.qe_report, q.qe_signature, hashes.SHA256())
    res.add("tdx: QE report signature (PCK leaf)", ok, f"ECDSA P-256 by '{chain.cn(leaf)}'")
    want = hashlib.sha256(q.attestation_key + q.qe_auth).digest()
    got = q.qe_report[320:352]
    res.add(
        "tdx: QE report binds attestation key",
        got == want,
        f"REPORT_DATA[0:32] {got.hex()[:16]}... vs SHA-256(AK || QE auth data) {want.hex()[:16]}...",
    )
    roots = chain.intel_roots() + list(extra_roots)
    path = chain.build_path(leaf, list(pck_chain) + list(pool), roots)
    chain.check_chain(res, "tdx PCK chain", path, roots, when)
    res.add(
        "tdx: TD attributes debug",
        allow_debug or not q.body[120] & 1,
        f"TUD.DEBUG={'1' if q.body[120] & 1 else '0'}",
    )
    if tcb_info is not None:
        _tcb_status(res, q, pck_info(leaf), tcb_info, pool, when)
    return res


def _tcb_status(
    res: Result, q: TdxQuote, pck: dict[str, Any], blob: bytes, pool: Sequence[Any], when: datetime
) -> None:
    from testbed_shared.attest import chain

    try:
        doc = json.loads(blob)
        info = doc["tcbInfo"]
    except (ValueError, KeyError) as exc:
        raise EvidenceError(f"TCB info: not a PCS tcbInfo response ({exc})") from exc
    res.add(
        "tdx tcb: FMSPC matches PCK",
        info.get("fmspc", "").lower() == pck.get("fmspc"),
        f"TCB info {info.get('fmspc')} vs PCK {pck.get('fmspc')}",
    )
    nxt = datetime.fromisoformat(info["nextUpdate"].replace("Z", "+00:00"))
    res.add(
        "tdx tcb: TCB info current",
        when <= nxt,
        f"nextUpdate {info['nextUpdate']} vs as-of {when:%Y-%m-%dT%H:%M:%SZ}",
    )
    signer = next((c for c in pool if "TCB Signing" in chain.cn(c)), None)
    if signer is not None:
        from cryptography.hazmat.primitives import hashes

        from testbed_shared.attest import keys

        text = blob.decode()
        body = text[text.index("{", text.index('"tcbInfo"')) : text.rindex(',"signature"')]
        ok = keys.ecdsa_raw_ok(
            signer.public_key(), body.encode(), bytes.fromhex(doc["signature"]), hashes.SHA256()
        )
        res.add("tdx tcb: TCB info signature", ok, f"by '{chain.cn(signer)}'")
    status = _match_level(info.get("tcbLevels", []), pck, q.tee_tcb_svn)
    res.info.setdefault("tdx", {})["tcb_status"] = status
    res.add("tdx tcb: status UpToDate", status == "UpToDate", f"TCB level status: {status}")


def _match_level(levels: list[dict[str, Any]], pck: dict[str, Any], tee_svn: bytes) -> str:
    for level in levels:
        tcb = level.get("tcb", {})
        sgx = [c.get("svn", 0) for c in tcb.get("sgxtcbcomponents", [])]
        tdx = [c.get("svn", 0) for c in tcb.get("tdxtcbcomponents", [])]
        if (
            all(a <= b for a, b in zip(sgx, pck.get("sgx_tcb", []), strict=False))
            and tcb.get("pcesvn", 0) <= pck.get("pcesvn", 0)
            and all(a <= b for a, b in zip(tdx, tee_svn, strict=False))
        ):
            return str(level.get("tcbStatus"))
    return "no matching TCB level"
