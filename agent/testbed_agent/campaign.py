"""``testbed-agent campaign PLAN --out DIR --every 1m --for 4d``: run a plan on a fixed schedule.

Slot k starts at campaign start + k x every (no drift: a late run does not shift later slots);
a slot whose start passed while the previous run was still going, or while the campaign was not
running, is skipped and recorded. Each run has its own run id ``<campaign>-<k>`` and writes
``DIR/<campaign>-<k>/<host>.jsonl`` (docs/design.md section 4), so ``testbed-report build DIR`` reads
the whole campaign. ``DIR/campaign.json`` holds the state: running the same command again
continues the schedule. SIGTERM/SIGINT stop after the current run; a second one stops it now.
"""

from __future__ import annotations

import argparse
import ctypes
import fcntl
import json
import math
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from testbed_shared.atomic import write_atomically
from testbed_shared.errors import TestbedError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,56}$")
STATE_FILE = "campaign.json"
EVENTS_FILE = "campaign.events.ndjson"  # not *.jsonl: result loaders glob that
LOCK_FILE = "campaign.lock"
MAX_SLOTS = 999_999  # run ids carry k with six digits
UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
DURATION_RE = re.compile(r"(\d+(?:\.\d+)?)\s*([smhdw]?)")
PR_SET_PDEATHSIG = 1  # linux/prctl.h
EXIT_FAILURES = 3  # the campaign ended, some runs exited non-zero


def parse_duration(text: str) -> float:
    """Seconds of ``90``, ``2s``, ``1m``, ``4d``, ``1h30m``, ``1.5h`` (argparse type)."""
    spec = text.strip().lower()
    pos, total = 0, 0.0
    while pos < len(spec):
        m = DURATION_RE.match(spec, pos)
        if not m or (not m.group(2) and (pos or m.end() != len(spec))):
            raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 30s, 1m, 4d, 1h30m)")
        total += float(m.group(1)) * UNITS[m.group(2) or "s"]
        pos = m.end()
    if not spec or total <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a duration must be positive")
    return total


def _rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class State:
    """What ``DIR/campaign.json`` holds; rewritten atomically after every change."""

    campaign: str
    plan: str
    plan_sha256: str
    every_s: float
    for_s: float
    start_ts: float
    slots: int
    host: str
    label: str
    groups: list[str] = field(default_factory=list)
    next_k: int = 0
    runs: int = 0
    runs_failed: int = 0
    skipped: int = 0
    incomplete: int = 0
    status: str = "running"
    current: dict[str, Any] | None = None
    start: str = ""
    updated_at: str = ""

    #: fields that must match when the same command is run again
    FIXED = ("campaign", "plan_sha256", "every_s", "for_s", "host", "label", "groups")

    def slot_at(self, k: int) -> float:
        return self.start_ts + k * self.every_s

    def run_id(self, k: int) -> str:
        return f"{self.campaign}-{k:06d}"

    def first_open_slot(self, now: float) -> int:
        """The first slot >= next_k that has not started yet (late by at most the grace)."""
        grace = min(0.1 * self.every_s, 5.0)
        due = math.ceil((now - grace - self.start_ts) / self.every_s - 1e-9)
        return max(self.next_k, due)


