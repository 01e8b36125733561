"""A stateful stand-in of one Hyper-V host, for the loopback WinRM endpoint of the tests.

It answers the roles' PowerShell scripts (roles/hyperv_*/files/*.ps1, recognised by their exact
text) the way the scripts compute their ``$Ansible.Result`` from the cmdlets' output on a real
host: the cmdlets' outputs come from ``fixtures/hosts.json`` (their documented shapes), and what the
scripts create (switch, NAT, VM, VHDX, KVP items, port mapping, firewall rule) is kept, so a VM
created is listed afterwards and teardown removes it. Check mode (``-WhatIf``) changes nothing.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
FIXTURES = json.loads((HERE / "fixtures" / "hosts.json").read_text())
SWITCH_NOTE = "testbed: created by the hyperv_host role"
SHOULD_PROCESS = re.compile(
    r"\[CmdletBinding\((?:[\w=\$]+,\s*)?SupportsShouldProcess(?:=\$true)?(?:,\s*[\w=\$]+)?\)\]"
)


class ScriptError(Exception):
    """A terminating error thrown by a script (``throw``)."""


def role_scripts() -> dict[str, str]:
    """Map the text of every role PowerShell script to its name (file stem)."""
    return {p.read_text(): p.stem for p in sorted(ROOT.glob("roles/hyperv_*/files/*.ps1"))}


def winkey(path: str) -> str:
    """Case-insensitive key of a Windows path."""
    return str(PureWindowsPath(path)).lower()


@dataclass
class HyperVHost:
    """The state of one stand-in host."""

    profile: str
    dirs: set[str] = field(default_factory=set)
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    switches: dict[str, dict[str, str]] = field(default_factory=dict)
    addresses: dict[str, str] = field(default_factory=dict)
    nats: dict[str, str] = field(default_factory=dict)
    vms: dict[str, dict[str, Any]] = field(default_factory=dict)
    mappings: list[dict[str, Any]] = field(default_factory=list)
    firewall: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.fx = FIXTURES[self.profile]
        for sw in self.fx.get("Get-VMSwitch", []):
            self.switches[sw["Name"]] = {"type": sw["SwitchType"].lower(), "notes": sw["Notes"]}

    # --- file system (win_copy, put_file, Test-Path) ---------------------------------------
    def exists(self, path: str) -> bool:
        key = winkey(path)
        return key in self.dirs or key in self.files

    def hyperv_usable(self) -> bool:
        svc = self.fx.get("Get-Service")
        return bool(self.fx["Get-WindowsFeature"]["Installed"]) and bool(svc and svc["Status"] == "Running")

    # --- the scripts -----------------------------------------------------------------------
    def run(self, name: str, params: dict[str, Any], check: bool) -> tuple[bool, Any]:
        """Run script *name*; returns (changed, $Ansible.Result)."""
        return getattr(self, "op_" + name)(params, check)

    def op_host_facts(self, _p: dict[str, Any], _check: bool) -> tuple[bool, Any]:
        fx = self.fx
        os_, cs, cpu = fx["Win32_OperatingSystem"], fx["Win32_ComputerSystem"], fx["Win32_Processor"]
        facts: dict[str, Any] = {
            "host_name": cs["Name"],
            "os_caption": os_["Caption"],
            "os_version": os_["Version"],
            "os_build": int(os_["BuildNumber"]),
            "server": os_["ProductType"] != 1,
            "cpu_model": cpu[0]["Name"].strip(),
            "cpu_vendor": cpu[0]["Manufacturer"],
            "cpu_sockets": len(cpu),
            "logical_processors": cs["NumberOfLogicalProcessors"],
            "memory_bytes": cs["TotalPhysicalMemory"],
            "virtualization_firmware_enabled": cpu[0]["VirtualizationFirmwareEnabled"],
            "host_is_virtual_machine": cs["Model"] == "Virtual Machine",
            "hyperv_installed": fx["Get-WindowsFeature"]["Installed"],
            "hyperv_usable": False,
            "hyperv_reason": "",
        }
        if not facts["hyperv_installed"]:
            facts["hyperv_reason"] = "the Hyper-V role is not installed"
        elif not self.hyperv_usable():
            facts["hyperv_reason"] = "the Virtual Machine Management service (vmms) is not running"
        else:
            vmhost = fx["Get-VMHost"]
            facts |= {
                "hyperv_usable": True,
                "hyperv_version": fx["vmms.exe"]["ProductVersion"],
                "vm_config_versions": [v["Version"] for v in fx["Get-VMHostSupportedVersion"]],
                "logical_processors": vmhost["LogicalProcessorCount"],
                "memory_bytes": vmhost["MemoryCapacity"],
                "numa_spanning": vmhost["NumaSpanningEnabled"],
                "numa_nodes": len(fx["Get-VMHostNumaNode"]),
                "default_vhd_path": vmhost["VirtualHardDiskPath"],
                "switches": [
                    {"name": n, "type": s["type"].capitalize(), "notes": s["notes"]}
                    for n, s in self.switches.items()
                ],
            }
        dg = fx["Win32_DeviceGuard"]
        facts["vbs"] = {0: "off", 1: "enabled, not running", 2: "running"}[
            dg["VirtualizationBasedSecurityStatus"]
        ]
        facts["hvci"] = 2 in dg["SecurityServicesRunning"]
        event = fx.get("Get-WinEvent")
        kinds = {1: "classic (SMT off)", 2: "classic", 3: "core", 4: "root"}
        facts["scheduler_type"] = kinds[event["Properties"][0]["Value"]] if event else "unknown"
        facts["nested_virtualization"] = facts["host_is_virtual_machine"] and cs["HypervisorPresent"]
        return False, facts

    def op_storage(self, p: dict[str, Any], check: bool) -> tuple[bool, Any]:
        if self.exists(p["Path"]):
            return False, {"path": p["Path"]}
        if not check:
            self.dirs.add(winkey(p["Path"]))
        return True, {"path": p["Path"]}

    def _require_hyperv(self) -> None:
        if not self.hyperv_usable():
            raise ScriptError("The term 'Get-VMSwitch' is not recognized as the name of a cmdlet")

    def op_switch(self, p: dict[str, Any], check: bool) -> tuple[bool, Any]:
        self._require_hyperv()
        name, kind, actions = p["SwitchName"], p.get("SwitchType", "internal"), []
        sw = self.switches.get(name)
        if sw and sw["type"] != kind:
            raise ScriptError(f"virtual switch '{name}' exists as {sw['type']}, not {kind}")
        if not sw:
            actions.append(f"New-VMSwitch {name} ({kind})")
            if not check:
                self.switches[name] = {"type": kind, "notes": SWITCH_NOTE}
        if kind == "internal":
            alias = f"vEthernet ({name})"
            if self.addresses.get(alias) != p["GatewayAddress"]:
                actions.append(
                    f"New-NetIPAddress {p['GatewayAddress']}/{p['NatPrefix'].split('/')[1]} on {alias}"
                )
                if not check:
                    self.addresses[alias] = p["GatewayAddress"]
            nat = self.nats.get(p["NatName"])
            if nat and nat != p["NatPrefix"]:
                raise ScriptError(f"NAT '{p['NatName']}' exists for {nat}, not {p['NatPrefix']}")
            if not nat:
                actions.append(f"New-NetNat {p['NatName']} {p['NatPrefix']}")
                if not check:
                    self.nats[p["NatName"]] = p["NatPrefix"]
        gateway = p["GatewayAddress"] if kind == "internal" else ""
        return bool(actions), {"name": name, "type": kind, "gateway": gateway, "actions": actions}

    def op_switch_absent(self, p: dict[str, Any], check: bool) -> tuple[bool, Any]:
        sw, actions = self.switches.get(p["SwitchName"]), []
        if sw and sw["notes"] == SWITCH_NOTE:
            if p["NatName"] in self.nats:
                actions.append(f"Remove-NetNat {p['NatName']}")
            actions.append(f"Remove-VMSwitch {p['SwitchName']}")
            if not check:
                self.nats.pop(p["NatName"], None)
                self.switches.pop(p["SwitchName"])
                self.addresses.pop(f"vEthernet ({p['SwitchName']})", None)
        return bool(actions), {"actions": actions}

    def op_vm(self, p: dict[str, Any], check: bool) -> tuple[bool, Any]:
        self._require_hyperv()
        name = p["Name"]
        vhdx = str(PureWindowsPath(p["StoragePath"], name, f"{name}.vhdx"))
        want = {
            "ProcessorCount": int(p["ProcessorCount"]),
            "MemoryMiB": int(p["MemoryMiB"]),
            "Reserve": int(p["Reserve"]),
            "Maximum": int(p["Maximum"]),
            "RelativeWeight": int(p["RelativeWeight"]),
            "ExposeVirtualizationExtensions": bool(p["ExposeVirtualizationExtensions"]),
            "SecureBootTemplate": p["SecureBootTemplate"],
            "Tpm": bool(p["Tpm"]),
        }
        actions: list[str] = []
        vm = self.vms.get(name)
        if vm is None:
            if not self.exists(p["BaseVhdx"]) and not check:
                raise ScriptError(f"New-VHD: the parent virtual hard disk {p['BaseVhdx']} does not exist")
            if p["SwitchName"] not in self.switches and not check:
                raise ScriptError(f"New-VM: no virtual switch named {p['SwitchName']}")
            actions += [
                f"New-VHD {vhdx} (differencing, parent {p['BaseVhdx']})",
                f"New-VM {name} (generation 2)",
            ]
            if check:
                return True, {"exists": False, "actions": actions, "vm": None}
            self.dirs.add(winkey(str(PureWindowsPath(vhdx).parent)))
            self.files[winkey(vhdx)] = {"path": vhdx, "parent": p["BaseVhdx"], "size": 4 << 20}
            # New-VM's defaults: dynamic memory off for -MemoryStartupBytes, 1 vCPU, Secure Boot on with
            # the MicrosoftWindows template, production checkpoints
            vm = self.vms[name] = {
                "State": "Off",
                "Generation": 2,
                "Version": "10.0",
                "Id": f"5c4b{len(self.vms):04d}-testbed",
                "ProcessorCount": 1,
                "MemoryMiB": want["MemoryMiB"],
                "Reserve": 0,
                "Maximum": 100,
                "RelativeWeight": 100,
                "ExposeVirtualizationExtensions": False,
                "SecureBoot": "On",
                "SecureBootTemplate": "MicrosoftWindows",
                "CheckpointType": "Production",
                "Tpm": False,
                "Switch": p["SwitchName"],
                "Disks": [vhdx],
                "Kvp": {},
            }
        differs = [k for k, v in want.items() if vm[k] != v] + (
            [] if vm["CheckpointType"] == "Disabled" else ["cp"]
        )
        if differs and vm["State"] != "Off":
            raise ScriptError(f"VM {name} runs with other settings ({', '.join(differs)}) than asked")
        for key in differs:
            actions.append(f"set {key}")
        if not check:
            vm.update(want, CheckpointType="Disabled", SecureBoot="On")
        if vm["State"] != "Running":
            actions.append(f"Start-VM {name}")
            if not check:
                vm["State"] = "Running"
        summary = {
            "name": name,
            "id": vm["Id"],
            "state": vm["State"],
            "generation": 2,
            "version": vm["Version"],
            "processor_count": vm["ProcessorCount"],
            "memory_startup_bytes": vm["MemoryMiB"] << 20,
            "dynamic_memory": False,
            "secure_boot": vm["SecureBoot"],
            "secure_boot_template": vm["SecureBootTemplate"],
            "checkpoint_type": vm["CheckpointType"],
            "vhdx": vhdx,
        }
        return bool(actions), {"exists": True, "actions": actions, "vm": summary}

    def op_kvp(self, p: dict[str, Any], check: bool) -> tuple[bool, Any]:
        vm = self.vms.get(p["Name"])
        if vm is None:
            raise ScriptError(f"VM {p['Name']} not found")
        actions = []
        for key in sorted(p["Items"]):
            value = str(p["Items"][key])
            if not value or vm["Kvp"].get(key) == value:
                continue
            actions.append(("ModifyKvpItems " if key in vm["Kvp"] else "AddKvpItems ") + key)
            if not check:
                vm["Kvp"][key] = value
        return bool(actions), {"actions": actions}

    def op_forward(self, p: dict[str, Any], check: bool) -> tuple[bool, Any]:
        port, addr, actions = int(p["ExternalPort"]), p["InternalAddress"], []
        mapping = next((m for m in self.mappings if m["ExternalPort"] == port), None)
        if mapping and mapping["InternalIPAddress"] != addr:
            raise ScriptError(f"host port {port} is forwarded to {mapping['InternalIPAddress']}:22 already")
        if not mapping:
            actions.append(f"Add-NetNatStaticMapping TCP {port} -> {addr}:22")
            if not check:
                self.mappings.append(
                    {
                        "NatName": p["NatName"],
                        "ExternalPort": port,
                        "InternalIPAddress": addr,
                        "InternalPort": 22,
                    }
                )
        rule = f"testbed-ssh-{p['Name']}"
        if rule not in self.firewall:
            actions.append(f"New-NetFirewallRule {rule} TCP {port}")
            if not check:
                self.firewall[rule] = port
        return bool(actions), {"actions": actions}

    def op_wait_ip(self, p: dict[str, Any], _check: bool) -> tuple[bool, Any]:
        vm = self.vms.get(p["Name"])
        if vm is None or vm["State"] != "Running":
            raise ScriptError(f"VM {p['Name']} reported no IPv4 address through KVP")
        # what the guest's hv_kvp_daemon reports once it configured the address handed in via KVP
        net = vm["Kvp"].get("testbed.ipv4", "").split()
        return False, {"ipv4": net[0].split("/")[0] if net else "10.20.30.40"}

    def op_vm_absent(self, p: dict[str, Any], check: bool) -> tuple[bool, Any]:
        name, actions = p["Name"], []
        vm_dir = winkey(str(PureWindowsPath(p["StoragePath"], name)))
        vm = self.vms.get(name)
        if vm:
            if vm["State"] != "Off":
                actions.append(f"Stop-VM {name} -TurnOff")
            actions.append(f"Remove-VM {name}")
            actions += [f"Remove-Item {d}" for d in vm["Disks"] if winkey(d).startswith(vm_dir + "\\")]
        if vm_dir in self.dirs:
            actions.append(f"Remove-Item {p['StoragePath']}\\{name}")
        rule = f"testbed-ssh-{name}"
        if rule in self.firewall:
            actions.append(f"Remove-NetFirewallRule {rule}")
        port = int(p.get("SshPort", 0))
        mapping = [m for m in self.mappings if port and m["ExternalPort"] == port]
        if mapping:
            actions.append(f"Remove-NetNatStaticMapping TCP {port}")
        images = winkey(str(PureWindowsPath(p["StoragePath"], "images")))
        purge = bool(p.get("PurgeImages")) and images in self.dirs
        if purge:
            actions.append(f"Remove-Item {images}")
        if not check:
            self.vms.pop(name, None)
            self.files = {k: v for k, v in self.files.items() if not k.startswith(vm_dir + "\\")}
            self.dirs.discard(vm_dir)
            self.firewall.pop(rule, None)
            self.mappings = [m for m in self.mappings if m not in mapping]
            if purge:
                self.files = {k: v for k, v in self.files.items() if not k.startswith(images + "\\")}
                self.dirs.discard(images)
        return bool(actions), {"actions": actions}

    def snapshot(self) -> dict[str, Any]:
        """What the host holds now (for the tests' assertions)."""
        return {
            "switches": self.switches,
            "nats": self.nats,
            "vms": self.vms,
            "mappings": self.mappings,
            "firewall": self.firewall,
            "dirs": sorted(self.dirs),
            "files": {k: {x: y for x, y in v.items() if x != "local"} for k, v in self.files.items()},
        }
