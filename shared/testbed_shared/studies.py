"""Study packs (docs/design.md section 10): the fidelity manifest of a published study.

A study pack lives in ``workloads/studies/<id>/`` (``S0`` ... ``S4``): its plans and
``manifest.yml``. The manifest lists every design element of the paper (machines, factors and
levels, commands and parameters, repetitions, metrics, analyses, tables and figures), each with
its source in the paper (``S1 L637`` or ``S1 L680-687``), the value, and a status:

* ``exact``: the toolkit does what the paper did;
* ``adapted``: it does something else on purpose; ``reason`` says what differs and why;
* ``not here``: it cannot be done here; ``reason`` says why and what would make it possible.

It also transcribes the paper's published values (``published``), each with its line, and
says how each may be compared with a rerun: by default a rerun's interval that meets the range the
printed digits stand for (7.85 is [7.845, 7.855]); ``approx: F`` for a value the paper gives
roughly ("~7", "roughly factor 15"): it stands for [value / F, value x F], F chosen so that the
paper's own data meet it; a ``value: [low, high]`` range for a stated range ("25-30 %");
``not_comparable: REASON`` where a rerun cannot estimate the same quantity (another experiment,
another unit, another measurement), so no verdict is printed; ``fitted: REASON`` where the
emulator's inputs were fitted to this very number, so agreement is by construction and is labelled
fitted, never inside. This module reads and checks manifests; ``plan show`` prints a study plan's
deviations from it and ``testbed-report study`` puts the published values beside a rerun's.

A plan in the classic text form carries no parameters, yet a study's names meant something
precise in its own code (a fio command line, a benchmark list). ``realize`` gives, per plan file
and benchmark name, the workload parameters that do the same work here; the plan loader applies
them to that plan's text-form entries (:func:`realized_params`), so the published plan stays
byte for byte as printed and every record still says what ran.

Manifest layout (YAML)::

    id: S1
    title: ...
    paper: {file: S1-serverless-local-io-thesis.txt, lines: 1279, sha256: ..., cite: "..."}
    plans: [faas-io.yml, timeofday-dd.yml]        # file names under workloads/plans/ or the pack
    realize:                                       # optional: parameters of text-plan names
      cc-datascience-study.txt: {fio_4k_sequentialread: {job: studies/S2/fio/x.fio, ramp_s: 0}}
    elements:
      - {id: io.write, what: write command, source: S1 L637, value: ..., status: exact}
      - {id: ..., status: adapted, reason: ...}
    published:
      - {id: t13.aws.write.mean, table: Table 13, source: S1 L800, value: 1.23, unit: ms, ...}
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from testbed_shared.errors import TestbedError
from testbed_shared.paths import workloads_dir

STATUSES = ("exact", "adapted", "not here")
STUDY_IDS = ("S0", "S1", "S2", "S3", "S4")
#: a source in the paper: "S1 L637", "S1 L680-687", several separated by ", "
SOURCE_RE = re.compile(r"(S[0-4]) L([0-9]{1,5})(?:-([0-9]{1,5}))?")
_ID_RE = re.compile(r"[A-Za-z0-9_.:+-]{1,120}")


#: libyaml's safe loader when PyYAML has it (a large manifest parses 50x faster)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class ManifestError(TestbedError):
    """A manifest that cannot be read; names the file and the element."""


@dataclass(frozen=True)
class Element:
    """One design element of the paper and how the toolkit treats it."""

    id: str
    what: str
    source: str
    value: Any
    status: str
    reason: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Published:
    """One value the paper printed, which a rerun can be compared with."""

    id: str
    source: str
    value: Any
    unit: str = ""
    table: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def not_comparable(self) -> str:
        """Why a rerun cannot be compared with this value ("" when it can)."""
        return str(self.extra.get("not_comparable") or "")

    @property
    def fitted(self) -> str:
        """Which fitted input reproduces this value by construction ("" when none does)."""
        return str(self.extra.get("fitted") or "")

    @property
    def derived(self) -> str:
        """The formula of a value derived from the paper's printed numbers ("" for a printed one)."""
        d = self.extra.get("derived")
        return "" if not d else (d if isinstance(d, str) else "from the paper's printed values")


