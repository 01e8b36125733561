"""The whole Ansible flow against localhost for real: deploy (into a fresh venv), run, collect,
report; node_exporter started by its role; the second deploy changes nothing."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from repotest import ROOT, ansible_playbook, free_port

PLAN = """\
name: ansible-smoke
defaults: {wait_s: 0, repetitions: 1}
benchmarks:
  - {name: systeminfo, type: sysinfo}
  - {name: fio_4k_randread, type: fio, params: {size: 8M, runtime_s: 1, ramp_s: 0}}
  - {name: dd_write_read, type: dd, repetitions: 2, params: {bs: 64k, count: 32, pause_s: 0.2}}
"""


def recap(stdout: str) -> dict[str, int]:
    m = re.search(r"localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", stdout)
    assert m, stdout[-3000:]
    return dict(zip(("ok", "changed", "unreachable", "failed"), map(int, m.groups()), strict=True))


@pytest.fixture
def stage(tmp_path: Path):
    port = free_port()
    pidfile = tmp_path / "node_exporter.pid"
    extra = {
        "plan": str(tmp_path / "plan.yml"),
        "agent_python": "",  # deploy for real: bundle, venv, pip install
        "agent_install_dir": str(tmp_path / "agent"),
        "agent_scratch_dir": str(tmp_path / "scratch"),
        "node_exporter_port": port,
        "node_exporter_textfile_dir": str(tmp_path / "textfile"),
        "node_exporter_pidfile": str(pidfile),
        "node_exporter_install": False,
        "testbed_results_dir": str(tmp_path / "results"),
        "testbed_reports_dir": str(tmp_path / "reports"),
        "agent_real_datasets_dir": str(tmp_path / "real"),
    }
    real = tmp_path / "real" / "shoppers"
    real.mkdir(parents=True)
    (real / "online_shoppers_intention.csv").write_text("Administrative,Revenue\n0,FALSE\n")
    (tmp_path / "plan.yml").write_text(PLAN)
    (tmp_path / "extra.json").write_text(json.dumps(extra))
    yield tmp_path
    if pidfile.exists():
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)
    # this test's pack of real data sets (the role packs one per source directory); the agent bundle
    # stays, as after any run: runs in make test's other lane may be copying it right now
    source = hashlib.sha1(str(tmp_path / "real").encode()).hexdigest()  # as Ansible's hash('sha1')
    shutil.rmtree(ROOT / ".scratch" / "bundle" / f"datasets-{source}", ignore_errors=True)


@pytest.mark.integration
@pytest.mark.slow
def test_run_yml_on_localhost_deploys_runs_collects_reports(stage: Path) -> None:
    res = ansible_playbook("run.yml", "-e", f"@{stage / 'extra.json'}", "-e", "run_id=itest")
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert recap(res.stdout)["failed"] == 0
    run_dir = stage / "results" / "itest"
    records = [json.loads(line) for line in (run_dir / "localhost.jsonl").read_text().splitlines()]
    assert [(r["benchmark"], r["status"]) for r in records] == [
        ("systeminfo", "ok"),
        ("fio_4k_randread", "ok"),
        ("dd_write_read", "ok"),
        ("dd_write_read", "ok"),
    ]
    assert all(r["label"] == "Local" and r["groups"] == ["local"] for r in records)
    assert records[1]["telemetry"]["node_exporter"] is not None, "node_exporter was scraped"
    sysinfo = json.loads((run_dir / "localhost.sysinfo.json").read_text())
    assert sysinfo["testbed"]["label"] == "Local" and "cc" in sysinfo
    assert list((run_dir / "localhost.artifacts").glob("*fio.json"))
    # nothing of the run is left in the scratch root: the agent removed <run id>/<host>, the
    # play the run id's directory
    assert not (stage / "scratch" / "itest").exists(), list((stage / "scratch").rglob("*"))
    # no confidential hardware here: the evidence says so, and the audit passes (issue 14)
    assert (run_dir / "localhost.evidence" / "01-end" / "manifest.json").exists()
    audit = subprocess.run(
        [sys.executable, "-m", "testbed_reports", "audit", str(run_dir)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert audit.returncode == 0 and "attestation: unavailable" in audit.stdout, audit.stdout + audit.stderr
    # the agent ran from the venv the role created, not from the controller's
    assert (stage / "agent" / "venv" / "bin" / "python").exists()
    assert (stage / "agent" / "workloads" / "fio" / "fio_4k_randread.fio").exists()
    # the real data set placed on the controller reached the target's notebooks
    placed = stage / "agent" / "kaggle_notebooks" / "datasets" / "real" / "shoppers"
    assert (placed / "online_shoppers_intention.csv").read_text().startswith("Administrative,Revenue")
    assert (stage / "reports" / "itest" / "index.html").exists()
    assert f"report: {stage / 'reports' / 'itest' / 'index.html'}" in res.stdout
    # the collect role added the run to the results store, which the report read (issue 36)
    manifest = json.loads((stage / "results" / "_store" / "manifests" / "itest.json").read_text())
    assert manifest["records"] == 4 and manifest["labels"] == ["Local"]
    assert list((stage / "results" / "_store" / "observations" / "run=itest").glob("label=Local/*.parquet"))
    again = ansible_playbook("playbooks/collect.yml", "-e", f"@{stage / 'extra.json'}", "-e", "run_id=itest")
    assert again.returncode == 0, again.stdout[-3000:]
    assert recap(again.stdout)["changed"] == 0, again.stdout[-3000:]  # collected again: the store as it was

    # idempotence of deployment: a second deploy changes nothing
    again = ansible_playbook(
        "playbooks/deploy_agent.yml", "-e", f"@{stage / 'extra.json'}", "-e", "run_id=itest"
    )
    assert again.returncode == 0, again.stdout[-3000:]
    assert recap(again.stdout)["changed"] == 0, again.stdout[-3000:]


@pytest.mark.integration
def test_stage_playbook_without_run_id_says_so(stage: Path) -> None:
    res = ansible_playbook("playbooks/run_plan.yml", "-e", f"@{stage / 'extra.json'}")
    assert res.returncode != 0
    assert "run_id" in res.stdout + res.stderr


@pytest.mark.integration
def test_bad_plan_stops_before_anything_runs(stage: Path) -> None:
    (stage / "plan.yml").write_text("benchmarks:\n  - {name: fio_4k_randread, type: fio, repetitions: -1}\n")
    res = ansible_playbook("run.yml", "-e", f"@{stage / 'extra.json'}", "-e", "run_id=bad")
    assert res.returncode != 0
    # the pre-flight play's one [ERROR] line on stderr carries the agent's one-line error
    errors = [line for line in res.stderr.splitlines() if line.startswith("[ERROR]")]
    assert len(errors) == 1, res.stderr[-3000:]
    assert f"{stage / 'plan.yml'}:2: field 'repetitions' must be >= 1" in errors[0], errors
    assert not (stage / "results" / "bad").exists()


@pytest.mark.integration
@pytest.mark.slow
def test_agent_plan_set_runs_the_derived_plan(stage: Path) -> None:
    """``agent_plan_set``: the controller derives the plan, the target runs the derived one."""
    extra = json.loads((stage / "extra.json").read_text())
    extra.update(agent_python=sys.executable, agent_plan_set=["dd.repetitions=1", "dd.count=8", "wait_s=0"])
    (stage / "extra.json").write_text(json.dumps(extra))
    res = ansible_playbook("run.yml", "-e", f"@{stage / 'extra.json'}", "-e", "run_id=derived")
    assert res.returncode == 0, res.stdout[-3000:]
    records = [
        json.loads(x) for x in (stage / "results" / "derived" / "localhost.jsonl").read_text().splitlines()
    ]
    assert {r["plan"] for r in records} == {"ansible-smoke.derived"}
    dd = [r for r in records if r["type"] == "dd"]
    assert len(dd) == 1 and dd[0]["params"]["count"] == 8
    copied = (stage / "agent" / "plans").glob("plan-*.yml")
    text = next(copied).read_text()
    assert f"# Derived from {stage / 'plan.yml'}" in text and "#   --set dd.count=8" in text
