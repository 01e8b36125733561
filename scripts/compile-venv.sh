#!/usr/bin/env bash
# Byte-compile a venv's site-packages once, in parallel: scripts/compile-venv.sh VENV
#
# pip installs with --no-compile (its compile step is serial) and this writes the .pyc files on all
# cores instead. Without them, every Python process compiles each module it imports again whenever
# PYTHONDONTWRITEBYTECODE is set (as in CI and on this project's machines), and the test suite starts
# thousands of them: importing the azure collection's module_utils took 13.5 s without .pyc and
# 3.0 s with them, pandas + scipy 4.3 s and 1.9 s (one-off timings on a 2-core machine, README
# "Tests and benchmarks"; not a make bench figure).
# ansible_collections is left out: Ansible ships a module and its module_utils to the target in a
# zip and runs them from there, so their .pyc would never be read.
set -euo pipefail
venv=${1:?usage: scripts/compile-venv.sh VENV}
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$venv/bin/python" -m compileall -q -j0 -x '/ansible_collections/' "$site" >/dev/null \
  || { echo "error: byte-compiling $site failed (compileall above)" >&2; exit 1; }
