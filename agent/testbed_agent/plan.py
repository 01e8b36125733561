"""Benchmark plans: the classic text form and the YAML form (docs/design.md section 3)."""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from testbed_agent import workloads
from testbed_agent.adaptive import Adaptive, RepetitionsError, parse_repetitions
from testbed_agent.benchmark import DEFAULT_REPETITIONS, DEFAULT_WAIT_S, Benchmark
from testbed_agent.params import ParamError
from testbed_shared.errors import PlanError
from testbed_shared.studies import realized_params

__all__ = ["Benchmark", "ParamError", "Plan", "PlanError", "load_plan", "resolve_type"]
#: bounds that keep a plan runnable: waits and timeouts up to a week, repetitions up to 100000
MAX_SECONDS = 7 * 86_400.0
MAX_REPETITIONS = 100_000
#: a name becomes part of artifact file names (limit 255 bytes with prefix and suffix)
MAX_NAME_BYTES = 160
#: a data set: a name, or a Kaggle-style owner/name (no empty, dot-led or '..' part)
_PART = r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}"
_DATASET_RE = re.compile(_PART + r"(/" + _PART + r")?", re.ASCII)

_BENCH_KEYS = {"name", "type", "datasets", "wait_s", "repetitions", "timeout_s", "margin_percent", "params"}
_PLAN_KEYS = {"name", "description", "defaults", "benchmarks", "allow_weak_keys"}
_DEFAULT_KEYS = {"wait_s", "repetitions", "timeout_s", "margin_percent", "params"}


@dataclass(frozen=True)
class Plan:
    """A parsed, validated plan."""

    name: str
    path: str
    sha256: str
    form: str
    benchmarks: tuple[Benchmark, ...]
    #: ``allow_weak_keys: true`` at the plan's top level (YAML form only)
    allow_weak_keys: bool = False

    @property
    def executions(self) -> int:
        return sum(b.repetitions for b in self.benchmarks)


def load_plan(path: str | Path, known_types: set[str] | None = None) -> Plan:
    """Read and validate a plan file; raise :class:`PlanError` naming file, line and field."""
    p = Path(path)
    raw = _read_capped(p)
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
        known_types = set(workloads.registry())
        check_params(benches, str(p))
    for b in benches:
        if b.type not in known_types:
            missing = "; ".join(f"{m}: {why}" for m, why in workloads.unavailable().items())
            raise PlanError(
                str(p),
                b.line,
                "type",
                f"unknown benchmark type '{b.type}'",
                hint="known types: "
                + ", ".join(sorted(known_types))
                + (f" (not here: {missing})" if missing else ""),
            )
    weak = any(b.allow_weak_keys for b in benches)
    return Plan(
        name=name, path=str(p), sha256=sha, form=form, benchmarks=tuple(benches), allow_weak_keys=weak
    )


def check_params(benches: list[Benchmark], path: str) -> None:
    """Each benchmark's params and environment, checked by its workload type."""
    for b in benches:
        workload = workloads.get(b.type)
        if workload is None:
            continue
        try:
            workload.check(b)
        except ParamError as exc:
            raise PlanError(path, b.line, exc.field, " ".join(exc.problem.split())) from exc
        except (ValueError, TypeError, OSError) as exc:  # a workload's check tripped on odd input
            problem = " ".join(str(exc).split())[:200]
            raise PlanError(path, b.line, "params", f"cannot be checked: {problem}") from exc


def resolve_type(name: str, given: str) -> str:
    """Map a classic or aliased type to a workload type (each type declares its own spellings)."""
    return workloads.resolve_type(name, given)


# -- classic text form ---------------------------------------------------------------------

_TEXT_FIELDS = ("path_to_benchmark", "type", "datasets", "waittime_in_seconds", "num_executions")


