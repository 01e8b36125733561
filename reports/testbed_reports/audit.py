"""``testbed-report audit``: per host, re-verify the attestation evidence the agent kept in
``<host>.evidence/``, recompute the digest of the results file, and check that the evidence binds
exactly those results. A host labelled confidential that fails makes the audit fail."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd

from testbed_reports.errors import ReportError
from testbed_reports.fingerprint import claimed_technology
from testbed_shared import records
from testbed_shared.records import RecordError

_NOT_COLLECTED = ("unavailable", "failed", "missing")


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
        if self.problems and self.evidence not in _NOT_COLLECTED:
            return False
        return not self.confidential or (self.evidence == "verified" and self.bound == "yes")

    def summary(self) -> str:
        if self.evidence in _NOT_COLLECTED:
            return f"attestation: {self.evidence}" + (f" ({self.problems[0]})" if self.problems else "")
        text = f"evidence {self.evidence}, results bound: {self.bound} ({self.technology})"
        return text + (f": {'; '.join(self.problems[:2])}" if self.problems else "")


def _result_files(paths: Sequence[Path]) -> list[Path]:
    try:
        return records.result_files(paths)
    except RecordError as exc:
        raise ReportError(exc.message) from None


def _identity(path: Path) -> dict[str, Any]:
    """The first record of a results file: whose run, host and plan the file is (only these fields
    are read here; the evidence binds the file's bytes, whatever the records say)."""
    try:
        for _, _, rec in records.read_lines(path):
            return rec if isinstance(rec, dict) else {}
    except RecordError as exc:
        raise ReportError(exc.message) from None
    return {}


def audit_host(results: Path, options: Any = None) -> HostAudit:
    """Audit one ``<host>.jsonl`` and its ``<host>.evidence/``."""
    rec = _identity(results)
    host = str(rec.get("host") or results.stem)
    groups = [str(g) for g in rec.get("groups") or []]
    label = str(rec.get("label") or host)
    a = HostAudit(
        host, str(rec.get("run_id", "")), label, groups, claimed_technology(label, groups) in ("sev", "tdx")
    )
    evdir = results.with_name(f"{results.stem}.evidence")
    manifests = sorted(evdir.glob("[0-9]*-*/manifest.json")) if evdir.is_dir() else []
    if not manifests:
        a.problems.append(f"no {evdir.name}/")
        return a
    try:
        docs = [(m, json.loads(m.read_text())) for m in manifests]
    except (OSError, ValueError) as exc:
        a.evidence = "FAILED"
        a.problems.append(f"unreadable evidence manifest: {exc}")
        return a
    live = [(m, d) for m, d in docs if d.get("attestation") not in ("unavailable", "failed")]
    if not live:
        a.evidence = "failed" if any(d.get("attestation") == "failed" for _, d in docs) else "unavailable"
        a.problems.append(str(docs[-1][1].get("reason", "")))
        return a
    _verify(a, live, options)
    _bound(a, results, [d for _, d in live], rec)
    return a


def _verify(a: HostAudit, live: list[tuple[Path, dict[str, Any]]], options: Any) -> None:
    from dataclasses import replace

    from testbed_shared.attest.manifest import verify_manifest
    from testbed_shared.attest.model import EvidenceError
    from testbed_shared.attest.verify import Options

    base = options or Options()
    ok = True
    for path, doc in live:
        when = base.as_of or datetime.fromisoformat(doc["collected_at"])
        try:
            res = verify_manifest(path, replace(base, as_of=when))
        except EvidenceError as exc:
            ok = False
            a.problems.append(str(exc))
            continue
        a.technology = res.technology
        a.measurement = res.measurement or a.measurement
        for c in res.failed():
            a.problems.append(f"{path.parent.name}: {c.name}: {c.detail}")
        ok &= res.verified
    a.evidence = "verified" if ok else "FAILED"


def _bound(a: HostAudit, results: Path, docs: list[dict[str, Any]], rec: dict[str, Any]) -> None:
    data = results.read_bytes()
    ends = [d["binding"] for d in docs if d.get("phase") == "end"]
    problems = []
    for d in docs:
        b = d.get("binding", {})
        for key in ("run_id", "host", "plan_sha256"):
            if b.get(key) != rec.get(key):
                problems.append(f"evidence {key} {b.get(key)!r} != results {rec.get(key)!r}")
        prefix = data[: b.get("results_bytes", -1)]
        if hashlib.sha256(prefix).hexdigest() != b.get("results_sha256"):
            problems.append(
                f"{d.get('phase')} evidence: SHA-256 of the first {b.get('results_bytes')} bytes "
                f"of {results.name} differs"
            )
    if not ends:
        problems.append("no end-of-run evidence (run interrupted?)")
    elif ends[-1].get("results_bytes") != len(data):
        problems.append(
            f"{results.name} has {len(data)} bytes, the end evidence binds {ends[-1].get('results_bytes')}"
        )
    a.bound = "NO" if problems else "yes"
    a.problems += sorted(set(problems))


def audit(paths: Sequence[Path], options: Any = None) -> list[HostAudit]:
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
    confidential label whose evidence does not verify or does not bind its results."""
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
    return fp, bad
