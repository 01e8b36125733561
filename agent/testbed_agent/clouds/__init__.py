"""Clouds: what the toolkit knows about the cloud a machine runs in, behind one interface.

A cloud is one module of this package defining one :class:`Cloud` subclass (Azure is the first:
``azure``). It owns, for its machines, the evidence read from inside the guest (``describe``:
metadata and the hardware report of a confidential VM, into the machine fingerprint), and, for
``plan show --inventory``, what a host's inventory variables say about its size (``machine``:
size, vCPUs, memory, disk, security), with the defaults of the Ansible role that creates its
machines (``role``). The registry finds the modules; ``--cloud`` takes their names, and ``none``.
Adding a cloud is a module here plus its role under ``roles/`` (docs/extending.md).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from testbed_agent.clouds.base import Cloud

__all__ = ["NONE", "Cloud", "all_machine_vars", "get", "names", "of_host", "registry"]

#: what ``--cloud`` says when the machine is in no cloud (or one the toolkit need not know)
NONE = "none"


@functools.cache
def registry() -> Mapping[str, type[Cloud]]:
    """Every cloud by name (the modules of this package)."""
    found: dict[str, type[Cloud]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, Cloud)
                and obj.name
                and obj.__module__ == module.__name__
            ):
                if obj.name != info.name:
                    raise TypeError(
                        f"cloud {obj.name!r} must live in clouds/{obj.name}.py, not {info.name}.py"
                    )
                found[obj.name] = obj
    return MappingProxyType(found)


def names() -> tuple[str, ...]:
    """The ``--cloud`` choices: ``none`` and every cloud's name (a cloud's module is named as the
    cloud, so the command line is built without importing any)."""
    return (NONE, *sorted(i.name for i in pkgutil.iter_modules(__path__) if i.name != "base"))


def get(name: str) -> type[Cloud] | None:
    """The cloud called ``name``; None for ``none`` (and names no module defines)."""
    return registry().get(name)


def of_host(hostvars: Mapping[str, Any]) -> type[Cloud] | None:
    """The cloud a host's inventory variables put it in (the one whose size variable it sets)."""
    return next((c for c in registry().values() if hostvars.get(c.size_var)), None)


def all_machine_vars() -> tuple[str, ...]:
    """Every cloud's machine variables, in order, each once (the columns of ``plan show --json``)."""
    return tuple(dict.fromkeys(v for c in registry().values() for v in c.machine_vars))
