"""Benchmark plans: the classic text form and the YAML form (DESIGN.md section 3)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from testbed_agent.adaptive import Adaptive, RepetitionsError, parse_repetitions
from testbed_agent.errors import PlanError

DEFAULT_WAIT_S = 0.0
DEFAULT_REPETITIONS = 1

#: classic ``standard`` names -> workload type, by prefix
_STANDARD_PREFIXES = (
    ("systeminfo", "sysinfo"),
    ("sysinfo", "sysinfo"),
    ("fio_", "fio"),
    ("dd_", "dd"),
    ("pyperformance", "pyperformance"),
)
#: alternative spellings of types accepted in both forms
TYPE_ALIASES = {
    "notebook": "kaggle_notebook",
    "systeminfo": "sysinfo",
    "pyperf": "pyperformance",
}
_BENCH_KEYS = {"name", "type", "datasets", "wait_s", "repetitions", "timeout_s", "params"}
_PLAN_KEYS = {"name", "description", "defaults", "benchmarks"}
_DEFAULT_KEYS = {"wait_s", "repetitions", "timeout_s", "params"}


class ParamError(Exception):
    """Raised by a workload's ``check``: ``field`` is relative to the benchmark."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.problem = problem


@dataclass(frozen=True)
class Benchmark:
    """One plan entry: run ``repetitions`` times, ``wait_s`` seconds before each run."""

    name: str
    type: str
    index: int
    line: int
    datasets: tuple[str, ...] = ()
    wait_s: float = DEFAULT_WAIT_S
    repetitions: int = DEFAULT_REPETITIONS
    timeout_s: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    #: adaptive repetitions (``repetitions`` is then their max); None: a fixed count
    adaptive: Adaptive | None = None

    @property
    def key(self) -> str:
        """Identity inside a plan, used to resume: position and name."""
        return f"{self.index}:{self.name}"


@dataclass(frozen=True)
class Plan:
    """A parsed, validated plan."""

    name: str
    path: str
    sha256: str
    form: str
    benchmarks: tuple[Benchmark, ...]

    @property
    def executions(self) -> int:
        return sum(b.repetitions for b in self.benchmarks)


def load_plan(path: str | Path, known_types: set[str] | None = None) -> Plan:
    """Read and validate a plan file; raise :class:`PlanError` naming file, line and field."""
    p = Path(path)
    try:
        raw = p.read_bytes()
    except OSError as exc:
        raise PlanError(str(p), None, None, f"cannot read plan: {exc.strerror}") from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PlanError(str(p), None, None, "plan is not UTF-8 text") from exc
    sha = hashlib.sha256(raw).hexdigest()
    if p.suffix in (".yml", ".yaml"):
        name, benches = _parse_yaml(text, str(p))
        form = "yaml"
    else:
        name, benches = p.stem, _parse_text(text, str(p))
        form = "text"
    if not benches:
        raise PlanError(str(p), None, "benchmarks", "plan has no benchmarks")
    if known_types is None:
        from testbed_agent.workloads import REGISTRY

        known_types = set(REGISTRY)
        _check_params(benches, str(p))
    for b in benches:
        if b.type not in known_types:
            raise PlanError(
                str(p),
                b.line,
                "type",
                f"unknown benchmark type '{b.type}'",
                hint="known types: " + ", ".join(sorted(known_types)),
            )
    return Plan(name=name, path=str(p), sha256=sha, form=form, benchmarks=tuple(benches))


def _check_params(benches: list[Benchmark], path: str) -> None:
    from testbed_agent.workloads import REGISTRY

    for b in benches:
        workload = REGISTRY.get(b.type)
        if workload is None:
            continue
        try:
            workload.check(b)
        except ParamError as exc:
            raise PlanError(path, b.line, exc.field, exc.problem) from exc


def resolve_type(name: str, given: str) -> str:
    """Map a classic or aliased type to a workload type."""
    t = given.strip().lower()
    if t in ("standard", ""):
        base = Path(name).name.lower()
        for prefix, wtype in _STANDARD_PREFIXES:
            if base.startswith(prefix):
                return wtype
        if base.endswith(".ipynb"):
            return "kaggle_notebook"
        return t or "standard"
    return TYPE_ALIASES.get(t, t)


# -- classic text form ---------------------------------------------------------------------

_TEXT_FIELDS = ("path_to_benchmark", "type", "datasets", "waittime_in_seconds", "num_executions")


def _parse_text(text: str, path: str) -> list[Benchmark]:
    benches: list[Benchmark] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        content = line.split("#", 1)[0].strip().lstrip("\ufeff")
        if not content:
            continue
        fields = [f.strip() for f in content.split(",")]
        if len(fields) > len(_TEXT_FIELDS):
            raise PlanError(
                path,
                lineno,
                None,
                f"{len(fields)} fields, expected at most {len(_TEXT_FIELDS)}",
                hint="form: " + ",".join(_TEXT_FIELDS),
            )
        fields += [""] * (len(_TEXT_FIELDS) - len(fields))
        name, btype, datasets, wait, reps = fields
        if not name:
            raise PlanError(path, lineno, "path_to_benchmark", "is empty")
        wait_s = _number(wait, path, lineno, "waittime_in_seconds", DEFAULT_WAIT_S, float)
        repetitions = _number(reps, path, lineno, "num_executions", DEFAULT_REPETITIONS, int)
        benches.append(
            Benchmark(
                name=name,
                type=resolve_type(name, btype),
                index=len(benches),
                line=lineno,
                datasets=tuple(d for d in re.split(r"[;|\s]+", datasets) if d),
                wait_s=wait_s,
                repetitions=repetitions,
            )
        )
    return benches


