#!/usr/bin/env bash
# Pack the real data sets a user placed (kaggle_notebooks/datasets/real/<generator>/...) for the
# agent role to copy to targets: OUTDIR/real-datasets.tar, uncompressed (GBs of CSV and images:
# gzip would cost minutes each run) and reproducible (fixed order, owner and times), so an
# unchanged set gives the same bytes and the copy to a target is skipped.
# Prints "none" (nothing placed), "built" or "unchanged".
set -euo pipefail
src=${1:?usage: bundle-datasets.sh SRCDIR OUTDIR}
out=${2:?usage: bundle-datasets.sh SRCDIR OUTDIR}
mkdir -p "$out"
tarball="$out/real-datasets.tar"
mapfile -t sets < <(find "$src" -mindepth 1 -maxdepth 1 -type d -printf '%f\n' 2>/dev/null | sort)
if [ "${#sets[@]}" -eq 0 ]; then
  rm -f "$tarball"; echo "none"; exit 0
fi
new="$tarball.new"
tar -C "$src" --sort=name --owner=0 --group=0 --numeric-owner --mtime='2000-01-01' \
    --mode='u+rwX,go+rX,go-w' -cf "$new" "${sets[@]}"
if [ -f "$tarball" ] && cmp -s "$new" "$tarball"; then
  rm -f "$new"; echo "unchanged"
else
  mv "$new" "$tarball"; echo "built"
fi
