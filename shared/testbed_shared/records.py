"""Result records (docs/design.md section 4): the one definition the agent's writer and every reader use.

A record is one JSON object per line of ``results/<run_id>/<host>.jsonl``. This module holds what a
record is (:data:`FIELDS`, :func:`make`), checks one (:func:`validate`: one line naming file, line
and field), reads result files (:func:`result_files`, :func:`read_lines`, :func:`read`), says which
of a record's metrics are primary (:func:`primary_metrics`) and decides which record counts for each
execution (:func:`select`, :func:`dedupe`). The agent (``results``, resume, adaptive repetitions) and
the report (``load``, crypto tables, audit) go through it.

**Primary metrics.** A record names its primary metrics (``primary``: the metrics the report's
error-controlled decisions and adaptive repetitions use), written by the agent from its workload
type's rule when it makes the record, so readers need no registry of workload types. Records
written before the field existed are read with :data:`LEGACY_PRIMARY`, the types' rules as they
stood then, frozen.

**What one execution is.** An execution is one repetition of one benchmark of a plan on one host:
``(run_id, host, index, benchmark, repetition)`` (:data:`EXECUTION_KEY`), *within one run*. A run is
what agents wrote into one results file, resumes included (they append to it). Two result files
hold the same run when they share an agent ``session`` or an identical record (the same run fetched
twice, or fetched before it ended and again after); records of different runs never count as copies
of each other, even where their run ids agree (two results directories that happen to carry the
same name): :func:`runs` tells them apart.

**Which record counts** (:func:`select`): identical copies of a record count once; an
``interrupted`` record gives way to a final record of the same execution; a retried execution
counts its last attempt (``attempt``: 1, 2, ...), so a failed first attempt followed by an ok retry
is one ok execution; two different records of the same attempt conflict: the first counts and a
warning names both.
"""

from __future__ import annotations

import functools
import json
import math
import re
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed_shared.errors import TestbedError

#: version of the record layout (docs/design.md section 4)
SCHEMA_VERSION = 1
#: record statuses; "interrupted" is superseded by a later final record of the same execution
STATUSES = ("ok", "failed", "timeout", "skipped", "interrupted")
FINAL_STATUSES = frozenset({"ok", "failed", "timeout", "skipped"})
#: direction in which a metric wins
BETTER = ("higher", "lower")
#: the fields that identify one execution of one benchmark within one run
EXECUTION_KEY = ("run_id", "host", "index", "benchmark", "repetition")
#: optional record field: the equivalence margin in percent of the report's decisions (the plan's
#: ``margin_percent``, per benchmark or in its defaults)
MARGIN_FIELD = "margin_percent"
#: optional record field: the block (a text id) of a blocked design, e.g. ``pair-3`` of the quick run
BLOCK_FIELD = "block"
#: bound of the integer fields (repetition, index, attempt)
MAX_INT = 2**31
#: optional record field: the names of the record's primary metrics, a list (docs/design.md section 4)
PRIMARY_FIELD = "primary"


@dataclass(frozen=True)
class Field:
    """One field of a record: its name, whether every record has it, what it holds."""

    name: str
    required: bool
    doc: str


