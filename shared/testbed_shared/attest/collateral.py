"""Intel PCS collateral for TDX quotes: TCB info (``/tdx/certification/v4/tcb``) and the TD quoting
enclave's identity (``/tdx/certification/v4/qe/identity``).

A response is ``{"tcbInfo":BODY,"signature":"HEX"}`` (``enclaveIdentity`` for the QE identity):
Intel's TCB signing key signs the exact bytes of BODY (ECDSA P-256, r||s). Nothing of a response is
taken before that signature and the signing certificate's chain to Intel's root are checked, so an
edited ``nextUpdate`` or TCB level fails the signature instead of changing the verdict. The signing
certificate is not in the response (PCS sends it in an HTTP header): give it with ``--chain``. The
envelope around BODY must be exactly that shape (no bytes before or between its parts); bytes after
it (a saved response's final newline) are outside what Intel signed: accepted and recorded in the
result's ``ignored``."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives import hashes

from testbed_shared.attest import chain, keys
from testbed_shared.attest.model import EvidenceError, Ignored, Result

TCB_SIGNING_CN = "Intel SGX TCB Signing"
_ENVELOPE = re.compile(rb'\{"(tcbInfo|enclaveIdentity)":(\{.*\}),"signature":"([0-9a-f]{128})"\}', re.S)
MAX_SIZE = 1 << 20


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate key {k!r}")
        out[k] = v
    return out


def parse_signed(blob: bytes, key: str, source: str) -> tuple[bytes, dict[str, Any], bytes, list[Ignored]]:
    """(signed body bytes, body as a dict, 64-byte signature, what follows the response) of a PCS
    response."""
    end = _json_end(blob) if len(blob) <= MAX_SIZE else None
    m = _ENVELOPE.fullmatch(blob, 0, end) if end is not None else None
    if m is None or m.group(1).decode() != key:
        raise EvidenceError(
            f'{source}: not a PCS response {{"{key}":{{...}},"signature":"<128 hex digits>"}} '
            "with nothing before it or between its parts"
        )
    body = m.group(2)
    try:
        doc = json.loads(body, object_pairs_hook=_unique)
    except (ValueError, RecursionError) as exc:
        raise EvidenceError(f"{source}: {key} is not JSON ({exc})") from exc
    if not isinstance(doc, dict):
        raise EvidenceError(f"{source}: {key} is not a JSON object")
    after = []
    if end < len(blob):
        why = "bytes after the PCS response (outside what Intel signed)"
        after.append(Ignored.of(source, why, blob, [(end, len(blob) - end)]))
    return body, doc, bytes.fromhex(m.group(3).decode()), after


def _json_end(blob: bytes) -> int | None:
    """Where the JSON value at the start of ``blob`` ends (in bytes), or None."""
    text = blob.decode("utf-8", "surrogateescape")
    try:
        _doc, end = json.JSONDecoder().raw_decode(text)
    except (ValueError, RecursionError):
        return None
    return len(text[:end].encode("utf-8", "surrogateescape"))


def _signature(
    res: Result,
    prefix: str,
    body: bytes,
    sig: bytes,
    pool: Sequence[Any],
    roots: Sequence[Any],
    when: datetime,
) -> None:
    """Find the TCB signing certificate whose key made ``sig`` and check its chain to Intel's root."""

    signers = [c for c in pool if chain.cn(c) == TCB_SIGNING_CN]
    signer = next((c for c in signers if keys.ecdsa_raw_ok(c.public_key(), body, sig, hashes.SHA256())), None)
    if signer is None:
        why = (
            f"none of the {len(signers)} '{TCB_SIGNING_CN}' certificates given verifies it"
            if signers
            else f"no '{TCB_SIGNING_CN}' certificate given (--chain: PCS sends it in the issuer-chain header)"
        )
        res.add(f"{prefix}: signature", False, why)
        return
    res.add(f"{prefix}: signature", True, f"ECDSA P-256 over the signed body by '{chain.cn(signer)}'")
    path = chain.build_path(signer, list(pool), roots)
    chain.check_chain(res, f"{prefix} chain", path, roots, when)


