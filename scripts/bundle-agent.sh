#!/usr/bin/env bash
# Build what the agent role copies to targets: the agent wheel, workloads/ and kaggle_notebooks/
# (without build output), and the pinned constraints. Prints "built" when the bundle changed.
set -euo pipefail
out=${1:?usage: bundle-agent.sh OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export SOURCE_DATE_EPOCH=946684800
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
"${PYTHON:-python3}" -m pip wheel -q --no-deps --no-build-isolation -w "$stage/dist" "$root/agent" >/dev/null
# pip constraints take no extras: moto[server]==X becomes moto==X
sed -E 's/\[[^]]*\]//' "$root/requirements.txt" > "$stage/constraints.txt"
tar -C "$root" --exclude-vcs --exclude='__pycache__' --exclude='target' --exclude='node_modules' \
    --exclude='bin' --exclude='.ipynb_checkpoints' -cf - workloads \
    $( [ -d "$root/kaggle_notebooks" ] && echo kaggle_notebooks ) | tar -C "$stage" -xf -
basename "$(ls "$stage"/dist/*.whl)" > "$stage/WHEEL"
# A reproducible archive: fixed order, owner and times, so an unchanged tree gives the same bytes.
new="$out/testbed-agent-bundle.tar.gz.new"
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner --mtime='2000-01-01' \
    -cf - dist constraints.txt workloads $( [ -d "$stage/kaggle_notebooks" ] && echo kaggle_notebooks ) \
    | gzip -n > "$new"
cp "$stage/WHEEL" "$out/WHEEL"
if [ -f "$out/testbed-agent-bundle.tar.gz" ] && cmp -s "$new" "$out/testbed-agent-bundle.tar.gz"; then
  rm -f "$new"; echo "unchanged"
else
  mv "$new" "$out/testbed-agent-bundle.tar.gz"; echo "built"
fi
