"""The AWS Lambda driver rehearsed with only endpoints changed: Lambda is the emulator's Lambda API,
IAM and CloudWatch Logs are moto's server; boto3 reaches them through its standard endpoint
settings. Deploy (role, log group, function, all tagged), cold and warm calls measured by Lambda's
REPORT line, a forced cold start, the cost ledger and cap, teardown of exactly the run's
resources (also after the deploying process was killed, and by deadline), and the dry run."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time

import boto3
import pytest

from testbed_agent.faas_drivers import FunctionSpec, open_driver, teardown
from testbed_agent.faas_drivers.ledger import CostCapExceeded
from testbed_agent.faas_drivers.target import dump

from .standins import aws_env, target

pytestmark = pytest.mark.integration


def _names(client) -> set[str]:
    return {f["FunctionName"] for f in client.list_functions()["Functions"]}


def test_deploy_call_cold_warm_and_teardown_exactly_the_run(served, tmp_path, monkeypatch):
    with aws_env(served.url, monkeypatch):
        aws = boto3.session.Session()  # a session of its own: the credentials of this test's environment
        lam, logs, iam = aws.client("lambda"), aws.client("logs"), aws.client("iam")
        driver = open_driver(target("aws-lambda", tmp_path))
        dep = driver.deploy(FunctionSpec("calcs-0", "calcs", memory_mb=256, timeout_s=10))
        name = dep["name"]
        assert name.startswith("tb-") and name.endswith("-calcs-0")
        tags = lam.list_tags(Resource=lam.get_function(FunctionName=name)["Configuration"]["FunctionArn"])[
            "Tags"
        ]
        assert (
            tags["testbed-run"] == "rehearsal-1"
            and tags["testbed-owner"] == "testbed"
            and "testbed-deadline" in tags
        )
        cold = driver.invoke("calcs-0", {"level": 2})
        warm = driver.invoke("calcs-0", {"level": 2})
        assert cold.ok and warm.ok and cold.result["calcs"] == 2000
        assert cold.inspector["new_instance"] and not warm.inspector["new_instance"]
        assert cold.platform["init_duration_s"] > 0 and "init_duration_s" not in warm.platform
        assert cold.platform["memory_size_mb"] == 256 and cold.platform["report"].startswith(
            "REPORT RequestId: "
        )
        assert cold.billing["duration_s"] == cold.platform["billed_duration_s"] and cold.billing["price"] > 0
        driver.cold("calcs-0")
        assert driver.invoke("calcs-0", {"level": 2}).inspector["new_instance"]
        info = driver.describe()
        assert info["real"] is False and info["standin"] == "test-small" and info["region"] == "eu-west-1"
        spent = json.loads((tmp_path / "aws-lambda.journal.cost.json").read_text())
        assert spent["calls"] == 3 and spent["spent_usd"] > 0
        # the same function deployed again with another memory size: a configuration change
        again = driver.deploy(FunctionSpec("calcs-0", "calcs", memory_mb=512, timeout_s=10))
        assert again["name"] == name and again["memory_mb"] == 512
        resized = driver.invoke("calcs-0", {"level": 2})
        assert resized.inspector["new_instance"] and resized.platform["memory_size_mb"] == 512

        # someone else's function (no testbed tags) and another run's stay untouched
        other = open_driver(target("aws-lambda", tmp_path / "other", run_id="rehearsal-2"))
        other.deploy(FunctionSpec("calcs-9", "calcs"))
        monkeypatch.setenv("TESTBED_FAAS_URL", served.url)
        subprocess.run(
            [sys.executable, "-m", "testbed_agent", "faas", "deploy", "untagged", "--function", "calcs"],
            check=True,
            capture_output=True,
        )
        result = teardown(driver, "rehearsal-1")
        kinds = sorted(r["kind"] for r in result["deleted"])
        assert kinds == ["function", "iam-role", "log-group"], result
        assert _names(lam) == {other.deployed["calcs-9"]["name"], "untagged"}
        assert not [
            g for g in logs.describe_log_groups()["logGroups"] if g["logGroupName"] == f"/aws/lambda/{name}"
        ]
        assert not [
            r for r in iam.list_roles()["Roles"] if r["RoleName"].startswith(driver.target.resource_name(""))
        ]
        assert driver.journal.live() == []
        teardown(other, "rehearsal-2")
        lam.delete_function(FunctionName="untagged")
        assert result["requests"]["lambda:CreateFunction"] == 1 and result["requests"]["lambda:Invoke"] == 4


def test_teardown_after_the_deploying_process_was_killed(served, tmp_path, monkeypatch):
    """A run killed mid-way leaves tagged resources and its journal; a new process removes them."""
    with aws_env(served.url, monkeypatch):
        tfile = tmp_path / "target.json"
        tfile.write_text(dump(target("aws-lambda", tmp_path, run_id="killed-1")))
        script = (
            "import sys, time\n"
            "from testbed_agent.faas_drivers import FunctionSpec, load_target, open_driver\n"
            f"d = open_driver(load_target({str(tfile)!r}))\n"
            "d.deploy(FunctionSpec('calcs-0', 'calcs'))\n"
            "d.deploy(FunctionSpec('calcs-1', 'calcs'))\n"
            "print('deployed', flush=True)\n"
            "time.sleep(600)\n"
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=dict(os.environ)
        )
        assert proc.stdout.readline().strip() == "deployed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        lam = boto3.session.Session().client("lambda")
        assert len([n for n in _names(lam) if n.endswith(("-calcs-0", "-calcs-1"))]) == 2
        down = subprocess.run(
            [sys.executable, "-m", "testbed_agent", "platform", "teardown", "--target", str(tfile)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert down.returncode == 0, down.stderr
        deleted = json.loads(down.stdout)["deleted"]
        assert sorted(r["kind"] for r in deleted) == [
            "function",
            "function",
            "iam-role",
            "log-group",
            "log-group",
        ]
        assert not [n for n in _names(lam) if n.endswith(("-calcs-0", "-calcs-1"))]


def test_expired_resources_are_reaped_and_live_ones_kept(served, tmp_path, monkeypatch):
    with aws_env(served.url, monkeypatch):
        old = open_driver(target("aws-lambda", tmp_path / "old", run_id="old-1"))
        old.deploy(FunctionSpec("calcs-0", "calcs"))
        live = open_driver(target("aws-lambda", tmp_path / "live", run_id="live-1"))
        live.deploy(FunctionSpec("calcs-0", "calcs"))
        later = time.time() + 7 * 3600  # past the old run's deadline (6 h) ...
        found = {r["id"] for r in old.owned(None, now=later)}
        assert old.deployed["calcs-0"]["name"] in found  # ... and the live one's, both made 6 h before
        result = teardown(old, None, now=time.time() + 60)  # now: nothing has expired yet
        assert result["deleted"] == []
        teardown(old, "old-1")
        teardown(live, "live-1")


def test_cost_cap_stops_the_calls(served, tmp_path, monkeypatch):
    with aws_env(served.url, monkeypatch):
        driver = open_driver(target("aws-lambda", tmp_path, run_id="cap-1", cost_cap_usd=1e-7))
        driver.deploy(FunctionSpec("calcs-0", "calcs"))
        with pytest.raises(CostCapExceeded, match="over its cost cap"):
            driver.invoke("calcs-0", {"level": 2})
        with pytest.raises(CostCapExceeded, match="exceeds the run's cost cap"):
            driver.budget.check(0.01, "benchmark x")
        teardown(driver, "cap-1")


def test_dry_run_prints_every_call_and_sends_none(served, tmp_path, monkeypatch):
    with aws_env(served.url, monkeypatch):
        out = io.StringIO()
        before = served.client.info()["functions"]
        driver = open_driver(
            target("aws-lambda", tmp_path, run_id="dry-1", role_arn="arn:aws:iam::123456789012:role/x"),
            dry_run=True,
            out=out,
        )
        driver.deploy(FunctionSpec("calcs-0", "calcs", memory_mb=512))
        driver.invoke("calcs-0", {"level": 2})
        driver.cold("calcs-0")
        driver.delete("calcs-0")
        lines = out.getvalue().splitlines()
        ops = [line.split()[2] for line in lines]
        assert ops == [
            "logs:CreateLogGroup",
            "logs:PutRetentionPolicy",
            "lambda:CreateFunction",
            "lambda:GetFunction",
            "lambda:Invoke",
            "lambda:UpdateFunctionConfiguration",
            "lambda:GetFunction",
            "lambda:DeleteFunction",
            "logs:DeleteLogGroup",
        ], lines
        assert '"MemorySize": 512' in lines[2] and "bytes>" in lines[2]
        assert served.client.info()["functions"] == before
