"""The Hyper-V guest disk: the KVM lab's image (same builder, same cache, same content hash)
converted to a Generation 2 VHDX on the controller, checked with qemu-img, sfdisk, mtools and
debugfs (no mount, no root needed beyond what the image build needs)."""

from __future__ import annotations

import fcntl
import json
import subprocess
from pathlib import Path

import pytest
from kvm_helpers import IMAGE_BUILD_LOCK, IMAGE_CACHE, ROOT, require_tools

BUILD = ROOT / "roles/kvm_guest/files/build-guest-image.sh"
MAKE_VHDX = ROOT / "roles/hyperv_guest/files/make-vhdx.sh"
HV_MODULES = (
    "drivers/hv/hv_vmbus.ko",
    "drivers/hv/hv_utils.ko",
    "drivers/scsi/hv_storvsc.ko",
    "drivers/net/hyperv/hv_netvsc.ko",
)


def _run(*argv: str | Path) -> str:
    proc = subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=False, timeout=1800)
    assert proc.returncode == 0, f"{argv}: {proc.stderr[-2000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def vhdx() -> dict:
    """The image (built once, or from the cache the KVM tests share) and its VHDX."""
    require_tools("mmdebstrap", "qemu-img", "sfdisk", "mkfs.fat", "mcopy", "debugfs")
    IMAGE_CACHE.mkdir(parents=True, exist_ok=True)
    # the roles' lock: another checkout's tests build in the same cache
    with IMAGE_BUILD_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        image_dir = Path(_run("bash", BUILD, IMAGE_CACHE).splitlines()[-1].split("=", 1)[1])
        out = _run("bash", MAKE_VHDX, image_dir)
        path = Path(out.splitlines()[-1].split("=", 1)[1])
        # the VHDX read back as raw (3 GiB apparent, sparse) beside it in the image cache: made once
        # per image like the VHDX, never in a test's temporary directory; partitions are read in place
        raw = path.with_suffix(".check.raw")
        if not raw.exists() or raw.stat().st_mtime < path.stat().st_mtime:
            part = raw.with_suffix(".part")
            _run("qemu-img", "convert", "-f", "vhdx", "-O", "raw", path, part)
            part.replace(raw)
    return {
        "image_dir": image_dir,
        "path": path,
        "raw": raw,
        "manifest": json.loads((image_dir / "manifest.json").read_text()),
    }


def _partition(raw: Path, index: int) -> tuple[int, int]:
    """(offset, size) in bytes of partition *index* of the GPT in *raw*."""
    table = json.loads(_run("sfdisk", "--json", raw))["partitiontable"]
    part = table["partitions"][index]
    return part["start"] * table["sectorsize"], part["size"] * table["sectorsize"]


def _in_place(raw: Path, index: int) -> tuple[int, int]:
    """Partition *index*'s (offset, size), checked to be whole MiB (Hyper-V's alignment)."""
    offset, size = _partition(raw, index)
    mib = 1 << 20
    assert offset % mib == 0 and size % mib == 0
    return offset, size


@pytest.mark.slow
def test_vhdx_is_a_dynamic_vhdx_of_the_kvm_image(vhdx: dict) -> None:
    info = json.loads(_run("qemu-img", "info", "--output=json", vhdx["path"]))
    assert info["format"] == "vhdx"
    assert info["virtual-size"] % (1 << 20) == 0  # Hyper-V wants whole MiB
    assert vhdx["path"].parent.parent == vhdx["image_dir"]  # beside the KVM image: same content hash
    assert vhdx["image_dir"].name == vhdx["manifest"]["hash"]
    again = subprocess.run(["bash", MAKE_VHDX, vhdx["image_dir"]], capture_output=True, text=True, check=True)
    assert "cached:" in again.stderr  # made once per image


@pytest.mark.slow
def test_vhdx_boots_through_shim_and_grub(vhdx: dict) -> None:
    table = json.loads(_run("sfdisk", "--json", vhdx["raw"]))["partitiontable"]
    assert table["label"] == "gpt"
    esp_type, root_type = (p["type"] for p in table["partitions"])
    assert esp_type == "C12A7328-F81F-11D2-BA4B-00A0C93EC93B"
    assert root_type == "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709"
    esp = f"{vhdx['raw']}@@{_in_place(vhdx['raw'], 0)[0]}"  # mtools reads the partition in the disk
    listing = _run("mdir", "-b", "-/", "-i", esp, "::/EFI")
    for name in ("BOOT/BOOTX64.EFI", "BOOT/grubx64.efi", "BOOT/mmx64.efi", "debian/grub.cfg"):
        assert f"::/EFI/{name}" in listing
    grub_cfg = _run("mtype", "-i", esp, "::/EFI/debian/grub.cfg")
    assert "root=LABEL=testbed-root" in grub_cfg and "search --no-floppy --label testbed-root" in grub_cfg


@pytest.mark.slow
def test_image_has_the_hyperv_drivers_and_the_kvp_daemon(vhdx: dict) -> None:
    packages = (vhdx["image_dir"] / "packages.txt").read_text()
    for package in ("hyperv-daemons=", "shim-signed=", "grub-efi-amd64-signed=", "linux-image-cloud-amd64="):
        assert f"\n{package}" in "\n" + packages
    root = f"{vhdx['raw']}?offset={_in_place(vhdx['raw'], 1)[0]}"  # e2fsprogs' unix I/O option
    kernel = vhdx["manifest"]["kernel"]

    def exists(path: str) -> bool:
        out = subprocess.run(["debugfs", "-R", f"stat {path}", str(root)], capture_output=True, text=True)
        return "Inode:" in out.stdout

    for module in HV_MODULES:
        assert exists(f"/usr/lib/modules/{kernel}/kernel/{module}"), module
    assert exists("/usr/sbin/hv_kvp_daemon")
    assert exists("/usr/lib/systemd/system/hv-kvp-daemon.service") or exists(
        "/lib/systemd/system/hv-kvp-daemon.service"
    )
    fstab = subprocess.run(
        ["debugfs", "-R", "cat /etc/fstab", str(root)], capture_output=True, text=True
    ).stdout
    assert fstab.startswith("LABEL=testbed-root / ext4")
