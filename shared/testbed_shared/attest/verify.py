"""``verify_file``: recognise a piece of evidence and run its verifier; the library entry point the
CLI and ``testbed-report audit`` share."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from testbed_shared.attest import chain
from testbed_shared.attest.chain import read_evidence
from testbed_shared.attest.hcl import verify_hcl
from testbed_shared.attest.keys import load_public_key
from testbed_shared.attest.model import EvidenceError, Result
from testbed_shared.attest.snp import verify_snp
from testbed_shared.attest.tdx import verify_tdx
from testbed_shared.attest.tpm import load_pcrs, verify_quote


@dataclass
class Options:
    """What the verifier may use besides the evidence itself (all local files, no network)."""

    chain: list[Path] = field(default_factory=list)
    roots: list[Path] = field(default_factory=list)
    as_of: datetime | None = None
    allow_debug: bool = False
    ak: Path | None = None
    signature: Path | None = None
    tpm_quote: Path | None = None
    nonce: bytes | None = None
    pcrs: Path | None = None
    tcb_info: Path | None = None
    qe_identity: Path | None = None
    tdx_quote: Path | None = None

    @property
    def when(self) -> datetime:
        return self.as_of or datetime.now(UTC)


def kind_of(data: bytes) -> str:
    """'manifest', 'azure-hcl', 'tpm-quote', 'sev-snp' or 'tdx' from the first bytes."""
    if data[:1] == b"{":
        return "manifest"
    if data[:4] == b"HCLA":
        return "azure-hcl"
    if data[:4] == b"\xffTCG":
        return "tpm-quote"
    if len(data) >= 8:
        version, _k, tee = struct.unpack_from("<HHI", data, 0)
        if version in (4, 5) and tee == 0x81:
            return "tdx"
        if len(data) >= 1184 and 2 <= struct.unpack_from("<I", data, 0)[0] <= 5:
            return "sev-snp"
    raise EvidenceError(
        "not a recognised evidence format "
        "(SEV-SNP report, Azure HCL report, TDX quote, TPM quote, evidence manifest)"
    )


def _read(path: Path | None, what: str) -> bytes | None:
    """A regular file's bytes (bounded), or None without a path."""
    if path is None:
        return None

    return read_evidence(Path(path), what)


def verify_file(path: Path, opts: Options | None = None) -> Result:
    """Verify the evidence in ``path`` (a file, or an evidence directory with manifest.json)."""
    opts = opts or Options()
    path = Path(path)
    if path.is_dir():
        path = path / "manifest.json"
    data = _read(path, "evidence") or b""
    try:
        kind = kind_of(data)
    except EvidenceError as exc:
        raise EvidenceError(f"{path}: {exc}") from exc
    if kind == "manifest":
        from testbed_shared.attest.manifest import verify_manifest  # noqa: PLC0415 - cuts an import cycle of issue 26's code (agent/tests/test_import_graph.py KNOWN_CYCLES)

        return verify_manifest(path, opts)
    return verify_bytes(kind, data, opts, str(path))


def verify_bytes(kind: str, data: bytes, opts: Options, source: str, pool: list[Any] | None = None) -> Result:
    pool = (pool or []) + chain.load_cert_files(opts.chain)
    roots = chain.load_cert_files(opts.roots)
    when = opts.when
    if kind == "sev-snp":
        res = verify_snp(data, pool, when, allow_debug=opts.allow_debug, extra_roots=roots, source=source)
    elif kind == "tdx":
        res = verify_tdx(
            data,
            pool,
            when,
            tcb_info=_read(opts.tcb_info, "--tcb-info"),
            qe_identity=_read(opts.qe_identity, "--qe-identity"),
            allow_debug=opts.allow_debug,
            extra_roots=roots,
            source=source,
        )
    elif kind == "azure-hcl":
        res = _hcl(data, opts, pool, roots)
    else:
        res = _tpm(data, opts, when)
    chain.unused_certificates(res, pool)
    res.info.setdefault("as_of_source", "--as-of" if opts.as_of else "now")
    return res


def _quote_pair(opts: Options) -> tuple[bytes, bytes] | None:
    msg, sig = _read(opts.tpm_quote, "--tpm-quote"), _read(opts.signature, "--signature")
    if (msg is None) != (sig is None):
        raise EvidenceError("--tpm-quote and --signature go together")
    return (msg, sig) if msg is not None and sig is not None else None


def _pcrs(opts: Options) -> Any:
    raw = _read(opts.pcrs, "--pcrs")
    if raw is None:
        return None
    try:
        text = raw.decode()
    except UnicodeDecodeError as exc:
        raise EvidenceError(f"{opts.pcrs}: not UTF-8 text ({exc.reason})") from exc
    return load_pcrs(text, str(opts.pcrs))


def _hcl(data: bytes, opts: Options, pool: list[Any], roots: list[Any]) -> Result:
    res, _ak = verify_hcl(
        data,
        pool,
        opts.when,
        quote=_quote_pair(opts),
        nonce=opts.nonce,
        pcrs=_pcrs(opts),
        tdx_quote=_read(opts.tdx_quote, "--tdx-quote"),
        tcb_info=_read(opts.tcb_info, "--tcb-info"),
        qe_identity=_read(opts.qe_identity, "--qe-identity"),
        allow_debug=opts.allow_debug,
        extra_roots=roots,
    )
    return res


def _tpm(data: bytes, opts: Options, when: datetime) -> Result:
    ak_raw, sig = _read(opts.ak, "--ak"), _read(opts.signature, "--signature")
    if ak_raw is None or sig is None:
        raise EvidenceError("a TPM quote needs --ak PEM and --signature FILE")
    res = Result("tpm", when)
    verify_quote(res, data, sig, load_public_key(ak_raw, str(opts.ak)), nonce=opts.nonce, pcrs=_pcrs(opts))
    return res


def dumps(res: Result) -> str:
    return json.dumps(res.as_dict(), indent=2, default=str)
