"""Verifying an evidence directory the agent wrote (``<host>.evidence/NN-phase/manifest.json``):
the evidence itself, and that its REPORT_DATA / nonce is the digest of the claims it records."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from testbed_shared.attest import binding
from testbed_shared.attest.chain import read_evidence
from testbed_shared.attest.evidence import Options, verify_bytes
from testbed_shared.attest.model import EvidenceError, Result


def load_manifest(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(read_evidence(Path(path), "evidence manifest", 1 << 20).decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        raise EvidenceError(f"{path}: unreadable evidence manifest ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != binding.FORMAT:
        raise EvidenceError(f"{path}: not a {binding.FORMAT} manifest")
    if not isinstance(doc.get("binding"), dict) or not isinstance(doc.get("files", {}), dict):
        raise EvidenceError(f"{path}: 'binding' and 'files' must be JSON objects")
    for key, name in doc.get("files", {}).items():
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", name):
            raise EvidenceError(f"{path}: evidence file {key!r} is not a plain file name in the folder")
    return doc


def _as_of(opts: Options) -> datetime:
    return opts.as_of or datetime.now(UTC)


def verify_manifest(path: Path, opts: Options) -> Result:
    doc = load_manifest(path)
    if doc.get("attestation") in ("unavailable", "failed"):
        # readable evidence that attests nothing: a failed check (exit 1), not unreadable input (2)
        res = Result(technology=str(doc.get("technology") or "none"), as_of=_as_of(opts))
        res.add("attestation", False, f"attestation {doc['attestation']}: {doc.get('reason')}")
        return res
    base = Path(path).parent
    files = {k: base / v for k, v in doc.get("files", {}).items()}
    claims = doc.get("binding") or {}
    want_rd, want_nonce = binding.report_data(claims), binding.tpm_nonce(claims)
    tech = doc.get("technology")
    chain = list(opts.chain) + ([files["certs"]] if "certs" in files else [])
    if tech == "azure-hcl":
        o = replace(
            opts,
            chain=chain,
            tpm_quote=files.get("quote_msg"),
            signature=files.get("quote_sig"),
            pcrs=files.get("pcrs"),
            tdx_quote=files.get("td_quote"),
            nonce=want_nonce,
        )
        res = verify_bytes("azure-hcl", _read(files, "hcl"), o, str(files["hcl"]))
        user = str(res.info.get("hcl", {}).get("claims", {}).get("user-data", ""))
        if user:
            try:
                same = bytes.fromhex(user) == want_rd
            except ValueError:
                same = False
            res.add("binding: HCL user-data == digest of claims", same, f"user-data {user[:16].lower()}...")
        res.add(
            "binding: TPM nonce == digest of claims",
            res.info.get("tpm_quote", {}).get("qualifying_data") == want_nonce.hex(),
            "SHA-256 of the recorded claims",
        )
    elif tech in ("sev-snp", "tdx"):
        key = "report" if tech == "sev-snp" else "quote"
        res = verify_bytes(tech, _read(files, key), replace(opts, chain=chain), str(files[key]))
        res.add(
            "binding: REPORT_DATA == digest of claims",
            res.report_data == want_rd.hex(),
            f"SHA-512 of the recorded claims {want_rd.hex()[:16]}... vs {str(res.report_data)[:16]}...",
        )
    else:
        raise EvidenceError(f"{path}: unknown technology {tech!r}")
    res.info["binding"] = claims
    return res


def _read(files: dict[str, Path], key: str) -> bytes:
    if key not in files:
        raise EvidenceError(f"evidence manifest names no '{key}' file")

    return read_evidence(files[key], f"evidence file '{key}'")
