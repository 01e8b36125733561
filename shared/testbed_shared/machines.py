"""The machine of a result: the unit of replication, keyed by the physical host a guest ran on.

A VM's name says nothing about the hardware under it: a rotation (redeploy, deallocate and start,
a fresh KVM guest) may land it on another physical host or on the same one. The agent writes what
the guest can learn of its host into the fingerprint's ``machine`` section
(``testbed_agent.sysinfo.identity``); ``id`` names the host as ``KIND:VALUE``, e.g.
``hyperv-host:CO2AA1050611004`` (the Hyper-V KVP pool Azure and Hyper-V fill),
``azure-dedicated-host:/subscriptions/...`` (IMDS, dedicated hosts only) or ``kvm-host:<uuid>``
(the libvirt host's UUID the kvm_guest role records). The report's machine is that id; a fingerprint
without one (a bare-metal run, a guest that cannot see its host) keeps the VM's name, so two
rotations of a VM on one host are one machine with more runs, and VMs whose host is unknown stay
one machine each.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: the fingerprint section that holds the host identity
MACHINE_FIELD = "machine"
#: ``KIND:VALUE``: a short lower-case kind, then printable ASCII without spaces
ID_PATTERN = re.compile(r"[a-z][a-z0-9-]{0,31}:[\x21-\x7e]{1,256}")
#: characters of a host value that survive into an id (others become ``_``)
_VALUE_CHARS = re.compile(r"[^\x21-\x7e]")


def make_id(kind: str, value: str | None) -> str | None:
    """``KIND:VALUE`` for a host value as a source gives it (spaces and control characters become
    ``_``); None for an empty value."""
    text = (value or "").strip()
    if not text:
        return None
    ident = f"{kind}:{_VALUE_CHARS.sub('_', text)[:256]}"
    if not ID_PATTERN.fullmatch(ident):
        raise ValueError(f"machine id kind {kind!r} is not a short lower-case word")
    return ident


def machine_id(info: Mapping[str, Any] | None) -> tuple[str | None, str | None]:
    """The fingerprint's host id and, when one is given but unusable, why it was ignored."""
    section = (info or {}).get(MACHINE_FIELD)
    if section is None:
        return None, None
    if not isinstance(section, Mapping):
        return None, f"'{MACHINE_FIELD}' is not an object"
    ident = section.get("id")
    if ident is None:
        return None, None
    if not isinstance(ident, str) or not ID_PATTERN.fullmatch(ident):
        return None, f"'{MACHINE_FIELD}.id' {str(ident)[:80]!r} is not KIND:VALUE"
    return ident, None


def machine_key(info: Mapping[str, Any] | None, host: str) -> str:
    """The machine a run on ``host`` (the VM's name) counts as: its host id, else ``host``."""
    ident, _ = machine_id(info)
    return ident or host


def rotation(info: Mapping[str, Any] | None) -> int | None:
    """The rotation index the fingerprint records (0: the machine as first provisioned)."""
    section = (info or {}).get(MACHINE_FIELD)
    value = section.get("rotation") if isinstance(section, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
