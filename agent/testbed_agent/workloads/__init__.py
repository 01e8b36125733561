"""Workload types, found by the registry: one module (or one package) per type.

Every module and subpackage directly in this package except ``base`` is imported once, on first
use; the :class:`~testbed_agent.workloads.base.Workload` subclasses with a ``type`` that it defines
are the workload types. A type's helpers live in its own subpackage (``crypto/``, ``notebook/``),
so that only the type modules are imported here. Adding a type is one file plus its tests
(docs/extending.md); no list is kept by hand.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from testbed_agent.benchmark import Benchmark
from testbed_agent.workloads.base import RunContext, Workload

__all__ = [
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

#: modules of this package that hold no workload type
_NOT_TYPES = frozenset({"base"})
_OURS = frozenset({"testbed_agent", "testbed_shared", "testbed_services"})


@functools.cache
def _discover() -> tuple[Mapping[str, type[Workload]], Mapping[str, str]]:
    """(type -> class, module -> why it could not be imported here)."""
    found: dict[str, type[Workload]] = {}
    missing: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name in _NOT_TYPES or info.name.startswith("_"):
            continue
        name = f"{__name__}.{info.name}"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            # an optional library of that type is not installed on this machine
            if exc.name is None or exc.name.split(".")[0] in _OURS:
                raise
            missing[info.name] = f"needs {exc.name}, not installed here"
            continue
        for obj in vars(module).values():
            if isinstance(obj, type) and issubclass(obj, Workload) and obj.type and obj.__module__ == name:
                if obj.type in found:
                    raise TypeError(f"workload type {obj.type!r} defined twice ({found[obj.type]}, {obj})")
                found[obj.type] = obj
    return MappingProxyType(found), MappingProxyType(missing)


def registry() -> Mapping[str, type[Workload]]:
    """Every workload type by name."""
    return _discover()[0]


def unavailable() -> Mapping[str, str]:
    """Workload modules that could not be imported here (a missing optional library), and why."""
    return _discover()[1]


def get(btype: str) -> type[Workload] | None:
    """The class of a workload type (an alias resolves), or None."""
    return registry().get(canonical_type(btype))


@functools.cache
def _aliases() -> Mapping[str, str]:
    table: dict[str, str] = {}
    for wtype, cls in registry().items():
        for alias in cls.aliases:
            table[alias] = wtype
    return MappingProxyType(table)


def canonical_type(btype: str) -> str:
    """The type an alias stands for (``notebook`` -> ``kaggle_notebook``); other names as given."""
    return _aliases().get(btype, btype)


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
