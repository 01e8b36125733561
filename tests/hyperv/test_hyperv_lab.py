"""The Hyper-V roles through the real Ansible WinRM connection, against the loopback stand-in.

One lab (module scope): host hv-lab-1 (Windows Server 2022 with Hyper-V) with two guests, and
host hv-plain-1 (no Hyper-V role). The guests' Ansible connection is local (their SSH side needs
a real Windows host; docs/hyperv.md), everything on the Windows side goes through pywinrm to the
stand-in, which records the scripts, their parameters and check mode.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from hyperv_helpers import lab_inventory, winrm_vars
from kvm_helpers import ROOT, ansible_playbook, free_port
from winrm_standin import WinRMStandIn

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def guest_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """An OpenSSH server on loopback standing in for hv-guest-1 behind its forwarded port: it
    accepts the controller's guest key (the one the role hands to the VM through KVP)."""
    work = tmp_path_factory.mktemp("sshd")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(work / "host_key")], check=True)
    port = free_port()
    config = work / "sshd_config"
    config.write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {work / 'host_key'}\nPidFile {work / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {ROOT / '.cache/kvm/id_ed25519.pub'}\nPermitRootLogin prohibit-password\n"
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\n"
    )
    Path("/run/sshd").mkdir(exist_ok=True)
    proc = subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", str(config)], stderr=subprocess.DEVNULL)
    yield port
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, guest_sshd: int) -> Iterator[dict]:
    work = tmp_path_factory.mktemp("hyperv")
    vhdx = work / "testbed-guest-small.vhdx"
    subprocess.run(["qemu-img", "create", "-q", "-f", "vhdx", str(vhdx), "64M"], check=True)
    hosts = {"hv-lab-1": WinRMStandIn("ws2022", work / "hv-lab-1")}
    common = {
        "hyperv_guest_host": "hv-lab-1",
        "hyperv_guest_vhdx": str(vhdx),
        "ansible_connection": "local",
        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
    }
    guests = {
        # reached over SSH for real (the loopback sshd above), host facts written "into" it
        "hv-guest-1": common
        | {
            "hyperv_guest_vcpus": 4,
            "hyperv_guest_memory_mib": 8192,
            "hyperv_guest_ssh_port": guest_sshd,
            "hyperv_guest_connect": True,
            "hyperv_guest_host_facts_path": str(work / "host-facts.json"),
        },
        "hv-guest-2": common | {"hyperv_guest_vtpm": True, "hyperv_guest_ssh_port": 2202},
    }
    inventory = lab_inventory(work / "lab.yml", hosts, guests)
    yield {"work": work, "inventory": inventory, "host": hosts["hv-lab-1"], "vhdx": vhdx, "port": guest_sshd}
    for standin in hosts.values():
        standin.close()


def _records_since(standin: WinRMStandIn, start: int) -> list[dict]:
    return [r for r in standin.endpoint.records[start:] if r["kind"] == "module" and r.get("script")]


@pytest.mark.slow
def test_check_mode_run_of_the_lab_inventory_creates_nothing(lab: dict) -> None:
    """``run.yml -i inventory/lab.yml -l hyperv --check``: the lab's Hyper-V host is the stand-in
    (a second inventory source overrides its address and credentials; the guest's connection is
    local), the host is reached only through the guest's delegated tasks (-l hyperv)."""
    host = WinRMStandIn("ws2022", lab["work"] / "xeon-hv-1")
    try:
        override = {
            "all": {
                "hosts": {
                    "xeon-hv-1": winrm_vars(host),
                    "hv-intel-1": {
                        "ansible_connection": "local",
                        "ansible_host": "127.0.0.1",
                        "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                        "hyperv_guest_vhdx": str(lab["vhdx"]),
                        "hyperv_guest_connect": False,
                    },
                }
            }
        }
        (lab["work"] / "override.yml").write_text(yaml.safe_dump(override))
        run = ansible_playbook(
            "run.yml",
            "-i",
            "inventory/lab.yml",
            "-i",
            str(lab["work"] / "override.yml"),
            "-l",
            "hyperv",
            "--check",
            log=lab["work"] / "ansible.log",
        )
        assert run.rc == 0, run.output[-4000:]
        records = [r for r in host.endpoint.records if r["kind"] == "module"]
        assert records and all(r["check_mode"] for r in records)
        # provision (the VM would be created, its port forwarded), then run.yml's teardown
        assert [r["script"] for r in records] == ["host_facts", "storage", "vm", "forward", "vm_absent"]
        vm = records[2]
        assert (
            vm["parameters"]["StoragePath"] == "D:\\testbed\\hyperv"
            and vm["parameters"]["ProcessorCount"] == 4
        )
        assert vm["changed"] and vm["result"]["actions"] == [
            "New-VHD D:\\testbed\\hyperv\\hv-intel-1\\hv-intel-1.vhdx (differencing, parent "
            "D:\\testbed\\hyperv\\images\\testbed-guest-testbed-guest-small.vhdx)",
            "New-VM hv-intel-1 (generation 2)",
        ]
        assert records[3]["result"]["actions"] == [
            "Add-NetNatStaticMapping TCP 2201 -> 192.168.250.10:22",
            "New-NetFirewallRule testbed-ssh-hv-intel-1 TCP 2201",
        ]
        snap = host.endpoint.host.snapshot()
        assert snap["vms"] == {} and snap["mappings"] == [] and snap["dirs"] == []
        assert not any(r["kind"] == "put_file" for r in host.endpoint.records)
    finally:
        host.close()


