"""File kinds of the crypto workload (S4 L169: PDFs, images, compressed files): each made to
exactly its stated size, valid for its format, the same bytes every time, written in pieces."""

from __future__ import annotations

import hashlib
import re
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from PIL import Image

from testbed_agent.workloads.crypto.files import (
    KINDS,
    FileKindError,
    cached_file,
    minimum_size,
    user_files,
    write_file,
)

#: the paper's RSA file sizes and a few around the formats' block and chunk boundaries
SIZES = [1024, 2048, 12493, 620544, 65535 * 3 + 11, (1 << 20) + 7]


def _check_format(path: Path, kind: str) -> None:
    data = path.read_bytes()
    if kind == "image":
        with Image.open(path) as im:
            im.verify()
        with Image.open(path) as im:
            im.load()
            assert im.mode == "RGB" and im.width == 1024
    elif kind == "archive":
        with zipfile.ZipFile(path) as z:
            assert z.testzip() is None and z.namelist() == ["data.bin"]
    else:
        assert data.startswith(b"%PDF-1.7") and data.endswith(b"%%EOF\n")
        xref = int(re.search(rb"startxref\n(\d+)\n", data).group(1))
        assert data[xref : xref + 4] == b"xref"
        offsets = [int(o) for o in re.findall(rb"(\d{10}) 00000 n ", data)]
        assert len(offsets) == 7
        for number, offset in enumerate(offsets, start=1):  # the cross-reference table is right
            assert data[offset:].startswith(b"%d 0 obj" % number)


@pytest.mark.parametrize(
    ("kind", "size"),
    [(k, s) for k in KINDS for s in SIZES if s >= minimum_size(k)],  # a PNG needs 3153
)
def test_exact_size_valid_and_deterministic(tmp_path: Path, kind: str, size: int) -> None:
    first = write_file(tmp_path / "a", kind, size)
    assert first.stat().st_size == size
    _check_format(first, kind)
    again = write_file(tmp_path / "b", kind, size)
    assert hashlib.sha256(first.read_bytes()).digest() == hashlib.sha256(again.read_bytes()).digest()
    other = write_file(tmp_path / "c", kind, size, seed=1)
    assert other.read_bytes() != first.read_bytes()


@pytest.mark.parametrize("kind", KINDS)
def test_the_smallest_file_and_below(tmp_path: Path, kind: str) -> None:
    least = minimum_size(kind)
    _check_format(write_file(tmp_path / "x", kind, least), kind)
    with pytest.raises(FileKindError, match=f"needs at least {least} bytes"):
        write_file(tmp_path / "y", kind, least - 1)
    assert not (tmp_path / "y").exists() and not (tmp_path / "y.tmp").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_large_files_are_streamed(tmp_path: Path, kind: str) -> None:
    """64 MiB of any kind is written with a few MiB of Python memory at most (never held whole)."""
    tracemalloc.start()
    try:
        write_file(tmp_path / "big", kind, 64 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (tmp_path / "big").stat().st_size == 64 << 20
    assert peak < 12 << 20, f"{kind}: peak {peak} bytes"


def test_cached_files_are_made_once(tmp_path: Path) -> None:
    p = cached_file(tmp_path, "archive", 4096)
    stamp = p.stat().st_mtime_ns
    assert cached_file(tmp_path, "archive", 4096) == p and p.stat().st_mtime_ns == stamp
    assert p.suffix == ".zip"


def test_a_user_s_files_have_the_kind_of_their_extension(tmp_path: Path) -> None:
    for name in ("report.PDF", "photo.jpg", "backup.tar.gz", "notes.txt", ".hidden"):
        (tmp_path / name).write_bytes(b"x" * 10)
    (tmp_path / "sub").mkdir()
    got = {f.path.name: (f.kind, f.size) for f in user_files(tmp_path)}
    assert got == {
        "backup.tar.gz": ("archive", 10),
        "notes.txt": ("other", 10),
        "photo.jpg": ("image", 10),
        "report.PDF": ("pdf", 10),
    }
    with pytest.raises(FileKindError, match="no files"):
        user_files(tmp_path / "sub")


def test_unknown_kind(tmp_path: Path) -> None:
    with pytest.raises(FileKindError, match="unknown file kind"):
        write_file(tmp_path / "x", "video", 4096)
