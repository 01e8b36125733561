"""Fast checks of the rehearsal's parts: the role's VM bodies against the Azure SDK models (the
local ARM's validator, run with .venv/azure's python), and the filters that turn Azure's errors
and the agent's progress file into one readable line."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from repotest import ROOT

AZURE_PY = ROOT / ".venv/azure/bin/python"
CHECK = """
import json, sys
sys.path.insert(0, "tests/azure/arm")
import catalog
from validate import ArmError, check
out = []
for body in json.load(sys.stdin):
    models, model = catalog.model_of("microsoft.compute/virtualmachines", "2024-07-01")
    try:
        check(body, model, models)
        catalog.check_confidential(body)
        out.append("ok")
    except ArmError as err:
        out.append(err.code + ": " + err.message)
print(json.dumps(out))
"""


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ARM = _load(ROOT / "roles/azure_vm/filter_plugins/azure_vm_arm.py", "azure_vm_arm")
ERRORS = _load(ROOT / "roles/azure_vm/filter_plugins/azure_vm_errors.py", "azure_vm_errors")
PROGRESS = _load(ROOT / "playbooks/filter_plugins/agent_progress.py", "agent_progress")


def _body(host: dict, **extra: object) -> dict:
    confidential = host["azure_vm_security_type"] == "ConfidentialVM"
    params = {
        "location": "westeurope",
        "size": host["azure_vm_size"],
        "security_type": host["azure_vm_security_type"],
        "encryption_type": host.get("azure_vm_security_encryption_type", "VMGuestStateOnly"),
        "secure_boot": True,
        "vtpm": True,
        "encryption_at_host": False,
        "image": {
            "publisher": "Canonical",
            "offer": "ubuntu-24_04-lts",
            "sku": "cvm" if confidential else "server",
            "version": "latest",
        },
        "admin_username": "azureuser",
        "ssh_public_key": "ssh-ed25519 AAAA test",
        "nic_id": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/networkInterfaces/n",
        "os_disk_name": "d",
        "os_disk_type": "Premium_LRS",
        "os_disk_size_gb": 64,
        "computer_name": "m",
        "tags": {"testbed": True},
        **extra,
    }
    return ARM.azure_vm_body(params)


def _validate(bodies: list[dict]) -> list[str]:
    if not AZURE_PY.exists():
        pytest.fail(".venv/azure is missing: `make test` installs it (make azure-deps)")
    done = subprocess.run(
        [str(AZURE_PY), "-c", CHECK],
        input=json.dumps(bodies),
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def test_the_matrix_bodies_are_what_azure_accepts_and_faults_are_refused() -> None:
    hosts = yaml.safe_load((ROOT / "inventory/azure.yml").read_text())["all"]["children"]["azure"]["hosts"]
    sev = hosts["sev-enc-1"]
    faults = [
        _body(sev, extra_properties={"hardwareProfile": {"vmSzie": "x"}}),
        _body(
            sev,
            extra_properties={
                "storageProfile": {
                    "osDisk": {"managedDisk": {"securityProfile": {"securityEncryptionType": "DiskOnly"}}}
                }
            },
        ),
        _body(sev, extra_properties={"securityProfile": {"uefiSettings": None}}),
    ]
    got = _validate([_body(h) for h in hosts.values()] + faults)
    assert got[: len(hosts)] == ["ok"] * len(hosts)
    assert (
        got[len(hosts)].startswith("InvalidRequestContent: ")
        and "'vmSzie' on object of type 'HardwareProfile'" in got[len(hosts)]
    )
    assert got[len(hosts) + 1].startswith(
        "InvalidParameter: The value 'DiskOnly' of parameter 'securityEncryptionType'"
    )
    assert got[len(hosts) + 2].startswith("InvalidParameter: Use of Confidential VMs requires uefiSettings")


def test_azure_error_is_read_from_a_module_failure() -> None:
    raw = (
        'Task failed: Module failed: (\'{"error": {"code": "OperationNotAllowed", "message": '
        "\"Operation could not be completed: 'quota' exceeded.\"}}', 409)"
    )
    assert (
        ERRORS.azure_vm_error({"msg": raw})
        == "OperationNotAllowed: Operation could not be completed: 'quota' exceeded."
    )
    token = {
        "msg": "x",
        "module_stderr": '{"error": "invalid_client", "error_description": "AADSTS7000215: Invalid secret"}',
    }
    assert ERRORS.azure_vm_error(token) == "invalid_client: AADSTS7000215: Invalid secret"
    assert ERRORS.azure_vm_error({"msg": "timeout\nmore"}) == "timeout"


def test_progress_line_from_the_agent_file() -> None:
    running = {
        "state": "running",
        "benchmark": "fio_4k_randread",
        "repetition": 2,
        "repetitions": 3,
        "done": 4,
        "total": 12,
    }
    assert PROGRESS.agent_progress_line(running, "sev-1") == "sev-1: fio_4k_randread rep 2/3, 4/12 done"
    assert (
        PROGRESS.agent_progress_line({"state": "done", "done": 12, "total": 12}) == "done, 12/12 executions"
    )
    assert PROGRESS.agent_progress_line(None, "h") == "h: starting (no progress yet)"
    timed = running | {"elapsed_s": 80.0, "done_here": 4}  # 20 s per execution, 8 left
    assert PROGRESS.agent_progress_line(timed, "h").endswith(", 4/12 done, 1m20s elapsed, about 2m40s left")


def test_the_agent_writes_its_progress_file(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "agent"))
    from testbed_agent.progress import ProgressFileExporter

    exporter = ProgressFileExporter(None, "r1", "h1", tmp_path)
    exporter.update(1, 5, "dd_write", "running", 2, 3)
    state = json.loads((tmp_path / "h1.progress.json").read_text())
    assert PROGRESS.agent_progress_line(state, "h1").startswith("h1: dd_write rep 2/3, 1/5 done, 0s elapsed")
