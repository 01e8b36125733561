"""Study packs (docs/design.md section 10): a manifest that cites outside its paper, leaves a deviation
unexplained or lacks a value is refused, naming the element."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed_shared.studies import ManifestError, load_manifest

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
