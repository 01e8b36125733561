"""The real evidence in ``data/attestation-samples`` as verifiable sets: which files, which options,
at what time each verifies (or how far it gets). Evidence published inside JSON documents (trustee's
``evidence-v1.json`` and ``evidence-genoa.json``) is written out as the files the agent itself keeps
(report, quote message and signature, PCR values, VCEK), byte for byte as decoded; so are the ASVK
and ARK of trustee's Milan bundle (the VLEK chain AMD's KDS serves), each certificate's PEM block as
published."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from testbed_shared.attest.verify import Options

SAMPLES = Path(__file__).parent / "data" / "attestation-samples"
SNP, TDX, AZ = SAMPLES / "sev-snp", SAMPLES / "tdx", SAMPLES / "azure-cvm"
TDX_TR, VLEK, GCP = SAMPLES / "tdx-trustee", SAMPLES / "sev-snp-vlek", SAMPLES / "gcp-snp"
TDX_WHEN = datetime(2026, 2, 15, tzinfo=UTC)  # inside the v5 TCB info's validity
AZ_TDX_WHEN = datetime(2024, 6, 1, tzinfo=UTC)
AZ_SNP_WHEN = datetime(2025, 6, 1, tzinfo=UTC)
SPR_WHEN = datetime(2023, 6, 20, tzinfo=UTC)  # inside go-tdx-guest's TCB info and QE identity
TR_WHEN = datetime(2025, 11, 1, tzinfo=UTC)  # inside trustee's tcbInfo.json and enclaveIdentity.json
GCP_WHEN = datetime(2026, 1, 15, tzinfo=UTC)  # the GCP VCEK is valid from 2025-12-05
#: the REPORT_DATA trustee's test expects of evidence-genoa.json (its TPM quote's qualifying data)
GENOA_NONCE = bytes.fromhex(
    "0218488bae25d2509232bf676f1a66a30d7372add909109b36016ef136f2938ca05475f8b46094de6b64270ea35d950f"
)
N_SETS = 20


@dataclass
class EvidenceSet:
    """One piece of evidence and what verifying it needs. ``files`` are the inputs a mutation may
    touch (role -> path); ``options(files)`` builds the verifier's options from them."""

    name: str
    main: str
    files: dict[str, Path]
    options: Callable[[dict[str, Path]], Options]
    verifies: bool
    failing: list[str] = field(default_factory=list)
    refused: str | None = None  # the original is refused with this message (a regular expression)
    #: what the verifier ignores in the originals: (file role, start of the reason) for each entry
    ignored: list[tuple[str, str]] = field(default_factory=list)


def _b64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _trustee(doc: Path, out: Path) -> dict[str, Path]:
    d = json.loads(doc.read_text())
    out.mkdir(parents=True, exist_ok=True)
    files = {"hcl": out / "hcl-report.bin", "quote_msg": out / "quote.msg", "quote_sig": out / "quote.sig"}
    files["hcl"].write_bytes(_b64(d["hcl_report"]))
    files["quote_msg"].write_bytes(bytes.fromhex(d["tpm_quote"]["message"]))
    files["quote_sig"].write_bytes(bytes.fromhex(d["tpm_quote"]["signature"]))
    files["pcrs"] = out / "pcrs.json"
    pcrs = {str(i): v if isinstance(v, str) else bytes(v).hex() for i, v in enumerate(d["tpm_quote"]["pcrs"])}
    files["pcrs"].write_text(json.dumps({"sha256": pcrs}))
    if "vcek" in d:
        files["vcek"] = out / "vcek.der"
        files["vcek"].write_bytes(_b64(d["vcek"]))
    if "td_quote" in d:
        files["td_quote"] = out / "td-quote.bin"
        files["td_quote"].write_bytes(_b64(d["td_quote"]))
    return files


