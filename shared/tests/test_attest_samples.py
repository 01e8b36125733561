"""Real evidence: every sample verifies as far as it can (issue 26 finding 3; issue 40 finding 2: the
Intel root file as published, PCK chains without a NUL, CRLF), the bytes inside a structure that no
signature or check covers are refused (issue 26 finding 4: signature-area bytes, the certificate's
unsigned outer algorithm, Intel's collateral without or against its signature), and the bytes
outside every structure are accepted, recorded in ``ignored`` and change no claim (issue 40)."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from attestforge import AmdLikeChain, ak_jwk, hcl_report
from attestsamples import (
    AZ_SNP_WHEN,
    AZ_TDX_WHEN,
    GCP_WHEN,
    N_SETS,
    SAMPLES,
    SNP,
    SPR_WHEN,
    TDX,
    TDX_WHEN,
    evidence_sets,
)
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from testbed_shared.attest.hcl import parse_hcl
from testbed_shared.attest.model import EvidenceError
from testbed_shared.attest.verify import Options, verify_file

TCB_CHAIN = TDX / "tcb_signing_chain.pem"


def failed(res) -> list[str]:
    return [c.name for c in res.failed()]


def ignored(res, files: dict[str, Path]) -> list[tuple[str, str]]:
    """(file role, reason) of each ignored entry, the reason cut to the set's declared prefix."""
    role = {str(p): r for r, p in files.items()}
    return [(role.get(i.source, i.source), i.why) for i in res.ignored]


@pytest.mark.parametrize("index", range(N_SETS))
def test_every_real_sample_verifies_as_far_as_its_evidence_allows(tmp_path: Path, index: int) -> None:
    sets = evidence_sets(tmp_path)
    assert len(sets) == N_SETS
    s = sets[index]
    if s.refused:
        with pytest.raises(EvidenceError, match=s.refused):
            verify_file(s.files[s.main], s.options(s.files))
        return
    res = verify_file(s.files[s.main], s.options(s.files))
    assert res.verified is s.verifies, (s.name, failed(res))
    assert failed(res) == s.failing, s.name
    got = ignored(res, s.files)
    assert len(got) == len(s.ignored) and all(
        r == role and why.startswith(start) for (r, why), (role, start) in zip(got, s.ignored, strict=True)
    ), (s.name, got)


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
    assert res.info["tdx"]["fmspc"] == "00806f050000"
    pad = next(i for i in res.ignored if i.why.startswith("zero padding after the quote"))
    assert pad.source == str(s.files["td_quote"]) and pad.spans == ((4936, 70),) and pad.head == "00" * 32


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


def claims(res) -> dict:
    """Everything a result says but what it ignored (and where the files were)."""
    d = res.as_dict()
    d.pop("ignored")
    return d


def test_intel_root_file_as_published_is_a_trust_anchor() -> None:
    """Issue 40 finding 2: Intel's root CA file as published (no newline after its END line) was
    "not a plain PEM certificate bundle (byte 947 ...)"."""
    root = TDX / "intel_sgx_root_ca.pem"
    assert not root.read_bytes().endswith(b"\n")
    res = verify_file(TDX / "quote_v5.dat", Options(roots=[root], as_of=TDX_WHEN))
    assert res.verified, failed(res)
    built_in = verify_file(TDX / "quote_v5.dat", Options(as_of=TDX_WHEN))  # the same root, built in
    assert [(c.name, c.ok) for c in res.checks] == [(c.name, c.ok) for c in built_in.checks]
    assert (res.measurement, res.report_data, res.info) == (
        built_in.measurement,
        built_in.report_data,
        built_in.info,
    )
    note = res.ignored[0]
    assert note.source == str(root) and note.why == "no line end after the last END line" and note.spans == ()
    proc = _cli(str(TDX / "quote_v5.dat"), "--root", str(root), "--as-of", "2026-02-15")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["ignored"][0]["why"] == "no line end after the last END line"


