"""Real evidence: every sample verifies as far as it can (issue 26 finding 3), and the bytes that are
neither signed nor checked are refused (finding 4): signature-area bytes, trailing bytes, the
certificate's unsigned outer algorithm, and Intel's collateral without or against its signature."""

from __future__ import annotations

import base64
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from attestforge import AmdLikeChain, ak_jwk, hcl_report
from attestsamples import AZ_TDX_WHEN, SAMPLES, SNP, TDX, TDX_WHEN, evidence_sets
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from testbed_shared.attest.hcl import parse_hcl
from testbed_shared.attest.model import EvidenceError
from testbed_shared.attest.verify import Options, verify_file

TCB_CHAIN = TDX / "tcb_signing_chain.pem"


def failed(res) -> list[str]:
    return [c.name for c in res.failed()]


@pytest.mark.parametrize("index", range(12))
def test_every_real_sample_verifies_as_far_as_its_evidence_allows(tmp_path: Path, index: int) -> None:
    s = evidence_sets(tmp_path)[index]
    if s.refused:
        with pytest.raises(EvidenceError, match=s.refused):
            verify_file(s.files[s.main], s.options(s.files))
        return
    res = verify_file(s.files[s.main], s.options(s.files))
    assert res.verified is s.verifies, (s.name, failed(res))
    assert failed(res) == s.failing, s.name


def test_real_azure_tdx_hcl_report_is_read_as_tdx() -> None:
    """Finding 3: the header's request type is 2 on TDX machines too; the kind is in the request data."""
    for path in (SAMPLES / "azure-tdx" / "hcl-report.bin", SAMPLES / "azure-cvm" / "hcl-report-tdx.bin"):
        raw = path.read_bytes()
        assert struct.unpack_from("<I", raw, 12)[0] == 2 and struct.unpack_from("<I", raw, 1216 + 8)[0] == 4
        rep = parse_hcl(raw)
        assert rep.kind == "tdx" and rep.claims["keys"][0]["kid"] == "HCLAkPub"
    snp = parse_hcl((SAMPLES / "azure-cvm" / "hcl-report-snp.bin").read_bytes())
    assert snp.kind == "sev-snp"


def test_real_azure_tdx_evidence_binds_quote_claims_and_tpm(tmp_path: Path) -> None:
    s = evidence_sets(tmp_path)[2]
    res = verify_file(s.files["hcl"], s.options(s.files))
    names = {c.name for c in res.checks}
    assert res.technology == "azure-tdx" and res.verified
    assert {
        "tdx: quote is of this TDREPORT",
        "tdx PCK chain: Intel SGX Root CA is a trusted root",
        "hcl: REPORT_DATA == hash of runtime claims",
        "tpm (HCLAkPub): quote signature",
        "tpm (HCLAkPub): PCR digest",
    } <= names
    assert res.info["tdx"]["fmspc"] == "00806f050000" and res.info["tdx"]["zero_padding"] == 70


def _edit(path: Path, tmp: Path, name: str, fn) -> Path:
    out = tmp / name
    out.write_bytes(fn(path.read_bytes()))
    return out


def _set(b: bytes, at: int, value: bytes) -> bytes:
    return b[:at] + value + b[at + len(value) :]


@pytest.mark.parametrize(
    ("offset", "why"),
    [(0x2A0 + 60, "signature r beyond 48 bytes"), (0x2E8 + 71, "signature s"), (0x400, "reserved bytes")],
)
def test_snp_signature_area_past_the_signature_is_refused(tmp_path: Path, offset: int, why: str) -> None:
    bad = _edit(SNP / "report.bin", tmp_path, "r.bin", lambda b: _set(b, offset, b"\x01"))
    with pytest.raises(EvidenceError, match=why):
        verify_file(bad, Options(chain=[SNP / "vcek.der", SNP / "ask_ark_milan.pem"], allow_debug=True))