def _parse_text(text: str, path: str) -> list[Benchmark]:
    benches: list[Benchmark] = []
    realized = realized_params(path)  # a published study plan: its pack's parameters per name
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
        name = check_name(name, path, lineno, "path_to_benchmark")
        wait_s = check_number(wait, path, lineno, "waittime_in_seconds", DEFAULT_WAIT_S, float)
        repetitions = check_repetitions(reps, path, lineno, "num_executions", (DEFAULT_REPETITIONS, None))[0]
        benches.append(
            Benchmark(
                name=name,
                type=resolve_type(name, btype),
                index=len(benches),
                line=lineno,
                datasets=check_datasets([d for d in re.split(r"[;|\s]+", datasets) if d], path, lineno),
                wait_s=wait_s,
                repetitions=repetitions,
                params=dict(realized.get(name, {})),
            )
        )
    return benches


def check_number(raw: Any, path: str, line: int | None, field_name: str, default: Any, kind: type) -> Any:
    """A wait or timeout in seconds (``kind`` float) or a count (int): finite, bounded, ASCII."""
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        return default
    if isinstance(raw, bool):
        raise PlanError(path, line, field_name, f"expected a number, got {raw!r}")
    try:
        value = _strict_float(raw) if kind is float else _strict_int(raw)
    except (TypeError, ValueError):
        what = "a whole number" if kind is int else "a number"
        raise PlanError(path, line, field_name, f"expected {what}, got {_short(raw)}") from None
    limit = MAX_SECONDS if kind is float else MAX_REPETITIONS
    if value < 0 or (kind is int and value == 0) or value > limit:
        low = ">= 1" if kind is int else ">= 0"
        raise PlanError(path, line, field_name, f"must be {low} and <= {limit}, got {_short(raw)}")
    return value


def check_repetitions(
    raw: Any, path: str, line: int | None, where: str, default: tuple[int, Adaptive | None]
) -> tuple[int, Adaptive | None]:
    """A count (``check_number``) or adaptive repetitions (adaptive.parse_repetitions)."""
    if not isinstance(raw, dict):
        count = check_number(raw, path, line, where, default[0], int)
        return (count, default[1]) if raw is None else (count, None)
    try:
        return parse_repetitions({k: v for k, v in raw.items() if not str(k).startswith("__")}, where)
    except RepetitionsError as exc:
        at = raw.get("__keylines__", {}).get(exc.field.rsplit(".", 1)[-1], line)
        raise PlanError(path, at, exc.field, exc.problem) from None


def _short(raw: Any) -> str:
    text = repr(raw)
    return text if len(text) <= 40 else f"{text[:37]}..."


_ASCII_INT = re.compile(r"[+-]?[0-9]{1,18}", re.ASCII)
_ASCII_FLOAT = re.compile(r"[+-]?([0-9]{1,18}(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,3})?", re.ASCII)


def _strict_int(raw: Any) -> int:
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float) and math.isfinite(raw) and raw.is_integer():
        return int(raw)
    if isinstance(raw, str) and _ASCII_INT.fullmatch(raw.strip()):
        return int(raw)
    raise ValueError(raw)


def _strict_float(raw: Any) -> float:
    if isinstance(raw, int) and abs(raw) <= 2**53:
        return float(raw)
    if isinstance(raw, float) and math.isfinite(raw):
        return raw
    if isinstance(raw, str) and _ASCII_FLOAT.fullmatch(raw.strip()):
        value = float(raw)
        if math.isfinite(value):
            return value
    raise ValueError(raw)


def check_name(name: str, path: str, line: int | None, field_name: str = "name") -> str:
    """A benchmark name: printable, no NUL, short enough to be part of a file name."""
    name = name.strip()
    if not name:
        raise PlanError(path, line, field_name, "is empty")
    if len(name.encode()) > MAX_NAME_BYTES:
        raise PlanError(path, line, field_name, f"longer than {MAX_NAME_BYTES} bytes ({len(name.encode())})")
    if not name.isprintable():
        raise PlanError(path, line, field_name, f"has control characters: {_short(name)}")
    return name


