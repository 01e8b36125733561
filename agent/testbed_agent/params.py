"""Typed plan parameters: the field rules a workload type's params dataclass is built from.

Each workload module (``testbed_agent.workloads.<type>``) declares a frozen dataclass whose fields
carry their constraint in ``metadata`` through :func:`spec` (kind, bounds, choices, pattern);
:func:`parse_into` checks a benchmark's ``params`` mapping against it, rejects unknown keys and
returns the typed, defaults-filled dataclass. This module knows no workload type and imports
neither the plan nor the workloads (they import it).

Sizes (kind ``size``) follow the one size grammar of :mod:`testbed_shared.units`.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import field
from typing import Any, TypeVar

from testbed_shared.units import SizeError, parse_size

T = TypeVar("T")

#: limits that hold for every value anywhere in ``params`` (hostile or mistyped plans)
MAX_DEPTH = 8
MAX_NODES = 10_000
MAX_STR = 4096
MAX_INT = 2**53
#: a required field (no default)
REQUIRED = object()


class ParamError(Exception):
    """A benchmark parameter (or field) that is wrong: ``field`` is relative to the benchmark
    (``params.size``, ``name``); the plan loader turns it into a PlanError with file and line."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


NAME_RE = r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}"


def spec(default: Any = REQUIRED, kind: str = "str", **rules: Any) -> Any:
    """A dataclass field with its schema: ``kind`` and rules lo, hi, choices, pattern."""
    meta = {"kind": kind, **rules}
    if default is REQUIRED:
        return field(default=None, metadata={**meta, "required": True})
    return field(default=default, metadata=meta)


# -- checking ------------------------------------------------------------------------------


def parse_into(schema: type[T], params: dict[str, Any], btype: str) -> T:
    """``params`` checked against ``schema`` (a frozen dataclass built with :func:`spec`).

    Checks the generic limits (:func:`check_tree`), refuses unknown keys, fills defaults, converts
    and bounds every value, then builds the dataclass (whose ``__post_init__`` checks what spans
    fields). Raises :class:`ParamError` naming the field.
    """
    check_tree(params)
    fields = {f.name: f for f in dataclasses.fields(schema)}
    unknown = [_key(k) for k in sorted(set(params) - set(fields), key=str)]
    if unknown:
        known = ", ".join(fields) or "none"
        raise ParamError(f"params.{unknown[0]}", f"unknown {btype} parameter (known: {known})")
    values = {}
    for name, f in fields.items():
        if params.get(name) is None:
            if f.metadata.get("required"):
                raise ParamError(f"params.{name}", "is required")
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            values[name] = _convert(name, default, f.metadata) if default is not None else None
        else:
            values[name] = _convert(name, params[name], f.metadata)
    return schema(**values)


def field_names(schema: type) -> set[str]:
    """The parameter names a params dataclass takes."""
    return {f.name for f in dataclasses.fields(schema)}


def check_tree(value: Any, where: str = "params") -> None:
    """Bounded depth and size, finite numbers, bounded ints and strings, string keys."""
    budget = [MAX_NODES]
    _walk(value, where, 0, budget)


