#!/usr/bin/env bash
# Fetch the RELAX NG schemas of a libvirt new enough to know <launchSecurity type='sev-snp'> and
# type='tdx' (libvirt-common from Debian unstable, through apt with a private state directory),
# so the tests can validate that XML with virt-xml-validate even on a host whose own libvirt is older
# (Debian 12 ships 9.0.0). Only Debian's package archive is contacted. Idempotent: a schema directory
# that already knows both types is kept.
#
# usage: fetch-libvirt-schemas.sh DEST_DIR   (prints DEST_DIR/schemas when done)
set -euo pipefail
dest=${1:?usage: fetch-libvirt-schemas.sh DEST_DIR}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
mirror=${TESTBED_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${TESTBED_SCHEMA_SUITE:-sid}

knows_both() {
  grep -q "<value>sev-snp</value>" "$1/domaincommon.rng" 2>/dev/null &&
    grep -q "<value>tdx</value>" "$1/domaincommon.rng" 2>/dev/null
}

if knows_both "$dest/schemas"; then
  echo "$dest/schemas"
  exit 0
fi

mkdir -p "$dest"
apt_dir=$(mktemp -d "$dest/.apt.XXXXXX")
trap 'rm -rf "$apt_dir"' EXIT
mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial" "$apt_dir/none"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" > "$apt_dir/sources.list"
opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=$apt_dir/none"
      -o "Dir::State::lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
      -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache=" -o "APT::Sandbox::User=root"
      -o "Acquire::Retries=3")
apt-get "${opts[@]}" update -qq >&2
(cd "$apt_dir" && apt-get "${opts[@]}" download -qq libvirt-common >&2)
deb=$(ls "$apt_dir"/libvirt-common_*.deb)
dpkg-deb -x "$deb" "$apt_dir/x"
rm -rf "$dest/schemas.new"
cp -r "$apt_dir/x/usr/share/libvirt/schemas" "$dest/schemas.new"
basename "$deb" > "$dest/schemas.new/SOURCE"
knows_both "$dest/schemas.new" || { echo "error: $(basename "$deb") does not know sev-snp and tdx" >&2; exit 1; }
rm -rf "$dest/schemas"
mv "$dest/schemas.new" "$dest/schemas"
echo "$dest/schemas"
