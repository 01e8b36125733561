"""``testbed-report audit``: per host, re-verify the attestation evidence the agent kept in
``<host>.evidence/``, recompute the digests of the results file, and prove the evidence sequence
complete: ``NN-phase`` folders numbered without gaps, each one's claims naming the previous one's
(begin, checkpoints, end; a resumed run adds begin ... end), the results only growing along it,
and the last one an ``end`` that covers the whole file. A missing end, a gap, a reordering, a
rollback (results lines removed together with the evidence after them) or a run copied under
another id is reported as such. Hosts without confidential hardware get the same digest and
sequence checks ("unavailable" evidence still records the digests). A host labelled confidential
that fails, any host whose results do not match their evidence, and any host whose results have
no evidence at all (never collected, or deleted: a plain host's unsigned chain proves nothing once
it is gone) make the audit fail. The HTML report's banner leaves the last out (imported and
synthetic results have no evidence); its attestation column says "missing".

One bad results file or manifest never stops the audit: it is a problem of that host."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from testbed_reports.errors import ReportError
from testbed_reports.fingerprint import claimed_technology
from testbed_shared import records
from testbed_shared.attest.binding import link
from testbed_shared.attest.manifest import verify_manifest
from testbed_shared.attest.model import EvidenceError
from testbed_shared.attest.verify import Options
from testbed_shared.records import RecordError

_NOT_COLLECTED = ("unavailable", "failed", "missing")
_DIR = re.compile(r"^(\d{2,})-(begin|checkpoint|end)$")
MAX_MANIFEST = 1 << 20


@dataclass
class HostAudit:
    host: str
    run_id: str
    label: str
    groups: list[str]
    confidential: bool
    technology: str = "none"
    evidence: str = (
        "missing"  # verified | FAILED (does not verify) | failed (not collected) | unavailable | missing
    )
    bound: str = "—"  # yes | NO | —
    measurement: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Results bound to complete evidence (for any host: a plain host's evidence is an unsigned
        hash chain, which detects edits only while it is there), and for a host labelled
        confidential evidence that verifies."""
        if self.bound != "yes" or self.evidence == "FAILED":
            return False
        if not self.confidential:
            return True
        return self.evidence == "verified" and self.bound == "yes" and not self.problems

    def summary(self) -> str:
        if self.evidence in _NOT_COLLECTED:
            text = f"attestation: {self.evidence}" + (f" ({self.problems[0]})" if self.problems else "")
            return text + (", results NOT bound" if self.bound == "NO" else "")
        text = f"evidence {self.evidence}, results bound: {self.bound} ({self.technology})"
        return text + (f": {'; '.join(self.problems[:2])}" if self.problems else "")


@dataclass
class _Entry:
    index: int
    phase: str
    path: Path
    doc: dict[str, Any] | None = None
    error: str = ""

    @property
    def name(self) -> str:
        return self.path.parent.name

    @property
    def binding(self) -> dict[str, Any]:
        b = (self.doc or {}).get("binding")
        return b if isinstance(b, dict) else {}

    @property
    def state(self) -> str:
        return str((self.doc or {}).get("attestation", "collected"))


def _result_files(paths: Sequence[Path]) -> list[Path]:
    try:
        return records.result_files(paths)
    except RecordError as exc:
        raise ReportError(exc.message) from None


def _identity(path: Path) -> dict[str, Any]:
    """The first record of a results file: whose run, host and plan the file is (only these fields
    are read here; the evidence binds the file's bytes, whatever the records say). ``read_lines``
    checks the whole file is UTF-8 a block at a time, then parses lines only up to that record."""
    try:
        for n, _, rec in records.read_lines(path):
            if not isinstance(rec, dict):
                raise ReportError(f"{path}:{n}: a record is a JSON object")
            return rec
    except RecordError as exc:
        raise ReportError(exc.message) from None
    return {}


