"""The Azure matrix through real Ansible, in check mode: inventory groups, the ARM requests that
would be sent (recorded, never sent), guards, teardown by tag, and the no-op for other hosts.

Nothing here can reach Azure: every azure.azcollection task is skipped in check mode (asserted from
the JSON callback), AZURE_* variables are removed and proxies point at a closed loopback port.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = ROOT / ".venv/bin"
INVENTORY = ["-i", "inventory/azure.yml", "-i", "inventory/azure.constructed.yml"]
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAzuretestkey testbed@test"
SUB = "/subscriptions/00000000-0000-0000-0000-000000000000"
VM_TYPE = "Microsoft.Compute/virtualMachines"
MATRIX = {
    "sev-enc-1": ("sev", "Standard_DC4as_v5", "DiskWithVMGuestState", "SEV-Encrypted"),
    "sev-1": ("sev", "Standard_DC4as_v5", "VMGuestStateOnly", "SEV"),
    "tdx-enc-1": ("tdx", "Standard_DC4es_v5", "DiskWithVMGuestState", "TDX-Encrypted"),
    "tdx-1": ("tdx", "Standard_DC4es_v5", "VMGuestStateOnly", "TDX"),
    "amd-base-1": ("amd_baseline", "Standard_D4as_v5", None, "AMD-Baseline"),
    "intel-base-1": ("intel_baseline", "Standard_D4s_v5", None, "Intel-Baseline"),
}


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_", "ANSIBLE_AZURE"))}
    closed = "http://127.0.0.1:9"
    env.update(
        HTTP_PROXY=closed,
        HTTPS_PROXY=closed,
        http_proxy=closed,
        https_proxy=closed,
        NO_PROXY="",
        XDG_STATE_HOME=str(tmp_path / "xdg"),
        ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
        ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"),
        ANSIBLE_NOCOLOR="1",
        TESTBED_RUN_ID="",
    )
    return env


def _playbook(tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    cmd = [
        str(BIN / "ansible-playbook"),
        *args,
        "-e",
        f"azure_vm_state_dir={tmp_path / 'state'}",
        "-e",
        json.dumps({"azure_vm_ssh_public_key": KEY}),
    ]
    done = subprocess.run(cmd, cwd=ROOT, env=_env(tmp_path), capture_output=True, text=True, timeout=240)
    try:
        report = json.loads(done.stdout)
    except ValueError:
        report = {}
    return done.returncode, report, done.stdout + done.stderr


def _azure_actions(report: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(task, host, skipped) of every azure.azcollection module call in the run."""
    calls = []
    for play in report.get("plays", []):
        for task in play["tasks"]:
            for host, result in task["hosts"].items():
                if str(result.get("action", "")).startswith("azure.azcollection."):
                    calls.append((task["task"]["name"], host, bool(result.get("skipped"))))
    return calls


def _records(directory: Path) -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))}


