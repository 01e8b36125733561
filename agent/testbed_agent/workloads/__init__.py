"""Workload types, found by module (:mod:`testbed_shared.discovery`): one module or package per type.

Every module and subpackage directly in this package except ``base`` is imported once, on first
use, and defines one :class:`~testbed_agent.workloads.base.Workload` subclass with its ``type``. A
type's helpers live in its own subpackage (``crypto/``, ``notebook/``), so that only the type
modules are imported here. Adding a type is one file plus its tests (docs/extending.md); no list is
kept by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from testbed_agent.benchmark import Benchmark
from testbed_agent.workloads.base import RunContext, Workload
from testbed_shared.discovery import Plugins

__all__ = [
    "PLUGINS",
    "RunContext",
    "Workload",
    "canonical_type",
    "get",
    "known_keys",
    "parse_params",
    "primary_metrics",
    "registry",
    "resolve_type",
    "unavailable",
]

#: the workload types: one module of this package each (``base`` holds none); a module whose
#: optional library is missing here is listed in :func:`unavailable`
PLUGINS: Plugins[Workload] = Plugins(__name__, Workload, "type", optional=True)


def registry() -> Mapping[str, type[Workload]]:
    """Every workload type by name."""
    return PLUGINS.found().plugins


def unavailable() -> Mapping[str, str]:
    """Workload modules that could not be imported here (a missing optional library), and why."""
    return PLUGINS.found().unavailable


def get(btype: str) -> type[Workload] | None:
    """The class of a workload type (an alias resolves), or None."""
    return registry().get(canonical_type(btype))


def canonical_type(btype: str) -> str:
    """The type an alias stands for (``notebook`` -> ``kaggle_notebook``); other names as given."""
    return next((wtype for wtype, cls in registry().items() if btype in cls.aliases), btype)


def resolve_type(name: str, given: str) -> str:
    """The workload type of a plan entry: its ``type`` (an alias resolves), or for the classic
    ``standard`` (or empty) type the one whose name prefix or suffix matches the entry's name."""
    t = given.strip().lower()
    if t not in ("standard", ""):
        return canonical_type(t)
    base = Path(name).name.lower()
    types = registry().items()
    for wtype, cls in types:
        if any(base.startswith(prefix) for prefix in cls.name_prefixes):
            return wtype
    for wtype, cls in types:
        if any(base.endswith(suffix) for suffix in cls.name_suffixes):
            return wtype
    return t or "standard"


def known_keys(btype: str) -> set[str] | None:
    """Parameter names of a type (:meth:`Workload.param_keys`); None when the type is unknown."""
    cls = get(btype)
    return None if cls is None else cls.param_keys()


def parse_params(btype: str, params: dict[str, Any]) -> Any:
    """The typed params of a benchmark of type ``btype`` (a plan entry's ``params``)."""
    cls = get(btype)
    if cls is None:
        return None
    return cls.parse(Benchmark(name=btype, type=btype, index=0, line=0, params=params))


def primary_metrics(btype: str, names: Iterable[str]) -> list[str]:
    """The primary metrics among ``names`` for a record of type ``btype`` (sorted); a type without
    a rule (sysinfo) or unknown here has none."""
    cls = get(btype)
    return [] if cls is None else cls.primary_metrics(names)
