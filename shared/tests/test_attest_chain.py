"""A complete Azure-style chain built with the tests' own keys: a VCEK-like key signs an SNP report
whose REPORT_DATA hashes runtime claims holding an AK, which signs a TPM quote over the digest of
the results. It verifies end to end; breaking any link is reported as that link."""

from __future__ import annotations

import hashlib
import json
import shutil
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from attestforge import AmdLikeChain, flip, hcl_report, make_cert, pem, tpm_quote
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from testbed_reports.audit import audit_host
from testbed_shared.attest import binding
from testbed_shared.attest.manifest import verify_manifest
from testbed_shared.attest.verify import Options

PCRS = {i: hashlib.sha256(bytes([i])).digest() for i in range(8)}


@dataclass
class Keys:
    chain: AmdLikeChain
    ak: rsa.RSAPrivateKey
    chain_pem: Path
    root_pem: Path


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    c = AmdLikeChain()
    chain_pem, root_pem = c.write(tmp_path_factory.mktemp("pki"))
    return Keys(c, rsa.generate_private_key(65537, 2048), chain_pem, root_pem)


def write_run(run: Path, keys: Keys, **break_) -> Path:
    """A results file plus begin/end evidence as the agent writes them on an Azure SNP CVM."""
    results = run / "cvm-1.jsonl"
    run.mkdir(parents=True, exist_ok=True)
    rec = {
        "schema": 1,
        "run_id": run.name,
        "host": "cvm-1",
        "label": "SEV-Encrypted",
        "groups": ["sev"],
        "plan_sha256": "ab" * 32,
    }
    prev = ""
    for seq, phase in enumerate(("begin", "end")):
        if phase == "end":
            results.write_text(
                "".join(
                    json.dumps({**rec, "benchmark": f"b{i}", "metrics": {"x": {"value": i}}}) + "\n"
                    for i in range(3)
                )
            )
        c = binding.claims(run.name, "cvm-1", "ab" * 32, phase, results, seq, prev, phase == "end")
        prev = binding.link(c)
        _evidence(run / "cvm-1.evidence" / f"{seq:02d}-{phase}", keys, c, **break_)
    return results