def audit_host(results: Path, options: Any = None) -> HostAudit:
    """Audit one ``<host>.jsonl`` and its ``<host>.evidence/``; never raises for bad input."""
    try:
        return _audit_host(results, options)
    except (ReportError, OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        a = HostAudit(results.stem, "", results.stem, [], False, evidence="FAILED", bound="NO")
        a.problems.append(f"{results.name}: cannot audit ({exc})")
        return a


def _audit_host(results: Path, options: Any) -> HostAudit:
    rec = _identity(results)
    problems = []
    groups = rec.get("groups") or []
    if not isinstance(groups, list):
        problems.append(f"{results.name}: 'groups' is not a list ({type(groups).__name__})")
        groups = []
    groups = [str(g) for g in groups]
    host = str(rec.get("host") or results.stem)
    label = str(rec.get("label") or host)
    a = HostAudit(
        host, str(rec.get("run_id", "")), label, groups, claimed_technology(label, groups) in ("sev", "tdx")
    )
    a.problems += problems
    evdir = results.with_name(f"{results.stem}.evidence")
    entries = _entries(evdir) if evdir.is_dir() else []
    if not entries:  # nothing binds these results: deleted evidence must not read as "nothing wrong"
        a.bound = "NO"
        a.problems.append(f"no {evdir.name}/: nothing binds {results.name} (never collected, or deleted)")
        return a
    live = [e for e in entries if e.doc is not None and e.state not in ("unavailable", "failed")]
    if not live:
        states = {e.state for e in entries if e.doc is not None}
        a.evidence = "failed" if "failed" in states else "unavailable"
        reasons = [str(e.doc.get("reason", "")) for e in entries if e.doc is not None and e.doc.get("reason")]
        if reasons:
            a.problems.append(reasons[-1])
    else:
        _verify(a, live, options)
    _bound(a, results, entries, rec)
    return a


def _entries(evdir: Path) -> list[_Entry]:
    out = []
    for d in sorted(evdir.iterdir()):
        m = _DIR.match(d.name)
        if m is None or not d.is_dir():
            continue
        e = _Entry(int(m.group(1)), m.group(2), d / "manifest.json")
        try:
            raw = e.path.read_bytes()
            if len(raw) > MAX_MANIFEST:
                raise ValueError(f"{len(raw)} bytes")
            doc = json.loads(raw.decode("utf-8"))
            if not isinstance(doc, dict) or doc.get("format") != "testbed-evidence":
                raise ValueError("not a testbed-evidence manifest")
            if not isinstance(doc.get("binding"), dict):
                raise ValueError(f"'binding' is {type(doc.get('binding')).__name__}, not an object")
            e.doc = doc
        except FileNotFoundError:
            e.error = "no manifest.json"
        except UnicodeDecodeError as exc:
            e.error = f"manifest.json is not UTF-8 ({exc.reason})"
        except (OSError, ValueError, RecursionError) as exc:
            e.error = f"unreadable manifest.json ({exc})"
        out.append(e)
    return sorted(out, key=lambda e: e.index)


def _verify(a: HostAudit, live: list[_Entry], options: Any) -> None:
    base = options or Options()
    ok = True
    for e in live:
        when = base.as_of
        if when is None:
            try:
                when = datetime.fromisoformat(str(e.doc["collected_at"]))
            except (KeyError, ValueError):
                ok = False
                a.problems.append(f"{e.name}: no valid collected_at (give --as-of to verify it)")
                continue
            if when.tzinfo is None:
                ok = False
                a.problems.append(f"{e.name}: collected_at has no time zone")
                continue
        try:
            res = verify_manifest(e.path, replace(base, as_of=when))
        except EvidenceError as exc:
            ok = False
            a.problems.append(str(exc))
            continue
        a.technology = res.technology
        a.measurement = res.measurement or a.measurement
        for c in res.failed():
            a.problems.append(f"{e.name}: {c.name}: {c.detail}")
        ok &= res.verified
    a.evidence = "verified" if ok else "FAILED"


def _bound(a: HostAudit, results: Path, entries: list[_Entry], rec: dict[str, Any]) -> None:
    """Digests, identity and the completeness of the evidence sequence."""
    data = results.read_bytes()
    problems = _numbering(entries)
    prev: _Entry | None = None
    in_run = False
    for e in entries:
        if e.doc is None:
            problems.append(f"{e.name}: {e.error}")
            prev, in_run = None, True
            continue
        problems += _identity_problems(e, e.binding, rec, results)
        problems += _place(e, prev, entries)
        if e.phase != "begin" and not in_run:
            problems.append(f"{e.name}: {e.phase} without a begin before it")
        in_run = e.phase != "end"
        problems += _digest(e, prev, data, results.name)
        prev = e
    problems += _ending(a, entries[-1], len(data), results.name)
    a.bound = "NO" if problems else "yes"
    seen: set[str] = set()
    a.problems += [p for p in problems if not (p in seen or seen.add(p))]


def _numbering(entries: list[_Entry]) -> list[str]:
    indices = [e.index for e in entries]
    out = []
    gaps = [f"{i:02d}" for i in range(max(indices) + 1) if i not in indices]
    if gaps:
        out.append(f"evidence {', '.join(gaps)} missing: a gap in the sequence (removed?)")
    dup = sorted({i for i in indices if indices.count(i) > 1})
    if dup:
        out.append(f"evidence numbers used twice: {dup}")
    return out


def _place(e: _Entry, prev: _Entry | None, entries: list[_Entry]) -> list[str]:
    """The evidence's claims name its folder's phase and number, and the evidence before it."""

    b, out = e.binding, []
    if b.get("phase") != e.phase or e.doc.get("phase") != e.phase or b.get("seq") != e.index:
        said = f"{b.get('phase')!r} number {b.get('seq')!r}"
        out.append(f"{e.name}: claims say {said}: renamed or reordered evidence")
    want = "" if e.index == 0 else (link(prev.binding) if prev is not None else None)
    if want is not None and b.get("prev") != want:
        before = entries[entries.index(e) - 1].name if e.index else "none: the first must be a begin"
        out.append(f"{e.name}: not bound to the evidence before it ({before})")
    return out


def _digest(e: _Entry, prev: _Entry | None, data: bytes, name: str) -> list[str]:
    size = e.binding.get("results_bytes")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        return [f"{e.name}: claims without a results size"]
    out = []
    before = prev.binding.get("results_bytes") if prev is not None else None
    if isinstance(before, int) and size < before:
        out.append(f"{e.name}: binds {size} bytes, less than {prev.name} before it")
    if size > len(data):
        out.append(f"{e.name}: binds {size} bytes of {name}, which has only {len(data)}: rolled back?")
    elif hashlib.sha256(data[:size]).hexdigest() != e.binding.get("results_sha256"):
        out.append(f"{e.name}: SHA-256 of the first {size} bytes of {name} differs (edited)")
    return out


def _ending(a: HostAudit, last: _Entry, size: int, name: str) -> list[str]:
    out = []
    if last.phase != "end" or last.doc is None:
        covered = last.binding.get("results_bytes", "?") if last.doc is not None else "?"
        out.append(
            f"no end-of-run evidence after {last.name}: the run was interrupted, or the end evidence "
            f"was removed with the results after it (rollback); {covered} of {size} bytes are bound"
        )
    elif last.binding.get("results_bytes") != size:
        bound = last.binding.get("results_bytes")
        out.append(
            f"{name} has {size} bytes, the end evidence {last.name} binds {bound}: lines added after it"
        )
    elif last.binding.get("complete") is not True:
        out.append(
            f"{last.name}: the run did not complete (interrupted, or rolled back to an interrupted "
            "state: a resumed part removed with its evidence)"
        )
    if a.confidential and a.evidence == "verified" and (last.doc is None or last.state != "collected"):
        out.append(
            f"{last.name}: the last evidence was not collected: the end of the results is not vouched for"
        )
    return out


def _identity_problems(e: _Entry, b: dict[str, Any], rec: dict[str, Any], results: Path) -> list[str]:
    out = []
    for key in ("run_id", "host", "plan_sha256"):
        if b.get(key) != rec.get(key):
            what = " (copied from another run?)" if key == "run_id" else ""
            out.append(f"{e.name}: evidence {key} {b.get(key)!r} != results {rec.get(key)!r}{what}")
    if b.get("results_file") not in (None, results.name):
        out.append(f"{e.name}: evidence of {b.get('results_file')!r}, not {results.name} (copied?)")
    return out


def audit(paths: Sequence[Path], options: Any = None) -> list[HostAudit]:
    """One :class:`HostAudit` per results file; a bad file is a failing row, never an exception."""
    return [audit_host(p, options) for p in _result_files(paths)]


def table(rows: Sequence[HostAudit]) -> str:
    head = ["host", "label", "technology", "evidence verified", "results bound", "measurement"]
    body = [
        [
            r.host,
            r.label,
            r.technology,
            f"attestation: {r.evidence}" if r.evidence in _NOT_COLLECTED else r.evidence,
            r.bound,
            r.measurement[:24],
        ]
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=False)]
    lines = [
        " | ".join(str(x).ljust(w) for x, w in zip(row, widths, strict=True)).rstrip()
        for row in [head, *body]
    ]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    for r in rows:
        for p in r.problems:
            lines.append(f"  {r.host}: {p}")
    return "\n".join(lines)