def check_datasets(raw: Any, path: str, line: int | None) -> tuple[str, ...]:
    """Data set names of the ``datasets`` field: a name or a list of names."""
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, (list, tuple)) or not all(isinstance(d, str) for d in items):
        raise PlanError(path, line, "datasets", f"a name or a list of names, got {_short(raw)}")
    for d in items:
        if not _DATASET_RE.fullmatch(d):
            raise PlanError(path, line, "datasets", f"not a data set name: {_short(d)}")
    return tuple(items)


# -- YAML form -----------------------------------------------------------------------------

#: limits of a YAML plan: bytes, nesting, and nodes after alias expansion (alias bombs)
MAX_PLAN_BYTES = 1 << 20
MAX_YAML_DEPTH = 32
MAX_YAML_NODES = 100_000


class _YamlLimit(Exception):
    """A YAML plan past one of the limits; ``line`` is where it was noticed."""

    def __init__(self, problem: str, line: int | None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


class _LineLoader(yaml.SafeLoader):
    """SafeLoader that bounds depth and alias expansion and remembers the line of every mapping
    under ``__line__`` (and of its keys under ``__keylines__``)."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise _YamlLimit(
                    f"nested deeper than {MAX_YAML_DEPTH} levels", self.peek_event().start_mark.line + 1
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self) -> Any:
        node = super().compose_document()
        _expanded_size(node, {}, set())
        return node


def _expanded_size(node: yaml.Node, memo: dict[int, int], active: set[int]) -> int:
    """Nodes of ``node`` with every alias expanded; raise past MAX_YAML_NODES or on a cycle."""
    if id(node) in memo:
        return memo[id(node)]
    if id(node) in active:
        raise _YamlLimit("recursive alias", node.start_mark.line + 1)
    active.add(id(node))
    total = 1
    if isinstance(node, yaml.SequenceNode):
        total += sum(_expanded_size(n, memo, active) for n in node.value)
    elif isinstance(node, yaml.MappingNode):
        total += sum(_expanded_size(k, memo, active) + _expanded_size(v, memo, active) for k, v in node.value)
    active.discard(id(node))
    if total > MAX_YAML_NODES:
        raise _YamlLimit(
            f"more than {MAX_YAML_NODES} values once aliases are expanded", node.start_mark.line + 1
        )
    memo[id(node)] = total
    return total


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    for key, _value in node.value:  # the loader's own bookkeeping keys: a plan may not use them
        if isinstance(key, yaml.ScalarNode) and key.value in ("__line__", "__keylines__"):
            raise _YamlLimit(f"'{key.value}' is a reserved key", key.start_mark.line + 1)
    mapping = yaml.SafeLoader.construct_mapping(loader, node, deep=deep)
    mapping["__line__"] = node.start_mark.line + 1
    mapping["__keylines__"] = {k.value: k.start_mark.line + 1 for k, _ in node.value if hasattr(k, "value")}
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _read_capped(p: Path) -> bytes:
    """The plan's bytes, at most MAX_PLAN_BYTES of them (issue 26): the cap is on bytes, checked
    before anything is decoded or parsed, for both plan forms; a larger file, or an endless one
    (a FIFO, /dev/zero), is refused after reading one byte past the cap."""
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_PLAN_BYTES + 1)
    except OSError as exc:
        raise PlanError(str(p), None, None, f"cannot read plan: {exc.strerror}") from exc
    if len(raw) > MAX_PLAN_BYTES:
        raise PlanError(str(p), None, None, f"plan larger than {MAX_PLAN_BYTES} bytes")
    return raw


def _count_values(text: str) -> None:
    """Refuse a YAML plan of more than MAX_YAML_NODES values before it is composed: the events
    are counted by libyaml's C parser (pure Python where it is missing), which needs neither the
    time nor the memory that composing a 1 MiB flat list takes."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    kinds = (yaml.ScalarEvent, yaml.SequenceStartEvent, yaml.MappingStartEvent, yaml.AliasEvent)
    n = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, kinds):
            n += 1
            if n > MAX_YAML_NODES:
                raise _YamlLimit(f"more than {MAX_YAML_NODES} values", event.start_mark.line + 1)


