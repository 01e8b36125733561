"""Unpack a host's collect archive on the controller, strictly: unpack.py ARCHIVE DEST MEMBER...

The archive was made on the target, whose bytes the controller does not trust: it must hold
exactly the MEMBERs (the paths under the run directory that the find listed), each a regular file,
and nothing else (no link, device, directory, absolute path or ``..``). Only then is it unpacked
into DEST, through tarfile's ``data`` filter (no owner, no special bits, nothing outside DEST),
keeping the files' modification times; a file DEST already holds with the same bytes is left as it
is. Prints ``changed N``: how many files it wrote. Any other archive: one line naming the archive
and the member, exit 2, nothing written.
"""

from __future__ import annotations

import posixpath
import sys
import tarfile
import zlib
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv[:1] in (["-h"], ["--help"]) else 2
    archive, dest, want = Path(argv[0]), Path(argv[1]), set(argv[2:])
    try:
        with tarfile.open(archive, "r:gz") as tar:
            members = tar.getmembers()
            for m in members:
                if (
                    m.name.startswith("/")
                    or ".." in m.name.split("/")
                    or posixpath.normpath(m.name) != m.name
                ):
                    raise ValueError(f"member {m.name!r} is not a plain relative path")
                if m.name not in want:
                    raise ValueError(f"member {m.name!r} was not asked for")
                if not m.isreg():
                    raise ValueError(f"member {m.name!r} is not a regular file")
            names = [m.name for m in members]
            if len(names) != len(set(names)) or set(names) != want:
                missing = sorted(want - set(names))
                raise ValueError(f"members {missing[:3]} missing" if missing else "a member comes twice")
            new = [m for m in members if not _same(tar, m, dest / m.name)]
            tar.extractall(dest, members=new, filter="data")
    except (OSError, EOFError, zlib.error, tarfile.TarError, ValueError) as exc:
        print(f"error: {archive}: {exc}", file=sys.stderr)
        return 2
    print(f"changed {len(new)}")
    return 0


def _same(tar: tarfile.TarFile, member: tarfile.TarInfo, path: Path) -> bool:
    """Whether ``path`` is a regular file holding the member's bytes already."""
    if path.is_symlink() or not path.is_file() or path.stat().st_size != member.size:
        return False
    src = tar.extractfile(member)
    if src is None:  # not a regular file (checked before: never)
        return False
    with src, path.open("rb") as have:
        while block := src.read(1 << 20):
            if have.read(len(block)) != block:
                return False
    return True


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