def _walk(value: Any, where: str, depth: int, budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise ParamError(where, f"more than {MAX_NODES} values")
    if depth > MAX_DEPTH:
        raise ParamError(where, f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise ParamError(where, f"keys must be strings, got {k!r:.40}")
            _walk(v, f"{where}.{_key(k)}"[:200], depth + 1, budget)
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _walk(v, f"{where}[{i}]"[:200], depth + 1, budget)
    else:
        _check_scalar(value, where)


def _key(key: str) -> str:
    """A key as an error message shows it: on one line."""
    return key if key.isprintable() else repr(key)


def _check_scalar(value: Any, where: str) -> None:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int) and abs(value) > MAX_INT:
        raise ParamError(where, f"integer out of range (|n| <= 2**53), got {len(str(value))} digits")
    if isinstance(value, float) and not math.isfinite(value):
        raise ParamError(where, f"must be a finite number, got {value!r}")
    if isinstance(value, str) and len(value) > MAX_STR:
        raise ParamError(where, f"string longer than {MAX_STR} characters")
    if not isinstance(value, (int, float, str)):
        raise ParamError(where, f"unsupported value type {type(value).__name__}")


def _convert(name: str, value: Any, meta: dict[str, Any]) -> Any:
    where = f"params.{name}"
    value = _CONVERTERS[meta["kind"]](where, value, meta)
    choices = meta.get("choices")
    if choices is not None and value not in choices:
        raise ParamError(where, f"must be one of {', '.join(map(repr, choices))}; got {value!r:.60}")
    return value


def _as_int(where: str, value: Any, meta: dict[str, Any]) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ParamError(where, f"expected a whole number, got {value!r:.60}")
    return _bounded(where, value, meta)


def _as_num(where: str, value: Any, meta: dict[str, Any]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ParamError(where, f"expected a finite number, got {value!r:.60}")
    return _bounded(where, value, meta)


def _bounded(where: str, value: Any, meta: dict[str, Any]) -> Any:
    lo, hi = meta.get("lo"), meta.get("hi")
    if lo is not None and value < lo:
        raise ParamError(where, f"must be >= {lo}, got {value!r}")
    if hi is not None and value > hi:
        raise ParamError(where, f"must be <= {hi}, got {value!r}")
    return value


def _as_bool(where: str, value: Any, meta: dict[str, Any]) -> bool:
    if not isinstance(value, bool):
        raise ParamError(where, f"expected true or false, got {value!r:.60}")
    return value


def _as_str(where: str, value: Any, meta: dict[str, Any]) -> str:
    if not isinstance(value, str):
        raise ParamError(where, f"expected a string, got {value!r:.60}")
    pattern = meta.get("pattern")
    if pattern and not re.fullmatch(pattern, value, re.ASCII):
        raise ParamError(where, f"not allowed here: {value!r:.60}")
    return value


def _as_names(where: str, value: Any, meta: dict[str, Any]) -> tuple[str, ...]:
    """A string (comma-separated) or a list of strings, each a name (never an option)."""
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = [v.strip() for v in value]
    else:
        raise ParamError(where, f"a name or a list of names, got {value!r:.60}")
    if not items or any(not i for i in items):
        raise ParamError(where, "empty name")
    for item in items:
        if item.startswith("--") or not re.fullmatch(meta["pattern"], item, re.ASCII):
            raise ParamError(where, f"not a benchmark name: {item!r:.60}")
    return tuple(items)


def _as_nums(where: str, value: Any, meta: dict[str, Any]) -> tuple[float, ...]:
    if not isinstance(value, (list, tuple)):
        raise ParamError(where, f"expected a list of numbers, got {value!r:.60}")
    return tuple(_as_num(f"{where}[{i}]", v, meta) for i, v in enumerate(value))


def _as_map(where: str, value: Any, meta: dict[str, Any]) -> dict:
    if not isinstance(value, dict):
        raise ParamError(where, f"expected a mapping, got {value!r:.60}")
    pattern = meta.get("pattern")
    for key in value:
        if pattern and not re.fullmatch(pattern, key, re.ASCII):
            raise ParamError(where, f"key {key!r:.60} must be an identifier")
    return dict(value)


def _as_maps(where: str, value: Any, meta: dict[str, Any]) -> tuple[dict, ...]:
    """A list of mappings (string keys; values bounded by :func:`check_tree`)."""
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, dict) for v in value):
        raise ParamError(where, f"expected a list of mappings, got {value!r:.60}")
    return tuple(dict(v) for v in value)


def _as_size(where: str, value: Any, meta: dict[str, Any]) -> int:
    return _bounded(where, size_bytes(value, where), meta)


def size_bytes(value: Any, where: str = "size") -> int:
    """Bytes of a size in the one size grammar (:mod:`testbed_shared.units`); ParamError at ``where``."""
    try:
        return parse_size(value)
    except SizeError as exc:
        raise ParamError(where, str(exc)) from None


_CONVERTERS = {
    "int": _as_int,
    "num": _as_num,
    "bool": _as_bool,
    "str": _as_str,
    "names": _as_names,
    "nums": _as_nums,
    "map": _as_map,
    "maps": _as_maps,
    "size": _as_size,
}
