"""Helpers of the Hyper-V lab tests: the stand-in hosts and an inventory pointing at them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from winrm_standin import WinRMStandIn

ROOT = Path(__file__).resolve().parents[2]


def winrm_vars(standin: WinRMStandIn) -> dict[str, Any]:
    """Connection variables of a Windows host reached through the loopback stand-in."""
    return {
        "ansible_host": "127.0.0.1",
        "ansible_connection": "winrm",
        "ansible_port": standin.port,
        "ansible_winrm_scheme": "https",
        "ansible_winrm_transport": "basic",
        "ansible_winrm_server_cert_validation": "ignore",
        "ansible_user": standin.user,
        "ansible_password": standin.password,
    }


def lab_inventory(path: Path, hosts: dict[str, WinRMStandIn], guests: dict[str, dict[str, Any]]) -> Path:
    """Write an inventory with *hosts* in hyperv_hosts and *guests* in hyperv."""
    inventory = {
        "all": {
            # the repository's group_vars/all.yml do not sit beside this inventory: carried over
            "vars": yaml.safe_load((ROOT / "inventory/group_vars/all.yml").read_text())
            | {"testbed_root": str(ROOT)},
            "children": {
                "hyperv_hosts": {"hosts": {name: winrm_vars(s) for name, s in hosts.items()}},
                "hyperv": {
                    "vars": {"hyperv_guest_connect": False, "hyperv_guest_ssh_user": "root"},
                    "hosts": guests,
                },
            },
        }
    }
    path.write_text(yaml.safe_dump(inventory, sort_keys=False))
    return path