def test_production_quotes_whose_pck_chain_has_no_nul_verify() -> None:
    """Issue 40 finding 2: "the PCK certificate chain is not one NUL-terminated text" refused real v4
    quotes (go-tdx-guest's production sample, a GCP TD's quote)."""
    for name, when, after in (
        ("cos-113-tdx-quote.dat", GCP_WHEN, bytes(3065)),
        ("tdx_prod_quote_SPR_E4.dat", SPR_WHEN, b"\nextra bytes(only for testing purpose)\n"),
    ):
        raw = (TDX / name).read_bytes()
        res = verify_file(TDX / name, Options(as_of=when))
        assert res.verified, (name, failed(res))
        assert res.info["tdx"]["version"] == 4
        assert not any("NUL" in i.why for i in res.ignored)  # nothing terminates these chains
        (tail,) = res.ignored  # what follows the quote: recorded exactly
        assert tail.spans == ((len(raw) - len(after), len(after)),) and raw.endswith(after)
        assert tail.sha256 == hashlib.sha256(after).hexdigest() and tail.head == after[:32].hex()


def test_a_nul_terminated_chain_records_its_nul() -> None:
    raw = (TDX / "quote_v5.dat").read_bytes()
    res = verify_file(TDX / "quote_v5.dat", Options(as_of=TDX_WHEN))
    (nul,) = res.ignored
    assert "NUL terminating the PCK chain" in nul.why and nul.spans == ((len(raw) - 1, 1),) and raw[-1] == 0


def test_vlek_report_verifies_through_the_asvk_and_an_unused_ask_is_named() -> None:
    """A VLEK chain (VLEK -> ASVK -> ARK): trustee's bundle also holds the ASK, which no chain of a
    VLEK-signed report uses, so giving the whole bundle names it; the sets give ASVK and ARK."""
    v = SAMPLES / "sev-snp-vlek"
    opts = Options(chain=[v / "test-vlek.der", v / "milan_ask_ark_asvk.pem"], as_of=AZ_SNP_WHEN)
    res = verify_file(v / "test-vlek-report.bin", opts)
    assert res.info["snp"]["signing_key"] == "vlek"
    assert (
        failed(res) == ["chain: every given certificate is checked"]
        and "'SEV-Milan'" in res.failed()[0].detail
    )


def _crlf(path: Path, tmp: Path) -> Path:
    out = tmp / (path.name + ".crlf")
    out.write_bytes(path.read_bytes().replace(b"\n", b"\r\n"))
    return out


def test_crlf_certificate_files_verify_and_their_crs_are_recorded(tmp_path: Path) -> None:
    """Issue 40 finding 2: PEM with Windows line ends was "not a plain PEM certificate bundle"."""
    chain = _crlf(SNP / "ask_ark_milan.pem", tmp_path)
    opts = Options(chain=[SNP / "vcek.der", chain], allow_debug=True, as_of=TDX_WHEN)
    res = verify_file(SNP / "report.bin", opts)
    assert res.verified, failed(res)
    plain = Options(chain=[SNP / "vcek.der", SNP / "ask_ark_milan.pem"], allow_debug=True, as_of=TDX_WHEN)
    assert claims(res) == claims(verify_file(SNP / "report.bin", plain))
    (crs,) = res.ignored
    data = chain.read_bytes()
    assert crs.source == str(chain) and "CRLF" in crs.why and crs.size == data.count(b"\r")
    assert all(data[o : o + n] == b"\r" * n for o, n in crs.spans)
    root = _crlf(TDX / "intel_sgx_root_ca.pem", tmp_path)  # CRLF and no final line end
    res = verify_file(TDX / "quote_v5.dat", Options(roots=[root], as_of=TDX_WHEN))
    assert res.verified and [i.why for i in res.ignored][:2] == [
        "CR of CRLF line ends (the base64 is read without them)",
        "no line end after the last END line",
    ]