@pytest.mark.slow
def test_provision_then_second_run_unchanged(lab: dict) -> None:
    host: WinRMStandIn = lab["host"]
    start = len(host.endpoint.records)
    first = ansible_playbook(
        "playbooks/provision_hyperv.yml", "-i", str(lab["inventory"]), log=lab["work"] / "ansible.log"
    )
    assert first.rc == 0, first.output[-4000:]
    records = _records_since(host, start)
    assert [r["script"] for r in records if r["parameters"].get("Name") == "hv-guest-1"] == [
        "vm",
        "kvp",
        "forward",
        "wait_ip",
    ]
    assert [r["script"] for r in records[:3]] == ["host_facts", "storage", "switch"]
    switch = records[2]["result"]["actions"]
    assert switch == [
        "New-VMSwitch testbed (internal)",
        "New-NetIPAddress 192.168.250.1/24 on vEthernet (testbed)",
        "New-NetNat testbed-nat 192.168.250.0/24",
    ]
    vm1 = next(r for r in records if r["script"] == "vm" and r["parameters"]["Name"] == "hv-guest-1")
    assert vm1["parameters"] | {"BaseVhdx": "-"} == {
        "Name": "hv-guest-1",
        "StoragePath": "C:\\testbed\\hyperv",
        "BaseVhdx": "-",
        "SwitchName": "testbed",
        "ProcessorCount": 4,
        "MemoryMiB": 8192,
        "Reserve": 0,
        "Maximum": 100,
        "RelativeWeight": 100,
        "ExposeVirtualizationExtensions": False,
        "SecureBootTemplate": "MicrosoftUEFICertificateAuthority",
        "Tpm": False,
    }
    assert vm1["result"]["vm"]["state"] == "Running" and vm1["result"]["vm"]["checkpoint_type"] == "Disabled"
    kvp = next(r for r in records if r["script"] == "kvp" and r["parameters"]["Name"] == "hv-guest-2")
    assert kvp["parameters"]["Items"]["testbed.ipv4"] == "192.168.250.11/24 192.168.250.1 192.168.250.1"
    assert kvp["parameters"]["Items"]["testbed.ssh_key"].startswith("ssh-ed25519 ")
    # the VHDX went over WinRM once (put_file, then win_copy into place) and is there, byte for byte
    puts = [r for r in host.endpoint.records[start:] if r["kind"] == "put_file"]
    assert len(puts) == 1
    snap = host.endpoint.host.snapshot()
    assert set(snap["vms"]) == {"hv-guest-1", "hv-guest-2"} and snap["vms"]["hv-guest-2"]["Tpm"] is True
    assert sorted(m["ExternalPort"] for m in snap["mappings"]) == sorted([lab["port"], 2202])
    facts = json.loads((lab["work"] / "host-facts.json").read_text())
    assert facts["hypervisor"] == "hyperv" and facts["hyperv_version"] == "10.0.20348.2849"
    assert facts["virtualization"] == "hardware (Hyper-V 10.0.20348.2849, Windows build 20348)"
    assert (
        facts["host_scheduler_type"] == "core"
        and facts["host_numa_nodes"] == 2
        and facts["host_vbs"] == "running"
    )
    assert facts["vm"]["secure_boot_template"] == "MicrosoftUEFICertificateAuthority" and facts["vcpus"] == 4
    assert facts["ipv4"] == "192.168.250.10"
    base = "c:\\testbed\\hyperv\\images\\testbed-guest-testbed-guest-small.vhdx"
    assert host.endpoint.checksum(base) == _sha1(lab["vhdx"])

    start = len(host.endpoint.records)
    second = ansible_playbook(
        "playbooks/provision_hyperv.yml", "-i", str(lab["inventory"]), log=lab["work"] / "ansible.log"
    )
    assert second.rc == 0, second.output[-4000:]
    assert all(v["changed"] == 0 for v in second.recap().values()), second.recap()
    assert not [r for r in _records_since(host, start) if r["changed"]]
    assert not any(r["kind"] == "put_file" for r in host.endpoint.records[start:])


