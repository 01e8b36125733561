"""Plan parameters by schema: one frozen dataclass per workload type (issue 12 item 7).

Every field carries its constraint in ``metadata`` (kind, bounds, choices, pattern);
:func:`parse_params` checks a benchmark's ``params`` mapping against the dataclass of its type,
rejects unknown keys and returns the typed, defaults-filled dataclass. Workloads may call
:func:`parse_params` for typed access; the plan loader calls :func:`validate` for every benchmark.

Sizes (fio ``size``, dd ``bs``): a whole number of bytes, or digits with ``k``/``m``/``g``/``t``
(any case) or ``KiB``/``MiB``/``GiB``/``TiB``, all binary (k = 1024) as fio's and dd's ``K`` are.
``kB``/``KB``/``MB`` are refused: dd reads them as powers of 1000 and fio as powers of 1024, so
one plan would mean two sizes.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass, field
from typing import Any

from testbed_agent.plan import ParamError

#: limits that hold for every value anywhere in ``params`` (hostile or mistyped plans)
MAX_DEPTH = 8
MAX_NODES = 10_000
MAX_STR = 4096
MAX_INT = 2**53
#: a required field (no default)
REQUIRED = object()

_SIZE_RE = re.compile(r"([0-9]{1,15})\s*(?:([kmgt])|([KMGT])iB)?", re.ASCII | re.IGNORECASE)
_AMBIGUOUS_SIZE_RE = re.compile(r"[0-9]+\s*[kmgtKMGT]B", re.ASCII)
_SIZE_MULT = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}
NAME_RE = r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}"


def spec(default: Any = REQUIRED, kind: str = "str", **rules: Any) -> Any:
    """A dataclass field with its schema: ``kind`` and rules lo, hi, choices, pattern."""
    meta = {"kind": kind, **rules}
    if default is REQUIRED:
        return field(default=None, metadata={**meta, "required": True})
    return field(default=default, metadata=meta)


# -- the dataclasses, one per workload type --------------------------------------------------


@dataclass(frozen=True)
class SysinfoParams:
    """``sysinfo`` takes no parameters."""


@dataclass(frozen=True)
class FioParams:
    job: str | None = spec(None, pattern=r"[^\x00-\x1f:]+")
    size: int = spec("1G", "size", lo=4096, hi=2**50)
    runtime_s: int = spec(60, "int", lo=1, hi=86_400)
    ramp_s: int = spec(2, "int", lo=0, hi=3600)
    #: an engine name (which engines exist depends on fio's build: an unknown one fails at run time)
    ioengine: str = spec("libaio", pattern=r"[a-z][a-z0-9_]{0,31}")
    iodepth: int = spec(16, "int", lo=1, hi=65_536)
    allow_device: bool = spec(False, "bool")
    #: fio reads ':' as a list of files: a name with one could write elsewhere
    filename: str | None = spec(None, pattern=r"[^\x00-\x1f:\\]+")


@dataclass(frozen=True)
class DdParams:
    bs: int = spec("128k", "size", lo=1, hi=2**30)
    count: int = spec(8000, "int", lo=1, hi=2**40)
    source: str = spec("urandom", choices=("urandom", "zero"))
    oflag: str = spec("", choices=("", "direct", "dsync", "sync", "nocache"))
    iflag: str = spec("direct", choices=("", "direct", "dsync", "sync", "nocache"))
    conv: str = spec("fdatasync", choices=("", "fdatasync", "fsync"))
    read: bool = spec(True, "bool")
    pause_s: float = spec(1.0, "num", lo=0, hi=3600)
    allow_device: bool = spec(False, "bool")
    filename: str | None = spec(None, pattern=r"[^\x00-\x1f]+")

    def __post_init__(self) -> None:
        if self.bs * self.count > 2**50:
            raise ParamError("params.count", f"bs x count is {self.bs * self.count} bytes, more than 1 PiB")


@dataclass(frozen=True)
class PyperformanceParams:
    #: a name, a group, a comma list or a list of names; never an option (``--help``)
    benchmarks: tuple[str, ...] = spec("default", "names", pattern=r"-?" + NAME_RE)
    mode: str = spec("normal", choices=("fast", "rigorous", "normal", "debug-single-value"))
    fast: bool = spec(False, "bool")
    affinity: str = spec("", pattern=r"([0-9]{1,4}([-,][0-9]{1,4})*)?")
    venv_dir: str | None = spec(None, pattern=r"[^\x00-\x1f]+")


@dataclass(frozen=True)
class NotebookParams:
    scale: str = spec("standard", choices=("quick", "standard", "large"))
    seed: int = spec(42, "int", lo=0, hi=2**32 - 1)
    kernel: str = spec("python3", pattern=r"[A-Za-z0-9_.-]{1,64}")
    cell_timeout_s: float = spec(0, "num", lo=0, hi=7 * 86_400)
    parameters: dict = field(default_factory=dict, metadata={"kind": "map", "pattern": r"[A-Za-z_]\w{0,63}"})


@dataclass(frozen=True)
class FaasParams:
    function: str = spec(REQUIRED, pattern=r"[A-Za-z0-9_-]{1,64}")
    mode: str = spec("warm", choices=("warm", "cold", "cold_warm", "scaling", "retention"))
    endpoint: str = spec("auto", pattern=r"auto|local|http://[\x21-\x7e]{1,200}")
    profile: str = spec("aws-lambda", pattern=r"[A-Za-z0-9_.-]{1,64}")
    calls: int = spec(5, "int", lo=1, hi=1_000_000)
    concurrency: int = spec(1, "int", lo=1, hi=4096)
    memory_mb: int | None = spec(None, "int", lo=1, hi=1_048_576)
    tmp_mb: int | None = spec(None, "int", lo=1, hi=1_048_576)
    warmup: int = spec(1, "int", lo=0, hi=100_000)
    keep_alive_s: float | None = spec(None, "num", lo=1e-3, hi=86_400)
    function_timeout_s: float | None = spec(None, "num", lo=1e-3, hi=86_400)
    event: dict = field(default_factory=dict, metadata={"kind": "map"})
    env: dict = field(default_factory=dict, metadata={"kind": "map", "pattern": r"[A-Za-z_]\w{0,127}"})
    gaps_s: tuple[float, ...] = spec((), "nums", lo=0, hi=86_400)
    #: design factors of a study (file size, I/O size, ...): kept in the record for the report's
    #: parameter ANOVA, not used by the run
    factors: dict = field(default_factory=dict, metadata={"kind": "map"})


#: workload type -> its params dataclass; types not listed (crypto) validate their own keys
SCHEMAS: dict[str, type] = {
    "sysinfo": SysinfoParams,
    "fio": FioParams,
    "dd": DdParams,
    "pyperformance": PyperformanceParams,
    "kaggle_notebook": NotebookParams,
    "faas": FaasParams,
}


# -- checking ------------------------------------------------------------------------------


def parse_params(btype: str, params: dict[str, Any]) -> Any:
    """The typed parameters of a benchmark of type ``btype``; raise :class:`ParamError`."""
    check_tree(params)
    schema = SCHEMAS.get(btype)
    if schema is None:
        return None
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


def known_keys(btype: str) -> set[str] | None:
    """Parameter names of a type, or None when the type validates its own keys."""
    schema = SCHEMAS.get(btype)
    return None if schema is None else {f.name for f in dataclasses.fields(schema)}


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


def _as_size(where: str, value: Any, meta: dict[str, Any]) -> int:
    return _bounded(where, size_bytes(value, where), meta)


def size_bytes(value: Any, where: str = "size") -> int:
    """Bytes of a size as a plan writes it; k = 1024; ambiguous ``kB``/``MB`` refused."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise ParamError(where, f"expected a size such as 4k, 64M or 1GiB, got {value!r:.60}")
    text = value.strip()
    if _AMBIGUOUS_SIZE_RE.fullmatch(text):
        raise ParamError(
            where,
            f"ambiguous size {text!r}: dd reads kB as 1000, fio as 1024; "
            f"write {text[:-1]} or {text[:-1]}iB (1024)",
        )
    m = _SIZE_RE.fullmatch(text)
    if not m:
        raise ParamError(where, f"not a size: {value!r:.60} (digits with k, m, g, t or KiB, MiB, GiB, TiB)")
    unit = (m.group(2) or m.group(3) or "").lower()
    return int(m.group(1)) * _SIZE_MULT[unit]


_CONVERTERS = {
    "int": _as_int,
    "num": _as_num,
    "bool": _as_bool,
    "str": _as_str,
    "names": _as_names,
    "nums": _as_nums,
    "map": _as_map,
    "size": _as_size,
}
