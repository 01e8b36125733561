"""`testbed-report audit` and the attestation column of the HTML report, on a real agent run on
this machine (no confidential hardware) and on copies of it with forged evidence."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from report_helpers import run_cli

SAMPLES = Path(__file__).parents[2] / "shared" / "tests" / "data" / "attestation-samples" / "sev-snp"
PLAN = "name: tiny\nbenchmarks:\n  - {name: dd_small, type: dd, params: {bs: 4k, count: 16, source: zero}}\n"


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`testbed-agent run` of a one-benchmark plan on localhost: results plus evidence dir."""
    base = tmp_path_factory.mktemp("audit")
    (base / "plan.yml").write_text(PLAN)
    run = base / "results" / "r1"
    cmd = [
        sys.executable,
        "-m",
        "testbed_agent",
        "run",
        str(base / "plan.yml"),
        "--out",
        str(run),
        "--host",
        "local-1",
        "--label",
        "Local",
        "--node-exporter",
        "",
        "--no-progress",
        "--scratch",
        str(base / "scratch"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    return run


def _relabel(src: Path, dst: Path, label: str, groups: list[str]) -> Path:
    shutil.copytree(src, dst)
    path = dst / "local-1.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**r, "label": label, "groups": groups}) + "\n" for r in recs))
    return dst


def test_localhost_run_audits_as_unavailable_and_passes(local_run: Path) -> None:
    proc = run_cli("audit", str(local_run.parent))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    head, _rule, row = proc.stdout.splitlines()[:3]
    assert [c.strip() for c in head.split(" | ")] == [
        "host",
        "label",
        "technology",
        "evidence verified",
        "results bound",
        "measurement",
    ]
    assert row.replace(" ", "").startswith("local-1|Local|none|attestation:unavailable")
    assert "no /dev/sev-guest" in proc.stdout
    doc = json.loads(run_cli("audit", str(local_run), "--json").stdout)
    assert doc[0]["evidence"] == "unavailable" and doc[0]["ok"] is True


def test_confidential_label_without_attestation_fails(local_run: Path, tmp_path: Path) -> None:
    run = _relabel(local_run, tmp_path / "r1", "SEV-Encrypted", ["sev"])
    proc = run_cli("audit", str(run))
    assert proc.returncode == 1 and "attestation: unavailable" in proc.stdout


@pytest.mark.slow
def test_forged_evidence_fails_audit_and_reddens_the_report(local_run: Path, tmp_path: Path) -> None:
    """Real AMD-signed evidence from another machine copied into a run relabelled SEV-SNP: the
    evidence binds other data and the relabelled results no longer match their digest."""
    run = _relabel(local_run, tmp_path / "r1", "SEV-SNP", ["sev"])
    for d in sorted((run / "local-1.evidence").iterdir()):
        doc = json.loads((d / "manifest.json").read_text())
        doc = {k: v for k, v in doc.items() if k not in ("attestation", "reason")}
        doc.update(technology="sev-snp", files={"report": "report.bin", "certs": "certs.pem"})
        (d / "manifest.json").write_text(json.dumps(doc))
        shutil.copy(SAMPLES / "report.bin", d / "report.bin")
        (d / "certs.pem").write_bytes((SAMPLES / "vcek.der").read_bytes())
    proc = run_cli("audit", str(run), "--chain", str(SAMPLES / "ask_ark_milan.pem"), "--allow-debug")
    assert proc.returncode == 1
    assert "local-1|SEV-SNP|sev-snp|FAILED|NO|b07af9620f3b" in proc.stdout.replace(" ", "")
    assert "binding: REPORT_DATA == digest of claims" in proc.stdout
    out = tmp_path / "report"
    assert run_cli("build", str(run), "--out", str(out)).returncode == 0
    html = (out / "index.html").read_text()
    banner = html[html.index('id="evidence-mismatch"') : html.index("<h1>")]
    assert "attestation of local-1 (label SEV-SNP) not verified" in banner
    assert "evidence FAILED, results bound: NO (sev-snp)" in html


def test_report_column_on_the_localhost_run(local_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "report"
    assert run_cli("build", str(local_run), "--out", str(out)).returncode == 0
    html = (out / "index.html").read_text()
    assert "attestation: unavailable" in html and "evidence-mismatch" not in html


def test_audit_of_nothing_is_a_clear_error(tmp_path: Path) -> None:
    proc = run_cli("audit", str(tmp_path))
    assert proc.returncode == 2 and proc.stderr.startswith("error: no <host>.jsonl")


@pytest.mark.parametrize(
    "break_",
    [
        lambda m: m.write_text(json.dumps({**json.loads(m.read_text()), "binding": [1]})),
        lambda m: m.write_bytes(b"\xff" + m.read_bytes()),
        lambda m: m.write_text(
            json.dumps(
                {
                    **{
                        k: v
                        for k, v in json.loads(m.read_text()).items()
                        if k not in ("collected_at", "attestation")
                    },
                    "technology": "sev-snp",
                    "files": {"report": "report.bin"},
                }
            )
        ),
    ],
    ids=["binding not an object", "invalid UTF-8", "no collected_at"],
)
def test_build_and_audit_go_on_past_a_bad_manifest(local_run: Path, tmp_path: Path, break_) -> None:
    """Issue 26 finding 10: one bad manifest is that host's problem, not a traceback of the report."""
    run = tmp_path / "r1"
    shutil.copytree(local_run, run)
    break_(sorted((run / "local-1.evidence").iterdir())[-1] / "manifest.json")
    proc = run_cli("audit", str(run))
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    out = tmp_path / "report"
    proc = run_cli("build", str(run), "--out", str(out))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    html = (out / "index.html").read_text()
    assert "results or evidence of local-1 (label Local) do not check" in html


@pytest.mark.parametrize("edit", [False, True], ids=["deleted", "deleted-and-edited"])
def test_deleted_evidence_of_a_plain_host_fails_the_audit(
    local_run: Path, tmp_path: Path, edit: bool
) -> None:
    """Issue 40 finding 8: with every piece of evidence of a non-confidential host deleted (and its
    results edited), audit said nothing was wrong and exited 0. Its evidence is an unsigned hash
    chain, which detects an edit only while it is there: no evidence is no binding, a failure."""
    run = tmp_path / "r1"
    shutil.copytree(local_run, run)
    shutil.rmtree(run / "local-1.evidence")
    if edit:
        path = run / "local-1.jsonl"
        recs = [json.loads(line) for line in path.read_text().splitlines()]
        for r in recs:
            for m in r.get("metrics", {}).values():
                m["value"] = m["value"] * 2
        path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    proc = run_cli("audit", str(run))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    row = proc.stdout.splitlines()[2].replace(" ", "")
    assert row.startswith("local-1|Local|none|attestation:missing|NO"), proc.stdout
    assert "no local-1.evidence/" in proc.stdout and "Traceback" not in proc.stderr
    doc = json.loads(run_cli("audit", str(run), "--json").stdout)
    assert doc[0]["ok"] is False and doc[0]["bound"] == "NO"
    # an empty evidence directory is the same: nothing binds the results
    (run / "local-1.evidence").mkdir()
    assert run_cli("audit", str(run)).returncode == 1


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", {}),
        (b"\n \n", {}),
        (b'{"host": "a"}\n{"host": "b"}\n', {"host": "a"}),
        (b'\n  \n{"host": "a"}', {"host": "a"}),
        (b'{"host": "a"', {}),
        (b'{"host": "a"\n{"host": "b"}\n', "h.jsonl:1: not valid JSON"),
        (b'\n{"host": "\xc3\xa9"}\n\xff\n', "h.jsonl:3: not UTF-8 text"),
        (b'{"host": "\xc3\xa9"}\nabc\xc3', "h.jsonl:2: not UTF-8 text"),
        (b"\n\n[1]", "h.jsonl:3: a record is a JSON object"),
        (b'{"host": "a"}\n' + b"x" * 20 + b"\xe2\x82\xac\n", {"host": "a"}),
        (b'{"host": "\xc3\xa9"}\n' + b"x" * 20 + b"\n", {"host": "\u00e9"}),
    ],
)
def test_a_files_identity_is_its_first_record_read_a_block_at_a_time(
    data: bytes, expected: object, tmp_path: Path, monkeypatch
) -> None:
    """Issue 36: the audit takes a results file's first record without parsing the rest: the
    record, {} for a file without one, or the error naming the line (a file that is not UTF-8
    anywhere is refused, read a few bytes at a time here)."""
    from testbed_reports import audit
    from testbed_reports.errors import ReportError
    from testbed_shared import records

    path = tmp_path / "h.jsonl"
    path.write_bytes(data)
    monkeypatch.setattr(records, "READ_BLOCK", 3)
    if isinstance(expected, str):
        with pytest.raises(ReportError, match=re.escape(expected)):
            audit._identity(path)
    else:
        assert audit._identity(path) == expected
