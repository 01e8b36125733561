"""roles/collect/files/unpack.py: the controller unpacks a target's archive only when it holds
exactly the files the find listed, as regular files, and never writes outside the run directory."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

UNPACK = Path(__file__).resolve().parents[1] / "roles" / "collect" / "files" / "unpack.py"
FILES = {"h1.jsonl": b'{"a": 1}\n', "h1.sysinfo.json": b"{}", "h1.evidence/report.bin": b"\x00\x01"}


def _archive(path: Path, entries: list[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for e in entries:
            if isinstance(e, tarfile.TarInfo):
                tar.addfile(e)
            else:
                info = tarfile.TarInfo(e[0])
                info.size, info.mtime = len(e[1]), 1_700_000_000
                tar.addfile(info, io.BytesIO(e[1]))
    return path


def _unpack(archive: Path, dest: Path, *members: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(UNPACK), str(archive), str(dest), *members],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_listed_files_land_once_and_a_second_unpack_changes_nothing(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "a.tgz", list(FILES.items()))
    dest = tmp_path / "run"
    first = _unpack(archive, dest, *FILES)
    assert first.returncode == 0 and first.stdout.strip() == "changed 3", first.stderr
    for name, data in FILES.items():
        assert (dest / name).read_bytes() == data
        assert (dest / name).stat().st_mtime == 1_700_000_000  # the target's time, as tar kept it
    again = _unpack(archive, dest, *FILES)
    assert again.returncode == 0 and again.stdout.strip() == "changed 0"
    (dest / "h1.jsonl").write_bytes(b"edited\n")
    assert _unpack(archive, dest, *FILES).stdout.strip() == "changed 1"
    assert (dest / "h1.jsonl").read_bytes() == FILES["h1.jsonl"]


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


@pytest.mark.parametrize(
    ("entries", "members", "says"),
    [
        ([("h1.jsonl", b"x"), ("h2.jsonl", b"y")], ["h1.jsonl"], "'h2.jsonl' was not asked for"),
        ([("h1.jsonl", b"x")], ["h1.jsonl", "h1.sysinfo.json"], "['h1.sysinfo.json'] missing"),
        ([("h1.jsonl", b"x"), ("h1.jsonl", b"y")], ["h1.jsonl"], "comes twice"),
        (
            [("h1.jsonl", b"x"), _link("h1.evidence", "/etc")],
            ["h1.jsonl", "h1.evidence"],
            "not a regular file",
        ),
        ([_link("h1.jsonl", "/etc/passwd", tarfile.LNKTYPE)], ["h1.jsonl"], "not a regular file"),
        ([("../h1.jsonl", b"x")], ["../h1.jsonl"], "not a plain relative path"),
        ([("/tmp/h1.jsonl", b"x")], ["/tmp/h1.jsonl"], "not a plain relative path"),
    ],
    ids=["another host", "missing", "twice", "symlink", "hardlink", "dotdot", "absolute"],
)
def test_a_hostile_or_wrong_archive_is_refused_and_nothing_is_written(
    tmp_path: Path, entries: list, members: list[str], says: str
) -> None:
    archive = _archive(tmp_path / "a.tgz", entries)
    dest = tmp_path / "run" / "inner"
    dest.mkdir(parents=True)
    res = _unpack(archive, dest, *members)
    assert res.returncode == 2
    assert res.stderr.startswith(f"error: {archive}: ") and says in res.stderr, res.stderr
    assert not any(dest.iterdir()) and sorted(p.name for p in (tmp_path / "run").iterdir()) == ["inner"]


def test_a_torn_archive_is_one_line_and_exit_2(tmp_path: Path) -> None:
    archive = _archive(tmp_path / "a.tgz", list(FILES.items()))
    archive.write_bytes(archive.read_bytes()[:40])
    res = _unpack(archive, tmp_path / "run", *FILES)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and str(archive) in res.stderr
