"""`ansible-playbook run.yml -l faas` with a real-platform host and an emulated host side by side:
the faas_platform role writes the AWS target (Lambda at the emulator service's Lambda API, IAM and
Logs at moto), estimates the plan against the cap and checks the credentials; the same plan runs
on both hosts (the GCF benchmark is skipped on the Lambda host); the records name the target; the
teardown stage deletes what the run created. A plan above the cap stops before anything runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import boto3
import pytest
import yaml
from repotest import ROOT, ansible_playbook

from .standins import aws_env

pytestmark = [pytest.mark.integration, pytest.mark.slow]
#: the embedded inventory first: its group_vars (testbed_root, plan, results dirs) apply, as in a real run
LOCAL = str(ROOT / "inventory/local.yml")

PLAN = """\
name: faas-platforms
defaults: {wait_s: 0, repetitions: 1, timeout_s: 300}
benchmarks:
  - name: calcs_warm_aws
    type: faas
    params: {profile: aws-lambda, function: calcs, memory_mb: 256, mode: warm, calls: 3, event: {level: 1}}
  - name: calcs_cold_warm_aws
    type: faas
    params: {profile: aws-lambda, function: calcs, memory_mb: 512, mode: cold_warm, calls: 2,
             event: {level: 1}}
  - name: calcs_warm_gcf
    type: faas
    params: {profile: gcf-gen2, function: calcs, memory_mb: 256, mode: warm, calls: 2, event: {level: 1}}
"""


def _inventory(tmp: Path, env: dict[str, str], cap: float) -> Path:
    local = {"ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}
    agent = {"agent_python": "{{ ansible_playbook_python }}", "agent_install_dir": str(tmp / "agent")}
    inv = {
        "all": {
            "children": {
                "faas": {
                    "hosts": {
                        "faas-aws": {
                            **local,
                            "faas_platform": "aws-lambda",
                            "faas_platform_region": "eu-west-1",
                            "faas_platform_env": env,
                            "faas_platform_cost_cap_usd": cap,
                            "faas_platform_target_dir": str(tmp / "targets"),
                            "testbed_label": "AWS-Lambda-rehearsal",
                        },
                        "faas-emu": {
                            **local,
                            "faas_platform": "emulator-private",
                            "testbed_label": "Emulator",
                        },
                    },
                    "vars": {**agent, "testbed_disk_encryption": False, "testbed_cpu_vendor": "unknown"},
                }
            }
        }
    }
    path = tmp / "inventory.yml"
    path.write_text(yaml.safe_dump(inv))
    return path


def _extra(tmp: Path) -> Path:
    (tmp / "plan.yml").write_text(PLAN)
    extra = {
        "plan": str(tmp / "plan.yml"),
        "agent_scratch_dir": str(tmp / "scratch"),
        "node_exporter_enabled": False,
        "testbed_results_dir": str(tmp / "results"),
        "testbed_reports_dir": str(tmp / "reports"),
    }
    path = tmp / "extra.json"
    path.write_text(json.dumps(extra))
    return path


def test_run_yml_on_a_real_and_an_emulated_faas_host(served, tmp_path, monkeypatch):
    with aws_env(served.url, monkeypatch) as moto:
        env = {
            "AWS_ENDPOINT_URL_LAMBDA": served.url,
            "AWS_ENDPOINT_URL_IAM": moto,
            "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS": moto,
            "AWS_ACCESS_KEY_ID": os.environ["AWS_ACCESS_KEY_ID"],  # the emulator's, set by aws_env
            "AWS_SECRET_ACCESS_KEY": os.environ["AWS_SECRET_ACCESS_KEY"],
        }
        inv = _inventory(tmp_path, env, cap=5.0)
        extra = f"@{_extra(tmp_path)}"
        res = ansible_playbook(
            "run.yml", "-i", LOCAL, "-i", str(inv), "-l", "faas", "-e", extra, "-e", "run_id=faas-1"
        )
        assert res.returncode == 0, res.stdout[-6000:] + res.stderr[-2000:]
        assert env["AWS_ACCESS_KEY_ID"] not in res.stdout and env["AWS_SECRET_ACCESS_KEY"] not in res.stdout
        run = tmp_path / "results" / "faas-1"
        aws = {r["benchmark"]: r for r in map(json.loads, (run / "faas-aws.jsonl").read_text().splitlines())}
        emu = {r["benchmark"]: r for r in map(json.loads, (run / "faas-emu.jsonl").read_text().splitlines())}
        assert aws["calcs_warm_aws"]["status"] == "ok" and aws["calcs_cold_warm_aws"]["status"] == "ok"
        assert aws["calcs_warm_gcf"]["status"] == "skipped" and "gcf-gen2" in aws["calcs_warm_gcf"]["error"]
        p = aws["calcs_warm_aws"]["params"]
        assert (p["resolved_platform"], p["resolved_region"], p["resolved_real"]) == (
            "aws-lambda",
            "eu-west-1",
            False,
        )
        assert p["resolved_architecture"] == "x86_64" and p["resolved_runtime"] == "python3.12"
        assert p["resolved_rehearsal"] == "test-small"  # the emulator's Lambda API said who it is
        assert aws["calcs_cold_warm_aws"]["metrics"]["cold_fraction"]["value"] == 0.5
        assert all(r["status"] == "ok" for r in emu.values())
        assert emu["calcs_warm_gcf"]["params"]["resolved_platform"] == "gcf-gen2"
        assert emu["calcs_warm_gcf"]["params"]["resolved_real"] is False
        # the teardown stage removed the run's functions, log groups and role
        # a session of its own: the default one may hold an earlier test's emulator credentials
        aws = boto3.session.Session()
        lam = aws.client("lambda")
        assert not [f for f in lam.list_functions()["Functions"] if f["FunctionName"].startswith("tb-")]
        assert not [r for r in aws.client("iam").list_roles()["Roles"] if r["RoleName"].startswith("tb-")]
        target = json.loads((tmp_path / "targets" / "faas-1-faas-aws.json").read_text())
        assert target["platform"] == "aws-lambda" and "AWS_SECRET" not in json.dumps(target)


def test_a_plan_above_the_cost_cap_does_not_start(served, tmp_path, monkeypatch):
    with aws_env(served.url, monkeypatch):
        inv = _inventory(tmp_path, {}, cap=1e-6)  # a cap is positive: the smallest one refuses the plan
        res = ansible_playbook(
            "run.yml",
            "-i",
            LOCAL,
            "-i",
            str(inv),
            "-l",
            "faas-aws",
            "-e",
            f"@{_extra(tmp_path)}",
            "-e",
            "run_id=faas-2",
        )
        assert res.returncode != 0
        assert "exceeds the cost cap" in " ".join((res.stdout + res.stderr).split())  # Ansible wraps lines
        assert not (tmp_path / "results" / "faas-2").exists()
