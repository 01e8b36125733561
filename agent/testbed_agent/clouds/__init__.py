"""Clouds: what the toolkit knows about the cloud a machine runs in, behind one interface.

A cloud is one module of this package defining one :class:`Cloud` subclass (Azure is the first:
``azure``). It owns, for its machines, the evidence read from inside the guest (``describe``:
metadata and the hardware report of a confidential VM, into the machine fingerprint), and, for
``plan show --inventory``, what a host's inventory variables say about its size (``machine``:
size, vCPUs, memory, disk, security), with the defaults of the Ansible role that creates its
machines (``role``). :mod:`testbed_shared.discovery` finds the modules; ``--cloud`` takes their
names, and ``none``. Adding a cloud is a module here plus its role under ``roles/`` (docs/extending.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from testbed_agent.clouds.base import Cloud
from testbed_shared.discovery import Plugins

__all__ = ["NONE", "PLUGINS", "Cloud", "all_machine_vars", "get", "names", "of_host", "registry"]

#: what ``--cloud`` says when the machine is in no cloud (or one the toolkit need not know)
NONE = "none"
#: the clouds: one module of this package each, named as the cloud (``base`` holds none)
PLUGINS: Plugins[Cloud] = Plugins(__name__, Cloud, "name", named_as_module=True)


def registry() -> Mapping[str, type[Cloud]]:
    """Every cloud by name (the modules of this package)."""
    return PLUGINS.found().plugins


def names() -> tuple[str, ...]:
    """The ``--cloud`` choices: ``none`` and every cloud's name (a cloud's module is named as the
    cloud, so the command line is built without importing any)."""
    return (NONE, *PLUGINS.keys())


def get(name: str) -> type[Cloud] | None:
    """The cloud called ``name``; None for ``none`` (and names no module defines)."""
    return PLUGINS.get(name)


def of_host(hostvars: Mapping[str, Any]) -> type[Cloud] | None:
    """The cloud a host's inventory variables put it in (the one whose size variable it sets)."""
    return next((c for c in registry().values() if hostvars.get(c.size_var)), None)


def all_machine_vars() -> tuple[str, ...]:
    """Every cloud's machine variables, in order, each once (the columns of ``plan show --json``)."""
    return tuple(dict.fromkeys(v for c in registry().values() for v in c.machine_vars))