def _number(raw: Any, path: str, line: int, field_name: str, default: Any, kind: type) -> Any:
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return default
    if isinstance(raw, bool):
        raise PlanError(path, line, field_name, f"expected a number, got {raw!r}")
    try:
        value = kind(raw) if kind is float else _strict_int(raw)
    except (TypeError, ValueError):
        what = "a whole number" if kind is int else "a number"
        raise PlanError(path, line, field_name, f"expected {what}, got {raw!r}") from None
    if value < 0 or (kind is int and value == 0):
        raise PlanError(path, line, field_name, f"must be {'>= 1' if kind is int else '>= 0'}, got {raw!r}")
    return value


def _repetitions(
    raw: Any, path: str, line: int | None, where: str, default: tuple[int, Adaptive | None]
) -> tuple[int, Adaptive | None]:
    """A count (``_number``) or adaptive repetitions (adaptive.parse_repetitions)."""
    if not isinstance(raw, dict):
        count = _number(raw, path, line, where, default[0], int)
        return (count, default[1]) if raw is None else (count, None)
    try:
        return parse_repetitions({k: v for k, v in raw.items() if not str(k).startswith("__")}, where)
    except RepetitionsError as exc:
        at = raw.get("__keylines__", {}).get(exc.field.rsplit(".", 1)[-1], line)
        raise PlanError(path, at, exc.field, exc.problem) from None


def _strict_int(raw: Any) -> int:
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str) and re.fullmatch(r"[+]?\d+", raw.strip()):
        return int(raw)
    raise ValueError(raw)


# -- YAML form -----------------------------------------------------------------------------


class _LineLoader(yaml.SafeLoader):
    """SafeLoader that remembers the line of every mapping under ``__line__``."""


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    mapping = yaml.SafeLoader.construct_mapping(loader, node, deep=deep)
    mapping["__line__"] = node.start_mark.line + 1
    mapping["__keylines__"] = {k.value: k.start_mark.line + 1 for k, _ in node.value if hasattr(k, "value")}
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in ("__line__", "__keylines__")}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _parse_yaml(text: str, path: str) -> tuple[str, list[Benchmark]]:
    try:
        doc = yaml.load(text, Loader=_LineLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = getattr(exc, "problem", None) or str(exc)
        raise PlanError(path, line, None, f"invalid YAML: {problem}") from exc
    if not isinstance(doc, dict):
        raise PlanError(path, 1, None, "a YAML plan is a mapping with 'benchmarks'")
    keylines = doc.get("__keylines__", {})
    unknown = set(doc) - _PLAN_KEYS - {"__line__", "__keylines__"}
    if unknown:
        key = sorted(unknown)[0]
        raise PlanError(
            path,
            keylines.get(key),
            key,
            "unknown plan key",
            hint="plan keys: " + ", ".join(sorted(_PLAN_KEYS)),
        )
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, dict):
        raise PlanError(path, keylines.get("defaults"), "defaults", "must be a mapping")
    dlines = defaults.get("__keylines__", {})
    for key in set(defaults) - _DEFAULT_KEYS - {"__line__", "__keylines__"}:
        raise PlanError(
            path,
            dlines.get(key),
            f"defaults.{key}",
            "unknown key",
            hint="defaults take: " + ", ".join(sorted(_DEFAULT_KEYS)),
        )
    d_wait = _number(
        defaults.get("wait_s"), path, dlines.get("wait_s"), "defaults.wait_s", DEFAULT_WAIT_S, float
    )
    d_reps = _repetitions(
        defaults.get("repetitions"),
        path,
        dlines.get("repetitions"),
        "defaults.repetitions",
        (DEFAULT_REPETITIONS, None),
    )
    d_timeout = _number(
        defaults.get("timeout_s"), path, dlines.get("timeout_s"), "defaults.timeout_s", None, float
    )
    d_params = _strip(defaults.get("params") or {})
    items = doc.get("benchmarks")
    if not isinstance(items, list):
        raise PlanError(path, keylines.get("benchmarks"), "benchmarks", "must be a list of benchmarks")
    benches: list[Benchmark] = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise PlanError(path, None, f"benchmarks[{i}]", "each benchmark is a mapping with name and type")
        line = item["__line__"]
        klines = item["__keylines__"]
        for key in set(item) - _BENCH_KEYS - {"__line__", "__keylines__"}:
            raise PlanError(
                path,
                klines.get(key, line),
                key,
                "unknown benchmark key",
                hint="benchmark keys: " + ", ".join(sorted(_BENCH_KEYS)),
            )
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise PlanError(path, klines.get("name", line), "name", "is missing or empty")
        btype = item.get("type", "standard")
        if not isinstance(btype, str):
            raise PlanError(path, klines.get("type", line), "type", f"expected a string, got {btype!r}")
        params = item.get("params") or {}
        if not isinstance(params, dict):
            raise PlanError(path, klines.get("params", line), "params", "must be a mapping")
        datasets = item.get("datasets") or ()
        if isinstance(datasets, str):
            datasets = (datasets,)
        reps = _repetitions(
            item.get("repetitions"), path, klines.get("repetitions", line), "repetitions", d_reps
        )
        benches.append(
            Benchmark(
                name=name.strip(),
                type=resolve_type(name, btype),
                index=i,
                line=line,
                datasets=tuple(str(d) for d in datasets),
                wait_s=_number(item.get("wait_s"), path, klines.get("wait_s", line), "wait_s", d_wait, float),
                repetitions=reps[0],
                adaptive=reps[1],
                timeout_s=_number(
                    item.get("timeout_s"), path, klines.get("timeout_s", line), "timeout_s", d_timeout, float
                ),
                params={**d_params, **_strip(params)},
            )
        )
    name = doc.get("name") or Path(path).stem
    return str(name), benches
