"""Study packs (docs/design.md section 10): a manifest that cites outside its paper, leaves a deviation
unexplained or lacks a value is refused, naming the element; the shipped manifests load and name
existing plans; a plan header or a doc says "reproduces" only for a study with exact rows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from testbed_shared.studies import ManifestError, all_manifests, load_manifest, studies_dir

HEAD = "id: S1\npaper: {lines: 10}\n"


def one(source: str = "S1 L1", status: str = "exact", value: str = "value: 1, ") -> str:
    return HEAD + f"elements: [{{id: a, what: w, source: {source}, {value}status: {status}}}]\n"


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("id: S7\npaper: {lines: 10}\n", "id must be one of"),
        (one(source="S1 L11"), "past"),
        (one(source="S2 L1"), "another study"),
        (one(status="adapted"), "needs a reason"),
        (one(source="L1"), "not a source"),
        (one(value=""), "value is missing"),
        (one(status="maybe"), "status must"),
    ],
)
def test_bad_manifests_name_the_element(tmp_path: Path, body: str, match: str) -> None:
    p = tmp_path / "manifest.yml"
    p.write_text(body)
    with pytest.raises(ManifestError, match=match):
        load_manifest(p)


def pub(extra: str) -> str:
    return HEAD + f"published: [{{id: t1, source: S1 L2, value: 1.5, {extra}}}]\n"


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (pub("not_comparable: ''"), "not_comparable must say why"),
        (pub("fitted: 3"), "fitted must say why"),
        (pub("not_comparable: other unit, fitted: the model"), "either not_comparable or fitted"),
        (pub("approx: 0.9"), "approx must be a factor above 1"),
        (pub("approx: true"), "approx must be a factor above 1"),
        (HEAD + "published: [{id: t1, source: S1 L2, value: [30, 25]}]\n", r"a range value is \[low, high\]"),
    ],
)
def test_published_values_say_how_they_compare(tmp_path: Path, body: str, match: str) -> None:
    p = tmp_path / "manifest.yml"
    p.write_text(body)
    with pytest.raises(ManifestError, match=match):
        load_manifest(p)


def test_comparability_is_counted_and_read(tmp_path: Path) -> None:
    p = tmp_path / "manifest.yml"
    p.write_text(
        HEAD
        + "published:\n"
        + "  - {id: a, source: S1 L1, value: 7, approx: 1.4}\n"
        + "  - {id: b, source: S1 L2, value: 2.5, not_comparable: another experiment}\n"
        + "  - {id: c, source: S1 L3, value: 0.418, fitted: the retention model}\n"
        + "  - {id: d, source: S1 L4, value: [25, 30]}\n"
    )
    m = load_manifest(p)
    assert m.published_counts() == {"published": 4, "not comparable": 1, "fitted": 1}
    assert m.published_value("b").not_comparable == "another experiment" and not m.published_value("a").fitted
    assert m.published_value("c").fitted == "the retention model" and m.published_value("d").value == [25, 30]


def test_a_good_manifest_counts_its_statuses(tmp_path: Path) -> None:
    p = tmp_path / "manifest.yml"
    p.write_text(
        HEAD
        + "plans: [x.yml]\nelements:\n"
        + "  - {id: a, what: w, source: S1 L1-3, value: 1, status: exact}\n"
        + "  - {id: b, what: w, source: 'S1 L2, S1 L4', value: 2, status: adapted, reason: emulated}\n"
        + "published:\n  - {id: t1, source: S1 L9, value: 1.5, unit: ms, table: Table 1}\n"
    )
    m = load_manifest(p)
    assert m.counts() == {"exact": 1, "adapted": 1, "not here": 0}
    assert [d.id for d in m.deviations()] == ["b"] and m.published_value("t1").value == 1.5


# -- the shipped study packs -----------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
PLANS = ROOT / "workloads" / "plans"
CLAIM = re.compile(r"\breproduc(?:e|es|ed|ing)\b", re.IGNORECASE)


def _plan_path(study_dir: Path, name: str) -> Path | None:
    for base in (study_dir, PLANS):
        if (base / name).is_file():
            return base / name
    return None


def test_every_shipped_manifest_loads_and_names_existing_plans() -> None:
    manifests = all_manifests()
    assert {m.id for m in manifests} == {"S0", "S1", "S2", "S3", "S4"}, "one study pack per paper"
    for m in manifests:
        assert m.elements and m.published, f"{m.id}: a manifest lists the design and the published values"
        assert m.plans, f"{m.id}: names its plans"
        for name in m.plans:
            assert _plan_path(m.path.parent, name) is not None, f"{m.id}: plan {name} does not exist"
        paper = ROOT.parent / "shared" / "studies" / m.paper.get("file", "")
        if paper.is_file():  # the papers sit beside the repository on the development machine
            assert paper.read_bytes().count(b"\n") == m.paper["lines"], m.id  # as wc -l counts them


def _header(path: Path) -> str:
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        lines.append(line)
    return "\n".join(lines)


def test_a_plan_says_reproduces_only_for_a_study_with_exact_rows() -> None:
    """docs/design.md section 10: "reproduces" only for what a manifest marks exact."""
    owners = {}
    for m in all_manifests():
        for name in m.plans:
            owners[name] = m
    plans = [*PLANS.glob("*.yml"), *PLANS.glob("*.txt"), *studies_dir().glob("*/*.yml")]
    for path in plans:
        if path.name == "manifest.yml":
            continue
        head = _header(path)
        if not CLAIM.search(head):
            continue
        derived = re.match(r"# Derived from (\S+)", head)
        owner = owners.get(Path(derived.group(1)).name if derived else path.name)
        assert owner is not None, f"{path.name} says it reproduces a study but no manifest lists it"
        assert owner.counts()["exact"] > 0, f"{path.name}: {owner.id} has no exact rows"


def test_docs_say_reproduces_only_for_studies_with_exact_rows() -> None:
    """A line of README.md or docs/*.md claiming to reproduce names a study (S0-S4) or one of its
    plans, and that study's manifest has exact rows."""
    by_id = {m.id: m for m in all_manifests()}
    plan_owner = {name: m for m in by_id.values() for name in m.plans}
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for n, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), start=1):
            claim = re.sub(
                r"[\"'`]reproduces[\"'`]", "", line, flags=re.IGNORECASE
            )  # the word quoted: no claim
            if not re.search(r"\breproduces\b", claim, re.IGNORECASE):
                continue
            named = [by_id[s] for s in re.findall(r"\b(S[0-4])\b", line) if s in by_id]
            named += [m for name, m in plan_owner.items() if name in line]
            assert named, f"{doc.name}:{n} says 'reproduces' without naming a study or its plan"
            for m in named:
                assert m.counts()["exact"] > 0, f"{doc.name}:{n}: {m.id} has no exact rows"