def _evidence(
    d: Path,
    k: Keys,
    c: dict,
    *,
    vcek=None,
    claims_edit=None,
    ak=None,
    nonce=None,
    pcrs=None,
    chain_pem=None,
    user_data=None,
) -> None:
    d.mkdir(parents=True)
    (d / "hcl-report.bin").write_bytes(
        hcl_report(
            vcek or k.chain.vcek_key,
            k.ak.public_key(),
            claims_edit=claims_edit,
            user_data=binding.report_data(c) if user_data == "bound" else user_data,
        )
    )
    msg, sig = tpm_quote(ak or k.ak, nonce or binding.tpm_nonce(c), PCRS)
    (d / "quote.msg").write_bytes(msg)
    (d / "quote.sig").write_bytes(sig)
    (d / "pcrs.json").write_text(json.dumps({"sha256": {str(i): v.hex() for i, v in (pcrs or PCRS).items()}}))
    (d / "certs.pem").write_bytes(chain_pem or k.chain_pem.read_bytes())
    files = {
        "hcl": "hcl-report.bin",
        "quote_msg": "quote.msg",
        "quote_sig": "quote.sig",
        "pcrs": "pcrs.json",
        "certs": "certs.pem",
    }
    doc = {
        "format": "testbed-evidence",
        "version": 1,
        "phase": c["phase"],
        "binding": c,
        "technology": "azure-hcl",
        "files": files,
        # now: the test PKI is valid from a day ago (a fixed date here expired the test a day later)
        "collected_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    (d / "manifest.json").write_text(json.dumps(doc))


def failed_names(res) -> list[str]:
    return sorted({c.name for c in res.failed()})


def test_chain_verifies_end_to_end_and_binds_results(tmp_path: Path, keys: Keys) -> None:
    results = write_run(tmp_path / "run1", keys)
    opts = Options(roots=[keys.root_pem])
    res = verify_manifest(results.parent / "cvm-1.evidence" / "01-end" / "manifest.json", opts)
    assert res.verified, failed_names(res)
    names = [c.name for c in res.checks]
    for link in (
        "snp: report signature",
        "snp chain: SEV-VCEK signed by SEV-Testbed",
        "hcl: REPORT_DATA == hash of runtime claims",
        "tpm (HCLAkPub): quote signature",
        "tpm (HCLAkPub): PCR digest",
        "binding: TPM nonce == digest of claims",
    ):
        assert link in names
    a = audit_host(results, opts)
    assert (a.evidence, a.bound, a.ok, a.technology) == ("verified", "yes", True, "azure-sev-snp")


def test_without_the_tests_root_the_ark_is_not_trusted(tmp_path: Path, keys: Keys) -> None:
    results = write_run(tmp_path / "run1", keys)
    res = verify_manifest(results.parent / "cvm-1.evidence" / "01-end" / "manifest.json", Options())
    assert failed_names(res) == ["snp chain: ARK-Testbed is a trusted root"]


def _other_ask_chain(keys: Keys) -> bytes:
    other_ark = rsa.generate_private_key(65537, 2048)
    ask = make_cert("SEV-Testbed", keys.chain.ask_key, "ARK-Testbed", other_ark, ca=True)
    return pem(keys.chain.vcek, ask, keys.chain.ark)


def test_user_data_in_claims_is_checked_when_the_paravisor_includes_it(tmp_path: Path, keys: Keys) -> None:
    ok = write_run(tmp_path / "ok", keys, user_data="bound")
    res = verify_manifest(
        ok.parent / "cvm-1.evidence" / "01-end" / "manifest.json", Options(roots=[keys.root_pem])
    )
    assert res.verified and "binding: HCL user-data == digest of claims" in [c.name for c in res.checks]
    bad = write_run(tmp_path / "bad", keys, user_data=b"\x00" * 64)
    res = verify_manifest(
        bad.parent / "cvm-1.evidence" / "01-end" / "manifest.json", Options(roots=[keys.root_pem])
    )
    assert failed_names(res) == ["binding: HCL user-data == digest of claims"]


BREAKS = {
    "another chip signed the report": ({"vcek": "other-ec"}, ["snp: report signature"]),
    "ASK not signed by the ARK": (
        {"chain_pem": "other-ask"},
        ["snp chain: SEV-Testbed signed by ARK-Testbed"],
    ),
    "claims changed after signing": (
        {"claims_edit": lambda b: b.replace(b'"secure-boot":true', b'"secure-boot":false')},
        ["hcl: REPORT_DATA == hash of runtime claims"],
    ),
    "quote signed by another AK": ({"ak": "other-ak"}, ["tpm (HCLAkPub): quote signature"]),
    "quote over another nonce": (
        {"nonce": b"\x00" * 32},
        ["binding: TPM nonce == digest of claims", "tpm (HCLAkPub): qualifying data == expected nonce"],
    ),
    "PCR values do not match the quote": (
        {"pcrs": {**PCRS, 7: b"\x01" * 32}},
        ["tpm (HCLAkPub): PCR digest"],
    ),
}


@pytest.mark.parametrize("what", list(BREAKS))
def test_breaking_a_link_is_reported_as_that_link(tmp_path: Path, keys: Keys, what: str) -> None:
    kw, expected = BREAKS[what]
    kw = dict(kw)
    if kw.get("vcek") == "other-ec":
        kw["vcek"] = ec.generate_private_key(ec.SECP384R1())
    if kw.get("chain_pem") == "other-ask":
        kw["chain_pem"] = _other_ask_chain(keys)
    if kw.get("ak") == "other-ak":
        kw["ak"] = rsa.generate_private_key(65537, 2048)
    results = write_run(tmp_path / "run1", keys, **kw)
    opts = Options(roots=[keys.root_pem])
    res = verify_manifest(results.parent / "cvm-1.evidence" / "01-end" / "manifest.json", opts)
    assert failed_names(res) == expected
    a = audit_host(results, opts)
    assert a.evidence == "FAILED" and not a.ok and any(expected[0] in p for p in a.problems)


def test_changed_results_line_breaks_the_binding(tmp_path: Path, keys: Keys) -> None:
    results = write_run(tmp_path / "run1", keys)
    data = results.read_bytes()
    results.write_bytes(flip(data, data.index(b'"value": 1') + 9))  # value 1 -> 0
    a = audit_host(results, Options(roots=[keys.root_pem]))
    assert (a.evidence, a.bound, a.ok) == ("verified", "NO", False)
    assert any("01-end: SHA-256 of the first" in p for p in a.problems)


def test_edited_binding_claims_no_longer_match_the_nonce(tmp_path: Path, keys: Keys) -> None:
    results = write_run(tmp_path / "run1", keys)
    m = results.parent / "cvm-1.evidence" / "01-end" / "manifest.json"
    doc = json.loads(m.read_text())
    doc["binding"]["host"] = "someone-else"
    m.write_text(json.dumps(doc))
    res = verify_manifest(m, Options(roots=[keys.root_pem]))
    assert "binding: TPM nonce == digest of claims" in failed_names(res)
    a = audit_host(results, Options(roots=[keys.root_pem]))
    assert a.bound == "NO" and any("evidence host 'someone-else'" in p for p in a.problems)


def test_copied_evidence_does_not_bind_another_run(tmp_path: Path, keys: Keys) -> None:
    src = write_run(tmp_path / "run1", keys)
    other = tmp_path / "run2"
    shutil.copytree(src.parent, other)
    data = (other / "cvm-1.jsonl").read_text().replace('"run_id": "run1"', '"run_id": "run2"')
    (other / "cvm-1.jsonl").write_text(data)
    a = audit_host(other / "cvm-1.jsonl", Options(roots=[keys.root_pem]))
    assert a.bound == "NO" and not a.ok


def test_options_replace_keeps_roots(keys: Keys) -> None:
    assert replace(Options(roots=[keys.root_pem]), nonce=b"x").roots == [keys.root_pem]
