"""Binding evidence to results: the agent's collector on a software TPM standing in for an Azure
vTPM (real tpm2-tools, real swtpm), on recorded configfs-tsm answers, and on a machine without
confidential hardware; then ``testbed-report audit`` over what it wrote."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from attestforge import (
    SAMPLES,
    AmdLikeChain,
    IntelLikeChain,
    ak_jwk,
    hcl_report,
    hcl_report_tdx,
    pem,
    snp_report,
    tdx_quote_v4,
)
from cryptography.hazmat.primitives import serialization
from swtpmproc import start_swtpm

from testbed_reports.audit import audit_host
from testbed_shared.attest.binding import Binder
from testbed_shared.attest.probe import EvidenceProbe, ProbeError
from testbed_shared.attest.verify import Options


@dataclass(frozen=True)
class Ident:
    run_id: str = "run1"
    host: str = "cvm-1"
    plan_sha256: str = "cd" * 32


def _tpm(tcti: str, *args: str) -> bytes:
    done = subprocess.run(
        ["tpm2_" + args[0], *args[1:]],
        env={"TPM2TOOLS_TCTI": tcti, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        check=False,
    )
    if done.returncode:
        raise subprocess.CalledProcessError(
            done.returncode, args[0], stderr=done.stderr.decode(errors="replace")[-300:]
        )
    return done.stdout


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> tuple[AmdLikeChain, Path]:
    c = AmdLikeChain()
    _, root = c.write(tmp_path_factory.mktemp("pki"))
    return c, root


@pytest.fixture(scope="module")
def thim(chain) -> Iterator[str]:
    """A loopback stand-in for Azure IMDS's THIM endpoint serving the VCEK chain."""
    c, _ = chain
    body = json.dumps(
        {"vcekCert": pem(c.vcek).decode(), "certificateChain": pem(c.ask, c.ark).decode()}
    ).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ok = self.path == "/metadata/THIM/amd/certification" and self.headers.get("Metadata") == "true"
            self.send_response(200 if ok else 400)
            self.end_headers()
            self.wfile.write(body if ok else b"{}")

        def log_message(self, *_a: object) -> None:
            pass

    srv = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()


def _swtpm(state: Path, hcl_for_ak) -> tuple[subprocess.Popen, str]:
    """A real swtpm set up like an Azure CVM's vTPM: AK at 0x81000003 and, in NV index 0x01400001,
    the HCL report ``hcl_for_ak(ak_public_key)`` returns (2048 or 2600 bytes, zero-padded)."""
    assert shutil.which("swtpm") and shutil.which("tpm2_quote"), (
        "swtpm and tpm2-tools come from scripts/apt-packages.txt"
    )
    proc, tcti = start_swtpm(state, state.parent / "swtpm.log")
    ctx = state / "ak.ctx"
    _tpm(
        tcti,
        "createprimary",
        "-Q",
        "-C",
        "o",
        "-G",
        "rsa2048:rsassa-sha256:null",
        "-a",
        "fixedtpm|fixedparent|sensitivedataorigin|userwithauth|restricted|sign",
        "-c",
        str(ctx),
    )
    _tpm(tcti, "evictcontrol", "-Q", "-C", "o", "-c", str(ctx), "0x81000003")
    _tpm(tcti, "readpublic", "-Q", "-c", "0x81000003", "-f", "pem", "-o", str(state / "ak.pem"))
    ak = serialization.load_pem_public_key((state / "ak.pem").read_bytes())
    hcl = hcl_for_ak(ak)
    (state / "hcl.bin").write_bytes(hcl)
    _tpm(
        tcti,
        "nvdefine",
        "0x01400001",
        "-C",
        "o",
        "-s",
        str(len(hcl)),
        "-a",
        "ownerread|ownerwrite|authread|authwrite",
    )
    _tpm(tcti, "nvwrite", "0x01400001", "-C", "o", "-i", str(state / "hcl.bin"))
    return proc, tcti


@pytest.fixture(scope="module")
def azure_vtpm(tmp_path_factory: pytest.TempPathFactory, chain) -> Iterator[str]:
    """The vTPM of an Azure SEV-SNP CVM whose HCL report the test VCEK signed."""
    proc, tcti = _swtpm(
        tmp_path_factory.mktemp("swtpm"), lambda ak: hcl_report(chain[0].vcek_key, ak, size=2048)
    )
    yield tcti
    proc.terminate()
    proc.wait(10)


def _run_with(binder: Binder, results: Path) -> None:
    binder.begin()
    results.write_text(
        "".join(
            json.dumps({"run_id": "run1", "host": "cvm-1", "plan_sha256": "cd" * 32, "benchmark": f"b{i}"})
            + "\n"
            for i in range(2)
        )
    )
    binder.end()


