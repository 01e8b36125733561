"""The runner: every benchmark x repetition, with waits, timeouts, telemetry, one fsynced record
each; failures are recorded and the plan goes on; SIGINT/SIGTERM end the current benchmark,
record it as interrupted and exit cleanly; re-running the same run id resumes."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import socket
import sys
import threading
import time
import uuid
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from testbed_agent import scratch, workloads
from testbed_agent.adaptive import decide
from testbed_agent.heartbeat import heartbeat
from testbed_agent.params import ParamError
from testbed_agent.plan import Benchmark, Plan, load_plan
from testbed_agent.procs import ProcessTracker
from testbed_agent.progress import ProgressFileExporter
from testbed_agent.results import (
    Identity,
    ResultWriter,
    dedupe,
    make_record,
    now_rfc3339,
    read_records,
    resume_state,
)
from testbed_agent.scratch import check_name, default_scratch
from testbed_agent.sysinfo import fingerprint, options_from_args
from testbed_agent.sysinfo.cc import label_mismatch
from testbed_agent.telemetry import (
    ResourceMeter,
    Sampler,
    counter_deltas,
    scrape_node_exporter,
)
from testbed_agent.workloads.base import RunContext
from testbed_shared.atomic import write_atomically
from testbed_shared.attest.binding import Binder  # evidence bound to the results (issue 14)
from testbed_shared.errors import BenchmarkTimeout, Interrupted, TestbedError, WorkloadError

EXIT_FAILURES = 3  # the plan ran to the end, some benchmarks failed or timed out
#: seconds a benchmark gets to end after SIGTERM (the agent's SIGINT/SIGTERM) before SIGKILL
KILL_AFTER_S = 10.0


class Runner:
    """Runs one plan on this machine into ``out/<host>.jsonl``."""

    def __init__(
        self,
        plan: Plan,
        out: Path,
        ident: Identity,
        *,
        scratch: Path | None = None,
        only: list[str] | None = None,
        node_exporter: str = "",
        textfile_dir: Path | None = None,
        sample_interval: float = 1.0,
        options: dict[str, Any] | None = None,
        progress: bool = True,
        console: Console | None = None,
        heartbeat_s: float | None = None,
    ) -> None:
        self.plan = plan
        self.out = Path(os.path.abspath(out))  # workloads run tools in other directories
        self.ident = ident
        self.scratch = Path(os.path.abspath(scratch or default_scratch(ident.run_id, out, ident.host)))
        self.only = set(only or [])
        self.node_exporter = node_exporter
        self.sample_interval = sample_interval
        self.options = options or {}
        self.show_progress = progress
        self.heartbeat_s = heartbeat_s  # a line per interval while an execution runs (no terminal)
        self.console = console or Console(stderr=True)
        self.exporter = ProgressFileExporter(textfile_dir, ident.run_id, ident.host, out)
        self.stop = threading.Event()
        self.signum: int | None = None
        self._ctx: RunContext | None = None
        self._kill_timer: threading.Timer | None = None
        self.results_path = self.out / f"{ident.host}.jsonl"
        self.artifacts = self.out / f"{ident.host}.artifacts"
        self.state_dir = self.out / f"{ident.host}.state"
        where = hashlib.sha256(str(self.state_dir).encode()).hexdigest()[:12]  # unique per results dir
        self.tracker = ProcessTracker(self.state_dir, f"{ident.run_id}.{ident.host}.{where}")
        self.session = uuid.uuid4().hex[:12]
        self.attempts: dict[tuple[int, str, int], int] = {}
        self.history: dict[int, list[dict[str, Any]]] = {}
        self.reaped = 0
        self.counts = {"ok": 0, "failed": 0, "timeout": 0, "skipped": 0, "interrupted": 0, "resumed": 0}

    # -- signals --------------------------------------------------------------------------
    def _on_signal(self, signum: int, _frame: object) -> None:
        """End the running benchmark first (SIGTERM to its process group, SIGKILL if it is still
        there after :data:`KILL_AFTER_S`); its record is written after it has ended."""
        self.signum = signum
        self.stop.set()
        ctx = self._ctx
        if ctx is not None:
            ctx.terminate()
            if self._kill_timer is None:
                self._kill_timer = threading.Timer(KILL_AFTER_S, ctx.terminate, (signal.SIGKILL,))
                self._kill_timer.daemon = True
                self._kill_timer.start()

    # -- the run --------------------------------------------------------------------------
    def run(self) -> int:
        self.out.mkdir(parents=True, exist_ok=True, mode=0o700)
        with ResultWriter(self.results_path) as writer:  # the lock first: one agent per file
            killed = self._begin_session()
            try:
                self._run_locked(writer, killed)
            finally:
                self._end_session()
        self._summary()
        if self.signum is not None:
            return 128 + self.signum
        return EXIT_FAILURES if self.counts["failed"] or self.counts["timeout"] else 0

    def _run_locked(self, writer: ResultWriter, killed: set[str]) -> None:
        self.scratch = scratch.prepare(self.scratch, self.out)
        with scratch.lock(self.scratch):
            self._run_in_scratch(writer, killed)

    def _run_in_scratch(self, writer: ResultWriter, killed: set[str]) -> None:
        self._write_sysinfo()
        done, self.attempts = resume_state(self.results_path, self.plan.sha256, killed)
        self.history = _history(self.results_path, self.plan.sha256)

        self.binder = binder = Binder(
            self.out, self.ident, self.results_path, self.options, self.console.print
        )
        binder.begin()
        benches = [b for b in self.plan.benchmarks if not self.only or b.name in self.only]
        total = sum(b.repetitions for b in benches)
        handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            with ExitStack() as stack:
                progress = self._progress(stack, total)
                task = progress.add_task("starting", total=total) if progress else None
                self._loop(writer, benches, done, total, (progress, task))
        finally:
            for s, h in handlers.items():
                signal.signal(s, h)
            if self._kill_timer is not None:
                self._kill_timer.cancel()
        finished = not self.stop.is_set()
        binder.end(complete=finished)
        self.exporter.update(sum(self.counts.values()), total, "", "done" if finished else "interrupted")
        if finished and not self.options.get("keep_scratch"):
            scratch.remove(self.scratch)

    def _loop(
        self, writer: ResultWriter, benches: list[Benchmark], done: dict, total: int, bar: tuple
    ) -> None:
        n = 0
        for bench in benches:
            for rep in range(bench.repetitions):
                if self.stop.is_set():
                    return
                n += 1
                key = (bench.index, bench.name, rep)
                if key in done:
                    self.counts["resumed"] += 1
                    _advance(bar)
                    if _stopped(done[key]):
                        _advance(bar, bench.repetitions - rep - 1)
                        n += bench.repetitions - rep - 1
                        break
                    continue
                label = f"{bench.name} #{rep + 1}/{bench.repetitions}"
                if bar[0]:
                    bar[0].update(bar[1], description=label)
                self.exporter.update(n - 1, total, bench.name, "running", rep + 1, bench.repetitions)
                if bench.wait_s and self.stop.wait(bench.wait_s):
                    return  # interrupted while waiting: nothing started, nothing to record
                with heartbeat(
                    self.console.print, f"[{n}/{total}] {label}", _typical(bench), self.heartbeat_s
                ):
                    record = self.execute(bench, rep)
                self._adapt(bench, rep, record)
                writer.append(record)
                self.binder.checkpoint_if_due()  # evidence chain: begin, checkpoints, end (issue 26)
                self.history.setdefault(bench.index, []).append(record)
                self.counts[record["status"]] += 1
                self._log(n, total, label, record)
                _advance(bar)
                if record["status"] == "interrupted":
                    return
                if _stopped(record):
                    _advance(bar, bench.repetitions - rep - 1)
                    n += bench.repetitions - rep - 1
                    break

    def _adapt(self, bench: Benchmark, rep: int, record: dict[str, Any]) -> None:
        """Add the adaptive rule's state (and stop reason) to the record of an adaptive benchmark."""
        if bench.adaptive is None or record["status"] == "interrupted":
            return
        recs = [*self.history.get(bench.index, []), record]
        record["adaptive"] = decide(bench.adaptive, bench.type, recs, rep + 1)

    def _begin_session(self) -> set[str]:
        """Reap what a killed attempt left; return the ids of agent sessions that were killed."""
        self.tracker.open()
        log = self.state_dir / "sessions"
        started, ended = [], set()
        if log.exists():
            for line in log.read_text().splitlines():
                word, _, sid = line.partition(" ")
                (started.append(sid) if word == "start" else ended.add(sid))
        killed = {s for s in started if s not in ended}
        self.tracker.wait_for_watchdog()  # an earlier attempt's watchdog finishes its reaping first
        self.reaped = self.tracker.reap()
        self.tracker.start_watchdog()
        if self.reaped:
            self.console.print(f"reaped {self.reaped} processes a killed attempt left", highlight=False)
        _append_line(log, f"start {self.session}")
        return killed

    def _end_session(self) -> None:
        _append_line(self.state_dir / "sessions", f"end {self.session}")
        self.tracker.stop_watchdog()
        self.tracker.close()

    def execute(self, bench: Benchmark, rep: int) -> dict[str, Any]:
        """Run one execution with telemetry; always return a record, whatever happened."""
        workload = workloads.registry()[bench.type]()
        try:  # checked when the plan was loaded: fails here only when the machine changed since
            params, problem = workload.parse(bench), None
            timeout = bench.timeout_s or workload.default_timeout(params)
        except ParamError as exc:
            params, problem = None, f"{exc.field}: {exc.problem}"
            timeout = bench.timeout_s or workload.default_timeout_s
        ctx = RunContext(
            bench=bench,
            repetition=rep,
            scratch=self.scratch,
            artifacts=self.artifacts,
            deadline=time.monotonic() + timeout,
            stop=self.stop,
            allow_device=bool(bench.params.get("allow_device", False)),
            options=self.options,
            tracker=self.tracker,
        )
        self._ctx = ctx
        sampler = Sampler(self.sample_interval)
        before = scrape_node_exporter(self.node_exporter)
        started = now_rfc3339()
        meter = ResourceMeter()
        sampler.start()
        status, error, outcome = "ok", None, None
        try:
            if problem is not None:
                raise WorkloadError(problem)
            outcome = workload.run(ctx, params)
            status, error = outcome.status, outcome.error
        except Interrupted as exc:
            status, error = "interrupted", f"{exc}" + (f" (signal {self.signum})" if self.signum else "")
        except BenchmarkTimeout as exc:
            status, error = "timeout", f"{exc} ({timeout:.0f} s)"
        except WorkloadError as exc:
            status, error = "failed", str(exc) + (f" (hint: {exc.hint})" if exc.hint else "")
        except Exception as exc:  # noqa: BLE001 - a workload bug must not lose the run
            status, error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            self._ctx = None
            usage = meter.stop()
            system = sampler.stop()
        if self.stop.is_set() and status == "ok":
            status, error = "interrupted", f"signal {self.signum} during the benchmark"
        ended = now_rfc3339()
        after = scrape_node_exporter(self.node_exporter)
        telemetry = {**system, **usage, "node_exporter": counter_deltas(before, after)}
        params = dict(bench.params)
        if outcome:
            params.update({f"resolved_{k}": v for k, v in outcome.params.items()})
        return make_record(
            self.ident,
            benchmark=bench.name,
            btype=bench.type,
            index=bench.index,
            repetition=rep,
            params=params,
            started_at=started,
            ended_at=ended,
            status=status,
            error=error,
            metrics=outcome.metrics if outcome else None,
            primary=workload.primary_metrics(outcome.metrics) if outcome else [],
            samples=outcome.samples if outcome else None,
            telemetry=telemetry,
            tool=(outcome.tool if outcome else None) or {"name": workload.tool},
            artifacts=[f"{self.artifacts.name}/{a}" for a in ctx.artifact_files()],
            attempt=self.attempts.get((bench.index, bench.name, rep), 1),
            session=self.session,
            margin_percent=bench.margin_percent,
        )

    # -- helpers --------------------------------------------------------------------------
    def _write_sysinfo(self) -> None:
        path = self.out / f"{self.ident.host}.sysinfo.json"
        if path.exists():
            return
        info = fingerprint(self.options)
        info["testbed"] = {
            "label": self.ident.label,
            "groups": list(self.ident.groups),
            "run_id": self.ident.run_id,
            "plan": self.plan.name,
            "plan_sha256": self.plan.sha256,
        }

        info["cc"]["label_mismatch"] = label_mismatch(
            self.ident.groups, info["cc"]["technology"], self.ident.label
        )
        if info["cc"]["label_mismatch"]:
            self.console.print(f"[bold red]WARNING: {info['cc']['label_mismatch']}[/]")
        write_atomically(path, json.dumps(info, indent=2, sort_keys=True, default=str) + "\n")

    def _progress(self, stack: ExitStack, total: int) -> Progress | None:
        if not self.show_progress or total == 0:
            return None
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        return stack.enter_context(progress)

    def _log(self, n: int, total: int, label: str, record: dict[str, Any]) -> None:
        colour = {"ok": "green", "interrupted": "yellow"}.get(record["status"], "red")
        extra = f" - {record['error']}" if record["error"] else ""
        wall = record["telemetry"].get("wall_s", 0.0)
        self.console.print(
            f"[{n}/{total}] {label}: [{colour}]{record['status']}[/] ({wall:.1f} s){extra}",
            highlight=False,
            markup=True,
            soft_wrap=True,
        )

    def _summary(self) -> None:
        parts = ", ".join(f"{v} {k}" for k, v in self.counts.items() if v)
        self.console.print(f"results: {self.results_path} ({parts or 'nothing to do'})", highlight=False)