def _date(doc: dict[str, Any], key: str, source: str) -> datetime:
    try:
        return datetime.fromisoformat(str(doc[key]).replace("Z", "+00:00"))
    except (KeyError, ValueError) as exc:
        raise EvidenceError(f"{source}: {key} missing or not an ISO date") from exc


def _current(res: Result, prefix: str, doc: dict[str, Any], source: str, when: datetime) -> None:
    issued, nxt = _date(doc, "issueDate", source), _date(doc, "nextUpdate", source)
    res.add(
        f"{prefix}: current",
        issued <= when <= nxt,
        f"issued {doc['issueDate']}, nextUpdate {doc['nextUpdate']} vs as-of {when:%Y-%m-%dT%H:%M:%SZ}",
    )


def _hex(doc: dict[str, Any], key: str, size: int, source: str) -> bytes:
    try:
        value = bytes.fromhex(str(doc[key]))
    except (KeyError, ValueError) as exc:
        raise EvidenceError(f"{source}: {key} missing or not hex") from exc
    if len(value) != size:
        raise EvidenceError(f"{source}: {key} has {len(value)} bytes, expected {size}")
    return value


def _svns(level: Any, key: str, n: int, source: str) -> list[int]:
    try:
        comps = level["tcb"][key]
        out = [int(c["svn"]) for c in comps]
    except (KeyError, TypeError, ValueError) as exc:
        raise EvidenceError(f"{source}: TCB level without {key}") from exc
    if len(out) != n:
        raise EvidenceError(f"{source}: {key} has {len(out)} entries, expected {n}")
    return out


def _masked(value: bytes, mask: bytes) -> bytes:
    return bytes(a & b for a, b in zip(value, mask, strict=True))


def tcb_level_status(
    levels: Any, pck: dict[str, Any], tee_svn: bytes, source: str = "TCB info"
) -> tuple[str, Any]:
    """Intel's matching rule: the first level whose SGX components and PCE SVN the PCK certificate
    meets and whose TDX components the TD's TEE_TCB_SVN meets (from index 2 when the module's
    major version, TEE_TCB_SVN[1], is non-zero)."""
    if not isinstance(levels, list):
        raise EvidenceError(f"{source}: tcbLevels is not a list")
    if len(pck.get("sgx_tcb", [])) != 16:
        return "no SGX TCB components in the PCK certificate", None
    start = 2 if tee_svn[1] > 0 else 0
    for level in levels:
        sgx = _svns(level, "sgxtcbcomponents", 16, source)
        tdx = _svns(level, "tdxtcbcomponents", 16, source)
        try:
            pcesvn = int(level["tcb"]["pcesvn"])
        except (KeyError, TypeError, ValueError) as exc:
            raise EvidenceError(f"{source}: TCB level without pcesvn") from exc
        if (
            all(a <= b for a, b in zip(sgx, pck.get("sgx_tcb", []), strict=True))
            and pcesvn <= pck.get("pcesvn", -1)
            and all(tdx[i] <= tee_svn[i] for i in range(start, 16))
        ):
            return str(level.get("tcbStatus")), level
    return "no matching TCB level", None