@pytest.mark.slow
def test_azure_vtpm_binding_on_swtpm_verifies_and_binds(
    tmp_path: Path, azure_vtpm: str, thim: str, chain
) -> None:
    probe = EvidenceProbe(tcti=azure_vtpm, imds=thim, present={"/dev/tpmrm0"})
    results = tmp_path / "cvm-1.jsonl"
    _run_with(Binder(tmp_path, Ident(), results, {"cloud": "azure", "evidence_probe": probe}), results)
    end = json.loads((tmp_path / "cvm-1.evidence" / "01-end" / "manifest.json").read_text())
    assert end["technology"] == "azure-hcl" and "certs" in end["files"], end
    assert len(_tpm(azure_vtpm, "nvread", "0x01400002", "-C", "o")) == 64  # user data written
    a = audit_host(results, Options(roots=[chain[1]]))
    assert (a.evidence, a.bound, a.technology) == ("verified", "yes", "azure-sev-snp"), a.problems
    lines = results.read_text().splitlines()
    results.write_text("\n".join([lines[0]]) + "\n")  # a results line removed after the run
    assert audit_host(results, Options(roots=[chain[1]])).bound == "NO"


#: the GUIDs of the VCEK, ASK and ARK entries in the SNP extended report's certificate table
GUIDS = (
    "63da758d-e664-4564-adc5-f4b93be8accd",
    "4ab7b379-bbac-4fe4-a02f-05aef327c782",
    "c0b406a4-a803-4952-9743-3fb6014cd0ae",
)


class TsmProbe(EvidenceProbe):
    """configfs-tsm answers recorded from an SEV-SNP guest: the report over the given inblob and
    the certificate table (the test chain stands in for the chip's VCEK, ASK, ARK)."""

    def __init__(self, chain: AmdLikeChain) -> None:
        super().__init__(present={"/sys/kernel/config/tsm/report"})
        self.chain = chain

    def tsm_report(self, inblob: bytes) -> dict[str, bytes]:
        ders = [
            c.public_bytes(serialization.Encoding.DER)
            for c in (self.chain.vcek, self.chain.ask, self.chain.ark)
        ]
        table, off = b"", 24 * 4
        for guid, d in zip(GUIDS, ders, strict=True):
            table += uuid.UUID(guid).bytes_le + off.to_bytes(4, "little") + len(d).to_bytes(4, "little")
            off += len(d)
        aux = table + bytes(24) + b"".join(ders)
        return {
            "outblob": snp_report(self.chain.vcek_key, inblob),
            "auxblob": aux,
            "provider": b"sev_guest\n",
        }


def test_configfs_tsm_snp_binding_verifies_and_binds(tmp_path: Path, chain) -> None:
    results = tmp_path / "cvm-1.jsonl"
    _run_with(Binder(tmp_path, Ident(), results, {"evidence_probe": TsmProbe(chain[0])}), results)
    a = audit_host(results, Options(roots=[chain[1]]))
    assert (a.evidence, a.bound, a.technology) == ("verified", "yes", "sev-snp"), a.problems
    assert a.measurement == "11" * 48


def test_no_cc_hardware_records_unavailable_with_reason(tmp_path: Path) -> None:
    results = tmp_path / "cvm-1.jsonl"
    _run_with(Binder(tmp_path, Ident(), results, {"evidence_probe": EvidenceProbe(present=set())}), results)
    doc = json.loads((tmp_path / "cvm-1.evidence" / "00-begin" / "manifest.json").read_text())
    assert doc["attestation"] == "unavailable" and "no /dev/sev-guest" in doc["reason"]
    a = audit_host(results)
    assert a.evidence == "unavailable" and a.ok


def test_sample_report_as_forged_evidence_fails_the_audit(tmp_path: Path) -> None:
    """A real, valid SNP report copied in as evidence of this run: verified, but not bound."""
    results = tmp_path / "cvm-1.jsonl"
    _run_with(Binder(tmp_path, Ident(), results, {"evidence_probe": EvidenceProbe(present=set())}), results)
    for d in sorted((tmp_path / "cvm-1.evidence").iterdir()):
        doc = json.loads((d / "manifest.json").read_text())
        del doc["attestation"], doc["reason"]
        doc.update(technology="sev-snp", files={"report": "report.bin", "certs": "certs.pem"})
        (d / "manifest.json").write_text(json.dumps(doc))
        shutil.copy(SAMPLES / "sev-snp" / "report.bin", d / "report.bin")
        (d / "certs.pem").write_bytes((SAMPLES / "sev-snp" / "vcek.der").read_bytes())
    a = audit_host(results, Options(allow_debug=True, chain=[SAMPLES / "sev-snp" / "ask_ark_milan.pem"]))
    assert a.evidence == "FAILED" and not a.ok
    assert any("binding: REPORT_DATA == digest of claims" in p for p in a.problems)