#: every field the agent writes, in its order (readers take records with the required ones)
FIELDS = (
    Field("schema", True, f"record layout version, {SCHEMA_VERSION}"),
    Field("run_id", True, "run id: a plain name, the results directory's"),
    Field("host", True, "the host's inventory name"),
    Field("label", False, "what the report calls the machine (default: host)"),
    Field("groups", False, "inventory groups, a list of names"),
    Field("plan_sha256", False, "SHA-256 of the plan file that ran"),
    Field("plan", False, "the plan's name"),
    Field("benchmark", True, "the benchmark's name in the plan"),
    Field("type", False, "its workload type"),
    Field("index", False, "its position in the plan (-1: none)"),
    Field("params", False, "its params as the plan wrote them, plus what the run resolved"),
    Field(MARGIN_FIELD, False, "equivalence margin of the report's decisions, percent (0, 100)"),
    Field("repetition", True, "repetition number, from 0"),
    Field(BLOCK_FIELD, False, "its block: runs of two labels in one block are paired by the report"),
    Field("started_at", False, "RFC 3339 time the execution started"),
    Field("ended_at", False, "RFC 3339 time it ended"),
    Field("status", True, "ok, failed, timeout, skipped or interrupted"),
    Field("error", False, "why it is not ok"),
    Field("metrics", False, "name -> {value, unit, better}; every ok record has it"),
    Field(PRIMARY_FIELD, False, "names of its primary metrics (absent in records made before it)"),
    Field("samples", False, "raw detail (latency percentiles, individual values ...)"),
    Field("telemetry", False, "system CPU, steal ... while it ran"),
    Field("tool", False, "the tool and its version"),
    Field("artifacts", False, "raw outputs kept beside the results"),
    Field("attempt", False, "1 for the first execution, +1 per retry"),
    Field("session", False, "the agent session that wrote it"),
    Field("adaptive", False, "the adaptive-repetition decision after it"),
)


class RecordError(TestbedError):
    """A record that breaks the schema, or a result file that cannot be read: names file and line."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {problem}", "see docs/design.md section 4 for the record schema")
        self.path = path
        self.line = line
        self.problem = problem

    def __reduce__(self) -> tuple:
        return (type(self), (self.path, self.line, self.problem))


# -- building --------------------------------------------------------------------------------


def metric(value: float, unit: str, better: str) -> dict[str, Any]:
    """One metric entry of a record: its value, the SI base unit named, the direction that wins."""
    if better not in BETTER:
        raise ValueError(f"better must be one of {BETTER}, got {better!r}")
    return {"value": float(value), "unit": unit, "better": better}


def make(
    *,
    run_id: str,
    host: str,
    benchmark: str,
    repetition: int,
    status: str,
    label: str | None = None,
    groups: Sequence[str] = (),
    plan_sha256: str = "",
    plan: str = "",
    btype: str = "",
    index: int = -1,
    params: Mapping[str, Any] | None = None,
    margin_percent: float | None = None,
    block: str | None = None,
    started_at: str | None = None,
    ended_at: str | None = None,
    error: str | None = None,
    metrics: Mapping[str, Any] | None = None,
    primary: Iterable[str] | None = None,
    samples: Mapping[str, Any] | None = None,
    telemetry: Mapping[str, Any] | None = None,
    tool: Mapping[str, Any] | None = None,
    artifacts: Sequence[str] = (),
    attempt: int = 1,
    session: str | None = None,
    adaptive: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A record with every field in :data:`FIELDS` order (optional ones left out when unset:
    ``margin_percent``, ``primary``, ``block``, ``adaptive``; the agent always gives ``primary``)."""
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    rec: dict[str, Any] = {
        "schema": SCHEMA_VERSION,
        "run_id": run_id,
        "host": host,
        "label": label if label is not None else host,
        "groups": list(groups),
        "plan_sha256": plan_sha256,
        "plan": plan,
        "benchmark": benchmark,
        "type": btype,
        "index": index,
        "params": dict(params or {}),
        MARGIN_FIELD: margin_percent,
        "repetition": repetition,
        BLOCK_FIELD: block,
        "started_at": started_at,
        "ended_at": ended_at,
        "status": status,
        "error": error,
        "metrics": dict(metrics or {}),
        PRIMARY_FIELD: sorted(primary) if primary is not None else None,
        "samples": dict(samples or {}),
        "telemetry": dict(telemetry or {}),
        "tool": dict(tool or {}),
        "artifacts": list(artifacts),
        "attempt": attempt,
        "session": session,
        "adaptive": dict(adaptive) if adaptive is not None else None,
    }
    for optional in (MARGIN_FIELD, PRIMARY_FIELD, BLOCK_FIELD, "adaptive"):
        if rec[optional] is None:
            del rec[optional]
    return rec


