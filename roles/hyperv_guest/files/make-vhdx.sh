#!/usr/bin/env bash
# Turn the KVM lab's guest image into the disk of a Hyper-V Generation 2 VM, on the controller.
#
# usage: make-vhdx.sh IMAGE_DIR
#
# IMAGE_DIR is what roles/kvm_guest/files/build-guest-image.sh made (rootfs.qcow2, efi/). Output
# (last line, KEY=VALUE): IMAGE_DIR/hyperv/testbed-guest.vhdx, a dynamic VHDX with a GPT:
#   1  EFI system partition (FAT32): EFI/BOOT/BOOTX64.EFI (shim, signed by the Microsoft UEFI CA),
#      grubx64.efi and mmx64.efi (Debian-signed), EFI/debian/grub.cfg (boots /vmlinuz of the root)
#   2  the image's ext4 root file system unchanged (label testbed-root)
# Made once per image (the image directory is per content hash); kept when it exists.
set -euo pipefail

img=${1:?usage: make-vhdx.sh IMAGE_DIR}
vhdx="$img/hyperv/testbed-guest.vhdx"
if [ -s "$vhdx" ]; then
  echo "cached: $vhdx" >&2
  echo "VHDX=$vhdx"
  exit 0
fi
for tool in qemu-img sfdisk mkfs.fat mmd mcopy; do
  command -v "$tool" >/dev/null || { echo "error: $tool not found (install qemu-utils fdisk dosfstools mtools)" >&2; exit 3; }
done
[ -s "$img/efi/BOOTX64.EFI" ] || { echo "error: $img/efi/BOOTX64.EFI missing: rebuild the image" >&2; exit 3; }

work=$(mktemp -d "$img/.vhdx.XXXXXX")
trap 'rm -rf "$work"' EXIT
esp_mib=64

qemu-img convert -f qcow2 -O raw "$img/rootfs.qcow2" "$work/root.raw"
root_mib=$(( ($(stat -c %s "$work/root.raw") + 1048575) / 1048576 ))
# 1 MiB before the ESP, 1 MiB after the root for the backup GPT
truncate -s "$(( 1 + esp_mib + root_mib + 1 ))M" "$work/disk.raw"
sfdisk -q "$work/disk.raw" <<GPT
label: gpt
start=2048, size=$(( esp_mib * 2048 )), type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B, name="EFI system partition"
start=$(( (1 + esp_mib) * 2048 )), size=$(( root_mib * 2048 )), type=4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709, name="testbed-root"
GPT

cat > "$work/grub.cfg" <<'CFG'
set timeout=0
search --no-floppy --label testbed-root --set=root
linux /vmlinuz root=LABEL=testbed-root rw console=tty0 console=ttyS0
initrd /initrd.img
boot
CFG
mkfs.fat -F 32 -n ESP -C "$work/esp.img" $(( esp_mib * 1024 )) >/dev/null
mmd -i "$work/esp.img" ::/EFI ::/EFI/BOOT ::/EFI/debian
mcopy -i "$work/esp.img" "$img/efi/BOOTX64.EFI" "$img/efi/grubx64.efi" "$img/efi/mmx64.efi" ::/EFI/BOOT/
mcopy -i "$work/esp.img" "$work/grub.cfg" ::/EFI/debian/grub.cfg

dd if="$work/esp.img" of="$work/disk.raw" bs=1M seek=1 conv=notrunc status=none
dd if="$work/root.raw" of="$work/disk.raw" bs=1M seek=$(( 1 + esp_mib )) conv=notrunc,sparse status=none
rm -f "$work/root.raw" "$work/esp.img"
mkdir -p "$work/hyperv"
qemu-img convert -f raw -O vhdx -o subformat=dynamic "$work/disk.raw" "$work/hyperv/testbed-guest.vhdx"
rm -rf "$img/hyperv"
mv "$work/hyperv" "$img/hyperv"
echo "built: $vhdx" >&2
echo "VHDX=$vhdx"
