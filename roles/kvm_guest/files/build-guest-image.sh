#!/usr/bin/env bash
# Build the minimal Debian guest image of the KVM testbed, from Debian's packages only.
#
# usage: build-guest-image.sh CACHE_DIR [SUITE] [MIRROR]
#
# Output (printed as the last line, KEY=VALUE): CACHE_DIR/<hash>/ with
#   rootfs.qcow2   ext4 root file system (no partition table), booted with root=/dev/vda
#   vmlinuz        the guest kernel   (direct kernel boot: no boot loader in the image)
#   initrd.img     its initramfs
#   efi/           the signed UEFI loaders (shim, GRUB) for a Hyper-V Generation 2 disk
#   manifest.json  what went in: suite, mirror, packages, hash, versions
# The hash covers this script, the suite, the mirror and the package list, so a changed input
# builds a new image and an unchanged one is reused (the build is skipped when manifest.json exists).
set -euo pipefail

cache_dir=${1:?usage: build-guest-image.sh CACHE_DIR [SUITE] [MIRROR]}
suite=${2:-bookworm}
mirror=${3:-http://deb.debian.org/debian}
size=${TESTBED_IMAGE_SIZE:-3G}

# The guest's packages: kernel and boot, the guest agent, SSH, Python and the agent's
# dependencies from Debian (so the guest needs no PyPI), and the benchmark tools. The same image
# runs on Hyper-V (roles/hyperv_guest): hyperv-daemons (KVP), the cloud kernel's hv_* drivers and
# the Secure Boot chain (shim signed by the Microsoft UEFI CA, Debian's signed GRUB) for its
# EFI system partition.
packages=(
  linux-image-cloud-amd64 initramfs-tools systemd-sysv udev dbus kmod
  iproute2 openssh-server qemu-guest-agent dmidecode ca-certificates
  python3 python3-venv python3-pip python3-yaml python3-psutil python3-rich
  python3-prometheus-client python3-cryptography
  fio coreutils util-linux procps cpuid msr-tools sudo prometheus-node-exporter
  hyperv-daemons shim-signed grub-efi-amd64-signed
)
pkg_list=$(printf '%s\n' "${packages[@]}" | sort | paste -sd, -)

here=$(cd "$(dirname "$0")" && pwd)
overlay="$here/guest-overlay"
# content hash of every input: this script, the overlay files (names, modes, contents), the
# suite, the mirror, the package list and the size
inputs_hash=$( { sha256sum "$0" | cut -c1-64
                 (cd "$overlay" && find . -type f -printf '%p %m\n' | LC_ALL=C sort)
                 (cd "$overlay" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
                 printf '%s\n' "$suite" "$mirror" "$pkg_list" "$size"; } | sha256sum | cut -c1-16)
hash=$inputs_hash
out="$cache_dir/$hash"

if [ -s "$out/manifest.json" ] && [ -s "$out/rootfs.qcow2" ]; then
  echo "cached: $out" >&2
  echo "IMAGE_DIR=$out"
  exit 0
fi

for tool in mmdebstrap mkfs.ext4 qemu-img; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found (install mmdebstrap e2fsprogs qemu-utils)" >&2; exit 3; }
done

mkdir -p "$cache_dir"
work=$(mktemp -d "$cache_dir/.build-$hash.XXXXXX")
trap 'rm -rf "$work"' EXIT
root="$work/root"

echo ">> mmdebstrap $suite ($mirror): $pkg_list" >&2
# The overlay (guest-overlay/ beside this script) brings fstab, network (systemd-networkd, DHCP),
# sshd settings, and the units that make host keys at first boot and install the SSH key the host
# hands in through SMBIOS OEM strings: the cached image carries no key of its own.
mmdebstrap --variant=apt --mode=root --include="$pkg_list" \
  --aptopt='Acquire::Retries "3"' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --customize-hook="sync-in $overlay /" \
  --customize-hook='rm -f "$1"/etc/ssh/ssh_host_*' \
  --customize-hook='chroot "$1" systemctl enable testbed-ssh-key.service testbed-ssh-hostkeys.service systemd-networkd.service serial-getty@ttyS0.service' \
  --customize-hook='cp -L "$1/vmlinuz" "$1/../vmlinuz"; cp -L "$1/initrd.img" "$1/../initrd.img"' \
  --customize-hook='mkdir -p "$1/../efi"; cp "$1"/usr/lib/shim/shimx64.efi.signed "$1/../efi/BOOTX64.EFI"; cp "$1"/usr/lib/shim/mmx64.efi.signed "$1/../efi/mmx64.efi"; cp "$1"/usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed "$1/../efi/grubx64.efi"' \
  --customize-hook='chroot "$1" dpkg-query -W -f="\${Package}=\${Version}\n" > "$1/../packages.txt"' \
  --customize-hook='rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*' \
  "$suite" "$root" "$mirror" >&2

echo ">> mkfs.ext4 ($size) and qemu-img convert" >&2
truncate -s "$size" "$work/rootfs.raw"
mkfs.ext4 -q -L testbed-root -d "$root" "$work/rootfs.raw"
qemu-img convert -f raw -O qcow2 "$work/rootfs.raw" "$work/rootfs.qcow2"
rm -f "$work/rootfs.raw"

kernel_version=$(ls "$root/lib/modules" | head -n1)
mkdir -p "$work/out"
mv "$work/rootfs.qcow2" "$work/vmlinuz" "$work/initrd.img" "$work/packages.txt" "$work/efi" "$work/out/"
python3 - "$work/out/manifest.json" "$hash" "$suite" "$mirror" "$pkg_list" "$kernel_version" <<'PY'
import json, sys, datetime
path, h, suite, mirror, pkgs, kver = sys.argv[1:]
json.dump({"hash": h, "suite": suite, "mirror": mirror, "packages": pkgs.split(","),
           "kernel": kver, "built_at": datetime.datetime.now(datetime.timezone.utc).isoformat(),
           "root": "/dev/vda", "format": "qcow2"}, open(path, "w"), indent=2)
PY
rm -rf "$out"
mv "$work/out" "$out"
echo "built: $out" >&2
echo "IMAGE_DIR=$out"
