"""Helpers of the KVM lab tests: running ansible-playbook, parsing its recap, validating domain XML."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from testbed_shared.paths import build_cache

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SCHEMAS = ROOT / ".cache" / "libvirt-schemas" / "schemas"
#: the guest image cache the KVM and Hyper-V image tests share with every checkout on this machine
#: (images are keyed by a hash of what builds them, as Go's and cargo's caches are): a second clone
#: boots the image the first one built instead of spending minutes in mmdebstrap (mk/kvm.mk)
IMAGE_CACHE = build_cache() / "kvm-images"
#: the lock its builders take turns on (roles/kvm_guest and roles/hyperv_guest tasks/image.yml)
IMAGE_BUILD_LOCK = IMAGE_CACHE / ".build.lock"
#: this checkout's token: two checkouts' tests running at once on one machine (two `make test`)
#: name their guests, storage pools and pool directories apart
TOKEN = hashlib.sha1(str(ROOT).encode()).hexdigest()[:8]
#: the storage pool (and its directory) the KVM tests give the kvm_host role
POOL = f"testbed-{TOKEN}"
POOL_PATH = f"/var/lib/libvirt/images/{POOL}"
#: what a KVM test holds shared while it may use libvirtd; the daemon stop (conftest.py) takes it
#: exclusively, so a test never stops the libvirtd another test (of any checkout) still uses
DAEMON_USERS = Path("/run/lock/testbed-libvirt.users")
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


@dataclass
class PlaybookRun:
    """The outcome of one ansible-playbook run."""

    rc: int
    output: str

    def recap(self) -> dict[str, dict[str, int]]:
        """PLAY RECAP counters per host."""
        return {
            m[1]: {"ok": int(m[2]), "changed": int(m[3]), "unreachable": int(m[4]), "failed": int(m[5])}
            for m in RECAP.finditer(self.output)
        }


def ansible_playbook(*args: str, timeout: float = 900, log: Path | None = None) -> PlaybookRun:
    """Run ``ansible-playbook`` from the repository root (so ansible.cfg applies)."""
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1", PYTHONUNBUFFERED="1")
    proc = subprocess.run(
        [str(BIN / "ansible-playbook"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    output = proc.stdout + proc.stderr
    if log is not None:
        with log.open("a") as fh:
            fh.write(f"\n===== ansible-playbook {' '.join(args)} (rc {proc.returncode})\n{output}")
    return PlaybookRun(proc.returncode, output)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def require_tools(*tools: str) -> None:
    """Fail (not skip: CI installs these) when a tool the KVM tests need is missing."""
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        pytest.fail(f"missing {', '.join(missing)}: install scripts/apt-packages.txt (make install)")


def virt_xml_validate(xml: Path, schemas: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run virt-xml-validate on *xml*; with *schemas*, against that schema directory.

    virt-xml-validate reads /usr/share/libvirt/schemas; a newer set is bind-mounted over it in a
    private mount namespace of this one command (root only), so the host stays as it was.
    """
    if schemas is None:
        return subprocess.run(
            ["virt-xml-validate", str(xml), "domain"], capture_output=True, text=True, check=False
        )
    script = f"mount --bind {schemas} /usr/share/libvirt/schemas && exec virt-xml-validate {xml} domain"
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        check=False,
    )