def _strip(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k not in ("__line__", "__keylines__")}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def _load_yaml(text: str, path: str) -> Any:
    if len(text.encode()) > MAX_PLAN_BYTES:
        raise PlanError(path, None, None, f"plan larger than {MAX_PLAN_BYTES} bytes")
    try:
        _count_values(text)
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        problem = " ".join(str(getattr(exc, "problem", None) or exc).split())[:200]
        raise PlanError(path, line, None, f"invalid YAML: {problem}") from exc
    except _YamlLimit as exc:
        raise PlanError(path, exc.line, None, f"YAML refused: {exc.problem}") from None
    except (ValueError, OverflowError, RecursionError, TypeError) as exc:
        # e.g. an integer of more than 4300 digits, a timestamp out of range, an unhashable key
        raise PlanError(path, None, None, "YAML refused: " + " ".join(str(exc).split())[:120]) from None


def _check_keys(mapping: dict, allowed: set[str], path: str, where: str, what: str) -> None:
    lines = mapping.get("__keylines__", {})
    unknown = sorted(str(k) for k in set(mapping) - allowed - {"__line__", "__keylines__"})
    if unknown:
        key = unknown[0]
        raise PlanError(
            path,
            lines.get(key, mapping.get("__line__")),
            f"{where}{key if key.isprintable() else repr(key)}"[:200],
            f"unknown {what} key",
            hint=f"{what} keys: " + ", ".join(sorted(allowed)),
        )


def _parse_yaml(text: str, path: str) -> tuple[str, list[Benchmark]]:
    doc = _load_yaml(text, path)
    if not isinstance(doc, dict):
        raise PlanError(path, 1, None, "a YAML plan is a mapping with 'benchmarks'")
    keylines = doc.get("__keylines__", {})
    _check_keys(doc, _PLAN_KEYS, path, "", "plan")
    defaults = _parse_defaults(doc.get("defaults"), path, keylines.get("defaults"))
    items = doc.get("benchmarks")
    if not isinstance(items, list):
        raise PlanError(path, keylines.get("benchmarks"), "benchmarks", "must be a list of benchmarks")
    weak = doc.get("allow_weak_keys", False)
    if not isinstance(weak, bool):
        raise PlanError(
            path,
            keylines.get("allow_weak_keys"),
            "allow_weak_keys",
            f"expected true or false, got {_short(weak)}",
        )
    benches = [_parse_item(item, i, path, defaults) for i, item in enumerate(items)]
    if weak:  # a study plan running key sizes unsafe today (workloads/crypto: crypto.study)
        benches = [replace(b, allow_weak_keys=True) for b in benches]
    _check_default_params(defaults, benches, path)
    name = doc.get("name")
    if name is None:
        name = Path(path).stem
    elif not isinstance(name, str):
        raise PlanError(path, keylines.get("name"), "name", f"expected a string, got {_short(name)}")
    return check_name(name, path, keylines.get("name")), benches


@dataclass(frozen=True)
class _Defaults:
    wait_s: float
    repetitions: tuple[int, Adaptive | None]
    timeout_s: float | None
    margin_percent: float | None
    params: dict[str, Any]
    line: int | None


def _parse_defaults(raw: Any, path: str, line: int | None) -> _Defaults:
    defaults = {} if raw is None else raw
    if not isinstance(defaults, dict):
        raise PlanError(path, line, "defaults", "must be a mapping")
    _check_keys(defaults, _DEFAULT_KEYS, path, "defaults.", "defaults")
    dlines = defaults.get("__keylines__", {})
    params = defaults.get("params")
    if params is not None and not isinstance(params, dict):
        raise PlanError(path, dlines.get("params", line), "defaults.params", "must be a mapping")
    return _Defaults(
        wait_s=check_number(
            defaults.get("wait_s"), path, dlines.get("wait_s"), "defaults.wait_s", DEFAULT_WAIT_S, float
        ),
        repetitions=check_repetitions(
            defaults.get("repetitions"),
            path,
            dlines.get("repetitions"),
            "defaults.repetitions",
            (DEFAULT_REPETITIONS, None),
        ),
        timeout_s=check_timeout(
            defaults.get("timeout_s"), path, dlines.get("timeout_s"), "defaults.timeout_s", None
        ),
        margin_percent=check_margin(
            defaults.get("margin_percent"),
            path,
            dlines.get("margin_percent"),
            "defaults.margin_percent",
            None,
        ),
        params=_strip(params or {}),
        line=dlines.get("params", line),
    )


