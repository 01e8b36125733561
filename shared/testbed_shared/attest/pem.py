"""PEM text as real tools and vendors write it (RFC 7468): the blocks are read exactly, the layout
around them is tolerated and recorded.

Read exactly: each ``-----BEGIN L-----`` ... ``-----END L-----`` block of the expected label, its
lines base64 characters only, the base64 in its one canonical form for the bytes it decodes to (no
other padding bits), so that no two texts give the same certificate or key unnoticed.

Tolerated, each recorded as :class:`~testbed_shared.attest.model.Ignored`: CRLF line ends (the CR
bytes), no line end after the last END line (Intel publishes its root CA file so), base64 lines of
another length than 64, a UTF-8 byte order mark, and text before, between or after the blocks
(RFC 7468 section 5.2: explanatory text; no check reads it). Refused: a block of another label, a
boundary that is broken or not a line of its own (outside the blocks, text with five dashes, or a
last line that a cut turned into the start of a BEGIN line), a block without its END line, a file
without a block."""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass

from testbed_shared.attest.model import EvidenceError, Ignored

_BEGIN = re.compile(rb"-----BEGIN ([A-Z0-9 ]{1,40})-----")
_B64_LINE = re.compile(rb"[A-Za-z0-9+/]*={0,2}")
BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Block:
    der: bytes
    start: int  # offset of the BEGIN line in the text
    end: int  # offset after the END line's line end


def _lines(data: bytes) -> list[tuple[int, bytes, int]]:
    """(offset, line without its line end, length of the line end: 0, 1 or 2) for each line."""
    out, pos = [], 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        if nl < 0:
            out.append((pos, data[pos:], 0))
            break
        cr = 1 if nl > pos and data[nl - 1] == 0x0D else 0
        out.append((pos, data[pos : nl - cr], 1 + cr))
        pos = nl + 1
    return out


def blocks(
    data: bytes, label: str, source: str, ignored: list[Ignored], base: int = 0, where: str = ""
) -> list[Block]:
    """The ``label`` blocks of the PEM text ``data``, decoded; what was tolerated is appended to
    ``ignored`` (offsets in the file: ``base`` is where ``data`` starts; ``where`` prefixes each
    reason and error, e.g. "PCK chain: ")."""
    p = _Parse(data, label, f"{source}: {where}")
    for n, (at, line, eol) in enumerate(_lines(data), 1):
        if at == 0 and line.startswith(BOM):
            p.outside.append((0, len(BOM)))
            p.line(n, len(BOM), line[len(BOM) :], eol)
        else:
            p.line(n, at, line, eol)
    if p.body is not None:
        raise EvidenceError(f"{p.where}a PEM {label} block without its END line")
    if not p.out:
        raise EvidenceError(f"{p.where}no PEM {label} block")
    if outside := _merge(p.outside):
        why = f"{where}text outside the PEM blocks (RFC 7468 explanatory text; no check reads it)"
        ignored.append(Ignored.of(source, why, data, outside, base))
    if p.crs:
        why = f"{where}CR of CRLF line ends (the base64 is read without them)"
        ignored.append(Ignored.of(source, why, data, p.crs, base))
    if data.endswith(p.end):
        ignored.append(Ignored(source, f"{where}no line end after the last END line"))
    if p.widths - {64}:
        cols = ", ".join(map(str, sorted(p.widths)))
        ignored.append(Ignored(source, f"{where}base64 lines of {cols} characters (64 in plain PEM)"))
    return p.out


class _Parse:
    """The state of reading one PEM text line by line."""

    def __init__(self, data: bytes, label: str, where: str) -> None:
        self.label, self.where = label, where
        self.begin, self.end = f"-----BEGIN {label}-----".encode(), f"-----END {label}-----".encode()
        self.out: list[Block] = []
        self.outside: list[tuple[int, int]] = []
        self.crs: list[tuple[int, int]] = []
        self.widths: set[int] = set()
        self.body: list[bytes] | None = None
        self.start = 0

    def line(self, n: int, at: int, line: bytes, eol: int) -> None:
        if self.body is None:
            m = _BEGIN.fullmatch(line)
            if m is None:
                if b"-----" in line or (not eol and line.startswith(b"-") and b"-----BEGIN".startswith(line)):
                    raise EvidenceError(
                        f"{self.where}line {n}: a broken PEM boundary or one not on a line of its own"
                    )
                self.outside.append((at, len(line) + eol))
                return
            if line != self.begin:
                got = m.group(1).decode()
                raise EvidenceError(
                    f"{self.where}line {n}: a PEM block '{got}' where {self.label} was expected"
                )
            self.body, self.start = [], at
        elif line == self.end:
            body = self.body
            der = _decode(body, f"{self.where}block {len(self.out) + 1}")
            self.out.append(Block(der, self.start, at + len(line) + eol))
            self.widths |= {len(b) for b in body[:-1]}
            if body and len(body[-1]) > 64:
                self.widths.add(len(body[-1]))
            self.body = None
        elif line and _B64_LINE.fullmatch(line):
            self.body.append(line)
        else:
            raise EvidenceError(f"{self.where}line {n}: not base64 inside a PEM {self.label} block")
        if eol == 2:
            self.crs.append((at + len(line), 1))


def _decode(lines: list[bytes], what: str) -> bytes:
    text = b"".join(lines)
    try:
        raw = base64.b64decode(text, validate=True)
    except (ValueError, binascii.Error) as exc:
        raise EvidenceError(f"{what}: not base64 ({exc})") from exc
    if base64.b64encode(raw) != text:
        raise EvidenceError(f"{what}: base64 not in its canonical form (padding or padding bits)")
    return raw


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for o, n in spans:
        if n == 0:
            continue
        if out and out[-1][0] + out[-1][1] == o:
            out[-1] = (out[-1][0], out[-1][1] + n)
        else:
            out.append((o, n))
    return out
