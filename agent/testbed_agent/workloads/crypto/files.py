"""Files of a stated kind and size for the crypto workload: a PDF, an image, a compressed archive.

The S4 study encrypted PDF files, images and compressed files (S4 L169) of 1 KB to 5 GB. These
are made deterministically (the same kind, size and seed give the same bytes on every machine)
and streamed to disk in 1 MiB pieces, never held whole in memory, to exactly the stated size:

* ``pdf``: a one-page PDF 1.7 document (a line of text) carrying the bulk as an embedded-file
  stream; cross-reference table and trailer with the right offsets.
* ``image``: a PNG (8-bit RGB, 1024 pixels wide) of noise, its pixel rows in stored deflate
  blocks so its size is exact; the rest of the size is a private ancillary chunk (``tbPd``),
  which PNG readers skip.
* ``archive``: a ZIP (ZIP64) archive holding one stored member of high-entropy data, like an
  archive of already-compressed files.

The bytes come from AES-256-CTR over zeros under a key derived from (kind, size, seed): fast
(GB/s) and reproducible. A user's own files instead: :func:`user_files` lists a directory's
files with the kind their extension says.
"""

from __future__ import annotations

import hashlib
import io
import struct
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

KINDS = ("pdf", "image", "archive")
EXTENSIONS = {"pdf": ".pdf", "image": ".png", "archive": ".zip"}
#: a user's files: extension -> kind
USER_KINDS = {
    **dict.fromkeys((".pdf",), "pdf"),
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".gif", ".bmp", ".tif", ".tiff", ".webp"), "image"),
    **dict.fromkeys((".zip", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".rar", ".zst", ".tar"), "archive"),
}
PIECE = 1 << 20
_PNG_WIDTH = 1024
_PNG_ROW = 1 + 3 * _PNG_WIDTH  # filter byte + RGB
_STORED_BLOCK = 65535
_IDAT_MAX = 1 << 20
_ZIP_DATE = (2024, 1, 1, 0, 0, 0)


class FileKindError(ValueError):
    """A kind that does not exist, or a size too small for its kind."""


def _stream(kind: str, size: int, seed: int) -> Iterator[bytes]:
    """Deterministic high-entropy bytes: AES-256-CTR keystream, in pieces of at most PIECE."""
    # cryptography is the agent's optional [crypto] extra: needed only when a file is generated
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes  # noqa: PLC0415 - optional extra

    key = hashlib.sha256(f"testbed-crypto-file:{kind}:{size}:{seed}".encode()).digest()
    enc = Cipher(algorithms.AES(key), modes.CTR(bytes(16))).encryptor()
    zeros = bytes(PIECE)
    while True:
        yield enc.update(zeros)


class _Source:
    """Reads exact byte counts from :func:`_stream`."""

    def __init__(self, kind: str, size: int, seed: int) -> None:
        self._it = _stream(kind, size, seed)
        self._buf = b""
        self._pos = 0

    def take(self, n: int) -> bytes:
        if self._pos + n > len(self._buf):
            rest = self._buf[self._pos :]
            while len(rest) < n:
                rest += next(self._it)
            self._buf, self._pos = rest, 0
        out = self._buf[self._pos : self._pos + n]
        self._pos += n
        return out

    def pieces(self, n: int) -> Iterator[bytes]:
        while n > 0:
            piece = self.take(min(n, PIECE))
            n -= len(piece)
            yield piece


def minimum_size(kind: str) -> int:
    """The smallest file of ``kind`` this module can make."""
    if kind == "pdf":
        least = 0
        while len(b"".join(_pdf_parts(0, least))) != least:  # the page states the size: settle it
            least = len(b"".join(_pdf_parts(0, least)))
        return least
    if kind == "image":
        return _png_size(1, 0)
    if kind == "archive":
        return _zip_overhead()
    raise FileKindError(f"unknown file kind {kind!r}; known: {', '.join(KINDS)}")


