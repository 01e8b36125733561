"""Study packs (DESIGN.md section 10): a manifest that cites outside its paper, leaves a deviation
unexplained or lacks a value is refused, naming the element."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed_shared.studies import ManifestError, load_manifest

H = "id: S1\npaper: {lines: 10}\n"


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ("id: S7\npaper: {lines: 10}\n", "id must be one of"),
        (
            "id: S1\npaper: {lines: 10}\nelements: [{id: a, what: w, source: S1 L11, value: 1, status: exact}]\n",
            "past",
        ),
        (
            "id: S1\npaper: {lines: 10}\nelements: [{id: a, what: w, source: S2 L1, value: 1, status: exact}]\n",
            "another study",
        ),
        (
            "id: S1\npaper: {lines: 10}\nelements: [{id: a, what: w, source: S1 L1, value: 1, status: adapted}]\n",
            "needs a reason",
        ),
        (
            "id: S1\npaper: {lines: 10}\nelements: [{id: a, what: w, source: L1, value: 1, status: exact}]\n",
            "not a source",
        ),
        (
            "id: S1\npaper: {lines: 10}\nelements: [{id: a, what: w, source: S1 L1, status: exact}]\n",
            "value is missing",
        ),
        (
            "id: S1\npaper: {lines: 10}\nelements: [{id: a, what: w, source: S1 L1, value: 1, status: maybe}]\n",
            "status must",
        ),
    ],
)
def test_bad_manifests_name_the_element(tmp_path: Path, body: str, match: str) -> None:
    p = tmp_path / "manifest.yml"
    p.write_text(body)
    with pytest.raises(ManifestError, match=match):
        load_manifest(p)
