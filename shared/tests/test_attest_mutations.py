"""Red team, attestation (issue 26 finding 4): a seeded mutation campaign over every real sample.

2,4xx mutants (bit flips, truncations, extensions, field edits; ``attestmutate``): none may verify
unless it differs only where the format leaves bytes free (zero padding length, PCR spelling, the
Azure TDREPORT's MAC, see ``attestmutate``), none may raise anything but the verifier's one-line
``EvidenceError``, none may run longer than the hang bound. A larger campaign:
``python shared/tests/attestmutate.py 1500 77``."""

from __future__ import annotations

from pathlib import Path

import pytest
from attestmutate import run

PER_FILE = 72  # x 34 files of 11 evidence sets = 2,448 mutants
SEED = 26


@pytest.mark.slow
def test_no_mutant_of_real_evidence_verifies_or_crashes(tmp_path: Path) -> None:
    camp = run(PER_FILE, SEED, tmp_path)
    print(camp.summary(), dict(camp.equivalents))
    assert camp.tries >= 2000
    assert camp.verified == [], camp.verified
    assert camp.tracebacks == [], camp.tracebacks[:3]
    assert camp.hangs == [], camp.hangs
    assert camp.outcomes["refused"] + camp.outcomes["failed"] + camp.outcomes["equivalent"] == camp.tries
    assert set(camp.by_op) >= {"flip", "truncate", "extend", "field"}