class Campaign:
    """The schedule loop over one store directory."""

    def __init__(self, store: Path, state: State, run_argv: list[str], out: TextIO = sys.stdout) -> None:
        self.store = store
        self.state = state
        self.run_argv = run_argv
        self.out = out
        self.stop = threading.Event()
        self.signum: int | None = None
        self.child: subprocess.Popen[bytes] | None = None

    # -- persistence ------------------------------------------------------------------------
    def save(self) -> None:
        self.state.updated_at = _rfc3339(time.time())
        write_atomically(self.store / STATE_FILE, json.dumps(asdict(self.state), indent=2) + "\n")

    def event(self, kind: str, **fields: Any) -> None:
        line = json.dumps({"event": kind, "at": _rfc3339(time.time()), **fields})
        with open(self.store / EVENTS_FILE, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def say(self, text: str) -> None:
        print(f"{_rfc3339(time.time())} campaign {self.state.campaign}: {text}", file=self.out, flush=True)

    # -- signals ----------------------------------------------------------------------------
    def _on_signal(self, signum: int, _frame: object) -> None:
        child = self.child
        if self.stop.is_set() and child is not None and child.poll() is None:
            child.send_signal(signal.SIGTERM)  # second signal: stop the current run now
        self.signum = signum
        self.stop.set()

    # -- the loop ---------------------------------------------------------------------------
    def run(self) -> int:
        handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self._recover()
            while not self.stop.is_set():
                k = self._next_slot("the previous run overran its slot")
                if k is None:
                    break
                if self._sleep_until(self.state.slot_at(k)):
                    self._run_slot(k)
        finally:
            for s, h in handlers.items():
                signal.signal(s, h)
        return self._finish()

    def _recover(self) -> None:
        """A run that was going when the campaign was killed is recorded as incomplete."""
        cur = self.state.current
        if cur is not None:
            self.event(
                "incomplete", k=cur["k"], run_id=cur["run_id"], reason="campaign killed during the run"
            )
            self.state.incomplete += 1
            self.state.next_k = cur["k"] + 1
            self.state.current = None
        st = self.state
        verb = "resuming" if st.next_k or st.status != "running" else "starting"
        st.status = "running"
        self.save()
        self._next_slot("the campaign was not running")
        end = _rfc3339(st.slot_at(st.slots))
        self.say(
            f"{verb}: {st.slots} slots every {st.every_s:g} s from {st.start} to {end}; "
            f"next slot {st.next_k} ({st.runs} runs, {st.skipped} skipped so far); store {self.store}"
        )

    def _next_slot(self, reason: str) -> int | None:
        """Skip (and record) slots whose start has passed; None when the campaign is over."""
        st = self.state
        k = min(st.first_open_slot(time.time()), st.slots)
        if k > st.next_k:
            self.event("skipped", from_k=st.next_k, to_k=k - 1, count=k - st.next_k, reason=reason)
            self.say(f"skipped {k - st.next_k} slot(s) {st.next_k}..{k - 1}: {reason}")
            st.skipped += k - st.next_k
            st.next_k = k
            self.save()
        return None if k >= st.slots else k

    def _sleep_until(self, when: float) -> bool:
        """Wait for the slot (in short steps, so clock changes are seen); False if stopped."""
        while not self.stop.is_set():
            left = when - time.time()
            if left <= 0:
                return True
            self.stop.wait(min(left, 30.0))
        return False

    def _run_slot(self, k: int) -> None:
        st = self.state
        run_id = st.run_id(k)
        run_dir = self.store / run_id
        run_dir.mkdir(parents=True, exist_ok=True)
        started = time.time()
        late = started - st.slot_at(k)
        st.current = {"k": k, "run_id": run_id, "started_at": _rfc3339(started)}
        self.save()
        code = self._spawn(run_dir, run_id)
        ended = time.time()
        st.current, st.next_k = None, k + 1
        st.runs += 1
        st.runs_failed += code != 0
        self.event(
            "run",
            k=k,
            run_id=run_id,
            slot_at=_rfc3339(st.slot_at(k)),
            started_at=_rfc3339(started),
            ended_at=_rfc3339(ended),
            late_s=round(late, 3),
            wall_s=round(ended - started, 3),
            exit_code=code,
        )
        self.save()
        nxt = st.first_open_slot(ended)
        when = _rfc3339(st.slot_at(nxt)) if nxt < st.slots else "-"
        self.say(
            f"[{k + 1}/{st.slots}] {run_id}: exit {code} in {ended - started:.1f} s (late {late:.2f} s); "
            f"{st.runs} runs, {st.skipped} skipped; next slot {when}"
        )

    def _spawn(self, run_dir: Path, run_id: str) -> int:
        argv = [*self.run_argv, "--out", str(run_dir), "--run-id", run_id]
        with open(run_dir / "agent.log", "ab") as log:
            self.child = subprocess.Popen(  # noqa: S603 - an agent run per slot, with its own process tracker; tied to the campaign by _child_setup
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_child_setup,  # noqa: PLW1509 - the campaign runs no threads
            )
            try:
                return self.child.wait()
            finally:
                self.child = None

    def _finish(self) -> int:
        st = self.state
        if self.stop.is_set():
            st.status = "stopped"
            self.event("stopped", signal=self.signum, next_k=st.next_k)
            self.say(f"stopped by signal {self.signum}; run the same command to continue")
        else:
            st.status = "done"
            self.event("done", runs=st.runs, skipped=st.skipped)
            self.say(f"complete: {st.runs} runs ({st.runs_failed} failed), {st.skipped} slots skipped")
        self.save()
        if self.signum is not None:
            return 128 + self.signum
        return EXIT_FAILURES if st.runs_failed else 0


def _child_setup() -> None:
    """In the run's process: its own session (a terminal's Ctrl-C reaches only the campaign, which
    lets the run finish) and SIGTERM when the campaign dies (a killed campaign leaves no orphan)."""
    os.setsid()
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


# -- CLI ------------------------------------------------------------------------------------
def add_parser(subparsers: Any) -> None:
    """Register ``campaign`` on the agent's CLI."""
    p = subparsers.add_parser(
        "campaign",
        help="run a plan repeatedly on a fixed schedule into one store (resumable)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("plan", type=Path, help="plan file (.yml/.yaml or the classic text form)")
    p.add_argument("--out", type=Path, required=True, help="campaign store (e.g. results/<campaign>)")
    p.add_argument("--every", type=parse_duration, required=True, help="period: 30s, 1m, 1h ...")
    p.add_argument("--for", dest="duration", type=parse_duration, required=True, help="length: 10s, 4d ...")
    p.add_argument("--name", help="campaign name, prefix of run ids (default: the name of --out)")
    p.add_argument("--host", help="host name in records (default: this machine's name)")
    p.add_argument("--label", help="label shown in reports (default: host)")
    p.add_argument("--group", action="append", default=[], help="inventory group (repeatable)")
    p.add_argument("--scratch", type=Path, help="scratch directory root for test files")
    p.add_argument(
        "--node-exporter",
        default="http://127.0.0.1:9100/metrics",
        help="node_exporter URL scraped around each benchmark ('' to disable)",
    )
    p.add_argument(
        "--watchdog",
        action="store_true",
        help="exit 0 quietly when another process runs this campaign or it is complete (cron)",
    )
    p.set_defaults(func=_cmd_campaign)


def _cmd_campaign(args: argparse.Namespace) -> int:
    from testbed_agent.plan import load_plan  # noqa: PLC0415 - CLI start-up: a command imports what it runs

    plan = load_plan(args.plan)  # a bad plan stops here, before any slot
    store = args.out
    store.mkdir(parents=True, exist_ok=True)
    lock = open(store / LOCK_FILE, "a")  # noqa: SIM115 - held for the whole campaign
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        if args.watchdog:
            return 0
        raise TestbedError(
            f"{store}: another campaign process is running this store", "wait or stop it"
        ) from None
    with lock:
        state = _load_or_create(args, plan.sha256, store)
        if state.status == "done":
            if args.watchdog:
                return 0  # cron keeps calling after the end: stay quiet
            print(f"campaign {state.campaign}: already complete ({state.runs} runs, {state.skipped} skipped)")
            return 0
        argv = _run_argv(args, state)
        return Campaign(store, state, argv).run()


def _run_argv(args: argparse.Namespace, state: State) -> list[str]:
    argv = [sys.executable, "-m", "testbed_agent", "run", str(args.plan.resolve()), "--no-progress"]
    argv += ["--host", state.host, "--label", state.label, "--node-exporter", args.node_exporter]
    for g in state.groups:
        argv += ["--group", g]
    if args.scratch:
        argv += ["--scratch", str(args.scratch.resolve())]
    return argv


def _load_or_create(args: argparse.Namespace, plan_sha256: str, store: Path) -> State:
    name = args.name or store.resolve().name
    if not NAME_RE.match(name):
        raise TestbedError(
            f"campaign name {name!r}: use letters, digits, '.', '_' or '-' (at most 57, not starting "
            "with a symbol)",
            "give --name",
        )
    if args.duration < args.every:
        raise TestbedError(f"--for ({args.duration:g} s) is shorter than --every ({args.every:g} s)")
    slots = math.ceil(args.duration / args.every - 1e-9)
    if slots > MAX_SLOTS:
        raise TestbedError(f"--for/--every gives {slots} slots; at most {MAX_SLOTS}")
    host = args.host or socket.gethostname()
    now = time.time()
    fresh = State(
        campaign=name,
        plan=str(args.plan),
        plan_sha256=plan_sha256,
        every_s=args.every,
        for_s=args.duration,
        start_ts=now,
        slots=slots,
        host=host,
        label=args.label or host,
        groups=list(args.group),
        start=_rfc3339(now),
    )
    path = store / STATE_FILE
    if not path.exists():
        return fresh
    return _resume(path, fresh)


def _resume(path: Path, fresh: State) -> State:
    try:
        data = json.loads(path.read_text())
        old = State(**data)
    except (ValueError, TypeError) as exc:
        raise TestbedError(
            f"{path}: not a campaign state file ({exc})", "move it away to start anew"
        ) from None
    for name in State.FIXED:
        if getattr(old, name) != getattr(fresh, name):
            raise TestbedError(
                f"{path}: field '{name}' is {getattr(old, name)!r} in the campaign, the command gives "
                f"{getattr(fresh, name)!r}",
                "resume with the same plan and options, or use another --out",
            )
    return old
