#!/usr/bin/env bash
# `make run`: the plan on the inventory's hosts through Ansible, then the report's path.
set -euo pipefail
plan=${1:-workloads/plans/quick.yml}
shift || true
cd "$(dirname "$0")/.."
run_id=${RUN_ID:-$(date -u +%Y%m%dT%H%M%SZ)}
if ! [[ $run_id =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ ]] || [[ $run_id == *..* ]]; then
  echo "error: RUN_ID '$run_id' is not a valid name (A-Z a-z 0-9 . _ -, no '..')" >&2
  exit 2
fi
ansible-playbook run.yml -e "plan=$plan" -e "run_id=$run_id" "$@"
report="$PWD/reports/out/$run_id/index.html"
[ -f "$report" ] || { echo "error: no report at $report" >&2; exit 1; }
echo
echo "report: $report"