def check_tcb_info(
    res: Result,
    q: Any,
    pck: dict[str, Any],
    blob: bytes,
    pool: Sequence[Any],
    roots: Sequence[Any],
    when: datetime,
    source: str = "TCB info",
) -> None:
    body, info, sig, after = parse_signed(blob, "tcbInfo", source)
    res.ignored += after
    _signature(res, "tdx tcb info", body, sig, pool, roots, when)
    res.add(
        "tdx tcb info: TDX TCB info version 3",
        info.get("id") == "TDX" and info.get("version") == 3,
        f"id {info.get('id')!r}, version {info.get('version')!r}",
    )
    _current(res, "tdx tcb info", info, source, when)
    res.add(
        "tdx tcb info: FMSPC and PCE id match the PCK certificate",
        str(info.get("fmspc", "")).lower() == pck.get("fmspc")
        and str(info.get("pceId", "")).lower() == pck.get("pceid"),
        f"TCB info {info.get('fmspc')}/{info.get('pceId')} vs PCK {pck.get('fmspc')}/{pck.get('pceid')}",
    )
    module = info.get("tdxModule")
    if not isinstance(module, dict):
        raise EvidenceError(f"{source}: no tdxModule")
    ok = _hex(module, "mrsigner", 48, source) == q.mrsignerseam and _masked(
        q.seam_attributes, _hex(module, "attributesMask", 8, source)
    ) == _hex(module, "attributes", 8, source)
    res.add(
        "tdx tcb info: TDX module signer and attributes", ok, "MRSIGNERSEAM and SEAMATTRIBUTES vs tdxModule"
    )
    status, _level = tcb_level_status(info.get("tcbLevels"), pck, q.tee_tcb_svn, source)
    statuses = {"platform": status}
    if q.tee_tcb_svn[1] > 0:
        statuses["module"] = _module_status(info, q.tee_tcb_svn, source)
    res.info.setdefault("tdx", {})["tcb_status"] = status
    res.info["tdx"]["tcb_statuses"] = statuses
    res.add(
        "tdx tcb info: status UpToDate",
        all(s == "UpToDate" for s in statuses.values()),
        "; ".join(f"{k}: {v}" for k, v in statuses.items()),
    )


def _module_status(info: dict[str, Any], tee_svn: bytes, source: str) -> str:
    want = f"TDX_{tee_svn[1]:02X}"
    idents = info.get("tdxModuleIdentities") or []
    ident = next((i for i in idents if isinstance(i, dict) and str(i.get("id", "")).upper() == want), None)
    if ident is None:
        return f"no module identity {want}"
    for level in ident.get("tcbLevels") or []:
        try:
            if int(level["tcb"]["isvsvn"]) <= tee_svn[0]:
                return str(level.get("tcbStatus"))
        except (KeyError, TypeError, ValueError) as exc:
            raise EvidenceError(f"{source}: module TCB level without isvsvn") from exc
    return "no matching module TCB level"


def check_qe_identity(
    res: Result,
    q: Any,
    blob: bytes,
    pool: Sequence[Any],
    roots: Sequence[Any],
    when: datetime,
    source: str = "QE identity",
) -> None:
    """The QE report (signed by the PCK key) against Intel's identity of the TD quoting enclave."""
    body, ident, sig, after = parse_signed(blob, "enclaveIdentity", source)
    res.ignored += after
    _signature(res, "tdx qe identity", body, sig, pool, roots, when)
    res.add(
        "tdx qe identity: TD_QE identity version 2",
        ident.get("id") == "TD_QE" and ident.get("version") == 2,
        f"id {ident.get('id')!r}, version {ident.get('version')!r}",
    )
    _current(res, "tdx qe identity", ident, source, when)
    rep = q.qe_report
    misc = rep[16:20]  # compared byte for byte, as go-tdx-guest does (Intel publishes zeros)
    try:
        prodid = int(ident["isvprodid"])
    except (KeyError, TypeError, ValueError) as exc:
        raise EvidenceError(f"{source}: isvprodid missing") from exc
    ok = (
        rep[128:160] == _hex(ident, "mrsigner", 32, source)
        and int.from_bytes(rep[256:258], "little") == prodid
        and _masked(misc, _hex(ident, "miscselectMask", 4, source)) == _hex(ident, "miscselect", 4, source)
        and _masked(rep[48:64], _hex(ident, "attributesMask", 16, source))
        == _hex(ident, "attributes", 16, source)
    )
    res.add(
        "tdx qe identity: QE is Intel's TD quoting enclave", ok, "MRSIGNER, ISVPRODID, MISCSELECT, ATTRIBUTES"
    )
    isvsvn = int.from_bytes(rep[258:260], "little")
    status = "no matching QE TCB level"
    for level in ident.get("tcbLevels") or []:
        try:
            if int(level["tcb"]["isvsvn"]) <= isvsvn:
                status = str(level.get("tcbStatus"))
                break
        except (KeyError, TypeError, ValueError) as exc:
            raise EvidenceError(f"{source}: QE TCB level without isvsvn") from exc
    res.info.setdefault("tdx", {})["qe_status"] = status
    res.add("tdx qe identity: QE status UpToDate", status == "UpToDate", f"QE ISVSVN {isvsvn}: {status}")