def write_file(path: Path, kind: str, size: int, seed: int = 0) -> Path:
    """Write a ``kind`` file of exactly ``size`` bytes to ``path`` (streamed; via a temporary file)."""
    if kind not in KINDS:
        raise FileKindError(f"unknown file kind {kind!r}; known: {', '.join(KINDS)}")
    least = minimum_size(kind)
    if size < least:
        raise FileKindError(f"a {kind} file needs at least {least} bytes, asked for {size}")
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        {"pdf": _write_pdf, "image": _write_png, "archive": _write_zip}[kind](
            fh, size, _Source(kind, size, seed)
        )
    got = tmp.stat().st_size
    if got != size:  # a defect of this module, never of the input
        tmp.unlink()
        raise RuntimeError(f"{kind} file came out {got} bytes, not {size}")
    tmp.replace(path)
    return path


# -- PDF -------------------------------------------------------------------------------------------


def _pdf_parts(payload: int, size: int) -> list[bytes]:
    """(head, tail) around an embedded-file stream of ``payload`` bytes; offsets computed."""
    objs = [
        b"<</Type/Catalog/Pages 2 0 R/Names<</EmbeddedFiles<</Names[(data.bin) 6 0 R]>>>>>>",
        b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
        b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Contents 4 0 R/Resources<</Font<</F1 5 0 R>>>>>>",
        None,  # 4: the page's content stream
        b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>",
        b"<</Type/Filespec/F(data.bin)/EF<</F 7 0 R>>>>",
    ]
    text = f"BT /F1 12 Tf 72 720 Td (testbed-crypto test file, {size} bytes) Tj ET".encode()
    objs[3] = b"<</Length %d>>stream\n" % len(text) + text + b"\nendstream"
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objs, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % i + body + b"\nendobj\n")
    offsets.append(out.tell())
    out.write(b"7 0 obj\n<</Type/EmbeddedFile/Length %d>>stream\n" % payload)
    head = out.getvalue()
    xref_at = len(head) + payload + len(b"\nendstream\nendobj\n")
    tail = io.BytesIO()
    tail.write(b"\nendstream\nendobj\n")
    tail.write(b"xref\n0 8\n0000000000 65535 f \n")
    for off in offsets:
        tail.write(b"%010d 00000 n \n" % off)
    tail.write(b"trailer\n<</Size 8/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % xref_at)
    return [head, tail.getvalue()]


def _pdf_payload(size: int) -> int:
    """The embedded stream's length that makes the whole file ``size`` bytes."""
    n = max(0, size - len(b"".join(_pdf_parts(0, size))))
    for _ in range(8):  # digit counts move the overhead by a few bytes: settle it
        total = len(b"".join(_pdf_parts(n, size))) + n
        if total == size:
            return n
        n += size - total
    raise FileKindError(f"cannot make a PDF of exactly {size} bytes")


def _write_pdf(fh: BinaryIO, size: int, src: _Source) -> None:
    n = _pdf_payload(size)
    head, tail = _pdf_parts(n, size)
    fh.write(head)
    for piece in src.pieces(n):
        fh.write(piece)
    fh.write(tail)


# -- PNG -------------------------------------------------------------------------------------------


def _zlib_stored_size(raw: int) -> int:
    blocks = max(1, -(-raw // _STORED_BLOCK))
    return 2 + raw + 5 * blocks + 4


def _png_size(rows: int, pad: int) -> int:
    """Bytes of a PNG of ``rows`` rows plus a padding chunk of ``pad`` data bytes (-1: none)."""
    z = _zlib_stored_size(rows * _PNG_ROW)
    idat = z + 12 * -(-z // _IDAT_MAX)
    return 8 + 25 + idat + 12 + (12 + pad if pad >= 0 else 0)


def _png_layout(size: int) -> tuple[int, int]:
    """(rows, padding bytes) of a PNG of exactly ``size`` bytes (padding -1: no chunk)."""
    rows = max(1, (size - 8 - 25 - 12) // _PNG_ROW)
    while rows > 1 and _png_size(rows, 0) > size:
        rows -= 1
    exact = _png_size(rows, -1)
    if exact == size:
        return rows, -1
    pad = size - _png_size(rows, 0)
    if pad < 0:
        raise FileKindError(f"an image needs at least {_png_size(1, -1)} bytes, asked for {size}")
    return rows, pad


def _chunk(fh: BinaryIO, ctype: bytes, pieces: Iterator[bytes] | list[bytes], length: int) -> None:
    fh.write(struct.pack(">I", length) + ctype)
    crc = zlib.crc32(ctype)
    written = 0
    for piece in pieces:
        fh.write(piece)
        crc = zlib.crc32(piece, crc)
        written += len(piece)
    if written != length:
        raise FileKindError(f"PNG chunk: {written} bytes written, {length} announced")
    fh.write(struct.pack(">I", crc & 0xFFFFFFFF))


def _zlib_stored(rows: int, src: _Source) -> Iterator[bytes]:
    """A zlib stream of stored blocks holding ``rows`` PNG rows (filter 0, random RGB)."""
    raw = rows * _PNG_ROW
    yield b"\x78\x01"
    adler = 1
    done = 0
    row_left = 0
    while done < raw:
        n = min(_STORED_BLOCK, raw - done)
        last = done + n == raw
        block = bytearray()
        while len(block) < n:  # rows start with their filter byte 0
            if row_left == 0:
                block += b"\x00"
                row_left = _PNG_ROW - 1
                continue
            k = min(row_left, n - len(block))
            block += src.take(k)
            row_left -= k
        adler = zlib.adler32(block, adler)
        yield struct.pack("<BHH", 1 if last else 0, n, n ^ 0xFFFF) + bytes(block)
        done += n
    yield struct.pack(">I", adler & 0xFFFFFFFF)


def _write_png(fh: BinaryIO, size: int, src: _Source) -> None:
    rows, pad = _png_layout(size)
    fh.write(b"\x89PNG\r\n\x1a\n")
    ihdr = struct.pack(">IIBBBBB", _PNG_WIDTH, rows, 8, 2, 0, 0, 0)
    _chunk(fh, b"IHDR", [ihdr], len(ihdr))
    total = _zlib_stored_size(rows * _PNG_ROW)
    stream = _zlib_stored(rows, src)
    buf = b""
    left = total
    while left:
        n = min(_IDAT_MAX, left)
        parts = []
        have = 0
        while have < n:
            if not buf:
                buf = next(stream)
            k = min(len(buf), n - have)
            parts.append(buf[:k])
            buf = buf[k:]
            have += k
        _chunk(fh, b"IDAT", parts, n)
        left -= n
    if pad >= 0:
        _chunk(fh, b"tbPd", src.pieces(pad), pad)
    _chunk(fh, b"IEND", [], 0)


# -- ZIP -------------------------------------------------------------------------------------------


def _zip_info() -> zipfile.ZipInfo:
    info = zipfile.ZipInfo("data.bin", date_time=_ZIP_DATE)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = 0o644 << 16
    return info


def _zip_overhead() -> int:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf, zf.open(_zip_info(), "w", force_zip64=True) as member:
        member.write(b"")
    return len(buf.getvalue())


def _write_zip(fh: BinaryIO, size: int, src: _Source) -> None:
    n = size - _zip_overhead()
    with zipfile.ZipFile(fh, "w") as zf, zf.open(_zip_info(), "w", force_zip64=True) as member:
        for piece in src.pieces(n):
            member.write(piece)


# -- a user's files --------------------------------------------------------------------------------


@dataclass(frozen=True)
class UserFile:
    """One file of a user's directory, its kind by extension."""

    path: Path
    kind: str
    size: int


def user_files(directory: Path) -> list[UserFile]:
    """The regular files directly in ``directory`` (sorted by name), each with its kind."""
    if not directory.is_dir():
        raise FileKindError(f"{directory}: not a directory")
    out = []
    for p in sorted(directory.iterdir()):
        if p.is_file() and not p.is_symlink() and not p.name.startswith("."):
            out.append(UserFile(p, USER_KINDS.get(p.suffix.lower(), "other"), p.stat().st_size))
    if not out:
        raise FileKindError(f"{directory}: no files")
    return out


def cached_file(directory: Path, kind: str, size: int, seed: int = 0) -> Path:
    """A ``kind`` file of ``size`` bytes in ``directory``, made once and reused."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{kind}-{size}-s{seed}{EXTENSIONS[kind]}"
    if path.is_file() and path.stat().st_size == size:
        return path
    return write_file(path, kind, size, seed)


__all__ = [
    "KINDS",
    "FileKindError",
    "UserFile",
    "cached_file",
    "minimum_size",
    "user_files",
    "write_file",
]
