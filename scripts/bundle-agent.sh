#!/usr/bin/env bash
# Build what the agent role copies to targets: the agent wheel, workloads/ and kaggle_notebooks/
# (without build output), and the pinned constraints. Prints "built" when the bundle changed.
set -euo pipefail
# shellcheck source=reproducible-tar.sh
. "$(dirname "$0")/reproducible-tar.sh"
out=${1:?usage: bundle-agent.sh OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
# One build at a time per output directory: two runs from one checkout (two terminals, or make
# test's two lanes) would otherwise write the same files at once.
exec 9>"$out/.lock"
flock 9
export SOURCE_DATE_EPOCH=946684800
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
# Two wheels: the shared library (shared/) and the target runtime (agent/), each built from a clean
# copy of its directory (setuptools' in-tree build/ directory keeps the modules of earlier builds,
# renamed or deleted ones included, and would ship them). The controller's report is not in it.
for dist in shared agent; do
  mkdir -p "$stage/src/$dist"
  tar -C "$root/$dist" --exclude='./build' --exclude='*.egg-info' --exclude='__pycache__' \
      --exclude='./tests' --exclude='*.pyc' -cf - . | tar -C "$stage/src/$dist" -xf -
  "${PYTHON:-python3}" -m pip wheel -q --no-deps --no-build-isolation -w "$stage/dist" "$stage/src/$dist" >/dev/null
done
# pip constraints take no extras: moto[server]==X becomes moto==X
sed -E 's/\[[^]]*\]//' "$root/requirements.txt" > "$stage/constraints.txt"
# The tracked workload definitions and notebooks (no generated data, no build trees) ...
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$root" ls-files -z workloads kaggle_notebooks | tar -C "$root" --null -T - -cf - | tar -C "$stage" -xf -
else
  tar -C "$root" --exclude='__pycache__' --exclude='target' --exclude='node_modules' --exclude='bin' \
      --exclude='.cache' --exclude='.ipynb_checkpoints' -cf - workloads kaggle_notebooks | tar -C "$stage" -xf -
fi
# ... plus the self-contained crypto programs built here (targets of the same architecture and C
# library run them as they are; the Java and Node programs need their runtimes and are built there).
for exe in workloads/crypto/go/bin/testbed-crypto workloads/crypto/rust/target/release/testbed-crypto \
           workloads/crypto/kms/go/bin/testbed-kms workloads/crypto/kms/rust/target/release/testbed-kms; do
  if [ -x "$root/$exe" ]; then mkdir -p "$stage/$(dirname "$exe")"; cp -p "$root/$exe" "$stage/$exe"; fi
done
# WHEEL: the wheels to install, the shared library first, one a line
{ basename "$(ls "$stage"/dist/testbed_shared-*.whl)"; basename "$(ls "$stage"/dist/testbed_agent-*.whl)"; } > "$stage/WHEEL"
# A reproducible archive (gzip -n: no name or time in the header either).
repro_tar "$stage" dist constraints.txt workloads $( [ -d "$stage/kaggle_notebooks" ] && echo kaggle_notebooks ) \
    | gzip -n > "$out/testbed-agent-bundle.tar.gz.new"
cp "$stage/WHEEL" "$out/WHEEL"
replace_if_changed "$out/testbed-agent-bundle.tar.gz.new" "$out/testbed-agent-bundle.tar.gz"
