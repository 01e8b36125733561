"""Simulated physical hosts of the ARM stand-in: where each VM runs, and what its guest sees of it.

Every location has a pool of hosts (``SIM-<LOCATION>-<n>``). A VM is placed on a host when it is
created, moved to another host by ``redeploy``, released by ``deallocate`` and placed again by the
next ``start`` (on the host it left with probability ``same_host_p``, else on another; Azure
usually, not always, picks another), and kept where it is by ``restart`` and ``powerOff``. Each VM
draws from its own generator, seeded by the seed and the VM's name, so a VM's placements repeat
with the seed whatever order concurrent requests of several VMs arrive in.

The guest learns its host as on Azure: through the Hyper-V KVP pool 3 that ``hv_kvp_daemon``
keeps in ``/var/lib/hyperv/.kvp_pool_3``. Here that file is ``<guest root>/<vm>/.kvp_pool_3``,
written in the daemon's format (records of a 512-byte key and a 2048-byte value, NUL-padded)
with the keys Azure fills, each time the VM is placed; the rehearsal points the agent at it
(TESTBED_HYPERV_KVP_POOL). ARM itself never names the host, as on Azure (no dedicated hosts here).
"""

from __future__ import annotations

import os
import random
import re
import time
import uuid
from pathlib import Path
from typing import Any

KEY_SIZE, VALUE_SIZE = 512, 2048


def pool_bytes(pairs: list[tuple[str, str]]) -> bytes:
    """A KVP pool file's bytes for ``pairs``, in order."""
    out = bytearray()
    for key, value in pairs:
        k, v = key.encode(), value.encode()
        if len(k) >= KEY_SIZE or len(v) >= VALUE_SIZE:
            raise ValueError(f"KVP item {key!r} does not fit a record")
        out += k.ljust(KEY_SIZE, b"\0") + v.ljust(VALUE_SIZE, b"\0")
    return bytes(out)


class Hosts:
    """The placement of every VM (by resource id), the seeded draws and the placement log."""

    def __init__(self, seed: int, per_location: int, same_host_p: float, guest_root: Path | None) -> None:
        if per_location < 2:
            raise ValueError("a location needs at least 2 hosts (redeploy moves a VM to another)")
        if not 0.0 <= same_host_p <= 1.0:
            raise ValueError(f"same-host probability {same_host_p} is not in [0, 1]")
        self.seed = seed
        self.rngs: dict[str, random.Random] = {}
        self.per_location = per_location
        self.same_host_p = same_host_p
        self.guest_root = guest_root
        self.where: dict[str, str | None] = {}  # VM id (lower case) -> its host, None when deallocated
        self.last: dict[str, str] = {}  # VM id -> the host it ran on last
        self.container: dict[str, str] = {}  # VM id -> the host's name of its VM (new on each move)
        self.log: list[dict[str, Any]] = []

    def pool(self, location: str) -> list[str]:
        code = re.sub(r"[^A-Z0-9]", "", location.upper())[:10] or "X"
        return [f"SIM-{code}-{n:03d}" for n in range(1, self.per_location + 1)]

    def host_of(self, rid: str) -> str | None:
        return self.where.get(rid.lower())

    def place(self, vm: dict[str, Any], why: str) -> str:
        """Place ``vm`` (the stand-in's item) for ``why``: create, redeploy, start, restart, powerOff."""
        rid = vm["id"].lower()
        rng = self.rngs.setdefault(rid, random.Random(f"{self.seed}:{vm['name']}"))
        hosts = self.pool(vm["location"])
        now, last = self.where.get(rid), self.last.get(rid)
        if why == "create":
            host = rng.choice(hosts)
        elif why == "redeploy":
            host = rng.choice([h for h in hosts if h != (now or last)])
        elif now is not None:  # start of a VM still allocated (stopped), restart, powerOff: it stays
            host = now
        elif last is not None and rng.random() < self.same_host_p:
            host = last
        else:  # start after deallocate: another host
            host = rng.choice([h for h in hosts if h != last])
        if host != now or rid not in self.container:
            self.container[rid] = str(uuid.UUID(int=rng.getrandbits(128)))
        self.where[rid], self.last[rid] = host, host
        self.log.append({"vm": vm["name"], "host": host, "why": why, "at": time.time()})
        self._write_kvp(vm, host)
        return host

    def release(self, vm: dict[str, Any]) -> None:
        """``vm`` is deallocated: it holds no host until it starts again."""
        self.where[vm["id"].lower()] = None

    def forget(self, vm: dict[str, Any]) -> None:
        """``vm`` is deleted: its placement and its guest's pool file go."""
        rid = vm["id"].lower()
        self.where.pop(rid, None)
        self.last.pop(rid, None)
        self.container.pop(rid, None)
        self.rngs.pop(rid, None)
        if self.guest_root is not None:
            (self.guest_root / vm["name"] / ".kvp_pool_3").unlink(missing_ok=True)

    def _write_kvp(self, vm: dict[str, Any], host: str) -> None:
        if self.guest_root is None:
            return
        vm_id = str((vm.get("properties") or {}).get("vmId") or "").upper()
        pairs = [
            ("HostName", host),
            ("HostingSystemEditionId", "168"),
            ("HostingSystemNestedLevel", "0"),
            ("HostingSystemOsMajor", "10"),
            ("HostingSystemOsMinor", "0"),
            ("HostingSystemProcessorArchitecture", "9"),
            ("HostingSystemProcessorIdleStateMax", "0"),
            ("HostingSystemProcessorThrottleMax", "100"),
            ("HostingSystemProcessorThrottleMin", "100"),
            ("HostingSystemSpMajor", "0"),
            ("HostingSystemSpMinor", "0"),
            ("PhysicalHostName", host),
            ("PhysicalHostNameFullyQualified", host),
            ("VirtualMachineDynamicMemoryBalancingEnabled", "0"),
            ("VirtualMachineId", vm_id),
            ("VirtualMachineName", self.container[vm["id"].lower()]),  # the host's name of the VM
        ]
        target = self.guest_root / vm["name"] / ".kvp_pool_3"
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".kvp_pool_3.{os.getpid()}.tmp")
        tmp.write_bytes(pool_bytes(pairs))
        tmp.replace(target)

    def stats(self) -> dict[str, Any]:
        seen: dict[str, list[str]] = {}
        for entry in self.log:
            hosts = seen.setdefault(entry["vm"], [])
            if entry["host"] not in hosts:
                hosts.append(entry["host"])
        return {"placements": list(self.log), "hosts_seen": seen}