def test_trailing_bytes_after_reports_quotes_and_certificates_are_refused(tmp_path: Path) -> None:
    snp_opts = Options(chain=[SNP / "vcek.der", SNP / "ask_ark_milan.pem"], allow_debug=True, as_of=TDX_WHEN)
    with pytest.raises(EvidenceError, match="1185 bytes"):
        verify_file(_edit(SNP / "report.bin", tmp_path, "r", lambda b: b + b"\0"), snp_opts)
    with pytest.raises(EvidenceError, match="not zero padding"):
        verify_file(_edit(TDX / "quote_v5.dat", tmp_path, "q", lambda b: b + b"X"), Options(as_of=TDX_WHEN))
    for name, fn in (
        ("junk", lambda b: b + b"junk\n"),
        ("nl", lambda b: b + b"\n"),
        ("pre", lambda b: b"x" + b),
    ):
        pem = _edit(SNP / "ask_ark_milan.pem", tmp_path, f"{name}.pem", fn)
        with pytest.raises(EvidenceError, match="not a plain PEM"):
            verify_file(SNP / "report.bin", Options(chain=[SNP / "vcek.der", pem], allow_debug=True))
    der = _edit(SNP / "vcek.der", tmp_path, "v.der", lambda b: b + b"\0")
    with pytest.raises(EvidenceError, match="not a certificate"):
        verify_file(SNP / "report.bin", Options(chain=[der, SNP / "ask_ark_milan.pem"], allow_debug=True))
    az = SAMPLES / "azure-tdx"
    hcl = _edit(az / "hcl-report.bin", tmp_path, "h", lambda b: b[:-1] + b"\x01")
    with pytest.raises(EvidenceError, match="not zero padding"):
        verify_file(hcl, Options(tdx_quote=az / "td-quote.bin", as_of=AZ_TDX_WHEN))


def test_vcek_outer_signature_algorithm_is_checked(tmp_path: Path) -> None:
    """The outer AlgorithmIdentifier is not signed: RSA-PSS salt 48 edited to 47 must be refused."""
    der = (SNP / "vcek.der").read_bytes()
    salt = bytes.fromhex("a203020130")  # [2] { INTEGER 48 }: the PSS salt length
    first, last = der.find(salt), der.rfind(salt)
    assert first != last  # inner (signed) and outer copies
    bad = _edit(SNP / "vcek.der", tmp_path, "v.der", lambda b: _set(b, last + 4, b"\x2f"))
    with pytest.raises(EvidenceError, match="outer signature algorithm"):
        verify_file(SNP / "report.bin", Options(chain=[bad, SNP / "ask_ark_milan.pem"], allow_debug=True))


def _tcbinfo(tmp: Path, edit) -> Path:
    return _edit(TDX / "sample_tcbinfo_response_v5", tmp, "tcbinfo", edit)


def test_tcb_info_needs_intels_signature_and_edits_break_it(tmp_path: Path) -> None:
    q = TDX / "quote_v5.dat"
    info = TDX / "sample_tcbinfo_response_v5"
    late = TDX_WHEN.replace(month=6)
    # without the signing certificate the TCB info is not taken on trust
    res = verify_file(q, Options(tcb_info=info, as_of=TDX_WHEN))
    assert failed(res) == ["tdx tcb info: signature"]
    # past nextUpdate it fails; editing nextUpdate does not make it pass
    assert failed(verify_file(q, Options(tcb_info=info, chain=[TCB_CHAIN], as_of=late))) == [
        "tdx tcb info: current"
    ]
    edited = _tcbinfo(tmp_path, lambda b: b.replace(b'"nextUpdate":"2026-03-03', b'"nextUpdate":"2027-03-03'))
    res = verify_file(q, Options(tcb_info=edited, chain=[TCB_CHAIN], as_of=late))
    assert not res.verified and "tdx tcb info: signature" in failed(res)
    # a level edited to UpToDate, or the signature swapped for another response's, fails too
    other = json.loads((TDX / "sample_qeIdentity_response").read_bytes())["signature"].encode()
    for fn in (
        lambda b: b.replace(b'"tcbStatus":"OutOfDate"', b'"tcbStatus":"UpToDate"', 1),
        lambda b: b[: b.rindex(b'"signature":"') + 13] + other + b'"}',
    ):
        res = verify_file(q, Options(tcb_info=_tcbinfo(tmp_path, fn), chain=[TCB_CHAIN], as_of=TDX_WHEN))
        assert "tdx tcb info: signature" in failed(res)


def test_tcb_signing_certificate_must_chain_to_intel_and_be_valid(tmp_path: Path) -> None:
    q, info = TDX / "quote_v5.dat", TDX / "sample_tcbinfo_response_v5"
    res = verify_file(q, Options(tcb_info=info, chain=[TDX / "tcb_signing_chain_2018.pem"], as_of=TDX_WHEN))
    assert failed(res) == ["tdx tcb info chain: Intel SGX TCB Signing validity"]  # expired 2025-05-21
    leaf = x509.load_pem_x509_certificates(TCB_CHAIN.read_bytes())[0]
    alone = tmp_path / "leaf.pem"
    alone.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    res = verify_file(q, Options(tcb_info=info, chain=[alone], as_of=TDX_WHEN))
    assert res.verified, failed(res)  # the root is built in
    res = verify_file(q, Options(tcb_info=info, chain=[SNP / "ask_ark_milan.pem"], as_of=TDX_WHEN))
    assert "no 'Intel SGX TCB Signing' certificate" in next(c.detail for c in res.failed())