class TdxTsmProbe(EvidenceProbe):
    """configfs-tsm on a TDX guest, answering with a real quote recorded on other hardware."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__(present={"/sys/kernel/config/tsm/report"})
        self.fail = fail

    def tsm_report(self, inblob: bytes) -> dict[str, bytes]:
        if self.fail:
            raise ProbeError("configfs-tsm: outblob: Input/output error")
        return {
            "outblob": (SAMPLES / "tdx" / "quote_v5.dat").read_bytes(),
            "provider": b"tdx_guest\n",
            "auxblob": b"",
        }


def test_tdx_quote_recorded_elsewhere_verifies_but_does_not_bind(tmp_path: Path) -> None:
    results = tmp_path / "cvm-1.jsonl"
    _run_with(Binder(tmp_path, Ident(), results, {"evidence_probe": TdxTsmProbe()}), results)
    doc = json.loads((tmp_path / "cvm-1.evidence" / "01-end" / "manifest.json").read_text())
    assert doc["technology"] == "tdx" and doc["method"] == "configfs-tsm (tdx_guest)"
    a = audit_host(results)
    assert (a.technology, a.evidence, a.bound) == ("tdx", "FAILED", "yes")
    assert [p.split(": ", 1)[1].split(":")[0] for p in a.problems] == ["binding", "binding"]


def test_collection_failure_is_recorded_and_the_run_goes_on(tmp_path: Path) -> None:
    results = tmp_path / "cvm-1.jsonl"
    _run_with(Binder(tmp_path, Ident(), results, {"evidence_probe": TdxTsmProbe(fail=True)}), results)
    doc = json.loads((tmp_path / "cvm-1.evidence" / "00-begin" / "manifest.json").read_text())
    assert doc["attestation"] == "failed" and "Input/output error" in doc["reason"]
    assert audit_host(results).evidence == "failed" and results.exists()


@pytest.fixture(scope="module")
def intel(tmp_path_factory: pytest.TempPathFactory) -> tuple[IntelLikeChain, Path]:
    c = IntelLikeChain()
    root = tmp_path_factory.mktemp("intel") / "root.pem"
    root.write_bytes(pem(c.root))
    return c, root


@pytest.mark.slow
def test_azure_tdx_binding_fetches_the_td_quote_and_verifies(tmp_path: Path, intel) -> None:
    """Azure TDX (finding 3): the agent reads the HCL report from the vTPM, asks the quote service
    (a loopback stand-in for IMDS's /acc/tdquote) to quote its TDREPORT, and audit verifies the
    whole chain: TD quote -> TDREPORT -> claims -> AK -> TPM quote -> results."""
    c, root = intel
    made: dict[str, bytes] = {}

    def hcl_for(ak) -> bytes:
        claims = {"keys": [ak_jwk(ak)], "vm-configuration": {}}
        blob, body = hcl_report_tdx(b"", b"\x33" * 48, claims, size=2048)  # swtpm: NV max 2048
        made["tdreport"], made["quote"] = blob[32 : 32 + 1024], tdx_quote_v4(c, b"", body=body)
        return blob

    class Imds(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            doc = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            report = base64.urlsafe_b64decode(doc["report"] + "=" * (-len(doc["report"]) % 4))
            ok = self.path == "/acc/tdquote" and self.headers.get("Metadata") == "true"
            ok = ok and report == made["tdreport"]
            self.send_response(200 if ok else 400)
            self.end_headers()
            quote = base64.urlsafe_b64encode(made["quote"]).rstrip(b"=").decode()
            self.wfile.write(json.dumps({"quote": quote} if ok else {"error": "bad report"}).encode())

        def log_message(self, *_a: object) -> None:
            pass

    srv = HTTPServer(("127.0.0.1", 0), Imds)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    state = tmp_path / "swtpm"
    state.mkdir()
    proc, tcti = _swtpm(state, hcl_for)
    try:
        probe = EvidenceProbe(tcti=tcti, imds=f"http://127.0.0.1:{srv.server_port}", present={"/dev/tpmrm0"})
        results = tmp_path / "cvm-1.jsonl"
        _run_with(Binder(tmp_path, Ident(), results, {"cloud": "azure", "evidence_probe": probe}), results)
    finally:
        proc.terminate()
        proc.wait(10)
        srv.shutdown()
    end = json.loads((tmp_path / "cvm-1.evidence" / "01-end" / "manifest.json").read_text())
    assert end["files"]["td_quote"] == "td-quote.bin", end
    a = audit_host(results, Options(roots=[root]))
    assert (a.evidence, a.bound, a.technology) == ("verified", "yes", "azure-tdx"), a.problems
    assert a.measurement == "33" * 48