# -- checking --------------------------------------------------------------------------------


def _is_int(v: Any, lo: int, hi: int) -> bool:
    return v.__class__ is int and lo <= v < hi


def finite_number(v: Any) -> bool:
    """A JSON number (not a boolean) that is finite."""
    if v.__class__ is not int and v.__class__ is not float:
        return False
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def _string(key: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r.get(key).__class__ is str and bool(r[key])


def _optional_string(key: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r.get(key) is None or r[key].__class__ is str


def _optional_object(key: str) -> Callable[[dict[str, Any]], bool]:
    return lambda r: r.get(key) is None or r[key].__class__ is dict


def _short(v: Any) -> str:
    """A value for an error message, cut to 60 characters."""
    try:
        text = json.dumps(v)
    except (ValueError, TypeError, RecursionError):
        text = type(v).__name__
    return text if len(text) <= 60 else text[:57] + "..."


#: (check, problem) in the order problems are reported; ``problem`` gets the record
_CHECKS: tuple[tuple[Callable[[dict[str, Any]], bool], Callable[[dict[str, Any]], str]], ...] = (
    (
        lambda r: r.get("schema") == SCHEMA_VERSION and r["schema"].__class__ is int,
        lambda r: f"unsupported schema {_short(r.get('schema'))} (expected {SCHEMA_VERSION})",
    ),
    *(
        (_string(k), lambda r, k=k: f"field '{k}' must be a non-empty string")
        for k in ("run_id", "host", "benchmark")
    ),
    (
        lambda r: r.get("status") in STATUSES,
        lambda r: f"field 'status' must be one of {', '.join(STATUSES)}, got {_short(r.get('status'))}",
    ),
    (
        lambda r: _is_int(r.get("repetition"), 0, MAX_INT),
        lambda r: f"field 'repetition' must be an integer from 0 to {MAX_INT - 1}",
    ),
    (
        lambda r: (
            r.get("groups", ()).__class__ in (list, tuple)
            and all(g.__class__ is str for g in r.get("groups", ()))
        ),
        lambda r: "field 'groups' must be a list of strings",
    ),
    (
        lambda r: "metrics" in r or r.get("status") != "ok",
        lambda r: "field 'metrics' is missing (an ok record has its metrics)",
    ),
    (_optional_object("metrics"), lambda r: "field 'metrics' must be an object"),
    (
        lambda r: _is_int(r.get("index", 0), -MAX_INT + 1, MAX_INT),
        lambda r: f"field 'index' must be an integer (|index| < {MAX_INT}), got {_short(r.get('index'))}",
    ),
    *(
        (_optional_string(k), lambda r, k=k: f"field '{k}' must be a string, got {_short(r[k])}")
        for k in ("label", "type", "started_at", "ended_at", "session", BLOCK_FIELD)
    ),
    (_optional_object("samples"), lambda r: "field 'samples' must be an object"),
    (
        lambda r: r.get("attempt") is None or _is_int(r["attempt"], 1, MAX_INT),
        lambda r: f"field 'attempt' must be a whole number >= 1, got {_short(r['attempt'])}",
    ),
    (
        lambda r: (
            r.get(MARGIN_FIELD) is None or (finite_number(r[MARGIN_FIELD]) and 0 < r[MARGIN_FIELD] < 100)
        ),
        lambda r: f"field '{MARGIN_FIELD}' must be a number between 0 and 100, got {_short(r[MARGIN_FIELD])}",
    ),
    (
        lambda r: (
            r.get(PRIMARY_FIELD) is None
            or (
                r[PRIMARY_FIELD].__class__ is list
                and all(n.__class__ is str for n in r[PRIMARY_FIELD])
                and len(set(r[PRIMARY_FIELD])) == len(r[PRIMARY_FIELD])
            )
        ),
        lambda r: (
            f"field '{PRIMARY_FIELD}' must be a list of distinct metric names, got {_short(r[PRIMARY_FIELD])}"
        ),
    ),
    (
        lambda r: r.get(PRIMARY_FIELD) is None or set(r[PRIMARY_FIELD]) <= set(r.get("metrics") or ()),
        lambda r: (
            f"field '{PRIMARY_FIELD}' names "
            f"{_short(next(n for n in r[PRIMARY_FIELD] if n not in (r.get('metrics') or ())))}, "
            "which is not one of the record's metrics"
        ),
    ),
)


def problem(rec: Any) -> str | None:
    """The first schema problem of ``rec`` (None when it is a valid record); metric entries are
    checked by :func:`metric_problem`."""
    if rec.__class__ is not dict:
        return "a record must be a JSON object"
    for ok, explain in _CHECKS:
        if not ok(rec):
            return explain(rec)
    return None


def metric_problem(name: str, entry: Any) -> str | None:
    """What is wrong with one metric entry (None when nothing is)."""
    if entry.__class__ is not dict or "value" not in entry or entry.get("unit").__class__ is not str:
        return f"metric '{name}': each metric must be an object with value, unit (a string) and better"
    if entry.get("better") not in BETTER:
        return f"metric '{name}': better must be 'higher' or 'lower', got {entry.get('better')!r}"
    if not finite_number(entry["value"]):
        return f"metric '{name}': value must be a finite number, got {entry['value']!r}"
    return None


def validate(rec: Any, path: str, line: int | None, *, metrics: bool = True) -> dict[str, Any]:
    """``rec`` if it is a valid record; else raise :class:`RecordError` naming file, line and the
    first wrong field. ``metrics=False`` leaves the metric entries to the caller (the report's
    loader checks them column-wise, with :func:`metric_problem`'s words)."""
    bad = problem(rec)
    if bad is None and metrics and rec.get("metrics"):
        bad = next((p for n, e in rec["metrics"].items() if (p := metric_problem(n, e))), None)
    if bad is not None:
        raise RecordError(path, line, bad)
    return rec


# -- primary metrics -------------------------------------------------------------------------


@dataclass(frozen=True)
class PrimaryRule:
    """Which metric names are primary: the first tier of patterns (full matches) that matches any
    name gives them; ``per_cell``: tiers apply to each cell apart (a name's part before its last
    dot), so each cell has its own primary metric."""

    tiers: tuple[tuple[str, ...], ...]
    per_cell: bool = False

    def pick(self, names: Iterable[str]) -> list[str]:
        """The primary metrics among ``names``, sorted."""
        groups: dict[str, list[str]] = {}
        for name in sorted(set(names)):
            groups.setdefault(name.rsplit(".", 1)[0] if self.per_cell else "", []).append(name)
        out: list[str] = []
        for members in groups.values():
            for tier in self.tiers:
                hit = [n for n in members if any(re.fullmatch(p, n) for p in tier)]
                if hit:
                    out += hit
                    break
        return sorted(out)


#: The workload types' primary-metric rules (aliases included) as they stood when records began to
#: name their primary metrics (issue 35): frozen, used only for records without ``primary``. A rule
#: changed later applies to new records, which carry its result; never edit this table.
LEGACY_PRIMARY: Mapping[str, PrimaryRule] = {
    "fio": PrimaryRule(((r"(read|write|trim)_bw_bytes",),)),
    "dd": PrimaryRule(((r"(read|write)_seconds",),)),
    "kaggle_notebook": PrimaryRule(((r"wall_s",),)),
    "notebook": PrimaryRule(((r"wall_s",),)),
    "pyperformance": PrimaryRule(((r".+",),)),
    "pyperf": PrimaryRule(((r".+",),)),
    # a cell's throughput; its time per operation where the cell has no throughput
    "crypto": PrimaryRule(((r".+\.throughput",), (r".+\.time_per_op",)), per_cell=True),
    # the function's own latency (per phase in a sequence), else the median round trip
    "faas": PrimaryRule(((r"latency_s",), (r"(?!direct_).*_latency_s",), (r"round_trip_p50_s",))),
}


@functools.lru_cache(maxsize=4096)
def legacy_primary(btype: str, names: tuple[str, ...]) -> tuple[str, ...]:
    """The primary metrics among ``names`` by :data:`LEGACY_PRIMARY` (none for a type it lacks)."""
    rule = LEGACY_PRIMARY.get(btype)
    return () if rule is None else tuple(rule.pick(names))


def primary_metrics(rec: Mapping[str, Any], btype: str | None = None) -> list[str]:
    """The names of a record's primary metrics, sorted: its ``primary`` field, or for a record
    made before the field its type's rule in :data:`LEGACY_PRIMARY` (``btype``, else the record's
    ``type``) over its metrics."""
    given = rec.get(PRIMARY_FIELD)
    if given is not None:
        return sorted(given)
    names = tuple(sorted(rec.get("metrics") or ()))
    return list(legacy_primary(btype if btype is not None else str(rec.get("type") or ""), names))


# -- reading ---------------------------------------------------------------------------------


def result_files(paths: Iterable[Path | str]) -> list[Path]:
    """The result files of the given paths: a ``.jsonl`` file itself, a directory's ``*.jsonl``
    (searched recursively, sorted); a path that does not exist is an error."""
    files: list[Path] = []
    for given in paths:
        p = Path(given)
        if p.is_dir():
            files += sorted(p.rglob("*.jsonl"))
        elif p.is_file() and p.suffix == ".jsonl":
            files.append(p)
        elif not p.exists():
            raise RecordError(str(p), None, "no such file or directory")
    return files


#: bytes of a result file read at a time by :func:`read_lines` (then on to the end of that line)
READ_BLOCK = 1 << 24
_NOT_UTF8 = "not UTF-8 text (results are UTF-8 JSON Lines)"


def read_lines(path: Path) -> Iterator[tuple[int, str, Any]]:
    """(line number, line, parsed JSON) of each non-empty line of a result file. A half-written
    last line (a crash mid-write) is skipped; any other line that is not JSON, or bytes that are
    not UTF-8, raise :class:`RecordError` naming the line.

    The file is read twice, a block at a time, so memory stays bounded by one block and one
    line whatever the file's size: first to check that all of it is UTF-8 (nothing is yielded from
    a file that is not, as when the whole file was decoded at once), then line by line (lines end
    at ``"\\n"`` only)."""
    _check_utf8(path)
    with path.open("rb") as f:
        for i, data in enumerate(f, 1):
            torn = not data.endswith(b"\n")
            try:
                raw = (data if torn else data[:-1]).decode("utf-8")
            except UnicodeDecodeError:  # appended to since the check
                raise RecordError(str(path), i, _NOT_UTF8) from None
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except json.JSONDecodeError as exc:
                if torn:
                    return
                raise RecordError(str(path), i, f"not valid JSON ({exc.msg})") from None
            except RecursionError:
                raise RecordError(str(path), i, "JSON nested too deeply") from None
            yield i, raw, value


def _check_utf8(path: Path) -> None:
    """Raise :class:`RecordError` naming the first line of ``path`` that is not UTF-8. Blocks end at
    a line's end, so no character is split between two blocks; ASCII blocks are not decoded."""
    lines = 0
    with path.open("rb") as f:
        while block := f.read(READ_BLOCK):
            if not block.endswith(b"\n"):
                block += f.readline()
            if not block.isascii():
                try:
                    block.decode("utf-8")
                except UnicodeDecodeError as exc:
                    line = lines + block.count(b"\n", 0, exc.start) + 1
                    raise RecordError(str(path), line, _NOT_UTF8) from None
            lines += block.count(b"\n")


def digest(line: str) -> int:
    """A checksum of a record's line: equal for identical copies."""
    return zlib.crc32(line.strip().encode())


@dataclass
class Read:
    """Records of result files: each with its file and line, and what the reading decided."""

    records: list[dict[str, Any]]
    where: list[tuple[str, int]]
    warnings: list[str] = field(default_factory=list)


def read(paths: Iterable[Path | str], *, keep: Callable[[dict[str, Any]], bool] | None = None) -> Read:
    """The records that count (:func:`select`) of the result files under ``paths``, validated;
    ``keep`` chooses which of them to return. Records of different runs with one run id are kept
    apart (:func:`runs`): the later ones get ``run_id@N``."""
    files = result_files(paths)
    per_file: list[list[tuple[int, str, dict[str, Any]]]] = []
    for f in files:
        per_file.append([(n, raw, validate(rec, str(f), n)) for n, raw, rec in read_lines(f)])
    run_of = runs([markers((r.get("session"), digest(raw)) for _, raw, r in recs) for recs in per_file])
    renamed, warnings = rename_runs(
        files, run_of, [{(r["run_id"], r["host"]) for _, _, r in recs} for recs in per_file]
    )
    flat: list[dict[str, Any]] = []
    where: list[tuple[str, int]] = []
    entries: list[Entry] = []
    for i, (f, recs) in enumerate(zip(files, per_file, strict=True)):
        for n, raw, rec in recs:
            new = renamed.get((i, rec["run_id"]))
            flat.append(rec if new is None else {**rec, "run_id": new})
            where.append((str(f), n))
            entries.append(entry(flat[-1], digest(raw), f"{f}:{n}"))
    chosen = select(entries)
    warnings += chosen.warnings()
    kept = [i for i in chosen.kept if keep is None or keep(flat[i])]
    return Read([flat[i] for i in kept], [where[i] for i in kept], warnings)


# -- which record counts ---------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """What :func:`select` needs of one record."""

    key: tuple[Any, ...]
    attempt: int
    status: str
    digest: Any
    where: str = ""


def execution_key(rec: Mapping[str, Any]) -> tuple[Any, ...]:
    """Identity of one execution within a run (:data:`EXECUTION_KEY`; no index counts as -1)."""
    return tuple(rec.get(f, -1) if f == "index" else rec.get(f) for f in EXECUTION_KEY)


def entry(rec: Mapping[str, Any], digest: Any, where: str = "") -> Entry:
    """The :class:`Entry` of a record (``digest``: equal for identical copies)."""
    return Entry(execution_key(rec), int(rec.get("attempt") or 1), str(rec.get("status")), digest, where)


@dataclass
class Selection:
    """What :func:`select` kept (positions, in input order) and dropped."""

    kept: list[int]
    duplicates: int = 0  # identical copies of a record
    superseded: int = 0  # interrupted records and earlier attempts of a retried execution
    conflicts: list[str] = field(default_factory=list)  # one line per conflicting execution

    def warnings(self, limit: int = 20) -> list[str]:
        out = []
        if self.duplicates:
            out.append(f"{self.duplicates} duplicated record(s) (identical copies) counted once")
        out += self.conflicts[:limit]
        if len(self.conflicts) > limit:
            out.append(f"... {len(self.conflicts) - limit} more conflicting duplicates")
        return out


def select(entries: Sequence[Entry]) -> Selection:
    """One record per execution (module docstring: identical copies once, the final record over an
    interrupted one, the last attempt of a retried execution, the first of conflicting ones)."""
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, e in enumerate(entries):
        groups.setdefault(e.key, []).append(i)
    out = Selection(kept=[])
    for key, members in groups.items():
        if len(members) == 1:
            out.kept.append(members[0])
            continue
        unique: list[int] = []
        seen: set[Any] = set()
        for i in members:
            if entries[i].digest in seen:
                out.duplicates += 1
            else:
                seen.add(entries[i].digest)
                unique.append(i)
        final = [i for i in unique if entries[i].status != "interrupted"] or unique[-1:]
        top = max(entries[i].attempt for i in final)
        best = [i for i in final if entries[i].attempt == top]
        out.superseded += len(unique) - len(best)
        if len(best) > 1:
            run_id, host, _, bench, rep = key
            first = entries[best[0]].where
            for other in best[1:]:
                out.conflicts.append(
                    f"CONFLICTING duplicate of {bench} repetition {rep} on {host} (run {run_id}): "
                    f"{entries[other].where or 'a record'} differs from {first or 'the first'}; "
                    "the first is used"
                )
        out.kept.append(best[0])
    out.kept.sort()
    return out


@dataclass
class Dedupe:
    """What :func:`dedupe` kept and what it dropped."""

    kept: list[dict[str, Any]]
    duplicates: int = 0
    superseded: int = 0
    conflicts: list[str] = field(default_factory=list)


def dedupe(records: Sequence[dict[str, Any]]) -> Dedupe:
    """:func:`select` over record objects (an identical copy: the same JSON)."""
    entries = [entry(r, json.dumps(r, sort_keys=True, default=str)) for r in records]
    chosen = select(entries)
    return Dedupe([records[i] for i in chosen.kept], chosen.duplicates, chosen.superseded, chosen.conflicts)


def markers(records: Iterable[tuple[str | None, Any]]) -> set[tuple[str, Any]]:
    """What ties a result file to the other files of its run, from the (session, digest) of each of
    its records: the agent sessions and the records themselves."""
    out: set[tuple[str, Any]] = set()
    for session, line_digest in records:
        if session is not None:
            out.add(("session", session))
        out.add(("record", line_digest))
    return out


def runs(marks: Sequence[set[Any]]) -> list[int]:
    """Which run each result file holds: files that share a marker (``("session", id)``,
    ``("record", digest)``: :func:`markers`) are one run. ``marks[i]`` are file i's; returns a run
    number per file (0, 1, ... in order of first appearance)."""
    parent = list(range(len(marks)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[Any, int] = {}
    for i, file_marks in enumerate(marks):
        for mark in file_marks:
            j = owner.setdefault(mark, i)
            if j != i:
                parent[root(i)] = root(j)
    numbers: dict[int, int] = {}
    return [numbers.setdefault(root(i), len(numbers)) for i in range(len(marks))]


def rename_runs(
    files: Sequence[Path], run_of: Sequence[int], pairs: Sequence[set[tuple[str, str]]]
) -> tuple[dict[tuple[int, str], str], list[str]]:
    """Keep different runs that carry the same (run id, host) apart: the records of the second run
    seen get ``run_id@2`` (``@3`` ...). Returns ({(file index, run id): new run id}, warnings)."""
    owners: dict[tuple[str, str], list[int]] = {}
    for i, file_pairs in enumerate(pairs):
        for pair in file_pairs:
            runs_here = owners.setdefault(pair, [])
            if run_of[i] not in runs_here:
                runs_here.append(run_of[i])
    renamed: dict[tuple[int, str], str] = {}
    warnings = []
    for (run_id, host), runs_here in owners.items():
        for n, run in enumerate(runs_here[1:], start=2):
            new = f"{run_id}@{n}"
            idx = [i for i, r in enumerate(run_of) if r == run and (run_id, host) in pairs[i]]
            for i in idx:
                renamed[(i, run_id)] = new
            first = next(i for i, r in enumerate(run_of) if r == runs_here[0] and (run_id, host) in pairs[i])
            warnings.append(
                f"{files[idx[0]]} and {files[first]} hold different runs with run id {run_id!r} on "
                f"{host} (no record or agent session in common): kept apart, the second as {new!r}"
            )
    return renamed, warnings
