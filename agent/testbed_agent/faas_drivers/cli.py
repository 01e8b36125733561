"""``testbed-agent platform``: real FaaS targets (AWS Lambda, Google Cloud Functions, Azure
Functions) and the emulator behind one driver: check credentials, estimate a plan's cost against
a cap, print every API call a plan would make (dry run), deploy-call-delete once (smoke), and tear
down what a run created (by its run tag; ``--expired``: every testbed resource past its deadline).
Without credentials, a command that talks to a platform stops before any request with one line
naming what is missing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from testbed_agent.faas_drivers import FunctionSpec, open_driver, platforms, teardown
from testbed_agent.faas_drivers.dryrun import dry_run_plan
from testbed_agent.faas_drivers.ledger import check_cap
from testbed_agent.faas_drivers.prices import Pricing, load_pricing
from testbed_agent.faas_drivers.pricing import plan_cost
from testbed_agent.faas_drivers.target_file import load_target
from testbed_agent.plan import load_plan
from testbed_shared.errors import TestbedError

#: exit status of ``estimate`` when the plan's ceiling is over the cap (nothing may start)
OVER_CAP = 3


def add_parser(subparsers: Any) -> None:
    """Register ``platform`` and its subcommands on the agent's CLI."""
    top = subparsers.add_parser(
        "platform", help="real FaaS platforms: estimate, dry run, smoke, teardown", description=__doc__
    )
    sub = top.add_subparsers(dest="platform_command", metavar="SUBCOMMAND", required=True)

    def target_arg(p: argparse.ArgumentParser, required: bool = True) -> None:
        p.add_argument(
            "--target",
            type=Path,
            required=required,
            help="target file (YAML/JSON: platform, region, run_id, cost_cap_usd, options)",
        )

    est = sub.add_parser("estimate", help="invocations, GB-seconds and price of a plan's real run")
    est.add_argument("plan", type=Path, help="plan file whose faas benchmarks are priced")
    target_arg(est, required=False)
    est.add_argument("--cap", type=float, help="cost cap in USD (default: the target's cost_cap_usd)")
    est.add_argument("--json", action="store_true", help="one JSON object")
    est.set_defaults(func=_estimate)

    dry = sub.add_parser("dry-run", help="print every API call the plan's faas benchmarks would make")
    dry.add_argument("plan", type=Path, help="plan file whose faas benchmarks are shown as API calls")
    target_arg(dry)
    dry.set_defaults(func=_dry_run)

    chk = sub.add_parser("check", help="read the credentials and list this run's resources (read-only)")
    target_arg(chk)
    chk.set_defaults(func=_check)

    smoke = sub.add_parser("smoke", help="deploy a function, call it cold and warm, delete it")
    target_arg(smoke)
    smoke.add_argument("--function", default="calcs", help="function under workloads/faas/functions")
    smoke.add_argument("--memory", type=int, help="memory in MB")
    smoke.add_argument("--event", default='{"level": 1}', help="event JSON")
    smoke.set_defaults(func=_smoke)

    down = sub.add_parser("teardown", help="delete what a run created (by its run tag)")
    target_arg(down)
    down.add_argument("--run-id", help="the run to remove (default: the target's run_id)")
    down.add_argument("--expired", action="store_true", help="every testbed resource past its deadline")
    down.add_argument("--dry-run", action="store_true", help="list and print the deletions only")
    down.set_defaults(func=_teardown)


def _estimate(args: argparse.Namespace) -> int:
    plan = load_plan(args.plan)
    target = load_target(args.target) if args.target else None
    pricing = load_pricing()
    cost = plan_cost(plan.benchmarks, pricing)
    if target is not None:
        cost = {k: v for k, v in cost.items() if k == target.platform}
    cap = check_cap(args.cap, "--cap") if args.cap is not None else (target.cost_cap_usd if target else None)
    over = [p for p, row in cost.items() if cap is not None and row["price_ceiling"] > cap]
    if args.json:
        doc = {"plan": plan.name, "cap_usd": cap, "platforms": cost, "over_cap": over}
        print(json.dumps(doc, sort_keys=True))
    else:
        print_cost(plan.name, cost, pricing)
        if cap is not None:
            verdict = f"the ceiling is over it: {', '.join(over)}" if over else "the ceiling is within it"
            print(f"cost cap ${cap:g}: {verdict}")
    if over:
        print(
            f"refusing: the plan's ceiling (every call to its timeout) exceeds the cost cap (${cap:g}); "
            "raise it explicitly (faas_platform_cost_cap_usd / --cap) to run this plan",
            file=sys.stderr,
        )
        return OVER_CAP
    return 0


