"""The ``testbed-report audit`` subcommand (kept apart from cli.py, which the report helper owns)."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    au = sub.add_parser(
        "audit",
        help="re-verify each host's attestation evidence and the results it binds",
        description="Per host: verify <host>.evidence/, recompute the results file digests, check "
        "the binding. Exit 1 if a host labelled confidential fails, if any evidence is forged or does "
        "not bind its results, or if a host's results have no evidence at all (deleted evidence is "
        "no evidence).",
    )
    au.add_argument(
        "results", nargs="+", type=Path, metavar="RESULTS_DIR", help="results directory of a run (repeatable)"
    )
    au.add_argument(
        "--chain",
        action="append",
        type=Path,
        default=[],
        metavar="PEM",
        help="extra certificates (repeatable)",
    )
    au.add_argument(
        "--root",
        action="append",
        type=Path,
        default=[],
        metavar="PEM",
        help="extra trusted root (repeatable)",
    )
    au.add_argument(
        "--as-of", metavar="DATE", help="verify at this time (default: when each evidence was collected)"
    )
    au.add_argument("--allow-debug", action="store_true", help="accept guests whose policy allows debugging")
    au.add_argument("--json", action="store_true", help="print JSON instead of the table")
    au.set_defaults(func=_cmd_audit)


def _cmd_audit(args: argparse.Namespace) -> int:
    from testbed_reports.audit import as_json, audit, table  # noqa: PLC0415 - CLI start-up: a command imports what it runs
    from testbed_reports.errors import ReportError  # noqa: PLC0415 - CLI start-up: a command imports what it runs
    from testbed_shared.attest.verify import Options  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    when = None
    if args.as_of:
        try:
            when = datetime.fromisoformat(args.as_of.replace("Z", "+00:00"))
        except ValueError as exc:
            raise ReportError(f"--as-of {args.as_of!r}: not an ISO date") from exc
        when = when if when.tzinfo else when.replace(tzinfo=UTC)
    opts = Options(chain=args.chain, roots=args.root, as_of=when, allow_debug=args.allow_debug)
    rows = audit(args.results, opts)
    if not rows:
        raise ReportError(f"no <host>.jsonl results under {', '.join(map(str, args.results))}")
    print(as_json(rows) if args.json else table(rows))
    return 0 if all(r.ok for r in rows) else 1
