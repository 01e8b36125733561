"""Binding results to hardware: before the plan starts, at checkpoints while it runs and after it
ends the agent asks the hardware for fresh evidence whose REPORT_DATA / TPM nonce is a digest of
(run id, host, plan sha256, phase, sequence number, digest of the previous evidence's claims,
SHA-256 of the results file so far), and keeps it in ``<host>.evidence/NN-phase/``.

The claims form a chain: evidence NN names NN-1's claims, so the audit can prove the sequence is
complete (begin, checkpoints, end; a resumed run adds begin ... end), and a missing end, a gap, a
reordering or a rollback (results lines removed together with the evidence after them) shows as
such. On machines without confidential hardware the manifests are written all the same (with
``"attestation": "unavailable"``): the results digests and the chain are checked, only nothing
vouches for them."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
import tempfile
import textwrap
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from testbed_shared.atomic import OutputRefused, write_atomically
from testbed_shared.attest.probe import SEV_GUEST, TPM_DEVICE, TSM_REPORT, EvidenceProbe, ProbeError

HCL_NV = "0x01400001"
USER_DATA_NV = "0x01400002"
AZURE_AK = "0x81000003"
QUOTE_PCRS = "sha256:0,1,2,3,4,5,6,7"
FORMAT = "testbed-evidence"


PHASES = ("begin", "checkpoint", "end")
CHECKPOINT_S = 600.0


def claims(
    run_id: str,
    host: str,
    plan_sha256: str,
    phase: str,
    results: Path,
    seq: int = 0,
    prev: str = "",
    complete: bool = False,
) -> dict[str, Any]:
    """What the evidence binds: identity of the run, its place in the sequence (``seq``; ``prev``
    is :func:`link` of the previous evidence's claims, empty for the first), whether the plan ran
    to its end (``complete``, only an end can say so) and the digest of the results so far."""
    data = results.read_bytes() if results.exists() else b""
    return {
        "run_id": run_id,
        "host": host,
        "plan_sha256": plan_sha256,
        "phase": phase,
        "seq": seq,
        "prev": prev,
        "complete": bool(complete and phase == "end"),
        "results_file": results.name,
        "results_bytes": len(data),
        "results_sha256": hashlib.sha256(data).hexdigest(),
    }


def link(c: dict[str, Any]) -> str:
    """What the next evidence names as ``prev``: SHA-256 of these claims."""
    return hashlib.sha256(canonical(c)).hexdigest()


def canonical(c: dict[str, Any]) -> bytes:
    return json.dumps(c, sort_keys=True, separators=(",", ":")).encode()


def report_data(c: dict[str, Any]) -> bytes:
    """The 64 bytes of SNP/TDX REPORT_DATA (and Azure's user data): SHA-512 of the claims."""
    return hashlib.sha512(canonical(c)).digest()


def tpm_nonce(c: dict[str, Any]) -> bytes:
    """The TPM quote's qualifying data: SHA-256 of the claims."""
    return hashlib.sha256(canonical(c)).digest()


def _pem(der: bytes) -> str:
    body = "\n".join(textwrap.wrap(base64.b64encode(der).decode(), 64))
    return f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n"


def cert_table_pem(table: bytes) -> str:
    """The SNP extended report's certificate table (GUID, offset, length entries) as PEM."""
    out, pos = [], 0
    while pos + 24 <= len(table) and table[pos : pos + 16] != bytes(16):
        off = int.from_bytes(table[pos + 16 : pos + 20], "little")
        size = int.from_bytes(table[pos + 20 : pos + 24], "little")
        if size and off + size <= len(table):
            out.append(_pem(table[off : off + size]))
        pos += 24
    return "".join(out)


def hcl_kind(hcl: bytes) -> str:
    """'tdx', 'sev-snp' or 'unknown': the report type in the HCL report's request data."""
    rtype = int.from_bytes(hcl[1216 + 8 : 1216 + 12], "little") if len(hcl) >= 1236 else 0
    return {2: "sev-snp", 4: "tdx"}.get(rtype, "unknown")


def _evidence_dir(target: Path) -> None:
    """Create the phase directory; it and ``<host>.evidence`` must be real directories, not links."""

    target.mkdir(parents=True, exist_ok=True)
    for d in (target.parent, target):
        if not stat.S_ISDIR(os.lstat(d).st_mode):
            raise OutputRefused(f"refusing to write evidence into {d}: not a directory (a symbolic link?)")


def _put(path: Path, data: str | bytes) -> None:
    write_atomically(path, data, what="evidence")


class Binder:
    """Collects begin, checkpoint and end evidence for one host's run; never stops the run if
    collecting evidence fails (that is recorded as ``"attestation": "failed"``)."""

    def __init__(
        self,
        out: Path,
        ident: Any,
        results: Path,
        options: dict[str, Any] | None = None,
        log: Callable[[str], Any] | None = None,
    ) -> None:
        options = options or {}
        self.dir = Path(out) / f"{ident.host}.evidence"
        self.ident = ident
        self.results = Path(results)
        self.cloud = options.get("cloud") or "none"
        self.probe: EvidenceProbe = options.get("evidence_probe") or EvidenceProbe()
        self.log = log or (lambda _msg: None)
        every = options.get("attest_checkpoint_s", CHECKPOINT_S)
        self.every = None if every is None else float(every)
        self.last = time.monotonic()

    def begin(self) -> dict[str, Any]:
        return self.collect("begin")

    def end(self, complete: bool = True) -> dict[str, Any]:
        """``complete``: the plan ran to its end (false when the run was interrupted)."""
        return self.collect("end", complete)

    def checkpoint_if_due(self) -> dict[str, Any] | None:
        """Evidence over the results so far, at most every ``attest_checkpoint_s`` seconds."""
        if self.every is None or time.monotonic() - self.last < self.every:
            return None
        return self.collect("checkpoint")

    def _previous(self) -> tuple[int, str]:
        """(sequence number of the next evidence, link to the last one)."""
        last, prev = -1, ""
        for d in sorted(self.dir.glob("[0-9]*-*")) if self.dir.is_dir() else []:
            index = d.name.split("-", 1)[0]
            if index.isdigit() and int(index) > last:
                last = int(index)
                try:
                    doc = json.loads((d / "manifest.json").read_text(encoding="utf-8"))
                    prev = link(doc["binding"]) if isinstance(doc.get("binding"), dict) else "unreadable"
                except (OSError, ValueError, AttributeError):
                    prev = "unreadable"
        return last + 1, prev

    def collect(self, phase: str, complete: bool = False) -> dict[str, Any]:
        seq, prev = self._previous()
        i = self.ident
        c = claims(i.run_id, i.host, i.plan_sha256, phase, self.results, seq, prev, complete)
        target = self.dir / f"{seq:02d}-{phase}"
        _evidence_dir(target)
        started = time.perf_counter()
        self.last = time.monotonic()
        manifest: dict[str, Any] = {"format": FORMAT, "version": 2, "phase": phase, "binding": c}
        try:
            manifest.update(self._gather(c, target))
        except (ProbeError, OSError, ValueError) as exc:
            manifest.update({"attestation": "failed", "reason": str(exc)})
        except Exception as exc:  # noqa: BLE001 - evidence must never cost the run
            manifest.update({"attestation": "failed", "reason": f"{type(exc).__name__}: {exc}"})
        manifest["collected_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        manifest["collect_s"] = round(time.perf_counter() - started, 6)
        write_atomically(target / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
        state = manifest.get("attestation", "collected")
        why = f" - {manifest['reason']}" if "reason" in manifest and phase == "begin" else ""
        self.log(f"attestation ({phase}): {state}{why or ' (' + str(manifest.get('technology', '')) + ')'}")
        return manifest

    def _gather(self, c: dict[str, Any], target: Path) -> dict[str, Any]:
        p = self.probe
        if p.exists(TSM_REPORT):
            return self._tsm(c, target)
        if p.exists(SEV_GUEST):
            _put(target / "report.bin", p.sev_guest_report(report_data(c)))
            return {"technology": "sev-snp", "method": "sev-guest", "files": {"report": "report.bin"}}
        if p.exists(TPM_DEVICE) and p.has_tool("tpm2_nvread") and self._azure_hcl_present():
            return self._azure(c, target)
        looked = f"no {TSM_REPORT}, no {SEV_GUEST}, no Azure vTPM HCL report (NV {HCL_NV} at {TPM_DEVICE})"
        return {"attestation": "unavailable", "reason": f"no confidential-computing hardware: {looked}"}

    def _tsm(self, c: dict[str, Any], target: Path) -> dict[str, Any]:
        got = self.probe.tsm_report(report_data(c))
        provider = got["provider"].decode().strip()
        if provider.startswith("tdx"):
            _put(target / "quote.dat", got["outblob"])
            return {
                "technology": "tdx",
                "method": f"configfs-tsm ({provider})",
                "files": {"quote": "quote.dat"},
            }
        _put(target / "report.bin", got["outblob"])
        files = {"report": "report.bin"}
        if got.get("auxblob"):
            _put(target / "certs.pem", cert_table_pem(got["auxblob"]))  # plain PEM blocks
            files["certs"] = "certs.pem"
        return {"technology": "sev-snp", "method": f"configfs-tsm ({provider})", "files": files}

    def _azure_hcl_present(self) -> bool:
        try:
            self.probe.tpm2("nvreadpublic", HCL_NV)
        except ProbeError:
            return False
        return True

    def _azure(self, c: dict[str, Any], target: Path) -> dict[str, Any]:
        p = self.probe
        try:
            p.tpm2("nvreadpublic", USER_DATA_NV)
        except ProbeError:
            p.tpm2(
                "nvdefine",
                USER_DATA_NV,
                "-C",
                "o",
                "-s",
                "64",
                "-a",
                "ownerread|ownerwrite|authread|authwrite",
            )
        p.tpm2("nvwrite", USER_DATA_NV, "-C", "o", "-i", "-", data=report_data(c))
        hcl = p.tpm2("nvread", HCL_NV, "-C", "o")
        _put(target / "hcl-report.bin", hcl)
        q = ("quote.msg", "quote.sig")
        with tempfile.TemporaryDirectory(prefix="testbed-quote-") as private:  # the tool writes here
            tmp = Path(private)
            p.tpm2(
                "quote",
                "-c",
                AZURE_AK,
                "-l",
                QUOTE_PCRS,
                "-q",
                tpm_nonce(c).hex(),
                "-m",
                str(tmp / q[0]),
                "-s",
                str(tmp / q[1]),
                "-g",
                "sha256",
            )
            for name in q:
                _put(target / name, (tmp / name).read_bytes())
        _put(target / "pcrs.yaml", p.tpm2("pcrread", QUOTE_PCRS))
        files = {"hcl": "hcl-report.bin", "quote_msg": q[0], "quote_sig": q[1], "pcrs": "pcrs.yaml"}
        out: dict[str, Any] = {"technology": "azure-hcl", "method": "azure-vtpm", "files": files}
        if self.cloud != "azure":
            return out
        if hcl_kind(hcl) == "tdx":  # the TDREPORT is MAC'd: Azure's quote service signs it
            try:
                _put(target / "td-quote.bin", p.tdx_quote(hcl[32 : 32 + 1024]))
                files["td_quote"] = "td-quote.bin"
            except ProbeError as exc:
                out["td_quote_error"] = str(exc)
            return out
        try:
            _put(target / "certs.pem", p.thim_certs())
            files["certs"] = "certs.pem"
        except ProbeError as exc:
            out["certs_error"] = str(exc)
        return out