@dataclass(frozen=True)
class Manifest:
    """A study's fidelity manifest."""

    id: str
    title: str
    path: Path
    paper: dict[str, Any]
    plans: tuple[str, ...]
    elements: tuple[Element, ...]
    published: tuple[Published, ...]
    #: plan file name -> benchmark name -> workload parameters (see the module docstring)
    realize: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Elements per status."""
        return {s: sum(1 for e in self.elements if e.status == s) for s in STATUSES}

    def published_counts(self) -> dict[str, int]:
        """Published values: all of them, those a rerun cannot be compared with, those fitted."""
        return {
            "published": len(self.published),
            "not comparable": sum(1 for p in self.published if p.not_comparable),
            "fitted": sum(1 for p in self.published if p.fitted),
        }

    def deviations(self) -> list[Element]:
        """The elements that are not ``exact``."""
        return [e for e in self.elements if e.status != "exact"]

    def element(self, element_id: str) -> Element:
        for e in self.elements:
            if e.id == element_id:
                return e
        raise KeyError(element_id)

    def published_value(self, value_id: str) -> Published:
        for p in self.published:
            if p.id == value_id:
                return p
        raise KeyError(value_id)


def studies_dir() -> Path:
    """``workloads/studies`` of the repository or of the deployed copy."""

    return workloads_dir() / "studies"


def source_lines(source: str) -> list[tuple[str, int, int]]:
    """``(study, first, last)`` of every reference in ``source``; raise ValueError if none."""
    refs = []
    for part in source.split(","):
        m = SOURCE_RE.fullmatch(part.strip())
        if not m:
            raise ValueError(f"not a source like 'S1 L637' or 'S1 L680-687': {part.strip()!r}")
        first = int(m.group(2))
        last = int(m.group(3) or first)
        if last < first:
            raise ValueError(f"line range runs backwards: {part.strip()!r}")
        refs.append((m.group(1), first, last))
    return refs


def load_manifest(path: Path | str) -> Manifest:
    """Read and check one manifest; raise :class:`ManifestError` naming the file and element.

    Every text plan's load looks its name up in the manifests, so a parsed manifest is kept while
    its file is unchanged (same size and modification time)."""
    p = Path(path)
    try:
        st = p.stat()
    except OSError as exc:
        raise ManifestError(f"{p}: cannot read manifest: {exc.strerror}") from None
    return _load_manifest(p.resolve(), st.st_mtime_ns, st.st_size)


@functools.lru_cache(maxsize=32)
def _load_manifest(p: Path, _mtime_ns: int, _size: int) -> Manifest:
    try:
        doc = yaml.load(p.read_text(encoding="utf-8"), Loader=_LOADER)  # noqa: S506 - a SafeLoader
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ManifestError(f"{p}: cannot read manifest: {' '.join(str(exc).split())[:160]}") from None
    if not isinstance(doc, dict):
        raise ManifestError(f"{p}: a manifest is a mapping with id, paper, plans, elements, published")
    sid = doc.get("id")
    if sid not in STUDY_IDS:
        raise ManifestError(f"{p}: id must be one of {', '.join(STUDY_IDS)}, got {sid!r}")
    paper = doc.get("paper") or {}
    if not isinstance(paper, dict) or not isinstance(paper.get("lines"), int):
        raise ManifestError(f"{p}: paper must give at least 'lines' (the line count of the cited text)")
    elements = tuple(_element(e, i, p, sid, paper["lines"]) for i, e in enumerate(_list(doc, "elements", p)))
    published = tuple(
        _published(e, i, p, sid, paper["lines"]) for i, e in enumerate(_list(doc, "published", p))
    )
    for what, items in (("elements", elements), ("published", published)):
        seen: set[str] = set()
        for item in items:
            if item.id in seen:
                raise ManifestError(f"{p}: {what}: duplicate id {item.id!r}")
            seen.add(item.id)
    plans = doc.get("plans") or []
    if not isinstance(plans, list) or not all(isinstance(x, str) for x in plans):
        raise ManifestError(f"{p}: plans must be a list of plan file names")
    realize = _realize(doc.get("realize"), p, plans)
    return Manifest(
        id=sid,
        title=str(doc.get("title", "")),
        path=p,
        paper=paper,
        plans=tuple(plans),
        elements=elements,
        published=published,
        realize=realize,
    )


def _realize(raw: Any, p: Path, plans: list[str]) -> dict[str, dict[str, dict[str, Any]]]:
    """The ``realize`` table: plan file (one of ``plans``) -> name -> parameter mapping."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ManifestError(f"{p}: realize must map plan file names to benchmark names")
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for plan, names in raw.items():
        if plan not in plans:
            raise ManifestError(f"{p}: realize: {plan!r} is not one of the manifest's plans")
        if not isinstance(names, dict) or not all(
            isinstance(k, str) and isinstance(v, dict) for k, v in names.items()
        ):
            raise ManifestError(f"{p}: realize: {plan}: map each benchmark name to its parameters")
        out[plan] = {k: dict(v) for k, v in names.items()}
    return out


def _list(doc: dict[str, Any], key: str, p: Path) -> list[Any]:
    items = doc.get(key) or []
    if not isinstance(items, list):
        raise ManifestError(f"{p}: {key} must be a list")
    return items


