"""The real evidence in ``data/attestation-samples`` as verifiable sets: which files, which options,
at what time each verifies (or how far it gets). Evidence published inside JSON documents (trustee's
``evidence-v1.json``) is written out as the files the agent itself keeps (report, quote message and
signature, PCR values, VCEK), byte for byte as decoded."""

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
TDX_WHEN = datetime(2026, 2, 15, tzinfo=UTC)  # inside the v5 TCB info's validity
AZ_TDX_WHEN = datetime(2024, 6, 1, tzinfo=UTC)
AZ_SNP_WHEN = datetime(2025, 6, 1, tzinfo=UTC)


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
    #: mutated by the campaign (not the built-in Intel root: a mutant that fixes its missing final
    #: newline is that same root, correctly accepted)
    campaign: bool = True


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


def evidence_sets(tmp: Path) -> list[EvidenceSet]:
    """Every real sample, as the evidence it belongs to (written under ``tmp`` where decoded)."""
    az_snp = _trustee(SAMPLES / "azure-snp" / "evidence-v1.json", tmp / "azure-snp")
    az_snp["chain"] = SNP / "ask_ark_milan.pem"
    az_tdx = _trustee(SAMPLES / "azure-tdx" / "evidence-v1.json", tmp / "azure-tdx")
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
            refused="nothing before or after",
        ),
        EvidenceSet(
            "tdx quote v5 + intel root pem as --root (no newline after END)",
            "quote",
            {"quote": TDX / "quote_v5.dat", "root": TDX / "intel_sgx_root_ca.pem"},
            lambda f: Options(roots=[f["root"]], as_of=TDX_WHEN),
            verifies=False,
            refused="not a plain PEM",
            campaign=False,
        ),
        EvidenceSet(
            "azure tdx hcl (kinvolk, no td quote)",
            "hcl",
            {"hcl": AZ / "hcl-report-tdx.bin"},
            lambda f: Options(as_of=AZ_TDX_WHEN),
            verifies=False,
            failing=["tdx: TDREPORT quoted"],
        ),
    ]
