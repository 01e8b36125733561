"""The Azure dress rehearsal (issue 15): run.yml on the whole Azure matrix against the local ARM,
and one failure rehearsal with three requests Azure refuses, each shown in Azure's own words.

Both run the real azure collection with its real SDKs (.venv/azure, installed by `make test`)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from repotest import ROOT

from testbed_agent.plan import load_plan
from testbed_agent.workloads.notebook.aliases import notebook_alias

pytestmark = [pytest.mark.slow, pytest.mark.integration]
REHEARSAL = ROOT / "tests/azure/rehearsal.py"
CLOSING = re.compile(
    r"^rehearsal: (\d+) requests, (\d+) machines created, (\d+) deleted, (\d+) left, report: (\S+)$", re.M
)


def _rehearse(work: Path, *args: str) -> subprocess.CompletedProcess:
    if not (ROOT / ".venv/azure/bin/python").exists():
        pytest.fail(".venv/azure is missing: `make test` installs it (make azure-deps)")
    cmd = [sys.executable, str(REHEARSAL), "--workdir", str(work), "--quiet", *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800)


def test_the_whole_matrix_runs_end_to_end_and_leaves_nothing(tmp_path: Path) -> None:
    done = _rehearse(tmp_path)
    closing = CLOSING.findall(done.stdout)
    assert done.returncode == 0 and closing, done.stdout[-5000:] + done.stderr[-2000:]
    requests, created, deleted, left, report = closing[-1]
    assert (int(created), int(deleted), int(left)) == (6, 6, 0)
    assert int(requests) > 6 * 4
    assert "skipped Azure task" not in done.stdout
    summary = (Path(report).parent / "summary.md").read_text()
    # The rehearsal's machines are not confidential, and the report says so instead of comparing silently.
    assert "claims SEV but its evidence says 'none'" in summary
    assert "claims TDX but its evidence says 'none'" in summary
    assert "progress " in (tmp_path / "ansible.log").read_text()


def test_azure_refusals_stop_the_run_with_azures_code_and_message(tmp_path: Path) -> None:
    faults = ROOT / "tests/azure/rehearsal-faults.yml"
    done = _rehearse(
        tmp_path,
        "--playbook",
        "playbooks/provision_azure.yml",
        "-l",
        "sev-1,tdx-1,amd-base-1",
        "-i",
        str(faults),
    )
    log = (tmp_path / "ansible.log").read_text()
    assert done.returncode != 0
    assert (
        "InvalidRequestContent: The request content was invalid and could not be deserialized: "
        "'Could not find member 'vmSzie'" in log
    )
    assert (
        "InvalidParameter: The value 'DiskOnly' of parameter 'securityEncryptionType' is not allowed." in log
    )
    assert (
        "OperationNotAllowed: Operation could not be completed as it results in exceeding approved "
        "Total Regional Cores quota" in log
    )
    assert CLOSING.findall(done.stdout)[-1][3] == "0", done.stdout[-3000:]


def test_a_rehearsal_killed_while_provisioning_is_reaped_and_the_next_one_runs(tmp_path: Path) -> None:
    done = _rehearse(tmp_path, "-l", "sev,tdx", "--kill-at", "1")
    assert "killed the playbook (SIGKILL)" in done.stdout, done.stdout[-3000:]
    _, created, deleted, left, _ = CLOSING.findall(done.stdout)[-1]
    assert done.returncode == 0, done.stdout[-5000:]
    assert int(created) >= 1 and deleted == created and left == "0"
    # The same work directory again (issue 30: a second rehearsal in one checkout read the previous
    # run's endpoint.json and sshd.pid). Plant what a rehearsal killed with kill -9 leaves: an
    # endpoint of a stand-in that is gone, pid files, and a stand-in still running.
    arm = tmp_path / "arm"
    arm.mkdir(exist_ok=True)
    (arm / "endpoint.json").write_text(json.dumps({"proxy": "http://127.0.0.1:9", "ca": "/nonexistent"}))
    stale = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", str(arm)])
    (arm / "server.pid").write_text(f"{stale.pid}\n")
    (tmp_path / "ssh/sshd.pid").write_text("999999\n")
    try:
        again = _rehearse(tmp_path, "-l", "sev-1")
    finally:
        stale.kill()
    assert f"stopped a stale server of an earlier rehearsal (pid {stale.pid})" in again.stdout
    assert stale.wait(timeout=10) is not None
    closing = CLOSING.findall(again.stdout)
    assert again.returncode == 0 and closing, again.stdout[-5000:] + again.stderr[-2000:]
    assert closing[-1][1:4] == ("1", "1", "0")


PLACEMENTS = re.compile(r"^rehearsal: placements: (\d+) \(([^)]*)\), hosts seen: (.*)$", re.M)


@pytest.mark.timeout(3600)  # about 10 min idle; over 20 with the machine loaded (load average 16)
def test_rotations_record_the_host_and_the_report_counts_machines_by_host(tmp_path: Path) -> None:
    """run.yml -e rotations=1 (issue 34): sev-1 is redeployed, amd-base-1 deallocated and started;
    each placement runs the plan into the same store (rotation-1/), its fingerprint names the
    simulated host the guest's KVP pool gave it, and the report counts machines by host. Seed 8 on
    three hosts per location (placements are seeded per VM) moves sev-1 to another host and starts
    amd-base-1 on the host it left: two machines for SEV, one for AMD-Baseline, three runs each."""
    overlay = tmp_path / "rotation.yml"
    amd = {"amd-base-1": {"azure_vm_rotate_mode": "deallocate"}}
    overlay.write_text(json.dumps({"all": {"children": {"azure": {"hosts": amd}}}}))
    work = tmp_path / "work"
    done = _rehearse(
        work,
        *("-l", "sev-1,amd-base-1", "-i", str(overlay), "-e", "rotations=1"),
        *("--placement-seed", "8", "--hosts-per-location", "3"),
    )
    closing = CLOSING.findall(done.stdout)
    assert done.returncode == 0 and closing, done.stdout[-5000:] + done.stderr[-2000:]
    _, created, deleted, left, report = closing[-1]
    assert (int(created), int(deleted), int(left)) == (2, 2, 0)
    total, causes, seen_text = PLACEMENTS.findall(done.stdout)[-1]
    assert (int(total), causes) == (4, "create 2, redeploy 1, start 1")
    seen = dict(part.split(" ") for part in seen_text.split("; "))
    hosts = {vm: h.split(",") for vm, h in seen.items()}
    # rotation by rotation, the host each guest's fingerprint names (the agent read its KVP pool)
    results = ROOT / "results" / Path(report).parent.name
    named: dict[str, list[str]] = {"sev-1": [], "amd-base-1": []}
    for k, run in enumerate([results, results / "rotation-1"]):
        for vm, placed in named.items():
            info = json.loads((run / f"{vm}.sysinfo.json").read_text())
            assert info["machine"]["rotation"] == k
            assert info["testbed"]["run_id"] == (results.name if k == 0 else f"{results.name}-r{k}")
            placed.append(info["machine"]["id"].removeprefix("hyperv-host:"))
            assert len([json.loads(x) for x in (run / f"{vm}.jsonl").read_text().splitlines()]) == 3
    for vm, placed in named.items():
        assert list(dict.fromkeys(placed)) == hosts[vm], (vm, placed, hosts)
    assert named["sev-1"][1] != named["sev-1"][0]  # a redeploy moves the VM
    assert named["amd-base-1"][1] == named["amd-base-1"][0], "seed 8 starts amd-base-1 where it was"
    # The report's machines are the hosts: two for SEV, one for AMD-Baseline (one host, six runs).
    stats = json.loads((Path(report).parent / "stats.json").read_text())
    rows = [d for d in stats["descriptives"] if d["metric"] == "write_seconds"]
    assert {d["label"]: (d["machines"], d["n"]) for d in rows} == {"SEV": (2, 4), "AMD-Baseline": (1, 4)}


#: the study's plan made small: every line still runs, fio for 1 s, notebooks at quick scale
STUDY_SHORT = [
    "wait_s=0",
    "fio.runtime_s=1",
    "fio.ramp_s=0",
    "fio.size=8M",
    "kaggle_notebook.scale=quick",
    "pyperformance.benchmarks=[float]",
    "pyperformance.mode=fast",
]


@pytest.mark.study
@pytest.mark.timeout(3600)  # S2's whole plan on six rehearsal machines: ~15 min idle, over 20 loaded
def test_the_study_plan_runs_on_the_study_machines(tmp_path: Path) -> None:
    """The S2 study through run.yml as published (issue 25): the study preset's six machines,
    ``-l sev,tdx,amd_baseline,intel_baseline``, the classic plan entry for entry (25 entries, 32
    executions) with its original names and Kaggle data sets, derived small through
    ``agent_plan_set``. ~15 min on 2 cores: ``make test-studies``."""
    plan = ROOT / "workloads/plans/cc-datascience-study.txt"
    done = _rehearse(
        tmp_path,
        "--base-inventory",
        "inventory/azure-study.yml",
        "-l",
        "sev,tdx,amd_baseline,intel_baseline",
        "--plan",
        str(plan.relative_to(ROOT)),
        "-e",
        json.dumps({"agent_plan_set": STUDY_SHORT}),
    )
    closing = CLOSING.findall(done.stdout)
    assert done.returncode == 0 and closing, done.stdout[-5000:] + done.stderr[-2000:]
    _, created, deleted, left, report = closing[-1]
    assert (int(created), int(deleted), int(left)) == (6, 6, 0)
    results = ROOT / "results" / Path(report).parent.name
    source = load_plan(plan)
    names = [b.name for b in source.benchmarks]
    runs = [b.name for b in source.benchmarks for _ in range(b.repetitions)]
    labels = set()
    for store in sorted(results.glob("study-*.jsonl")):
        records = [json.loads(x) for x in store.read_text().splitlines()]
        assert [r["benchmark"] for r in records] == runs, store.name
        assert {r["status"] for r in records} == {"ok"}, [(r["benchmark"], r["error"]) for r in records]
        assert {r["plan"] for r in records} == {"cc-datascience-study.derived"}
        notebooks = [r for r in records if r["type"] == "kaggle_notebook"]
        assert {r["params"]["scale"] for r in notebooks} == {"quick"}
        # original names, run as our notebooks on generated data (the record says which)
        assert all(r["params"]["resolved_dataset_source"] == "generated" for r in notebooks)
        assert all(r["params"]["resolved_notebook"] == notebook_alias(r["benchmark"]) for r in notebooks)
        labels.add(records[0]["label"])
    # the paper's own labels (Table 1, S2 L520-528)
    assert labels == {
        "SEV-Non-Encrypted",
        "SEV-Encrypted",
        "TDX-Non-Encrypted",
        "TDX-Encrypted",
        "AMD-Non-SEV",
        "Intel-Non-TDX",
    }
    derived = sorted((ROOT / ".scratch/plans").glob("cc-datascience-study-*.yml"))
    assert derived and f"sha256 {source.sha256}" in derived[-1].read_text().splitlines()[0]
    summary = (Path(report).parent / "summary.md").read_text()
    for name in names:
        if name.endswith(".ipynb"):
            assert name.replace("_", "\\_") in summary or name in summary
