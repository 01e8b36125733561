"""Red team, attestation (issue 26 finding 4, issue 40 finding 2): a seeded mutation campaign over
every real sample.

4,248 mutants (bit flips, truncations, extensions, field edits; ``attestmutate``): none may verify
unless its result says what the original's says and every byte where it differs is recorded in the
result's ``ignored`` (bytes outside every checked structure: after a report, quote, certificate or
PCS response, PEM layout, the NUL of a PCK chain, an unused ``--root``, the Azure TDREPORT's MAC)
or it spells a PCR value differently; none may raise anything but the verifier's one-line
``EvidenceError``, none may run longer than the hang bound. A larger campaign:
``python shared/tests/attestmutate.py 1500 77``."""

from __future__ import annotations

from pathlib import Path

import pytest
from attestmutate import run

PER_FILE = 72  # x 59 files of 20 evidence sets = 4,248 mutants
SEED = 26


@pytest.mark.slow
def test_no_mutant_of_real_evidence_verifies_or_crashes(tmp_path: Path) -> None:
    camp = run(PER_FILE, SEED, tmp_path)
    print(camp.summary(), dict(camp.equivalents))
    assert camp.tries >= 4000
    assert camp.verified == [], camp.verified
    assert camp.tracebacks == [], camp.tracebacks[:3]
    assert camp.hangs == [], camp.hangs
    assert camp.outcomes["refused"] + camp.outcomes["failed"] + camp.outcomes["equivalent"] == camp.tries
    assert set(camp.by_op) >= {"flip", "truncate", "extend", "field"}
    # the bytes issue 40 tolerates are mutated, verify and are recorded (counted as equivalent)
    assert {"bytes after the quote", "text outside the PEM blocks", "bytes after the PCS response"} <= set(
        camp.equivalents
    )
