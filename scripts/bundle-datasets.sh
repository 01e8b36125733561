#!/usr/bin/env bash
# Pack the real data sets a user placed (kaggle_notebooks/datasets/real/<generator>/...) for the
# agent role to copy to targets: OUTDIR/real-datasets.tar, uncompressed (GBs of CSV and images:
# gzip would cost minutes each run) and reproducible (fixed order, owner and times), so an
# unchanged set gives the same bytes and the copy to a target is skipped.
# Prints "none" (nothing placed), "built" or "unchanged".
set -euo pipefail
# shellcheck source=reproducible-tar.sh
. "$(dirname "$0")/reproducible-tar.sh"
src=${1:?usage: bundle-datasets.sh SRCDIR OUTDIR}
out=${2:?usage: bundle-datasets.sh SRCDIR OUTDIR}
mkdir -p "$out"
exec 9>"$out/.lock"  # one pack at a time per output directory (runs from one checkout at once)
flock 9
tarball="$out/real-datasets.tar"
mapfile -t sets < <(find "$src" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort)
if [ "${#sets[@]}" -eq 0 ]; then
  rm -f "$tarball"; echo "none"; exit 0
fi
repro_tar "$src" "${sets[@]}" > "$tarball.new"
replace_if_changed "$tarball.new" "$tarball"
