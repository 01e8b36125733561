"""Filters of the pre-flight checks (playbooks/tasks/preflight.yml)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import Any

#: the documentation networks of RFC 5737, which inventory/lab.yml ships as placeholders
EXAMPLE_NETWORKS = tuple(
    ipaddress.ip_network(n) for n in ("192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")
)


def is_example_address(address: Any) -> bool:
    """Whether ``address`` is an IP address of a documentation network (a host name is not)."""
    try:
        ip = ipaddress.ip_address(str(address).strip())
    except ValueError:
        return False
    return any(ip in net for net in EXAMPLE_NETWORKS)


def example_addresses(hosts: Iterable[str], hostvars: Mapping[str, Any]) -> list[str]:
    """``"host (address)"`` of each of ``hosts`` reached through a documentation address: its own
    ``ansible_host`` or that of the lab host it runs on (``kvm_guest_host``/``hyperv_guest_host``)."""
    found = []
    for host in hosts:
        hv = hostvars[host]
        addresses = [hv.get("ansible_host", host)]
        via = hv.get("kvm_guest_host") or hv.get("hyperv_guest_host")
        if via:
            addresses.append(hostvars[via].get("ansible_host", via) if via in hostvars else via)
        example = next((a for a in addresses if is_example_address(a)), None)
        if example is not None:
            found.append(f"{host} ({example})")
    return found


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {"testbed_example_addresses": example_addresses}
