#!/usr/bin/env bash
# `make run`: the plan on the inventory's hosts through Ansible, then the report's path.
# With the quick plan (the default) it first measures the comparison the quick report opens with:
# fio through the agent against the same fio job run bare, in 5 alternating pairs
# (bench/agent_vs_bare.py), the arms' order drawn afresh on every run (the seed is printed and kept in
# the records; QUICK_SEED=N reproduces an order). QUICK_PAIRS=N sets the pairs for any plan (0 leaves
# the comparison out). Further arguments go to ansible-playbook.
set -euo pipefail
plan=${1:-workloads/plans/quick.yml}
shift || true
cd "$(dirname "$0")/.."
run_id=${RUN_ID:-$(date -u +%Y%m%dT%H%M%SZ)}
if ! [[ $run_id =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ ]] || [[ $run_id == *..* ]]; then
  echo "error: RUN_ID '$run_id' is not a valid name (A-Z a-z 0-9 . _ -, no '..')" >&2
  exit 2
fi
extra=()
if [ -n "${QUICK_PAIRS:-}" ]; then
  pairs=$QUICK_PAIRS
elif [ "$(basename "$plan")" = quick.yml ]; then
  pairs=5
else
  pairs=0
fi
if ! [[ $pairs =~ ^[0-9]+$ ]] || [ "$pairs" -eq 1 ]; then
  echo "error: QUICK_PAIRS '$pairs': 0 (no comparison) or at least 2 pairs" >&2
  exit 2
fi
if [ "$pairs" -gt 0 ]; then
  echo ">> comparison: fio through the agent vs bare fio, $pairs alternating pairs"
  if [ -n "${QUICK_SEED:-}" ] && ! [[ $QUICK_SEED =~ ^[0-9]+$ ]]; then
    echo "error: QUICK_SEED '$QUICK_SEED': a whole number (the arm order seed a run printed)" >&2
    exit 2
  fi
  python bench/agent_vs_bare.py --out "results/$run_id" --run-id "$run_id" --pairs "$pairs" ${QUICK_SEED:+--seed "$QUICK_SEED"}
  extra+=(-e '{"report_compare": ["fio via agent:bare fio"]}')
fi
ansible-playbook run.yml -e "plan=$plan" -e "run_id=$run_id" "${extra[@]}" "$@"
report="$PWD/reports/out/$run_id/index.html"
[ -f "$report" ] || { echo "error: no report at $report" >&2; exit 1; }
mkdir -p .cache
echo "report: $report" > .cache/last-report.txt
echo
echo "report: $report"
