#!/usr/bin/env bash
# Install what the toolkit needs: Debian packages and the project venv.
#   scripts/install.sh VENV all   everything `make test` needs (scripts/apt-packages.txt, requirements.txt)
#   scripts/install.sh VENV run   what `make run` needs: the [run] section of apt-packages.txt and
#                                 requirements-run.txt at the pins of requirements.txt
# A third argument, apt or venv, does only that part (make test installs the Debian packages first,
# then fills the venv while the workload programs build).
set -euo pipefail
venv=${1:-.venv}
set_name=${2:-all}
part=${3:-both}
cd "$(dirname "$0")/.."

# The Debian packages of the set (apt), unless only the venv is wanted
apt_packages() {
  if [ "$set_name" = run ]; then
    # the packages before the first "# [test]" line
    mapfile -t wanted < <(sed '/^# \[test\]/q' scripts/apt-packages.txt | grep -vE '^\s*(#|$)' | awk '{print $1}')
  else
    mapfile -t wanted < <(grep -vE '^\s*(#|$)' scripts/apt-packages.txt | awk '{print $1}')
  fi
  missing=()
  for p in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo ">> apt: installing ${#missing[@]} package(s): ${missing[*]}"
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then
      if ! command -v sudo >/dev/null 2>&1; then
        echo "error: these Debian packages are missing and installing them needs root: ${missing[*]}" >&2
        echo "hint: run 'make install' as root once (or install sudo), then rerun as this user" >&2
        exit 2
      fi
      sudo="sudo"
    fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    # apt's own progress (one line per package) so a long install is never silent
    $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" 2>&1 \
      | { grep --line-buffered -E '^(Get:|Setting up|E:)' || true; } | sed 's/^/   /'
    for p in "${missing[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
        || { echo "error: apt could not install $p" >&2; exit 1; }
    done
  fi
}
[ "$part" = venv ] || apt_packages
[ "$part" != apt ] || exit 0

# the venv's packages with uv (scripts/venv-install.sh: about 15 s for requirements.txt where pip
# took about 7 min here; the same versions on 2026-11-30). No byte-compiling: the first import of
# a module writes its .pyc (the Makefile unexports PYTHONDONTWRITEBYTECODE), so only what is used
# is compiled.
install=(scripts/venv-install.sh "$venv")
"${install[@]}" --upgrade pip
if [ "$set_name" = run ]; then
  constraints=$(mktemp)
  trap 'rm -f "$constraints"' EXIT
  # constraints carry no extras: moto[server]==X -> moto==X
  sed -E 's/^([A-Za-z0-9_.-]+)\[[^]]*\]/\1/' requirements.txt > "$constraints"
  echo ">> uv: requirements-run.txt at the pins of requirements.txt"
  "${install[@]}" -c "$constraints" -r requirements-run.txt
else
  echo ">> uv: requirements.txt"
  "${install[@]}" -r requirements.txt
fi
echo ">> uv: the project's packages (shared, agent, reports), editable"
"${install[@]}" --no-deps -e shared -e agent -e reports
"$venv/bin/python" -c "import testbed_shared, testbed_agent, testbed_reports, yaml, ansible" \
  || { echo "error: the venv $venv is incomplete (uv failed above)" >&2; exit 1; }
# the collections of requirements.yml come with the full set (the `ansible` bundle)
[ "$set_name" = run ] || "$venv/bin/python" scripts/check_collections.py