def _common(item: Any, i: int, p: Path, what: str, sid: str, lines: int) -> tuple[str, str]:
    if not isinstance(item, dict):
        raise ManifestError(f"{p}: {what}[{i}] must be a mapping")
    eid = item.get("id")
    if not isinstance(eid, str) or not _ID_RE.fullmatch(eid):
        raise ManifestError(f"{p}: {what}[{i}]: id must be a short name, got {eid!r}")
    source = item.get("source")
    if not isinstance(source, str):
        raise ManifestError(f"{p}: {what} {eid}: source is missing (e.g. '{sid} L637')")
    try:
        refs = source_lines(source)
    except ValueError as exc:
        raise ManifestError(f"{p}: {what} {eid}: {exc}") from None
    for study, first, last in refs:
        if study != sid:
            raise ManifestError(f"{p}: {what} {eid}: source {source!r} cites another study")
        if not 1 <= first <= last <= lines:
            raise ManifestError(f"{p}: {what} {eid}: line {last} is past the paper's {lines} lines")
    if "value" not in item:
        raise ManifestError(f"{p}: {what} {eid}: value is missing")
    split = [k for k, v in item.items() if v is None and isinstance(k, str) and " " in k.strip()]
    if split:
        raise ManifestError(
            f"{p}: {what} {eid}: {split[0][:40]!r} reads as a key without a value: "
            "quote a text with commas inside {...}"
        )
    return eid, source


def _element(item: Any, i: int, p: Path, sid: str, lines: int) -> Element:
    eid, source = _common(item, i, p, "elements", sid, lines)
    status = item.get("status")
    if status not in STATUSES:
        allowed = ", ".join(STATUSES)
        raise ManifestError(f"{p}: element {eid}: status must be one of {allowed}, got {status!r}")
    reason = item.get("reason") or ""
    if status != "exact" and not (isinstance(reason, str) and reason.strip()):
        raise ManifestError(f"{p}: element {eid}: status {status!r} needs a reason")
    what = item.get("what")
    if not isinstance(what, str) or not what.strip():
        raise ManifestError(f"{p}: element {eid}: 'what' (the design element) is missing")
    known = {"id", "what", "source", "value", "status", "reason"}
    extra = {k: v for k, v in item.items() if k not in known}
    return Element(eid, what, source, item["value"], status, str(reason), extra)


def _published(item: Any, i: int, p: Path, sid: str, lines: int) -> Published:
    eid, source = _common(item, i, p, "published", sid, lines)
    for key in ("not_comparable", "fitted"):
        if key in item and not (isinstance(item[key], str) and item[key].strip()):
            raise ManifestError(f"{p}: published {eid}: {key} must say why (a text)")
    if "not_comparable" in item and "fitted" in item:
        raise ManifestError(f"{p}: published {eid}: a value is either not_comparable or fitted, not both")
    approx = item.get("approx")
    if approx is not None and (
        isinstance(approx, bool) or not isinstance(approx, (int, float)) or approx <= 1
    ):
        raise ManifestError(
            f"{p}: published {eid}: approx must be a factor above 1 (e.g. 1.4), got {approx!r}"
        )
    value = item["value"]
    if isinstance(value, list) and not (
        len(value) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        and value[0] <= value[1]
    ):
        raise ManifestError(f"{p}: published {eid}: a range value is [low, high], got {value!r}")
    known = {"id", "source", "value", "unit", "table"}
    extra = {k: v for k, v in item.items() if k not in known}
    return Published(eid, source, item["value"], str(item.get("unit", "")), str(item.get("table", "")), extra)


def all_manifests(root: Path | None = None) -> list[Manifest]:
    """Every ``workloads/studies/*/manifest.yml``, sorted by study id."""
    base = root or studies_dir()
    return sorted((load_manifest(m) for m in base.glob("*/manifest.yml")), key=lambda m: m.id)


def manifest(study_id: str, root: Path | None = None) -> Manifest:
    """The manifest of ``study_id`` (case-insensitive); raise :class:`ManifestError` naming it."""
    sid = study_id.upper()
    if sid not in STUDY_IDS:
        raise ManifestError(f"unknown study {study_id!r}", hint="studies: " + ", ".join(STUDY_IDS))
    base = root or studies_dir()
    found = [m for m in base.glob("*/manifest.yml") if m.parent.name.upper() == sid]
    if not found:
        raise ManifestError(f"study {sid} has no manifest in {base}")
    return load_manifest(found[0])


def realized_params(plan_path: Path | str, root: Path | None = None) -> dict[str, dict[str, Any]]:
    """Name -> parameters that a study pack gives the text plan ``plan_path`` ({} if none)."""
    found = manifest_for_plan(plan_path, root)
    if found is None:
        return {}
    return {k: dict(v) for k, v in found.realize.get(Path(plan_path).name, {}).items()}


def manifest_for_plan(plan_path: Path | str, root: Path | None = None) -> Manifest | None:
    """The manifest that lists this plan (by file name), or None."""
    name = Path(plan_path).name
    for m in all_manifests(root):
        if name in m.plans:
            return m
    return None