def _trustee_genoa(doc: Path, out: Path) -> dict[str, Path]:
    """trustee's older evidence shape: byte lists for the report and quote, the VCEK as PEM text."""
    d = json.loads(doc.read_text())
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "hcl": out / "hcl-report.bin",
        "quote_msg": out / "quote.msg",
        "quote_sig": out / "quote.sig",
        "pcrs": out / "pcrs.json",
        "vcek": out / "vcek.pem",
    }
    files["hcl"].write_bytes(bytes(d["report"]))
    files["quote_msg"].write_bytes(bytes(d["quote"]["message"]))
    files["quote_sig"].write_bytes(bytes(d["quote"]["signature"]))
    pcrs = {str(i): bytes(v).hex() for i, v in enumerate(d["quote"]["pcrs"])}
    files["pcrs"].write_text(json.dumps({"sha256": pcrs}))
    files["vcek"].write_text(d["vcek"])
    return files


def _vlek_chain(bundle: Path, out: Path) -> Path:
    """The ASVK and ARK blocks of trustee's ASK/ARK/ASVK bundle, as published, in one file."""
    text = bundle.read_text()
    blocks = [
        b + "-----END CERTIFICATE-----\n" for b in text.split("-----END CERTIFICATE-----\n") if b.strip()
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(blocks[2] + blocks[1])  # trustee's order: ASK, ARK, ASVK
    return out


_NUL = "the NUL terminating the PCK chain"


def evidence_sets(tmp: Path) -> list[EvidenceSet]:
    """Every real sample, as the evidence it belongs to (written under ``tmp`` where decoded)."""
    az_snp = _trustee(SAMPLES / "azure-snp" / "evidence-v1.json", tmp / "azure-snp")
    az_snp["chain"] = SNP / "ask_ark_milan.pem"
    az_tdx = _trustee(SAMPLES / "azure-tdx" / "evidence-v1.json", tmp / "azure-tdx")
    genoa = _trustee_genoa(SAMPLES / "azure-snp" / "evidence-genoa.json", tmp / "azure-genoa")
    genoa["chain"] = SNP / "ask_ark_genoa.pem"
    vlek_chain = _vlek_chain(VLEK / "milan_ask_ark_asvk.pem", tmp / "vlek" / "asvk_ark.pem")
    return [
        EvidenceSet(
            "sev-snp report",
            "report",
            {"report": SNP / "report.bin", "vcek": SNP / "vcek.der", "chain": SNP / "ask_ark_milan.pem"},
            lambda f: Options(chain=[f["vcek"], f["chain"]], allow_debug=True, as_of=TDX_WHEN),
            verifies=True,
        ),
        EvidenceSet(
            "azure sev-snp hcl + tpm quote",
            "hcl",
            az_snp,
            lambda f: Options(
                chain=[f["vcek"], f["chain"]],
                tpm_quote=f["quote_msg"],
                signature=f["quote_sig"],
                pcrs=f["pcrs"],
                nonce=b"challenge",
                as_of=AZ_SNP_WHEN,
            ),
            verifies=True,
            ignored=[("hcl", "zero padding")],
        ),
        EvidenceSet(
            "azure tdx hcl + td quote + tpm quote",
            "hcl",
            az_tdx,
            lambda f: Options(
                tdx_quote=f["td_quote"],
                tpm_quote=f["quote_msg"],
                signature=f["quote_sig"],
                pcrs=f["pcrs"],
                nonce=b"challenge",
                as_of=AZ_TDX_WHEN,
            ),
            verifies=True,
            ignored=[
                ("hcl", "zero padding"),
                ("hcl", "the TDREPORT's MAC"),
                ("td_quote", "zero padding"),
                ("td_quote", _NUL),
            ],
        ),
        EvidenceSet(
            "azure tdx hcl (published files)",
            "hcl",
            {
                "hcl": SAMPLES / "azure-tdx" / "hcl-report.bin",
                "td_quote": SAMPLES / "azure-tdx" / "td-quote.bin",
            },
            lambda f: Options(tdx_quote=f["td_quote"], as_of=AZ_TDX_WHEN),
            verifies=True,
            ignored=[
                ("hcl", "zero padding"),
                ("hcl", "the TDREPORT's MAC"),
                ("td_quote", "zero padding"),
                ("td_quote", _NUL),
            ],
        ),
        EvidenceSet(
            "tdx quote v5 + tcb info",
            "quote",
            {
                "quote": TDX / "quote_v5.dat",
                "tcb_info": TDX / "sample_tcbinfo_response_v5",
                "tcb_chain": TDX / "tcb_signing_chain.pem",
            },
            lambda f: Options(tcb_info=f["tcb_info"], chain=[f["tcb_chain"]], as_of=TDX_WHEN),
            verifies=True,
            ignored=[("quote", _NUL)],
        ),
        EvidenceSet(
            "tdx quote v5 + qe identity",
            "quote",
            {
                "quote": TDX / "quote_v5.dat",
                "qe_identity": TDX / "sample_qeIdentity_response",
                "tcb_chain": TDX / "tcb_signing_chain.pem",
            },
            lambda f: Options(qe_identity=f["qe_identity"], chain=[f["tcb_chain"]], as_of=TDX_WHEN),
            verifies=False,
            failing=["tdx qe identity: current"],
            ignored=[("quote", _NUL)],
        ),
        EvidenceSet(
            "tpm quote + akpub",
            "quote_msg",
            {"quote_msg": AZ / "quote_msg", "quote_sig": AZ / "quote_sig", "ak": AZ / "akpub.pem"},
            lambda f: Options(ak=f["ak"], signature=f["quote_sig"], nonce=bytes([1, 2, 3])),
            verifies=True,
        ),
        EvidenceSet(
            "azure sev-snp hcl (kinvolk, VCEK of another chip)",
            "hcl",
            {"hcl": AZ / "hcl-report-snp.bin", "chain": AZ / "vcek-chain.pem"},
            lambda f: Options(chain=[f["chain"]], as_of=AZ_SNP_WHEN),
            verifies=False,
            failing=["snp: report signature"],
            ignored=[("hcl", "zero padding")],
        ),
        EvidenceSet(
            "sev-snp report + genoa chain",
            "report",
            {"report": SNP / "report.bin", "vcek": SNP / "vcek.der", "chain": SNP / "ask_ark_genoa.pem"},
            lambda f: Options(chain=[f["vcek"], f["chain"]], allow_debug=True, as_of=TDX_WHEN),
            verifies=False,
            failing=["snp chain: issuer of SEV-VCEK given"],
        ),
        EvidenceSet(
            "tdx quote v5 + tcb info of another platform (newline after the JSON)",
            "quote",
            {
                "quote": TDX / "quote_v5.dat",
                "tcb_info": TDX / "sample_tcbInfo_response",
                "tcb_chain": TDX / "tcb_signing_chain.pem",
            },
            lambda f: Options(tcb_info=f["tcb_info"], chain=[f["tcb_chain"]], as_of=TDX_WHEN),
            verifies=False,
            failing=[
                "tdx tcb info: current",
                "tdx tcb info: FMSPC and PCE id match the PCK certificate",
                "tdx tcb info: status UpToDate",
            ],
            ignored=[("quote", _NUL), ("tcb_info", "bytes after the PCS response")],
        ),
        EvidenceSet(
            "tdx quote v5 + intel root pem as published as --root (no newline after END)",
            "quote",
            {"quote": TDX / "quote_v5.dat", "root": TDX / "intel_sgx_root_ca.pem"},
            lambda f: Options(roots=[f["root"]], as_of=TDX_WHEN),
            verifies=True,
            ignored=[("root", "no line end after the last END line"), ("quote", _NUL)],
        ),
        EvidenceSet(
            "azure tdx hcl (kinvolk, no td quote)",
            "hcl",
            {"hcl": AZ / "hcl-report-tdx.bin"},
            lambda f: Options(as_of=AZ_TDX_WHEN),
            verifies=False,
            failing=["tdx: TDREPORT quoted"],
            ignored=[("hcl", "zero padding"), ("hcl", "the TDREPORT's MAC")],
        ),
        EvidenceSet(
            "tdx v4 production quote (go-tdx-guest SPR E4: chain without NUL, text after the quote)",
            "quote",
            {"quote": TDX / "tdx_prod_quote_SPR_E4.dat"},
            lambda f: Options(as_of=SPR_WHEN),
            verifies=True,
            ignored=[("quote", "bytes after the quote")],
        ),
        EvidenceSet(
            "tdx v4 production quote + its platform's tcb info and qe identity (2023)",
            "quote",
            {
                "quote": TDX / "tdx_prod_quote_SPR_E4.dat",
                "tcb_info": TDX / "sample_tcbInfo_response",
                "qe_identity": TDX / "sample_qeIdentity_response",
                "tcb_chain": TDX / "tcb_signing_chain_2018.pem",
            },
            lambda f: Options(
                tcb_info=f["tcb_info"], qe_identity=f["qe_identity"], chain=[f["tcb_chain"]], as_of=SPR_WHEN
            ),
            verifies=False,
            failing=["tdx tcb info: status UpToDate"],  # its PCK's SGX TCB is below every level
            ignored=[("quote", "bytes after the quote"), ("tcb_info", "bytes after the PCS response")],
        ),
        EvidenceSet(
            "tdx v4 quote of a GCP TD (go-tdx-guest COS 113: chain without NUL, zero padding)",
            "quote",
            {"quote": TDX / "cos-113-tdx-quote.dat"},
            lambda f: Options(as_of=GCP_WHEN),
            verifies=True,
            ignored=[("quote", "zero padding")],
        ),
        EvidenceSet(
            "tdx v4 quote of a TDX 1.5 module + tcb info and qe identity (trustee, 2025)",
            "quote",
            {
                "quote": TDX_TR / "tdx_quote_6.dat",
                "tcb_info": TDX_TR / "tcbInfo.json",
                "qe_identity": TDX_TR / "enclaveIdentity.json",
                "tcb_chain": TDX / "tcb_signing_chain.pem",
            },
            lambda f: Options(
                tcb_info=f["tcb_info"], qe_identity=f["qe_identity"], chain=[f["tcb_chain"]], as_of=TR_WHEN
            ),
            verifies=False,
            failing=["tdx tcb info: status UpToDate"],  # platform OutOfDate, module UpToDate
            ignored=[
                ("quote", "zero padding"),
                ("quote", _NUL),
                ("tcb_info", "bytes after the PCS response"),
                ("qe_identity", "bytes after the PCS response"),
            ],
        ),
        EvidenceSet(
            "tdx v4 quote of a debug TD (trustee)",
            "quote",
            {"quote": TDX_TR / "tdx_quote_4.dat"},
            lambda f: Options(as_of=TDX_WHEN),
            verifies=False,
            failing=["tdx: TD attributes debug"],
            ignored=[("quote", _NUL)],
        ),
        EvidenceSet(
            "sev-snp report signed by a VLEK (trustee)",
            "report",
            {"report": VLEK / "test-vlek-report.bin", "vlek": VLEK / "test-vlek.der", "chain": vlek_chain},
            lambda f: Options(chain=[f["vlek"], f["chain"]], as_of=AZ_SNP_WHEN),
            verifies=True,
        ),
        EvidenceSet(
            "sev-snp report version 5 of a GCP VM (teekit)",
            "report",
            {
                "report": GCP / "sev-gcp.bin",
                "vcek": GCP / "sev-gcp-vcek.pem",
                "chain": GCP / "sev-gcp-cert-chain.pem",
            },
            lambda f: Options(chain=[f["vcek"], f["chain"]], as_of=GCP_WHEN),
            verifies=True,
        ),
        EvidenceSet(
            "azure sev-snp hcl + tpm quote on genoa (trustee)",
            "hcl",
            genoa,
            lambda f: Options(
                chain=[f["vcek"], f["chain"]],
                tpm_quote=f["quote_msg"],
                signature=f["quote_sig"],
                pcrs=f["pcrs"],
                nonce=GENOA_NONCE,
                as_of=GCP_WHEN,
            ),
            verifies=True,
            ignored=[("hcl", "zero padding")],
        ),
    ]
