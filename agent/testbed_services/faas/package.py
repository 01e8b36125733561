"""Deployment packages of the functions under ``workloads/faas/functions``: the function's
directory plus its ``python_path`` libraries at the zip's root, one zip built byte for byte the
same from the same files (sorted names, fixed times). It is AWS Lambda's package (the handler is
the function's own ``module.handler``); a platform that needs an entry point or a shim adds its
files to these (its module in ``testbed_agent.faas_drivers.platforms``).
The emulator's Lambda API recognises a CreateFunction zip by comparing its files with these
packages (:func:`read_zip`, :func:`match`): it runs only the functions it knows. An uploaded zip is
never held inflated: each entry is read in 1 MiB pieces into its SHA-256, and the bytes actually
inflated (not the sizes the zip declares) count against Lambda's unzipped-size limit.
"""

from __future__ import annotations

import hashlib
import io
import lzma
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from testbed_services.faas.functions import FunctionCode
from testbed_shared.errors import TestbedError

#: Lambda's limits on a package: 50 MB zipped (direct upload), 250 MB unzipped
MAX_ZIP_BYTES = 50 * 1024 * 1024
MAX_UNZIPPED_BYTES = 262_144_000
MAX_ENTRIES = 20_000
#: what is inflated at a time while an upload is read
CHUNK = 1 << 20
_SKIP = ("__pycache__", ".pyc", ".pytest_cache")


def _tree(root: Path, prefix: str = "") -> dict[str, bytes]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not any(s in rel for s in _SKIP):
            out[prefix + rel] = path.read_bytes()
    return out


def files(code: FunctionCode) -> dict[str, bytes]:
    """The package's files (zip name -> content)."""
    out = _tree(code.code_dir)
    for lib in code.python_path:
        for name, data in _tree(lib).items():
            if name in out:
                raise TestbedError(f"{code.name}: {name} is both in the function and in {lib}")
            out[name] = data
    return out


def build_zip(content: dict[str, bytes]) -> bytes:
    """A deterministic zip of ``content`` (sorted names, 1980-01-01 times, mode 0644)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(content):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, content[name])
    return buf.getvalue()


def package(code: FunctionCode) -> bytes:
    """The zip of ``code``'s package."""
    return build_zip(files(code))


class CorruptZip(ValueError):
    """A zip that cannot be read: bad CRC, truncated, corrupt deflate data, encrypted, unsupported."""


def read_zip(source: bytes | BinaryIO) -> dict[str, str]:
    """The files of an uploaded zip as name -> SHA-256 (hex) of the content, within Lambda's limits.

    Entries are inflated one at a time in :data:`CHUNK` pieces and only their digests kept; the
    bytes actually inflated count against :data:`MAX_UNZIPPED_BYTES` (declared sizes are checked
    first, and never trusted). A ValueError names what is wrong (too large, too many files, a path
    leaving the package); :class:`CorruptZip` one that cannot be read (bad CRC, truncated...)."""
    if isinstance(source, bytes):
        if len(source) > MAX_ZIP_BYTES:
            raise ValueError(f"zip of {len(source)} bytes over the {MAX_ZIP_BYTES}-byte direct-upload limit")
        source = io.BytesIO(source)
    try:
        zf = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as exc:
        raise CorruptZip(f"not a zip: {exc}") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > MAX_ENTRIES:
            raise ValueError(f"{len(infos)} files in the zip (limit {MAX_ENTRIES})")
        if sum(i.file_size for i in infos) > MAX_UNZIPPED_BYTES:
            raise ValueError(f"Unzipped size must be smaller than {MAX_UNZIPPED_BYTES} bytes")
        for info in infos:
            name = PurePosixPath(info.filename)
            if name.is_absolute() or ".." in name.parts or "\\" in info.filename:
                raise ValueError(f"zip entry {info.filename!r} leaves the package")
        out: dict[str, str] = {}
        inflated = 0
        for info in infos:
            digest = hashlib.sha256()
            try:
                with zf.open(info) as fh:
                    while piece := fh.read(CHUNK):
                        inflated += len(piece)
                        if inflated > MAX_UNZIPPED_BYTES:
                            raise ValueError(f"Unzipped size must be smaller than {MAX_UNZIPPED_BYTES} bytes")
                        digest.update(piece)
            except (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, OSError) as exc:
                raise CorruptZip(f"{info.filename}: {exc}") from None
            except (RuntimeError, NotImplementedError) as exc:  # encrypted, unsupported compression
                raise CorruptZip(f"{info.filename}: {exc}") from None
            out[PurePosixPath(info.filename).as_posix()] = digest.hexdigest()
        return out


def match(content: dict[str, str], candidates: list[FunctionCode]) -> FunctionCode | None:
    """The function whose package has exactly these files (name -> SHA-256 as
    :func:`read_zip` gives them; compiled caches ignored)."""
    wanted = {k: v for k, v in content.items() if not any(s in k for s in _SKIP)}
    for code in candidates:
        if {n: hashlib.sha256(b).hexdigest() for n, b in files(code).items()} == wanted:
            return code
    return None
