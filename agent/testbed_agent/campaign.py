"""``testbed-agent campaign PLAN --every 1m --for 4d --store DIR``: run a plan again and again on a
fixed schedule (a study's preliminary experiment: time-of-day and day-of-week effects).

Each tick runs ``testbed-agent run PLAN --out DIR/<plan>-<UTC time>`` as a child process, so every
run is an ordinary run directory of one results store that the report reads as a whole, and
appends one line to ``DIR/campaign.jsonl`` (tick, scheduled and actual times, run id, exit code).
Ticks are on a fixed grid from the campaign's start; a run that overruns the next tick makes that
tick ``skipped`` (recorded, not run late). Started again with the same store and plan, a campaign
continues its grid and its end time (``--for`` counts from the first start). SIGTERM/SIGINT stop it
after the current run is interrupted (the run itself resumes like any interrupted run).
``--run-opt=OPT`` options are passed to every ``run`` (e.g. ``--run-opt=--node-exporter=
--run-opt=--no-progress``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import signal
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from testbed_agent.errors import TestbedError

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
LEDGER = "campaign.jsonl"


def parse_duration(text: str, option: str) -> float:
    """``90s``, ``1m``, ``1.5h``, ``4d`` -> seconds (> 0)."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([smhd])", text.strip())
    if match is None or float(match.group(1)) <= 0:
        raise TestbedError(f"{option} {text!r}: expected a positive number and a unit s, m, h or d (e.g. 1m)")
    return float(match.group(1)) * UNITS[match.group(2)]


def add_parser(subparsers: Any) -> None:
    """Register ``campaign`` on the agent's CLI."""
    p = subparsers.add_parser(
        "campaign",
        help="run a plan on a fixed schedule into one results store",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("plan", type=Path, help="plan file")
    p.add_argument("--store", type=Path, required=True, help="results store: one run directory per tick")
    p.add_argument("--every", required=True, help="interval between runs (e.g. 1m, 30s, 1h)")
    p.add_argument(
        "--for", dest="duration", required=True, help="campaign length from its first start (e.g. 4d)"
    )
    p.add_argument("--max-runs", type=int, help="stop after this many runs (tests, trials)")
    p.add_argument(
        "--run-opt",
        dest="run_args",
        action="append",
        default=[],
        metavar="OPT",
        help="option passed to every run, as --run-opt=--no-progress (repeatable)",
    )
    p.set_defaults(func=_campaign)


def _ledger(store: Path) -> list[dict[str, Any]]:
    path = store / LEDGER
    if not path.is_file():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            if n != len(path.read_text(encoding="utf-8").splitlines()):  # a torn last line is dropped
                raise TestbedError(f"{path}:{n}: not a JSON line") from None
    return out


def _append(store: Path, entry: dict[str, Any]) -> None:
    with open(store / LEDGER, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")
        fh.flush()


def _stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Campaign:
    """The schedule and the runs of one campaign."""

    def __init__(self, args: argparse.Namespace) -> None:
        if not args.plan.is_file():
            raise TestbedError(f"{args.plan}: plan file not found")
        self.plan = args.plan
        self.every = parse_duration(args.every, "--every")
        self.duration = parse_duration(args.duration, "--for")
        if args.max_runs is not None and args.max_runs < 1:
            raise TestbedError(f"--max-runs {args.max_runs}: must be >= 1")
        self.max_runs = args.max_runs
        self.run_args = list(args.run_args)
        self.store = args.store
        self.store.mkdir(parents=True, exist_ok=True)
        self.sha = hashlib.sha256(self.plan.read_bytes()).hexdigest()
        done = _ledger(self.store)
        if done and done[0].get("plan_sha256") != self.sha:
            raise TestbedError(
                f"{self.store / LEDGER}: a campaign of another plan (sha256 differs) is in this store"
            )
        self.start = done[0]["campaign_start"] if done else time.time()
        self.next_tick = (done[-1]["tick"] + 1) if done else 0
        self.runs = sum(1 for e in done if e.get("status") != "skipped")
        self.stop = threading.Event()
        self.child: subprocess.Popen | None = None

    def _run(self, tick: int, scheduled: float) -> dict[str, Any]:
        started = time.time()
        run_id = f"{self.plan.stem}-{datetime.fromtimestamp(started, UTC).strftime('%Y%m%dT%H%M%SZ')}-{tick}"
        cmd = [
            sys.executable,
            "-m",
            "testbed_agent",
            "run",
            str(self.plan),
            "--out",
            str(self.store / run_id),
        ]
        self.child = subprocess.Popen([*cmd, *self.run_args])
        code = self.child.wait()
        self.child = None
        return {
            "tick": tick,
            "status": "ok" if code == 0 else "failed",
            "scheduled_at": _stamp(scheduled),
            "started_at": _stamp(started),
            "ended_at": _stamp(time.time()),
            "run_id": run_id,
            "exit_code": code,
        }

    def loop(self) -> int:
        end = self.start + self.duration
        tick = self.next_tick
        while not self.stop.is_set() and (self.max_runs is None or self.runs < self.max_runs):
            scheduled = self.start + tick * self.every
            if scheduled >= end:
                break
            if time.time() > scheduled + min(self.every, 1.0):  # missed (overrun or downtime)
                entry: dict[str, Any] = {"tick": tick, "status": "skipped", "scheduled_at": _stamp(scheduled)}
            else:
                if self.stop.wait(max(0.0, scheduled - time.time())):
                    break
                entry = self._run(tick, scheduled)
                self.runs += 1
            _append(self.store, {"plan_sha256": self.sha, "campaign_start": self.start, **entry})
            tick += 1
        return 0

    def interrupt(self, signum: int, _frame: Any) -> None:
        self.stop.set()
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signum)


def _campaign(args: argparse.Namespace) -> int:
    camp = Campaign(args)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, camp.interrupt)
    code = camp.loop()
    print(f"campaign: {camp.runs} runs in {camp.store} ({camp.store / LEDGER})")
    return code
