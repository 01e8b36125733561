#!/usr/bin/env bash
# `make run`: the plan on the inventory's hosts through Ansible, then the report's path.
set -euo pipefail
plan=${1:-workloads/plans/quick.yml}
shift || true
cd "$(dirname "$0")/.."
run_id=${RUN_ID:-$(date -u +%Y%m%dT%H%M%SZ)}
ansible-playbook run.yml -e "plan=$plan" -e "run_id=$run_id" "$@"
report="$PWD/reports/out/$run_id/index.html"
[ -f "$report" ] || { echo "error: no report at $report" >&2; exit 1; }
echo
echo "report: $report"