def test_bytes_outside_every_structure_are_ignored_recorded_and_change_no_claim(tmp_path: Path) -> None:
    """Bytes after a report, quote, DER certificate, HCL report or PCS response, and text around PEM
    blocks: no check reads them, so they verify as the original does, each recorded with where
    they are and their SHA-256 (they were refused before issue 40)."""
    snp = Options(chain=[SNP / "vcek.der", SNP / "ask_ark_milan.pem"], allow_debug=True, as_of=TDX_WHEN)
    base = claims(verify_file(SNP / "report.bin", snp))
    rep = _edit(SNP / "report.bin", tmp_path, "r", lambda b: b + b"\0")
    res = verify_file(rep, snp)
    assert claims(res) == base and [(i.source, i.spans) for i in res.ignored] == [(str(rep), ((1184, 1),))]
    for name, fn, spans in (
        ("junk", lambda b: b + b"junk\n", ((4602, 5),)),
        ("pre", lambda b: b"subject=ASK\n" + b, ((0, 12),)),
        ("between", lambda b: b.replace(b"-----\n-----BEGIN", b"-----\n# ARK\n-----BEGIN"), ((2325, 6),)),
    ):
        pem = _edit(SNP / "ask_ark_milan.pem", tmp_path, f"{name}.pem", fn)
        res = verify_file(
            SNP / "report.bin", Options(chain=[SNP / "vcek.der", pem], allow_debug=True, as_of=TDX_WHEN)
        )
        assert claims(res) == base, name
        assert [(i.source, i.why.split(" (")[0], i.spans) for i in res.ignored] == [
            (str(pem), "text outside the PEM blocks", spans)
        ], name
    der = _edit(SNP / "vcek.der", tmp_path, "v.der", lambda b: b + b"\0\0")
    res = verify_file(
        SNP / "report.bin", Options(chain=[der, SNP / "ask_ark_milan.pem"], allow_debug=True, as_of=TDX_WHEN)
    )
    assert claims(res) == base and res.ignored[0].spans == ((1360, 2),)
    q = _edit(TDX / "quote_v5.dat", tmp_path, "q", lambda b: b + b"X")
    res = verify_file(q, Options(as_of=TDX_WHEN))
    assert res.verified and res.ignored[0].why == "bytes after the quote (no signature covers them)"
    az = SAMPLES / "azure-tdx"
    hcl = _edit(az / "hcl-report.bin", tmp_path, "h", lambda b: b[:-1] + b"\x01")
    res = verify_file(hcl, Options(tdx_quote=az / "td-quote.bin", as_of=AZ_TDX_WHEN))
    assert res.verified and res.ignored[0].why == "bytes after the HCL report's size"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda b: b.replace(b"BEGIN CERTIFICATE", b"BEGIN PRIVATE KEY", 1),
            "'PRIVATE KEY' where CERTIFICATE",
        ),
        (lambda b: b"x" + b, "not on a line of its own"),
        (lambda b: b[: b.index(b"-----BEGIN", 10) + 5], "broken PEM boundary"),
        (lambda b: b.replace(b"-----\n-----BEGIN", b"-----\n----------\n-----BEGIN"), "broken PEM boundary"),
        (lambda b: b.replace(b"\n", b"\n\n", 2), "not base64 inside"),
        (lambda b: b[: b.index(b"-----END")], "without its END line"),
        (lambda b: b.replace(b"==\n-----END", b"=\n-----END", 1), "not base64|canonical"),
        (
            lambda b: b.replace(b"-----END CERTIFICATE-----", b"-----END CERTIFICATE----- ", 1),
            "not base64 inside",
        ),
    ],
    ids=[
        "other label",
        "text before BEGIN on its line",
        "cut inside a BEGIN line",
        "dashes between blocks",
        "blank line in a block",
        "no END",
        "padding",
        "END+space",
    ],
)
def test_what_lies_inside_pem_blocks_is_still_read_exactly(tmp_path: Path, edit, message: str) -> None:
    pem = _edit(SNP / "ask_ark_milan.pem", tmp_path, "c.pem", edit)
    with pytest.raises(EvidenceError, match=message):
        verify_file(SNP / "report.bin", Options(chain=[SNP / "vcek.der", pem], allow_debug=True))


def test_base64_padding_bits_are_not_a_second_spelling(tmp_path: Path) -> None:
    """A last base64 character whose unused bits differ decodes to the same certificate: refused, so
    that no two texts of one certificate pass unnoticed."""
    data = (TDX / "intel_sgx_root_ca.pem").read_bytes()
    at = data.index(b"=\n-----END") - 1  # "...qI=": 'I' carries 2 unused bits
    swapped = data[:at] + bytes([data[at] + 1]) + data[at + 1 :]
    root = tmp_path / "root.pem"
    root.write_bytes(swapped)
    with pytest.raises(EvidenceError, match="canonical"):
        verify_file(TDX / "quote_v5.dat", Options(roots=[root], as_of=TDX_WHEN))


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