def test_qe_identity_is_verified_against_intels_signature(tmp_path: Path) -> None:
    q, ident = TDX / "quote_v5.dat", TDX / "sample_qeIdentity_response"
    then = TDX_WHEN.replace(year=2023, month=6, day=20)
    res = verify_file(q, Options(qe_identity=ident, chain=[TCB_CHAIN], as_of=TDX_WHEN))
    assert failed(res) == ["tdx qe identity: current"] and res.info["tdx"]["qe_status"] == "UpToDate"
    edited = _edit(ident, tmp_path, "qe", lambda b: b.replace(b'"nextUpdate":"2023', b'"nextUpdate":"2027'))
    res = verify_file(q, Options(qe_identity=edited, chain=[TCB_CHAIN], as_of=TDX_WHEN))
    assert "tdx qe identity: signature" in failed(res)
    signer = _edit(ident, tmp_path, "qe2", lambda b: b.replace(b'"mrsigner":"DC9E', b'"mrsigner":"DD9E'))
    res = verify_file(q, Options(qe_identity=signer, chain=[TCB_CHAIN], as_of=then))
    assert {"tdx qe identity: signature", "tdx qe identity: QE is Intel's TD quoting enclave"} <= set(
        failed(res)
    )


@pytest.mark.parametrize(
    ("at", "value", "message"),
    [
        (4, struct.pack("<I", 7), "header version"),
        (12, struct.pack("<I", 1), "request type"),
        (16, struct.pack("<I", 1), "status"),
        (24, b"\x01", "reserved"),
        (32 + 1024 + 5, b"\x01", "after the 1024-byte TDREPORT"),
        (1216 + 4, struct.pack("<I", 2), "request data version"),
        (1216 + 12, struct.pack("<I", 9), "hash type"),
        (8, struct.pack("<I", 2436), "header says"),
    ],
)
def test_hcl_header_and_layout_fields_are_checked(
    tmp_path: Path, at: int, value: bytes, message: str
) -> None:
    az = SAMPLES / "azure-tdx"
    bad = _edit(az / "hcl-report.bin", tmp_path, "h", lambda b: _set(b, at, value))
    with pytest.raises(EvidenceError, match=message):
        verify_file(bad, Options(tdx_quote=az / "td-quote.bin", as_of=AZ_TDX_WHEN))


def _cli(*args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "testbed_agent", "attest", "verify", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)


def _tlv(tag: int, body: bytes) -> bytes:
    return bytes([tag, len(body)]) + body


#: an EC public key on brainpoolP160r1, a curve the verifier's library does not implement
_BP160 = _tlv(
    0x30,
    _tlv(0x30, _tlv(6, bytes.fromhex("2a8648ce3d0201")) + _tlv(6, bytes.fromhex("2b2403030208010101")))
    + _tlv(3, b"\0\x04" + bytes(40)),
)


@pytest.mark.parametrize(
    "key",
    [
        b"-----BEGIN PUBLIC KEY-----\nnot base64 at all\n-----END PUBLIC KEY-----\n",
        b"\x30\x82\x01\x22garbage-der",
        _BP160,
        b"-----BEGIN PUBLIC KEY-----\n" + base64.b64encode(_BP160) + b"\n-----END PUBLIC KEY-----\n",
    ],
    ids=["bad PEM", "bad DER", "DER unsupported curve", "PEM unsupported curve"],
)
def test_bad_attestation_key_is_a_one_line_error(tmp_path: Path, key: bytes) -> None:
    """Issue 26 finding 10: a bad PEM/DER key was a traceback."""
    ak = tmp_path / "ak.pem"
    ak.write_bytes(key)
    az = SAMPLES / "azure-cvm"
    proc = _cli(
        str(az / "quote_msg"), "--ak", str(ak), "--signature", str(az / "quote_sig"), "--nonce", "010203"
    )
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
    assert "ak.pem" in proc.stderr and len(proc.stderr.strip().splitlines()) <= 2


@pytest.mark.parametrize("value", ["!!!not-base64!!!", "", "A" * 5000, 12])
def test_bad_jwk_base64_is_a_one_line_error(tmp_path: Path, value) -> None:
    """Issue 26 finding 10: bad JWK base64 in the claims was a traceback."""
    ak = rsa.generate_private_key(65537, 2048).public_key()
    old = b'"n":"' + ak_jwk(ak)["n"].encode() + b'"'
    new = b'"n":' + json.dumps(value).encode()
    path = tmp_path / "hcl.bin"
    path.write_bytes(hcl_report(AmdLikeChain().vcek_key, ak, claims_edit=lambda b: b.replace(old, new)))
    proc = _cli(str(path))
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "JWK" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