@pytest.mark.slow
def test_teardown_removes_the_vms_and_their_disks_only(lab: dict) -> None:
    host: WinRMStandIn = lab["host"]
    start = len(host.endpoint.records)
    run = ansible_playbook(
        "playbooks/teardown_hyperv.yml", "-i", str(lab["inventory"]), log=lab["work"] / "ansible.log"
    )
    assert run.rc == 0, run.output[-4000:]
    absent = next(r for r in _records_since(host, start) if r["parameters"].get("Name") == "hv-guest-1")
    assert absent["result"]["actions"] == [
        "Stop-VM hv-guest-1 -TurnOff",
        "Remove-VM hv-guest-1",
        "Remove-Item C:\\testbed\\hyperv\\hv-guest-1\\hv-guest-1.vhdx",
        "Remove-Item C:\\testbed\\hyperv\\hv-guest-1",
        "Remove-NetFirewallRule testbed-ssh-hv-guest-1",
        f"Remove-NetNatStaticMapping TCP {lab['port']}",
    ]
    snap = host.endpoint.host.snapshot()
    assert snap["vms"] == {} and snap["mappings"] == [] and snap["firewall"] == {}
    # the switch the role made is gone, the host's own stays; the base VHDX stays (no purge)
    assert set(snap["switches"]) == {"Default Switch"}
    assert list(snap["files"]) == ["c:\\testbed\\hyperv\\images\\testbed-guest-testbed-guest-small.vhdx"]
    again = ansible_playbook("playbooks/teardown_hyperv.yml", "-i", str(lab["inventory"]))
    assert again.rc == 0 and all(v["changed"] == 0 for v in again.recap().values()), again.output[-3000:]


@pytest.mark.slow
def test_host_without_hyperv_is_refused(lab: dict) -> None:
    plain = WinRMStandIn("ws2022-no-hyperv", lab["work"] / "hv-plain-1")
    try:
        guest = {
            "hyperv_guest_host": "hv-plain-1",
            "hyperv_guest_vhdx": str(lab["vhdx"]),
            "ansible_connection": "local",
        }
        inventory = lab_inventory(lab["work"] / "plain.yml", {"hv-plain-1": plain}, {"hv-guest-9": guest})
        run = ansible_playbook("playbooks/provision_hyperv.yml", "-i", str(inventory))
        assert run.rc == 2
        assert "Hyper-V is not usable - the Hyper-V role is not installed. Nothing was changed." in " ".join(
            run.output.split()
        )
        assert "Install-WindowsFeature -Name Hyper-V -IncludeManagementTools -Restart" in run.output
        assert plain.scripts_run() == ["host_facts"]
        guest_only = ansible_playbook("playbooks/provision_hyperv.yml", "-i", str(inventory), "-l", "hyperv")
        assert guest_only.rc == 2 and "Hyper-V is not usable: the Hyper-V role is not installed" in " ".join(
            guest_only.output.split()
        )
        assert plain.scripts_run() == ["host_facts", "host_facts"]
    finally:
        plain.close()


@pytest.mark.slow
def test_capacity_guard_refuses_more_than_the_host_has(lab: dict) -> None:
    host: WinRMStandIn = lab["host"]
    start = len(host.endpoint.records)
    big = {
        "hyperv_guest_host": "hv-lab-1",
        "hyperv_guest_vhdx": str(lab["vhdx"]),
        "ansible_connection": "local",
        "hyperv_guest_vcpus": 12,
        "hyperv_guest_memory_mib": 40960,
    }
    inventory = lab_inventory(lab["work"] / "big.yml", {"hv-lab-1": host}, {"big-1": big, "big-2": big})
    run = ansible_playbook("playbooks/provision_hyperv.yml", "-i", str(inventory))
    assert run.rc == 2
    flat = " ".join(run.output.split())
    assert "ask for 24 vCPUs and 81920 MiB, the host has 16 logical processors and 65536 MiB" in flat
    assert [r["script"] for r in _records_since(host, start)] == ["host_facts"]


def _sha1(path: Path) -> str:
    return hashlib.sha1(path.read_bytes()).hexdigest()
