"""Verifying evidence bytes of a known kind: the verifier's :class:`Options` (all local files) and
:func:`verify_bytes`, which runs the SEV-SNP, Azure HCL, TDX or TPM verifier with them and
collects what each input file left unread into the result's ``ignored``. Below ``manifest`` (an
evidence directory) and ``verify`` (a file of any kind), which both call it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from testbed_shared.attest import chain
from testbed_shared.attest.chain import read_evidence
from testbed_shared.attest.hcl import verify_hcl
from testbed_shared.attest.keys import load_public_key
from testbed_shared.attest.model import EvidenceError, Ignored, Result
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


def read_option(path: Path | None, what: str) -> bytes | None:
    """A regular file's bytes (bounded), or None without a path."""
    if path is None:
        return None
    return read_evidence(Path(path), what)


def verify_bytes(kind: str, data: bytes, opts: Options, source: str, pool: list[Any] | None = None) -> Result:
    """Verify ``data`` (the contents of ``source``) as evidence of ``kind``: 'sev-snp', 'tdx',
    'azure-hcl' or 'tpm-quote'."""
    given: list[Ignored] = []
    pool = (pool or []) + chain.load_cert_files(opts.chain, given)
    anchors = chain.load_anchors(opts.roots, given)
    roots = [a.cert for a in anchors]
    when = opts.when
    names = (str(opts.tcb_info or "TCB info"), str(opts.qe_identity or "QE identity"))
    if kind == "sev-snp":
        res = verify_snp(data, pool, when, allow_debug=opts.allow_debug, extra_roots=roots, source=source)
    elif kind == "tdx":
        res = verify_tdx(
            data,
            pool,
            when,
            tcb_info=read_option(opts.tcb_info, "--tcb-info"),
            qe_identity=read_option(opts.qe_identity, "--qe-identity"),
            allow_debug=opts.allow_debug,
            extra_roots=roots,
            source=source,
            collateral_sources=names,
        )
    elif kind == "azure-hcl":
        res = _hcl(data, opts, pool, roots, source)
    elif kind == "tpm-quote":
        res = _tpm(data, opts, when, source, given)
    else:
        raise EvidenceError(f"{source}: unknown evidence kind {kind!r}")
    res.ignored[:0] = given
    chain.unused_certificates(res, pool)
    chain.unused_anchors(res, anchors)
    res.info.setdefault("as_of_source", "--as-of" if opts.as_of else "now")
    return res


def _quote_pair(opts: Options) -> tuple[bytes, bytes] | None:
    msg, sig = read_option(opts.tpm_quote, "--tpm-quote"), read_option(opts.signature, "--signature")
    if (msg is None) != (sig is None):
        raise EvidenceError("--tpm-quote and --signature go together")
    return (msg, sig) if msg is not None and sig is not None else None


def _pcrs(opts: Options) -> Any:
    raw = read_option(opts.pcrs, "--pcrs")
    if raw is None:
        return None
    try:
        text = raw.decode()
    except UnicodeDecodeError as exc:
        raise EvidenceError(f"{opts.pcrs}: not UTF-8 text ({exc.reason})") from exc
    return load_pcrs(text, str(opts.pcrs))


def _hcl(data: bytes, opts: Options, pool: list[Any], roots: list[Any], source: str) -> Result:
    sources = {
        "hcl": source,
        "td_quote": str(opts.tdx_quote),
        "quote_msg": str(opts.tpm_quote),
        "quote_sig": str(opts.signature),
        "tcb_info": str(opts.tcb_info),
        "qe_identity": str(opts.qe_identity),
    }
    res, _ak = verify_hcl(
        data,
        pool,
        opts.when,
        quote=_quote_pair(opts),
        nonce=opts.nonce,
        pcrs=_pcrs(opts),
        tdx_quote=read_option(opts.tdx_quote, "--tdx-quote"),
        tcb_info=read_option(opts.tcb_info, "--tcb-info"),
        qe_identity=read_option(opts.qe_identity, "--qe-identity"),
        allow_debug=opts.allow_debug,
        extra_roots=roots,
        sources=sources,
    )
    return res


def _tpm(data: bytes, opts: Options, when: datetime, source: str, given: list[Ignored]) -> Result:
    ak_raw, sig = read_option(opts.ak, "--ak"), read_option(opts.signature, "--signature")
    if ak_raw is None or sig is None:
        raise EvidenceError("a TPM quote needs --ak PEM and --signature FILE")
    res = Result("tpm", when)
    ak = load_public_key(ak_raw, str(opts.ak), given)
    verify_quote(
        res, data, sig, ak, nonce=opts.nonce, pcrs=_pcrs(opts), sources=(source, str(opts.signature))
    )
    return res