def _ansible(tool: str, *args: str) -> str:
    """Stdout of an Ansible command-line tool from the venv, run in the repository; fails on error."""
    done = subprocess.run(
        [str(BIN / tool), *args], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout


def test_constructed_inventory_puts_the_six_machines_in_their_groups() -> None:
    graph = _ansible("ansible-inventory", *INVENTORY, "--graph")
    listing = json.loads(_ansible("ansible-inventory", *INVENTORY, "--list"))
    for group in ("sev", "tdx", "amd_baseline", "intel_baseline"):
        expected = sorted(h for h, row in MATRIX.items() if row[0] == group)
        assert sorted(listing[group]["hosts"]) == expected, group
        assert f"@{group}:" in graph
    assert sorted(listing["azure"]["hosts"]) == sorted(MATRIX)
    hostvars = listing["_meta"]["hostvars"]
    for host, (_, size, _, label) in MATRIX.items():
        assert hostvars[host]["testbed_cloud"] == "azure"
        assert hostvars[host]["testbed_label"] == label and hostvars[host]["azure_vm_size"] == size
        assert isinstance(hostvars[host]["testbed_disk_encryption"], bool)


def test_dynamic_inventory_groups_like_the_constructed_file() -> None:
    import yaml

    constructed = yaml.safe_load((ROOT / "inventory/azure.constructed.yml").read_text())
    dynamic = yaml.safe_load((ROOT / "inventory/azure_rm.yml").read_text())
    assert dynamic["plugin"] == "azure.azcollection.azure_rm"
    for group, expression in constructed["groups"].items():
        assert dynamic["conditional_groups"][group] == expression
    # the variables the expressions read are composed from the VM's size and the role's tags
    assert dynamic["hostvar_expressions"]["azure_vm_size"] == "virtual_machine_size"
    assert "tags.testbed_security_type" in dynamic["hostvar_expressions"]["azure_vm_security_type"]
    assert "tags.testbed" in dynamic["exclude_host_filters"][0]
    plugin = "azure.azcollection.azure_rm"
    doc = _ansible("ansible-doc", "-t", "inventory", plugin, "--json")
    options = json.loads(doc)[plugin]["doc"]["options"]
    assert [key for key in dynamic if key not in options] == []  # every setting is one the plugin knows


def test_dynamic_inventory_expressions_group_vms_as_azure_reports_them(tmp_path: Path) -> None:
    """Feed the dynamic file's expressions, through the constructed plugin, the host variables the
    azure_rm plugin makes from a VM (size, tags the role sets, addresses): same groups as declared."""
    import yaml

    dynamic = yaml.safe_load((ROOT / "inventory/azure_rm.yml").read_text())
    hosts = {}
    for host, (_, size, encryption, label) in MATRIX.items():
        hosts[host] = {
            "name": host,
            "virtual_machine_size": size,
            "location": "westeurope",
            "powerstate": "running",
            "public_ipv4_address": ["192.0.2.10"],
            "private_ipv4_addresses": ["10.77.1.4"],
            "tags": {
                "testbed": "true",
                "testbed_run": "r1",
                "testbed_label": label,
                "testbed_security_type": "ConfidentialVM" if encryption else "Standard",
                "testbed_disk_encryption": str(encryption == "DiskWithVMGuestState").lower(),
            },
        }
    (tmp_path / "vms.yml").write_text(yaml.safe_dump({"all": {"hosts": hosts}}))
    (tmp_path / "groups.yml").write_text(
        yaml.safe_dump(
            {
                "plugin": "ansible.builtin.constructed",
                "strict": True,
                "compose": dynamic["hostvar_expressions"],
                "groups": dynamic["conditional_groups"],
                "keyed_groups": dynamic["keyed_groups"],
            }
        )
    )
    listing = json.loads(
        _ansible(
            "ansible-inventory", "-i", str(tmp_path / "vms.yml"), "-i", str(tmp_path / "groups.yml"), "--list"
        )
    )
    for group in ("sev", "tdx", "amd_baseline", "intel_baseline"):
        assert sorted(listing[group]["hosts"]) == sorted(h for h, row in MATRIX.items() if row[0] == group)
    assert sorted(listing["testbed_run_r1"]["hosts"]) == sorted(MATRIX)
    sev = listing["_meta"]["hostvars"]["sev-enc-1"]
    assert (sev["testbed_label"], sev["testbed_disk_encryption"], sev["ansible_host"]) == (
        "SEV-Encrypted",
        True,
        "192.0.2.10",
    )


@pytest.mark.integration
def test_check_mode_creates_exactly_the_sev_and_tdx_machines(tmp_path: Path) -> None:
    # run.yml when the lead's pipeline exists; its later stages leave the dry run's machines out
    # (group azure_dry_run), so the whole dry run ends well.
    playbook = "run.yml" if (ROOT / "run.yml").exists() else "playbooks/provision_azure.yml"
    rc, report, out = _playbook(tmp_path, *INVENTORY, playbook, "-l", "sev,tdx", "--check", "-e", "run_id=r1")
    assert report.get("plays"), out
    provision = [p for p in report["plays"] if p["play"]["name"] == "Provision the Azure machines"]
    assert len(provision) == 1
    failed = [
        (t["task"]["name"], h)
        for t in provision[0]["tasks"]
        for h, r in t["hosts"].items()
        if r.get("failed") or r.get("unreachable")
    ]
    assert failed == [], out[-3000:]
    assert sorted(report["stats"]) == sorted(h for h, row in MATRIX.items() if row[0] in ("sev", "tdx"))
    assert rc == 0, out
    later = [
        p for p in report["plays"] if p["play"]["name"] == "Deploy node_exporter and the benchmark agent"
    ]
    assert all(not t["hosts"] for p in later for t in p["tasks"]), "a dry run's machine reached a later stage"
    calls = _azure_actions(report)
    assert calls and all(skipped for _, _, skipped in calls), calls  # nothing was sent to Azure
    records = _records(tmp_path / "state/r1/requests")
    vms = {
        n.removeprefix("PUT-virtualMachines-").removesuffix(".json"): r
        for n, r in records.items()
        if n.startswith("PUT-virtualMachines-")
    }
    assert sorted(vms) == sorted(h for h, row in MATRIX.items() if row[0] in ("sev", "tdx"))
    assert not any("base" in name for name in records)
    for host, record in vms.items():
        group, size, encryption, label = MATRIX[host]
        assert record["dry_run"] is True and record["method"] == "PUT"
        assert record["url"] == f"{SUB}/resourceGroups/testbed-r1/providers/{VM_TYPE}/{host}"
        props = record["body"]["properties"]
        assert props["hardwareProfile"]["vmSize"] == size
        assert props["securityProfile"]["securityType"] == "ConfidentialVM"
        assert props["securityProfile"]["uefiSettings"] == {"secureBootEnabled": True, "vTpmEnabled": True}
        managed = props["storageProfile"]["osDisk"]["managedDisk"]
        assert managed["securityProfile"]["securityEncryptionType"] == encryption
        assert props["storageProfile"]["imageReference"]["sku"] == "cvm"
        tags = record["body"]["tags"]
        assert (tags["testbed_run"], tags["testbed_label"], tags["testbed_group"]) == ("r1", label, group)
        assert tags["testbed_disk_encryption"] == str(encryption == "DiskWithVMGuestState").lower()
        assert tags["testbed"] == "true" and tags["testbed_deadline"].endswith("Z")
        shutdown = records[f"PUT-schedules-shutdown-computevm-{host}.json"]["body"]["properties"]
        assert shutdown["targetResourceId"] == record["url"]
        assert shutdown["taskType"] == "ComputeVmShutdownTask"
    assert {
        "PUT-resourceGroups-testbed-r1.json",
        "PUT-virtualNetworks-testbed-vnet-westeurope.json",
        "PUT-networkSecurityGroups-testbed-nsg-westeurope.json",
    } <= set(records)
    assert records["PUT-resourceGroups-testbed-r1.json"]["body"]["tags"]["testbed_run"] == "r1"
    assert not list((tmp_path / "state").glob("*.run.json"))  # a dry run leaves nothing to tear down


@pytest.mark.integration
@pytest.mark.parametrize(
    ("limit", "extra", "message"),
    [
        (
            "sev-1",
            {"azure_vm_security_encryption_type": "EverythingEncrypted"},
            "azure_vm_security_encryption_type must be one of: VMGuestStateOnly, DiskWithVMGuestState",
        ),
        ("sev,tdx", {"azure_vm_max_vcpus": 8}, "cost guard: this run would create 16 vCPUs on 4 machines"),
        (
            "tdx-1",
            {"azure_vm_deadline": "2020-01-01T00:00:00Z"},
            "cost guard: the deadline 2020-01-01T00:00:00Z",
        ),
        ("tdx-1", {"azure_vm_lifetime_hours": 48}, "at most azure_vm_max_lifetime_hours=23"),
        (
            "sev,tdx",
            {"azure_vm_max_cost": 10},
            "cost guard: no azure_vm_hour_price for sev-enc-1, sev-1, tdx-enc-1, tdx-1, so the cost of this "
            "run is unknown",
        ),
        (
            "sev,tdx",
            {"azure_vm_max_cost": 10, "azure_vm_hour_price": 1.5, "azure_vm_lifetime_hours": 2},
            "cost guard: this run may cost 12.00 (4 machines, 2.0 h until the deadline), more than "
            "azure_vm_max_cost=10",
        ),
        (
            "tdx-1",
            {"azure_vm_max_cost": 10, "azure_vm_hour_price": "nan"},
            "azure_vm_hour_price nan is not a finite",
        ),
    ],
)
def test_bad_input_and_cost_guard_stop_before_any_request(
    tmp_path: Path, limit: str, extra: dict[str, Any], message: str
) -> None:
    rc, _, out = _playbook(
        tmp_path,
        *INVENTORY,
        "playbooks/provision_azure.yml",
        "-l",
        limit,
        "--check",
        "-e",
        "azure_vm_run_id=r2",
        "-e",
        json.dumps(extra),
    )
    assert rc != 0
    assert message in " ".join(out.split()), out[-3000:]
    assert not list((tmp_path / "state").rglob("PUT-*.json"))


@pytest.mark.integration
def test_teardown_deletes_by_tag_only_the_run(tmp_path: Path) -> None:
    listing = {
        "azure_vm_dry_run_groups": [
            {"id": f"{SUB}/resourceGroups/testbed-r1", "name": "testbed-r1", "tags": {"testbed_run": "r1"}},
            {"id": f"{SUB}/resourceGroups/testbed-r7", "name": "testbed-r7", "tags": {"testbed_run": "r7"}},
            {"id": f"{SUB}/resourceGroups/shared", "name": "shared", "tags": {}},
        ],
        "azure_vm_dry_run_resources": [
            {
                "id": f"{SUB}/resourceGroups/shared/providers/Microsoft.Network/networkInterfaces/x-nic",
                "type": "Microsoft.Network/networkInterfaces",
                "tags": {"testbed_run": "r1"},
            },
            {
                "id": f"{SUB}/resourceGroups/shared/providers/Microsoft.Compute/virtualMachines/x",
                "type": "Microsoft.Compute/virtualMachines",
                "tags": {"testbed_run": "r1"},
            },
            {
                "id": f"{SUB}/resourceGroups/shared/providers/Microsoft.Compute/virtualMachines/keep",
                "type": "Microsoft.Compute/virtualMachines",
                "tags": {"testbed_run": "r7"},
            },
        ],
    }
    extra = tmp_path / "listing.json"
    extra.write_text(json.dumps(listing))
    rc, report, out = _playbook(
        tmp_path,
        *INVENTORY,
        "playbooks/teardown_azure.yml",
        "-l",
        "sev-1",
        "--check",
        "-e",
        "azure_vm_run_id=r1",
        "-e",
        f"@{extra}",
    )
    assert rc == 0, out
    assert all(skipped for _, _, skipped in _azure_actions(report))
    (record_dir,) = (tmp_path / "state").glob("teardown-*")
    records = _records(record_dir)
    assert sorted(records) == [
        "DELETE-networkInterfaces-x-nic.json",
        "DELETE-resourceGroups-testbed-r1.json",
        "DELETE-virtualMachines-x.json",
    ]
    assert {r["method"] for r in records.values()} == {"DELETE"}
    assert all("body" not in r for r in records.values())
    shown = [
        r.get("msg", "")
        for play in report["plays"]
        for t in play["tasks"]
        if t["task"]["name"].endswith("Show what will be deleted")
        for r in t["hosts"].values()
    ]
    assert shown, "the teardown did not say what it would delete"
    assert shown[0].index("testbed-r1") < shown[0].index("virtualMachines/x") < shown[0].index("x-nic")


@pytest.mark.integration
def test_provision_is_a_quick_noop_for_machines_not_in_azure(tmp_path: Path) -> None:
    inventory = tmp_path / "local.ini"  # what the embedded default looks like: localhost, no testbed_cloud
    inventory.write_text(f"localhost ansible_connection=local ansible_python_interpreter={BIN / 'python'}\n")
    for playbook in ("playbooks/provision_azure.yml", "playbooks/teardown_azure.yml"):
        rc, report, out = _playbook(tmp_path, "-i", str(inventory), playbook)
        assert rc == 0, out
        assert all(skipped for _, _, skipped in _azure_actions(report))
        assert report["stats"]["localhost"]["failures"] == 0
    assert not (tmp_path / "state").exists()


@pytest.mark.integration
@pytest.mark.parametrize(
    ("mode", "actions"), [("redeploy", ["redeploy"]), ("deallocate", ["deallocate", "start"])]
)
def test_a_rotation_records_the_vm_actions_it_would_send(
    tmp_path: Path, mode: str, actions: list[str]
) -> None:
    """playbooks/rotate.yml in check mode: the ARM actions of rotation 1 are recorded, never sent
    (the stage stops after them, at the dry-run machine that cannot be reached)."""
    _, report, out = _playbook(
        tmp_path,
        *INVENTORY,
        "playbooks/rotate.yml",
        *("-l", "sev-1", "--check", "-e", "run_id=r3", "-e", "rotations=1"),
        *("-e", f"azure_vm_rotate_mode={mode}"),
    )
    records = _records(tmp_path / "state/r3/requests/rotation-1")
    assert sorted(records) == sorted(f"POST-sev-1-{a}.json" for a in actions), out[-3000:]
    for action in actions:
        record = records[f"POST-sev-1-{action}.json"]
        assert record["url"] == f"{SUB}/resourceGroups/testbed-r3/providers/{VM_TYPE}/sev-1/{action}"
        assert record["api_version"] == "2024-07-01" and record["dry_run"] is True
        assert "body" not in record
    calls = _azure_actions(report)
    assert calls and all(skipped for _, _, skipped in calls), calls  # nothing was sent to Azure
