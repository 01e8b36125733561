"""Issue 26 finding 7: the /proc, /sys and device rules of the I/O guard (and of every output the
toolkit writes) judge the filesystem type, not the path: procfs, sysfs and cgroupfs mounted
somewhere else are refused like /proc, a tmpfs below /dev is not a device filesystem.

The mounts are made in a private mount namespace (``unshare -m``, root), so the machine's mount
table is never touched; the checks run in that namespace with the real guard."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare"), reason="mounting needs root and unshare"
)

CHECK = """
import sys
from pathlib import Path
from testbed_agent.guard import check_target, open_target
from testbed_shared.atomic import check_output_path
from testbed_shared.errors import TestbedError
base = Path(sys.argv[1])
for d in sys.argv[2:]:
    p = base / d / "x"
    for name, fn in (("check", lambda: check_target(p, allow_device=True)),
                     ("open", lambda: open_target(p, allow_device=True).close()),
                     ("output", lambda: check_output_path(p))):
        try:
            fn()
            print(d, name, "ALLOWED")
        except TestbedError as exc:
            print(d, name, "refused:", exc.message)
"""


def _in_namespace(tmp_path: Path, mounts: dict[str, str]) -> dict[tuple[str, str], str]:
    script = ["set -e"]
    for d, fstype in mounts.items():
        (tmp_path / d).mkdir()
        script.append(f"mount -t {fstype} {fstype} {tmp_path / d}")
    script.append(f"{sys.executable} -c '{CHECK}' {tmp_path} {' '.join(mounts)}")
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", "\n".join(script)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = {}
    for line in proc.stdout.splitlines():
        d, name, verdict = line.split(" ", 2)
        out[(d, name)] = verdict
    return out


def test_pseudo_filesystems_mounted_elsewhere_are_refused(tmp_path: Path) -> None:
    got = _in_namespace(tmp_path, {"p": "proc", "s": "sysfs", "c": "cgroup2", "t": "tmpfs"})
    for d, kind in (("p", "proc"), ("s", "sysfs"), ("c", "cgroup2")):
        for name in ("check", "open", "output"):
            assert got[(d, name)].startswith("refused:") and kind in got[(d, name)], (d, name, got)
    assert got[("t", "check")] == got[("t", "open")] == got[("t", "output")] == "ALLOWED"