def as_json(rows: Sequence[HostAudit]) -> str:
    return json.dumps([{**asdict(r), "ok": r.ok} for r in rows], indent=2)


def attest_column(paths: Sequence[Path], fp: pd.DataFrame) -> tuple[pd.DataFrame, list[tuple[str, str]]]:
    """For the HTML report: the audited attestation state per host, and (label, problem) for every
    confidential label whose evidence does not verify or does not bind its results, and for every
    host whose results no longer match the digests its evidence recorded."""
    try:
        rows = {(r.run_id, r.host): r for r in audit([p for p in paths if Path(p).suffix != ".csv"])}
    except (ReportError, OSError, ValueError):
        return fp, []
    if fp.empty:
        return fp, []
    fp = fp.copy()
    fp["attestation"] = [
        rows[k].summary() if (k := (str(r), str(h))) in rows else "no results file"
        for r, h in zip(fp["run_id"], fp["host"], strict=True)
    ]
    # results without any evidence directory (older agents, synthetic or imported data) show as
    # "missing" in the column; `testbed-report audit` fails them, the banner does not.
    bad = [
        (r.label, f"attestation of {r.host} (label {r.label}) not verified: {r.summary()}")
        for r in rows.values()
        if r.confidential and not r.ok and r.evidence != "missing"
    ]
    bad += [  # any host: results that no longer match their evidence, or evidence that fails
        (r.label, f"results or evidence of {r.host} (label {r.label}) do not check: {r.problems[0]}")
        for r in rows.values()
        if not r.confidential and not r.ok and r.problems and r.evidence != "missing"
    ]
    return fp, bad
