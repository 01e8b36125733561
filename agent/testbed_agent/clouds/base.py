"""The cloud interface (:class:`Cloud`); the registry is :mod:`testbed_agent.clouds`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import yaml

from testbed_shared.paths import roles_dir


class Cloud:
    """Base of clouds: subclasses set ``name``, ``role`` and ``size_var`` and implement the rest."""

    #: the ``--cloud`` value
    name: ClassVar[str] = ""
    #: the Ansible role (``roles/<role>``) that creates this cloud's machines
    role: ClassVar[str] = ""
    #: the inventory variable naming a host's machine size; a host that sets it is in this cloud
    size_var: ClassVar[str] = ""
    #: the inventory variables ``plan show`` prints for this cloud's hosts, in order
    machine_vars: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def describe(cls, info: dict[str, Any]) -> None:
        """Add this cloud's evidence to a machine fingerprint (``info["cloud"][name]``, and
        ``info["cc"]["attestation"]``); best effort: problems are recorded, not raised."""

    @classmethod
    def vcpus(cls, size: str) -> int | None:
        """vCPUs of a machine size, where its name says."""
        return None

    @classmethod
    def memory_gib(cls, size: str, vcpus: int) -> float | None:
        """GiB of memory of a machine size, where its name says."""
        return None

    @classmethod
    def role_defaults(cls) -> dict[str, Any]:
        """Literal values of ``machine_vars`` in the role's defaults (what a host gets when its
        inventory is silent); templated values are left out."""
        path = roles_dir() / cls.role / "defaults" / "main.yml"
        if not cls.role or not path.is_file():
            return {}
        values = yaml.safe_load(path.read_text()) or {}
        return {
            k: v
            for k, v in values.items()
            if k in cls.machine_vars and not (isinstance(v, str) and "{{" in v)
        }

    @classmethod
    def shape(cls, hostvars: Mapping[str, Any]) -> dict[str, Any]:
        """The machine in the words of every cloud: ``os_disk``, ``security``, ``encryption``
        (None where the cloud has no such notion)."""
        return {"os_disk": None, "security": None, "encryption": None}

    @classmethod
    def machine(cls, hostvars: Mapping[str, Any]) -> dict[str, Any]:
        """What a host's variables (over the role's defaults) say: ``machine_vars``, ``size``,
        ``vcpus``, ``memory_gib`` and :meth:`shape`."""
        hv = {**cls.role_defaults(), **hostvars}
        row = {k: hv.get(k) for k in cls.machine_vars}
        size = str(hv.get(cls.size_var) or "")
        row["size"] = size or None
        row["vcpus"] = cls.vcpus(size)
        row["memory_gib"] = cls.memory_gib(size, row["vcpus"]) if row["vcpus"] else None
        row.update(cls.shape(hv))
        return row
