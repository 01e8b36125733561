"""Issue 40 finding 6, the cost cap, as a red-team table: every way tried to pass a cap that is not
a finite positive number, to lower or disable the ledger's total, or to start a plan whose ceiling
is over the cap. Each try must be refused cleanly (one line naming the file, line and field where
there is a file; an exception of the toolkit, never a traceback or an accepted value).

The tries use only what the code before the fix also had (target files, the ``platform estimate``
command, the ledger, the gate of a benchmark), so the same table counts the bypasses there.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testbed_agent import workloads
from testbed_agent.faas_drivers import load_target, open_driver, target_from
from testbed_agent.faas_drivers.ledger import Budget, CostCapExceeded
from testbed_agent.faas_drivers.routing import check_budget
from testbed_shared import errors

#: cost_cap_usd as written in a target file: NaN, infinities, zero, negatives, not numbers
BAD_CAPS = [
    ".nan",
    ".NaN",
    ".inf",
    "-.inf",
    "1.0e+999",
    "0",
    "0.0",
    "-0.0",
    "-1",
    "-1.0e-9",
    '"5"',
    "true",
    "null",
]
#: what a ledger file may hold after an edit, a bug or a crash
BAD_LEDGERS = [
    '{"spent_usd": NaN, "calls": 3}',
    '{"spent_usd": Infinity, "calls": 3}',
    '{"spent_usd": -Infinity, "calls": 3}',
    '{"spent_usd": 1e400, "calls": 3}',
    '{"spent_usd": -4.5, "calls": 3}',
    '{"spent_usd": "4.5", "calls": 3}',
    '{"spent_usd": null, "calls": 3}',
    '{"spent_usd": 4.5}',
    '{"spent_usd": 4.5, "calls": -1}',
    '{"spent_usd": 4.5, "calls": 2.5}',
    '{"calls": 3}',
    "[4.5, 3]",
    "4.5",
    '{"spent_usd": 4.',
    "",
    "\x00\xff",
]
#: what a call's price may come out as from a platform's billed figures (or a function's report)
BAD_CHARGES = [math.nan, math.inf, -math.inf, -0.01, -1e9, -1e-12]
#: the finding's plan: about $0.004 estimated, about $300 if every call runs to its timeout
CEILING_PLAN = """\
name: ceiling
benchmarks:
  - name: big_and_idle
    type: faas
    params: {profile: aws-lambda, function: calcs, mode: scaling, concurrency: 100, calls: 20,
             memory_mb: 10240, function_timeout_s: 900, event: {level: 1}}
"""


def _target_file(tmp_path: Path, cap: str) -> Path:
    path = tmp_path / "lambda.yml"
    path.write_text(
        f"platform: aws-lambda\nregion: eu-west-1\nrun_id: cap-1\ncost_cap_usd: {cap}\n"
        f"options: {{journal: {tmp_path / 'journal.jsonl'}}}\n"
    )
    return path


@pytest.mark.parametrize("cap", BAD_CAPS)
def test_a_cap_that_is_no_finite_positive_number_is_refused_naming_file_line_field(cap, tmp_path):
    path = _target_file(tmp_path, cap)
    with pytest.raises(errors.TestbedError) as refused:
        load_target(path)
    assert refused.value.message.startswith(f"{path}:4: field 'cost_cap_usd'"), refused.value.message


@pytest.mark.parametrize("cap", ["nan", "inf", "-inf", "0", "-5"])
def test_the_estimate_command_refuses_such_a_cap_in_one_line(cap, tmp_path):
    plan = tmp_path / "plan.yml"
    plan.write_text(CEILING_PLAN)
    cmd = [sys.executable, "-m", "testbed_agent", "platform", "estimate", str(plan), f"--cap={cap}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "within it" not in done.stdout, done.stdout
    assert done.stderr.startswith("error: --cap") and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("text", BAD_LEDGERS)
def test_a_ledger_that_is_no_record_of_finite_amounts_stops_the_run(text, tmp_path):
    """A corrupt ledger is not a fresh start from $0: opening it is refused, naming the file."""
    path = tmp_path / "cost.json"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(errors.TestbedError) as refused:
        Budget(5.0, path)
    assert str(path) in refused.value.message


@pytest.mark.parametrize("usd", BAD_CHARGES)
def test_a_charge_that_is_no_finite_amount_is_refused_and_the_total_kept(usd, tmp_path):
    path = tmp_path / "cost.json"
    budget = Budget(5.0, path)
    budget.charge(4.0)
    with pytest.raises(errors.TestbedError):
        budget.charge(usd)
    assert budget.spent == pytest.approx(4.0) and json.loads(path.read_text())["spent_usd"] == pytest.approx(
        4.0
    )
    with pytest.raises(CostCapExceeded):  # the cap still holds after the refused charge
        budget.charge(1.5)


def test_overflowing_charges_do_not_disable_the_cap(tmp_path):
    budget = Budget(5.0, tmp_path / "cost.json")
    with pytest.raises(CostCapExceeded):
        budget.charge(1e308)
    with pytest.raises(errors.TestbedError):  # the total would be infinite: refused, the file stays finite
        budget.charge(1e308)
    assert math.isfinite(json.loads((tmp_path / "cost.json").read_text())["spent_usd"])


@pytest.mark.parametrize("estimate", [math.nan, -1.0, -math.inf])
def test_an_estimate_that_is_no_amount_does_not_pass_the_gate(estimate, tmp_path):
    with pytest.raises(CostCapExceeded):
        Budget(5.0, tmp_path / "cost.json").check(estimate, "benchmark x")


def test_the_gate_checks_the_plans_ceiling_not_its_estimate(tmp_path):
    """The finding's plan (an estimate far below $5, a ceiling far above) does not start under a
    $5 cap: neither the role's estimate step nor the benchmark's own gate lets it through."""
    plan = tmp_path / "plan.yml"
    plan.write_text(CEILING_PLAN)
    target = _target_file(tmp_path, "5")
    cmd = [sys.executable, "-m", "testbed_agent", "platform", "estimate", str(plan), "--target", str(target)]
    done = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=120)
    row = json.loads(done.stdout)["platforms"]["aws-lambda"]
    assert row["price"] < 0.05 and row["price_ceiling"] > 250, row
    assert done.returncode == 3 and json.loads(done.stdout)["over_cap"] == ["aws-lambda"]
    params = workloads.parse_params("faas", {**_params(plan)})
    driver = open_driver(load_target(target), dry_run=True)
    with pytest.raises(CostCapExceeded):
        check_budget(driver, params, "big_and_idle")


def _params(plan: Path) -> dict[str, object]:
    return yaml.safe_load(plan.read_text())["benchmarks"][0]["params"]


def test_a_sound_cap_ledger_and_plan_pass(tmp_path):
    assert target_from({"platform": "aws-lambda", "cost_cap_usd": 0.01}).cost_cap_usd == 0.01
    (tmp_path / "t.json").write_text(
        '{"platform": "aws-lambda", "cost_cap_usd": 1e-06}'
    )  # as the role writes it
    assert load_target(tmp_path / "t.json").cost_cap_usd == 1e-06
    budget = Budget(5.0, tmp_path / "cost.json")
    budget.check(4.0, "x")
    budget.charge(0.0)
    budget.charge(1.25)
    assert Budget(5.0, tmp_path / "cost.json").spent == pytest.approx(1.25)
    assert os.stat(tmp_path / "cost.json").st_mode & 0o777 == 0o600
