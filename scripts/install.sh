#!/usr/bin/env bash
# Install what the toolkit needs: Debian packages (scripts/apt-packages.txt) and the venv.
set -euo pipefail
venv=${1:-.venv}
cd "$(dirname "$0")/.."

mapfile -t wanted < <(grep -vE '^\s*(#|$)' scripts/apt-packages.txt | awk '{print $1}')
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo ">> apt: installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x "$venv/bin/python" ]; then
  echo ">> venv: creating $venv"
  python3 -m venv "$venv"
fi
echo ">> pip: installing requirements.txt and the two packages"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -r requirements.txt
"$venv/bin/python" -m pip install -q --no-deps -e agent -e reports
"$venv/bin/python" scripts/check_collections.py
