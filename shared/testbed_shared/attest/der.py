"""A minimal, strict DER reader for what the verifier reads itself: vendor extensions (Intel's SGX
extension) and the outer fields of a certificate (its signature algorithm)."""

from __future__ import annotations

from typing import Any

from testbed_shared.attest.model import EvidenceError


def _length(data: bytes, pos: int) -> tuple[int, int]:
    first = data[pos]
    if first < 0x80:
        return first, pos + 1
    n = first & 0x7F
    if not 1 <= n <= 4 or pos + 1 + n > len(data):
        raise EvidenceError("bad DER length")
    value = int.from_bytes(data[pos + 1 : pos + 1 + n], "big")
    if value < 0x80 or data[pos + 1] == 0:
        raise EvidenceError("non-minimal DER length")
    return value, pos + 1 + n


def element_end(data: bytes) -> int:
    """Where the first DER element of ``data`` ends (its tag, length and content)."""
    try:
        if data[0] & 0x1F == 0x1F:
            raise EvidenceError("multi-byte DER tags are not supported")
        size, start = _length(data, 1)
    except IndexError as exc:
        raise EvidenceError("truncated DER") from exc
    if start + size > len(data):
        raise EvidenceError("truncated DER")
    return start + size


def items(data: bytes) -> list[tuple[int, bytes]]:
    """The (tag, content) elements in ``data``, one level deep; the elements must fill ``data``."""
    out, pos = [], 0
    try:
        while pos < len(data):
            tag = data[pos]
            if tag & 0x1F == 0x1F:
                raise EvidenceError("multi-byte DER tags are not supported")
            size, start = _length(data, pos + 1)
            if start + size > len(data):
                raise EvidenceError("truncated DER")
            out.append((tag, data[start : start + size]))
            pos = start + size
    except IndexError as exc:
        raise EvidenceError("truncated DER") from exc
    return out


def oid(content: bytes) -> str:
    if not content:
        raise EvidenceError("empty DER object identifier")
    first, parts, value = content[0], [], 0
    parts += [first // 40, first % 40] if first < 80 else [2, first - 80]
    for b in content[1:]:
        value = value << 7 | (b & 0x7F)
        if not b & 0x80:
            parts.append(value)
            value = 0
    return ".".join(map(str, parts))


def oid_map(seq_content: bytes) -> dict[str, Any]:
    """SEQUENCE OF SEQUENCE {OID, value} -> {oid: int | bytes | nested dict}."""
    out: dict[str, Any] = {}
    for tag, body in items(seq_content):
        if tag != 0x30:
            continue
        parts = items(body)
        if len(parts) < 2 or parts[0][0] != 0x06:
            continue
        (vtag, value) = parts[1]
        key = oid(parts[0][1])
        if vtag in {0x02, 0x0A}:
            out[key] = int.from_bytes(value, "big", signed=False)
        elif vtag == 0x30:
            out[key] = oid_map(value)
        else:
            out[key] = value
    return out


def certificate_parts(der: bytes) -> tuple[bytes, bytes, bytes]:
    """(inner signature AlgorithmIdentifier, outer one, signature BIT STRING) of a certificate.

    The outer algorithm is not covered by the signature (RFC 5280 4.1.1.2 requires it to equal the
    signed inner one), so the verifier compares the two; the BIT STRING's first byte must be 0."""
    top = items(der)
    if len(top) != 1 or top[0][0] != 0x30:
        raise EvidenceError("a certificate is one DER SEQUENCE")
    parts = items(top[0][1])
    if len(parts) != 3 or [t for t, _ in parts] != [0x30, 0x30, 0x03]:
        raise EvidenceError("a certificate is SEQUENCE {tbsCertificate, signatureAlgorithm, signature}")
    tbs = items(parts[0][1])
    fields = tbs[1:] if tbs and tbs[0][0] == 0xA0 else tbs
    if len(fields) < 2 or fields[1][0] != 0x30:
        raise EvidenceError("tbsCertificate has no signature algorithm")
    return fields[1][1], parts[1][1], parts[2][1]
