"""The Azure dress rehearsal (issue 15): run.yml on the whole Azure matrix against the local ARM,
and one failure rehearsal with three requests Azure refuses, each shown in Azure's own words.

Both run the real azure collection with its real SDKs (.venv/azure, installed by `make test`)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from repotest import ROOT

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


def test_a_rehearsal_killed_while_provisioning_is_reaped(tmp_path: Path) -> None:
    done = _rehearse(tmp_path, "-l", "sev,tdx", "--kill-at", "1")
    assert "killed the playbook (SIGKILL)" in done.stdout, done.stdout[-3000:]
    _, created, deleted, left, _ = CLOSING.findall(done.stdout)[-1]
    assert done.returncode == 0, done.stdout[-5000:]
    assert int(created) >= 1 and deleted == created and left == "0"
