"""``testbed-agent attest verify FILE``: verify attestation evidence offline and print JSON."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from testbed_shared.errors import TestbedError


def add_parser(subparsers: Any) -> None:
    """Register ``attest`` on the agent's CLI."""
    attest = subparsers.add_parser(
        "attest", help="verify attestation evidence (SEV-SNP, Azure HCL + TPM, TDX)", description=__doc__
    )
    sub = attest.add_subparsers(dest="attest_command", metavar="SUBCOMMAND", required=True)
    v = sub.add_parser(
        "verify",
        help="verify a report, quote or evidence directory; exit 0 verified, 1 a check failed, 2 unreadable",
        description="FILE: an SEV-SNP report, an Azure HCL report, a TDX quote, a TPM2 quote, or an "
        "evidence directory the agent wrote (<host>.evidence/NN-phase). Never uses the network.",
    )
    v.add_argument(
        "file",
        type=Path,
        metavar="FILE",
        help="an SNP report, HCL report, TDX quote, TPM quote, or an evidence manifest/directory of a run",
    )
    v.add_argument(
        "--chain",
        action="append",
        type=Path,
        default=[],
        metavar="PEM",
        help="certificates (VCEK, ASK, ARK, TCB signing; PEM or DER; repeatable)",
    )
    v.add_argument(
        "--root",
        action="append",
        type=Path,
        default=[],
        metavar="PEM",
        help="extra trusted root besides AMD's ARKs and Intel's root (repeatable)",
    )
    v.add_argument(
        "--as-of", type=_date, metavar="DATE", help="verify at this time (ISO date/time, UTC) instead of now"
    )
    v.add_argument(
        "--allow-debug",
        action="store_true",
        help="accept a guest policy / TD attributes that allow debugging",
    )
    v.add_argument("--ak", type=Path, metavar="PEM", help="TPM attestation key (for a bare TPM quote)")
    v.add_argument(
        "--tpm-quote",
        type=Path,
        metavar="FILE",
        help="TPM2 quote (TPMS_ATTEST) to check with the HCL report's AK",
    )
    v.add_argument(
        "--signature", type=Path, metavar="FILE", help="the TPM quote's signature (plain or TPMT_SIGNATURE)"
    )
    v.add_argument("--nonce", type=_hex, metavar="HEX", help="expected TPM qualifying data")
    v.add_argument(
        "--pcrs",
        type=Path,
        metavar="FILE",
        help="PCR values (JSON or tpm2_pcrread YAML) to check the quote's digest",
    )
    v.add_argument(
        "--tcb-info", type=Path, metavar="FILE", help="Intel PCS TCB info response (TDX TCB status)"
    )
    v.add_argument(
        "--qe-identity",
        type=Path,
        metavar="FILE",
        help="Intel PCS TD QE identity response (checks the quoting enclave; needs the TCB signing chain)",
    )
    v.add_argument(
        "--tdx-quote", type=Path, metavar="FILE", help="TD quote of an Azure TDX HCL report's TDREPORT"
    )
    v.set_defaults(func=_cmd_verify)


def _date(text: str) -> datetime:
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO date") from exc
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _hex(text: str) -> bytes:
    try:
        return bytes.fromhex(text.replace(" ", "").removeprefix("0x"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not hex") from exc


def _cmd_verify(args: argparse.Namespace) -> int:
    from testbed_shared.attest.model import EvidenceError  # noqa: PLC0415 - CLI start-up: a command imports what it runs
    from testbed_shared.attest.verify import Options, dumps, verify_file  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    opts = Options(
        chain=args.chain,
        roots=args.root,
        as_of=args.as_of,
        allow_debug=args.allow_debug,
        ak=args.ak,
        signature=args.signature,
        tpm_quote=args.tpm_quote,
        nonce=args.nonce,
        pcrs=args.pcrs,
        tcb_info=args.tcb_info,
        qe_identity=args.qe_identity,
        tdx_quote=args.tdx_quote,
    )
    try:
        res = verify_file(args.file, opts)
    except EvidenceError as exc:
        raise TestbedError(str(exc)) from exc
    print(dumps(res))
    return 0 if res.verified else 1
