"""roles/campaign: argument specs equal the defaults, check mode on localhost changes nothing, a real
run writes the two cron entries into a throwaway cron file, and their command line really runs a
(one-slot) campaign; state absent removes them."""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import pytest
import yaml
from repotest import ROOT, VENV_BIN, ansible_playbook

ROLE = ROOT / "roles" / "campaign"
PLAYBOOK = """\
- name: Campaign role on localhost
  hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: campaign
"""
PLAN = "name: tiny\nbenchmarks:\n  - {name: info, type: sysinfo}\n"


def test_argument_specs_equal_defaults_both_ways() -> None:
    defaults = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    options = yaml.safe_load((ROLE / "meta/argument_specs.yml").read_text())["argument_specs"]["main"][
        "options"
    ]
    assert set(defaults) == set(options)
    assert {k: v.get("default") for k, v in options.items()} == defaults


def _play(tmp: Path, *extra: str, **overrides: object) -> subprocess.CompletedProcess[str]:
    (tmp / "play.yml").write_text(PLAYBOOK)
    (tmp / "vars.json").write_text(json.dumps(overrides))
    inventory = str(ROOT / "inventory" / "local.yml")
    return ansible_playbook("-i", inventory, str(tmp / "play.yml"), "-e", f"@{tmp / 'vars.json'}", *extra)


@pytest.mark.integration
@pytest.mark.slow
def test_role_check_mode_then_real_cron_file(tmp_path: Path) -> None:
    (tmp_path / "plan.yml").write_text(PLAN)
    cron = tmp_path / "cron.d-testbed"
    args = {
        "campaign_name": "tod",
        "campaign_plan": str(tmp_path / "plan.yml"),
        "campaign_results_dir": str(tmp_path / "results"),
        "campaign_every": "2s",
        "campaign_for": "2s",
        "campaign_agent_command": str(VENV_BIN / "testbed-agent"),
        "campaign_extra_args": ["--node-exporter", "", "--label", "50% load"],
        "campaign_cron_file": str(cron),
        "campaign_user": "root",
        "campaign_install_cron": False,
    }
    check = _play(tmp_path, "--check", **args)
    assert check.returncode == 0, check.stdout[-3000:]
    assert not cron.exists() and not (tmp_path / "results").exists()
    real = _play(tmp_path, **args)
    assert real.returncode == 0, real.stdout[-3000:]
    lines = cron.read_text().splitlines()
    assert (
        lines[0] == "#Ansible: testbed campaign tod (boot)"
        and lines[2] == "#Ansible: testbed campaign tod (watchdog)"
    )
    assert lines[1].startswith("@reboot root ") and lines[3].startswith("*/5 * * * * root ")
    job = lines[1].removeprefix("@reboot root ")
    assert job == lines[3].removeprefix("*/5 * * * * root ")
    argv = shlex.split(job.replace("\\%", "%"))
    store = tmp_path / "results" / "tod"
    assert argv[:3] == [str(VENV_BIN / "testbed-agent"), "campaign", str(tmp_path / "plan.yml")]
    assert argv[-4:] == ["--watchdog", ">>", str(store / "campaign.log"), "2>&1"]
    assert argv[argv.index("--every") + 1] == "2s" and argv[argv.index("--node-exporter") + 1] == ""
    assert "50\\% load" in job  # cron would cut the line at a bare %
    # what cron would run (sh -c, with % unescaped as cron does)
    ran = subprocess.run(["sh", "-c", job.replace("\\%", "%")], timeout=120, env={"PATH": "/usr/bin:/bin"})
    assert ran.returncode == 0
    assert "complete: 1 runs" in (store / "campaign.log").read_text()
    records = [json.loads(x) for x in next(store.glob("tod-000000/*.jsonl")).read_text().splitlines()]
    assert [(r["run_id"], r["label"], r["status"]) for r in records] == [("tod-000000", "50% load", "ok")]
    gone = _play(tmp_path, **args, campaign_state="absent")
    assert gone.returncode == 0, gone.stdout[-3000:]
    assert not cron.exists()  # the module deletes a cron file left without entries