def print_cost(plan_name: str, cost: dict[str, dict[str, Any]], pricing: Pricing) -> None:
    """The per-platform table of a plan's real-run estimate."""
    if not cost:
        print(f"plan {plan_name}: no faas benchmark of a real platform's profile")
        return
    head = ("platform", "benchmarks", "invocations", "GB-s", "estimate", "ceiling (all time out)")
    rows = [
        (
            p,
            str(r["benchmarks"]),
            f"{r['invocations']:,}",
            f"{r['gb_seconds']:,.1f}",
            usd(r["price"]),
            usd(r["price_ceiling"]),
        )
        for p, r in sorted(cost.items())
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    for line in (head, *rows):
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    print(f"(list prices of {pricing.date}, {pricing.path}; free tiers not deducted)")
    skipped = sum(r.get("emulator_only", 0) for r in cost.values())
    if skipped:
        print(
            f"({skipped} benchmarks need the emulator itself - key_service, time_scale - and are "
            "skipped on a real platform: not counted)"
        )


def usd(x: float) -> str:
    """Dollars: cents from $1 up, four decimals below."""
    return f"${x:,.2f}" if x >= 1 else f"${x:.4f}"


def _dry_run(args: argparse.Namespace) -> int:
    counts = dry_run_plan(args.plan, load_target(args.target))
    print(json.dumps({"requests": counts}, sort_keys=True))
    return 0


def _check(args: argparse.Namespace) -> int:
    target = load_target(args.target)
    driver = open_driver(target)
    with driver.reporting("listing this run's resources"):
        info = {**driver.describe(), "resources_of_run": driver.owned(target.run_id)}
    print(json.dumps(info, indent=2, sort_keys=True, default=str))
    return 0


def _smoke(args: argparse.Namespace) -> int:
    target = load_target(args.target)
    try:
        event = json.loads(args.event)
    except ValueError as exc:
        raise TestbedError(f"--event: not JSON: {exc}") from None
    driver = open_driver(target)
    name = f"smoke-{args.function}"
    out: dict[str, Any] = {"target": driver.describe()}
    try:
        with driver.reporting(f"deploying and calling {args.function}"):
            out["deployment"] = driver.deploy(FunctionSpec(name, args.function, memory_mb=args.memory))
            calls = [driver.invoke(name, event) for _ in range(2)]
            out["calls"] = [
                {
                    "ok": c.ok,
                    "cold": c.inspector.get("new_instance"),
                    "rtt_s": c.round_trip_s,
                    "platform": c.platform,
                }
                for c in calls
            ]
            driver.delete(name)
    finally:
        with driver.reporting("tearing down the smoke test's resources"):
            out["teardown"] = teardown(driver, target.run_id)
    print(json.dumps(out, indent=2, sort_keys=True, default=str))
    return 0 if all(c["ok"] for c in out.get("calls", [])) else 1


def _teardown(args: argparse.Namespace) -> int:
    target = load_target(args.target)
    if not platforms.get(target.platform).real:
        raise TestbedError(
            f"{args.target}: {target.platform} keeps nothing after it stops: nothing to tear down"
        )
    driver = open_driver(target, dry_run=args.dry_run)
    if args.dry_run:  # the listing is read for real; only the deletions are printed instead
        driver.check_credentials(target)
        driver.connect()
    with driver.reporting("tearing down"):
        result = teardown(driver, None if args.expired else (args.run_id or target.run_id))
    print(json.dumps(result, indent=2, sort_keys=True))
    return 0
