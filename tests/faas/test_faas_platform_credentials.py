"""Without credentials, every command that talks to a real platform stops before any work with one
line naming what is missing (the variable or file, the platform) and a hint, exit 2; the traceback
only under --debug (issue 40 finding 8, issue 37). Each platform x command, in an empty home and
environment, in a network namespace of its own where this test may make one (nothing can leave
the machine: no metadata service is asked either way)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PLATFORMS = {
    "aws-lambda": ({}, "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
    "gcf-gen2": ({"project": "p", "source_bucket": "b"}, "GOOGLE_APPLICATION_CREDENTIALS"),
    "azure-functions": ({"subscription_id": "00000000-0000-0000-0000-000000000001"}, "AZURE_CLIENT_ID"),
}
COMMANDS = ("check", "smoke", "teardown")
#: a private network namespace (root only): loopback down, no route anywhere
ISOLATE = ["unshare", "--net"] if os.geteuid() == 0 and shutil.which("unshare") else []


def _run(
    tmp_path: Path, platform: str, command: str, env: dict[str, str] | None = None, debug: bool = False
) -> subprocess.CompletedProcess:
    """``testbed-agent platform COMMAND --target T`` in an empty home with only ``env`` given."""
    options, _ = PLATFORMS[platform]
    target = tmp_path / f"{platform}.json"
    journal = tmp_path / "journal.jsonl"
    target.write_text(
        json.dumps({"platform": platform, "run_id": "r1", "options": {**options, "journal": str(journal)}})
    )
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    clean = {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", **(env or {})}
    clean |= _pythonpath()  # the code under test
    agent = [sys.executable, "-m", "testbed_agent", *(["--debug"] if debug else [])]
    cmd = [*ISOLATE, *agent, "platform", command, "--target", str(target)]
    return subprocess.run(cmd, capture_output=True, text=True, env=clean, timeout=120)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_no_credentials_is_one_line_naming_what_is_missing(platform, command, tmp_path):
    done = _run(tmp_path, platform, command)
    lines = done.stderr.splitlines()
    assert done.returncode == 2, done.stderr
    assert (
        len(lines) == 2 and lines[0].startswith(f"error: {platform} (") and lines[1].startswith("hint: ")
    ), lines
    assert PLATFORMS[platform][1] in lines[0] and "Traceback" not in done.stderr
    assert not (tmp_path / "journal.jsonl").exists()  # before any work: nothing journalled
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("platform", "env", "named"),
    [
        ("aws-lambda", {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE"}, "AWS_SECRET_ACCESS_KEY"),
        ("aws-lambda", {"AWS_PROFILE": "research"}, "research"),
        ("gcf-gen2", {"GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent/key.json"}, "/nonexistent/key.json"),
        ("azure-functions", {"AZURE_CLIENT_ID": "c", "AZURE_TENANT_ID": "t"}, "AZURE_CLIENT_SECRET"),
    ],
)
def test_half_given_credentials_name_the_missing_half(platform, env, named, tmp_path):
    done = _run(tmp_path, platform, "check", env=env)
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 2 and named in lines[0], done.stderr


def _pythonpath() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k == "PYTHONPATH"}


def test_debug_shows_the_traceback(tmp_path):
    debug = _run(tmp_path, "aws-lambda", "check", debug=True)
    assert "Traceback" in debug.stderr and debug.returncode == 2


def test_a_dry_run_needs_no_credentials(tmp_path):
    """A plan's dry run prints the calls and reads no credentials: it works in the same empty home."""
    root = Path(__file__).resolve().parents[2]
    options = {"role_arn": "arn:aws:iam::123456789012:role/r", "journal": str(tmp_path / "j.jsonl")}
    target = tmp_path / "t.json"
    target.write_text(json.dumps({"platform": "aws-lambda", "run_id": "r1", "options": options}))
    cmd = [
        *ISOLATE,
        sys.executable,
        "-m",
        "testbed_agent",
        "platform",
        "dry-run",
        str(root / "workloads/plans/faas-smoke.yml"),
    ]
    done = subprocess.run(
        [*cmd, "--target", str(target)],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "HOME": str(tmp_path), **_pythonpath()},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "[dry-run] aws-lambda lambda:CreateFunction" in done.stdout


def test_a_run_on_a_target_without_credentials_records_the_line(tmp_path):
    """A plan run on a host whose target lacks credentials: each faas benchmark about that
    platform is a failed record whose error is the one line, before any request."""
    target = tmp_path / "aws-lambda.json"
    target.write_text(
        json.dumps({"platform": "aws-lambda", "run_id": "r1", "options": {"journal": str(tmp_path / "j")}})
    )
    plan = tmp_path / "plan.yml"
    plan.write_text(
        "benchmarks:\n  - {name: c, type: faas, params: {profile: aws-lambda, function: calcs, calls: 1}}\n"
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "TESTBED_FAAS_TARGET": str(target),
        **_pythonpath(),
    }
    out = tmp_path / "results" / "r1"
    cmd = [
        *ISOLATE,
        sys.executable,
        "-m",
        "testbed_agent",
        "run",
        str(plan),
        "--out",
        str(out),
        "--host",
        "h1",
    ]
    cmd += ["--node-exporter", "", "--no-progress", "--scratch", str(tmp_path / "scratch")]
    subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    (record,) = [json.loads(line) for line in (out / "h1.jsonl").read_text().splitlines()]
    assert (
        record["status"] == "failed"
        and record["error"].startswith("aws-lambda (")
        and "no AWS credentials" in record["error"]
    )
    assert not (tmp_path / "j").exists()