def _advance(bar: tuple, steps: int = 1) -> None:
    if bar[0] and steps > 0:
        bar[0].advance(bar[1], steps)


def _stopped(record: dict[str, Any]) -> bool:
    return bool((record.get("adaptive") or {}).get("stop"))


def _history(path: Path, plan_sha256: str) -> dict[int, list[dict[str, Any]]]:
    """Final records per plan index, for the adaptive rule of a resumed run."""
    out: dict[int, list[dict[str, Any]]] = {}
    recs = [r for r in read_records(path) if r.get("plan_sha256") == plan_sha256]
    for rec in dedupe(recs).kept:
        out.setdefault(rec.get("index", -1), []).append(rec)
    return out


def _append_line(path: Path, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)


def run_plan_cli(args: argparse.Namespace) -> int:
    """``testbed-agent run``."""
    plan = load_plan(args.plan)
    unknown = set(args.only) - {b.name for b in plan.benchmarks}
    if unknown:
        raise TestbedError(f"--only: no benchmark named {', '.join(sorted(unknown))} in {plan.path}")
    os.umask(0o077)  # results, state and scratch readable by the agent's user only
    host = check_name(args.host or socket.gethostname(), "--host")
    ident = Identity(
        run_id=check_name(args.run_id or args.out.resolve().name, "run id"),
        host=host,
        label=args.label or host,
        groups=tuple(args.group),
        plan_sha256=plan.sha256,
        plan_name=plan.name,
    )
    options = {**options_from_args(args), "keep_scratch": False}
    runner = Runner(
        plan,
        args.out,
        ident,
        scratch=args.scratch,
        only=args.only,
        node_exporter=args.node_exporter,
        textfile_dir=args.textfile_dir,
        sample_interval=args.sample_interval,
        options=options,
        progress=not args.no_progress and sys.stderr.isatty(),
        heartbeat_s=None if args.no_progress or sys.stderr.isatty() else 30.0,
    )
    return runner.run()


def _typical(bench: Benchmark) -> float | None:
    """The plan's duration estimate of one execution (None when the workload gives none)."""
    workload = workloads.get(bench.type)
    if workload is None:
        return None
    try:
        return float(min(workload.estimate_s(workload.parse(bench)), workload.timeout_s(bench))) or None
    except Exception:  # noqa: BLE001 - an estimate is a hint, never a reason to fail a run
        return None