def check_timeout(
    raw: Any, path: str, line: int | None, field_name: str, default: float | None
) -> float | None:
    value = check_number(raw, path, line, field_name, default, float)
    if value is not None and value <= 0:
        raise PlanError(path, line, field_name, f"must be > 0, got {_short(raw)}")
    return value


def check_margin(
    raw: Any, path: str, line: int | None, field_name: str, default: float | None
) -> float | None:
    """An equivalence margin in percent: a number between 0 and 100 (exclusive)."""
    if raw is None:
        return default
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or not math.isfinite(raw):
        raise PlanError(path, line, field_name, f"expected a percentage, got {_short(raw)}")
    if not 0 < raw < 100:
        raise PlanError(path, line, field_name, f"must be between 0 and 100 (percent), got {_short(raw)}")
    return float(raw)


def _parse_item(item: Any, i: int, path: str, d: _Defaults) -> Benchmark:
    if not isinstance(item, dict):
        raise PlanError(path, None, f"benchmarks[{i}]", "each benchmark is a mapping with name and type")
    line = item["__line__"]
    klines = item["__keylines__"]
    _check_keys(item, _BENCH_KEYS, path, "", "benchmark")
    name = item.get("name")
    if not isinstance(name, str):
        raise PlanError(path, klines.get("name", line), "name", "is missing or not a string")
    name = check_name(name, path, klines.get("name", line))
    btype = item.get("type", "standard")
    if not isinstance(btype, str):
        raise PlanError(path, klines.get("type", line), "type", f"expected a string, got {_short(btype)}")
    params = item.get("params")
    if params is not None and not isinstance(params, dict):
        raise PlanError(path, klines.get("params", line), "params", "must be a mapping")
    wtype = resolve_type(name, btype)
    reps = check_repetitions(
        item.get("repetitions"), path, klines.get("repetitions", line), "repetitions", d.repetitions
    )
    return Benchmark(
        name=name,
        type=wtype,
        index=i,
        line=line,
        datasets=check_datasets(item.get("datasets") or (), path, klines.get("datasets", line)),
        wait_s=check_number(item.get("wait_s"), path, klines.get("wait_s", line), "wait_s", d.wait_s, float),
        repetitions=reps[0],
        adaptive=reps[1],
        timeout_s=check_timeout(
            item.get("timeout_s"), path, klines.get("timeout_s", line), "timeout_s", d.timeout_s
        ),
        margin_percent=check_margin(
            item.get("margin_percent"),
            path,
            klines.get("margin_percent", line),
            "margin_percent",
            d.margin_percent,
        ),
        params={**_defaults_for(wtype, d.params), **_strip(params or {})},
    )


def _defaults_for(wtype: str, params: dict[str, Any]) -> dict[str, Any]:
    """The defaults.params a type takes: all of them for types that check their own keys."""
    known = workloads.known_keys(wtype)
    return dict(params) if known is None else {k: v for k, v in params.items() if k in known}


def _check_default_params(d: _Defaults, benches: list[Benchmark], path: str) -> None:
    """A defaults.params key that no benchmark of the plan takes is a typo."""
    taken: set[str] = set()
    for b in benches:
        known = workloads.known_keys(b.type)
        taken |= set(d.params) if known is None else known
    for key in sorted(set(d.params) - taken, key=str):
        raise PlanError(path, d.line, f"defaults.params.{key}"[:200], "no benchmark of this plan takes it")
