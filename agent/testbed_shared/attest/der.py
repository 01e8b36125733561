"""A minimal DER reader for the vendor extensions the verifier needs (Intel's SGX extension)."""

from __future__ import annotations

from typing import Any

from testbed_shared.attest.model import EvidenceError


def _length(data: bytes, pos: int) -> tuple[int, int]:
    first = data[pos]
    if first < 0x80:
        return first, pos + 1
    n = first & 0x7F
    return int.from_bytes(data[pos + 1 : pos + 1 + n], "big"), pos + 1 + n


def items(data: bytes) -> list[tuple[int, bytes]]:
    """The (tag, content) elements in ``data``, one level deep."""
    out, pos = [], 0
    try:
        while pos < len(data):
            tag = data[pos]
            size, start = _length(data, pos + 1)
            out.append((tag, data[start : start + size]))
            pos = start + size
    except IndexError as exc:
        raise EvidenceError("truncated DER") from exc
    return out


def oid(content: bytes) -> str:
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
