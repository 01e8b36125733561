"""``testbed-agent``: run a plan, print sysinfo, validate a plan, parse raw tool output."""

from __future__ import annotations

import argparse
import importlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

from testbed_agent import __version__, clouds
from testbed_shared.atomic import write_atomically
from testbed_shared.errors import TestbedError, cli_main

#: modules that add a subcommand through ``add_parser(subparsers)``
PLUGIN_COMMANDS = (
    "testbed_services.faas.cli",
    "testbed_shared.attest.cli",
    "testbed_agent.plan_show",
    "testbed_agent.campaign",
    "testbed_agent.faas_drivers.cli",
)


def main(argv: Sequence[str] | None = None) -> int:
    return cli_main(build_parser(), argv)


def _fingerprint_options(parser: argparse.ArgumentParser) -> None:
    """What the inventory says about the machine, recorded in its fingerprint (run and sysinfo)."""
    parser.add_argument(
        "--cloud",
        choices=clouds.names(),
        default=clouds.NONE,
        help="cloud the machine is in (sysinfo then reads its metadata and evidence, e.g. Azure IMDS)",
    )
    parser.add_argument("--host-facts", type=Path, help="JSON of hypervisor-side facts to attach to sysinfo")
    parser.add_argument(
        "--disk-encryption",
        choices=("true", "false"),
        default=None,
        help="disk encryption the inventory declares (recorded in sysinfo)",
    )
    parser.add_argument(
        "--rotation",
        type=_rotation,
        default=0,
        metavar="K",
        help="placement of the machine: 0 as provisioned, K after its K-th rotation (playbooks/rotate.yml); "
        "recorded in sysinfo's machine section",
    )


def _rotation(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a rotation index (0, 1, 2 ...)")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="testbed-agent",
        description=__doc__,
        epilog="Contracts (plan format, result schema, commands): docs/design.md. Pages per part: docs/.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run a benchmark plan and write result records")
    run.add_argument("plan", type=Path, help="plan file (.yml/.yaml or the classic text form)")
    run.add_argument("--out", type=Path, required=True, help="results directory (results/<run_id>)")
    run.add_argument(
        "--run-id", help="run id, a plain name [A-Za-z0-9._-] (default: the name of --out); same id resumes"
    )
    run.add_argument("--host", help="host name in records (default: this machine's name)")
    run.add_argument("--label", help="label shown in reports (default: host)")
    run.add_argument("--group", action="append", default=[], help="inventory group (repeatable)")
    run.add_argument(
        "--scratch",
        type=Path,
        help="new or empty directory for test files, removed after the run; outside --out "
        "(default: $TESTBED_SCRATCH/RUN_ID-HASH, root /var/tmp/testbed-agent)",
    )
    run.add_argument("--only", action="append", default=[], help="run only benchmarks with this name")
    run.add_argument(
        "--node-exporter",
        default="http://127.0.0.1:9100/metrics",
        help="node_exporter URL scraped around each benchmark ('' to disable)",
    )
    run.add_argument(
        "--textfile-dir",
        type=Path,
        help="node_exporter textfile collector directory for the agent's progress",
    )
    run.add_argument("--sample-interval", type=float, default=1.0, help="telemetry sampling period in s")
    _fingerprint_options(run)
    run.add_argument("--no-progress", action="store_true", help="no progress bar")
    run.set_defaults(func=_cmd_run)

    si = sub.add_parser("sysinfo", help="print this machine's fingerprint (JSON)")
    si.add_argument("--out", type=Path, help="write to this file instead of stdout")
    _fingerprint_options(si)
    si.set_defaults(func=_cmd_sysinfo)

    val = sub.add_parser("validate", help="check a plan without running it")
    val.add_argument("plan", type=Path, help="plan file to check (YAML or the classic text form)")
    val.set_defaults(func=_cmd_validate)

    parse = sub.add_parser("parse", help="print normalized metrics of a raw tool output (JSON)")
    parse.add_argument("kind", choices=sorted(_parsers()), help="which tool produced FILE")
    parse.add_argument(
        "file", type=Path, help="the raw output of that tool (fio JSON, dd stderr, pyperf JSON, notebook)"
    )
    parse.set_defaults(func=_cmd_parse)

    for module in PLUGIN_COMMANDS:
        try:
            importlib.import_module(module).add_parser(sub)
        except ModuleNotFoundError as exc:
            if exc.name is None or not module.startswith(exc.name):
                raise
    return parser


def _parsers() -> dict[str, Callable[[Path], dict]]:
    from testbed_agent import workloads  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    return {w.parse_kind: w.parse_file for w in workloads.registry().values() if w.parse_kind}


def _cmd_run(args: argparse.Namespace) -> int:
    from testbed_agent.runner import run_plan_cli  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    return run_plan_cli(args)


def _cmd_sysinfo(args: argparse.Namespace) -> int:
    from testbed_agent.sysinfo import fingerprint, options_from_args  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    info = fingerprint(options_from_args(args))
    text = json.dumps(info, indent=2, sort_keys=True, default=str)
    if args.out:
        write_atomically(args.out, text + "\n", what="sysinfo --out", make_parents=True)
    else:
        print(text)
    return 0


def _cmd_validate(args: argparse.Namespace) -> int:
    from testbed_agent.plan import load_plan  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    plan = load_plan(args.plan)
    print(
        f"{plan.path}: ok ({plan.form} form, {len(plan.benchmarks)} benchmarks, "
        f"{plan.executions} executions, sha256 {plan.sha256[:12]})"
    )
    return 0


def _cmd_parse(args: argparse.Namespace) -> int:
    if not args.file.exists():
        raise TestbedError(f"{args.file}: no such file")
    result = _parsers()[args.kind](args.file)
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
