"""Audit proves completeness (issue 26 finding 5) and survives bad input (finding 10).

Evidence is written by the agent's own ``Binder`` on this machine (no confidential hardware, so
every manifest says "unavailable" and the digests and the sequence are what is checked), with a
checkpoint after every result line; then the files are tampered with as an attacker with a shell
would: rollbacks, gaps, reordering, copies under another run id, broken manifests."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest
from report_helpers import run_cli

from testbed_reports.audit import audit, audit_host
from testbed_shared.attest.binding import Binder
from testbed_shared.attest.probe import EvidenceProbe


@dataclass(frozen=True)
class Ident:
    run_id: str = "r1"
    host: str = "h1"
    plan_sha256: str = "cd" * 32


REC = {"run_id": "r1", "host": "h1", "plan_sha256": "cd" * 32, "label": "Local", "groups": ["baseline"]}


def _line(i: int) -> str:
    return json.dumps({**REC, "benchmark": f"b{i}", "index": i, "repetition": 0, "metrics": {}}) + "\n"


def _run(out: Path, lines: int = 3, *, finish: bool = True, start: int = 0) -> Path:
    """One (or, called again, a resumed) run: begin, a checkpoint after each line, end."""
    results = out / "h1.jsonl"
    opts = {"evidence_probe": EvidenceProbe(present=set()), "attest_checkpoint_s": 0}
    b = Binder(out, Ident(), results, opts)
    b.begin()
    for i in range(start, start + lines):
        with results.open("a") as fh:
            fh.write(_line(i))
        b.checkpoint_if_due()
    if finish:
        b.end()
    else:
        b.end(complete=False)
    return results


def _evidence(results: Path) -> list[Path]:
    return sorted(results.with_name("h1.evidence").iterdir())


def _drop_last_line(results: Path) -> None:
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[:-1]))


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return _run(tmp_path / "r1")


def test_complete_sequence_is_bound(run: Path) -> None:
    names = [p.name for p in _evidence(run)]
    assert names == ["00-begin", "01-checkpoint", "02-checkpoint", "03-checkpoint", "04-end"]
    a = audit_host(run)
    assert (a.evidence, a.bound, a.ok) == ("unavailable", "yes", True), a.problems


def test_rollback_of_the_last_line_with_the_end_evidence_is_reported(run: Path) -> None:
    _drop_last_line(run)
    shutil.rmtree(_evidence(run)[-1])  # 04-end
    shutil.rmtree(_evidence(run)[-1])  # 03-checkpoint, which bound the removed line
    a = audit_host(run)
    assert (a.bound, a.ok) == ("NO", False)
    assert any("no end-of-run evidence after 02-checkpoint" in p and "rollback" in p for p in a.problems)


def test_rollback_of_a_resumed_part_with_its_begin_and_end_is_reported(tmp_path: Path) -> None:
    out = tmp_path / "r1"
    results = _run(out, 2, finish=False)  # interrupted
    _run(out, 2, start=2)  # resumed: begin ... end
    assert audit_host(results).ok
    for d in _evidence(results)[4:]:  # the resumed part's evidence ...
        shutil.rmtree(d)
    _drop_last_line(results)  # ... and its results
    _drop_last_line(results)
    a = audit_host(results)
    assert (a.bound, a.ok) == ("NO", False)
    assert any("did not complete" in p for p in a.problems), a.problems


def test_a_gap_in_the_sequence_is_reported(run: Path) -> None:
    shutil.rmtree(_evidence(run)[2])  # 02-checkpoint
    a = audit_host(run)
    assert not a.ok and any("evidence 02 missing: a gap" in p for p in a.problems)
    assert any("03-checkpoint: not bound to the evidence before it" in p for p in a.problems)


def test_reordered_or_renamed_evidence_is_reported(run: Path) -> None:
    ev = _evidence(run)
    ev[1].rename(ev[1].with_name("01-end"))
    a = audit_host(run)
    assert not a.ok and any("renamed or reordered" in p for p in a.problems)


def test_a_run_copied_under_another_id_is_reported(run: Path, tmp_path: Path) -> None:
    copy = tmp_path / "r2"
    shutil.copytree(run.parent, copy)
    path = copy / "h1.jsonl"
    path.write_text(path.read_text().replace('"run_id": "r1"', '"run_id": "r2"'))
    a = audit_host(path)
    assert not a.ok and any("copied from another run" in p for p in a.problems)


def test_unavailable_path_checks_the_digests_it_recorded(run: Path) -> None:
    text = run.read_text()
    run.write_text(text.replace('"b1"', '"bX"'))  # one result edited, evidence untouched
    a = audit_host(run)
    assert a.evidence == "unavailable" and (a.bound, a.ok) == ("NO", False)
    assert any("(edited)" in p for p in a.problems)
    proc = run_cli("audit", str(run.parent))
    assert proc.returncode == 1 and "NO" in proc.stdout


def test_lines_appended_after_the_end_are_reported(run: Path) -> None:
    with run.open("a") as fh:
        fh.write(_line(9))
    a = audit_host(run)
    assert not a.ok and any("lines added after it" in p for p in a.problems)


BAD_MANIFESTS = {
    "no collected_at": lambda d: {
        **{k: v for k, v in d.items() if k not in ("collected_at", "attestation")},
        "technology": "sev-snp",
        "files": {"report": "report.bin"},
    },
    "binding is a list": lambda d: {**d, "binding": [1, 2]},
    "binding is a string": lambda d: {**d, "binding": "x"},
    "files escape the folder": lambda d: {
        **d,
        "attestation": None,
        "technology": "sev-snp",
        "files": {"report": "../../../etc/passwd"},
    },
    "a number": lambda d: 5,
}


@pytest.mark.parametrize("what", list(BAD_MANIFESTS))
def test_bad_manifest_is_a_problem_not_a_traceback(run: Path, tmp_path: Path, what: str) -> None:
    m = _evidence(run)[-1] / "manifest.json"
    m.write_text(json.dumps(BAD_MANIFESTS[what](json.loads(m.read_text()))))
    a = audit_host(run)
    assert not a.ok and a.problems
    good = _run(tmp_path / "other")  # the other run in the same audit is still audited
    rows = audit([run, good])
    assert [r.ok for r in rows] == [False, True]
    proc = run_cli("audit", str(run), str(good))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr and "h1" in proc.stdout


def test_invalid_utf8_and_non_list_groups_are_problems(run: Path) -> None:
    m = _evidence(run)[0] / "manifest.json"
    m.write_bytes(b"\xff\xfe" + m.read_bytes())
    a = audit_host(run)
    assert not a.ok and any("not UTF-8" in p for p in a.problems)
    recs = [json.loads(line) for line in run.read_text().splitlines()]
    run.write_text("".join(json.dumps({**r, "groups": 5}) + "\n" for r in recs))
    a = audit_host(run)
    assert any("'groups' is not a list" in p for p in a.problems)


def test_unreadable_results_file_is_a_failing_row(tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_bytes(b"\xff\xfe\xfd\n")
    rows = audit([bad])
    assert len(rows) == 1 and not rows[0].ok and "not UTF-8" in rows[0].problems[0]
    bad.write_text("[1, 2]\n")
    assert "a record is a JSON object" in audit([bad])[0].problems[0]


FUZZ = 300


def test_audit_fuzz_never_raises_and_catches_every_binding_edit(tmp_path: Path) -> None:
    """Red team, report fuzz (bounded, seeded): random bit flips, truncations and field edits of
    the manifests and results of a finished run. audit never raises; every edit that changes what
    a manifest binds (its claims) or the results themselves leaves the host not ok."""
    import random

    rng = random.Random(26)
    base = _run(tmp_path / "base")
    counts = {"tries": 0, "not ok": 0, "ok (claims unchanged)": 0}
    for i in range(FUZZ):
        run_dir = tmp_path / f"f{i}"
        shutil.copytree(base.parent, run_dir)
        results = run_dir / "h1.jsonl"
        files = [results, *sorted((run_dir / "h1.evidence").glob("*/manifest.json"))]
        victim = rng.choice(files)
        data = bytearray(victim.read_bytes())
        before = _claims(victim) if victim != results else None
        op = rng.random()
        if op < 0.4:
            at = rng.randrange(len(data))
            data[at] ^= 1 << rng.randrange(8)
        elif op < 0.6:
            del data[rng.randrange(len(data)) :]
        elif victim != results:
            doc = json.loads(data)
            key = rng.choice(["binding", "phase", "collected_at", "format", "attestation", "version"])
            sub = rng.choice([None, 0, "x", [], {}, True])
            if key == "binding" and rng.random() < 0.7:
                doc["binding"][rng.choice(list(doc["binding"]))] = sub
            else:
                doc[key] = sub
            data = bytearray(json.dumps(doc).encode())
        else:
            data += b'{"run_id": "r1"}\n'
        victim.write_bytes(bytes(data))
        a = audit_host(results)  # must not raise
        counts["tries"] += 1
        changed = victim == results or _claims(victim) != before
        if a.ok:
            counts["ok (claims unchanged)"] += 1
            assert not changed, (i, victim.name, a.problems)
        else:
            counts["not ok"] += 1
    print(counts)
    assert counts["tries"] == FUZZ and counts["not ok"] > FUZZ // 2


def _claims(manifest: Path) -> object:
    try:
        doc = json.loads(manifest.read_bytes())
    except ValueError:
        return "unreadable"
    return doc.get("binding") if isinstance(doc, dict) else "not an object"
