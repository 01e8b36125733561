"""The runner: every benchmark x repetition, with waits, timeouts, telemetry, one fsynced record
each; failures are recorded and the plan goes on; SIGINT/SIGTERM end the current benchmark,
record it as interrupted and exit cleanly; re-running the same run id resumes."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from testbed_agent.errors import BenchmarkTimeout, Interrupted, TestbedError, WorkloadError
from testbed_agent.plan import Benchmark, Plan, load_plan
from testbed_agent.progress import ProgressFileExporter
from testbed_agent.results import Identity, ResultWriter, completed_executions, make_record, now_rfc3339
from testbed_agent.telemetry import (
    ResourceMeter,
    Sampler,
    counter_deltas,
    scrape_node_exporter,
)
from testbed_agent.workloads import REGISTRY
from testbed_agent.workloads.base import RunContext

EXIT_FAILURES = 3  # the plan ran to the end, some benchmarks failed or timed out


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
    ) -> None:
        self.plan = plan
        self.out = out
        self.ident = ident
        self.scratch = (
            scratch or Path(os.environ.get("TESTBED_SCRATCH", "/var/tmp/testbed-agent")) / ident.run_id
        )
        self.only = set(only or [])
        self.node_exporter = node_exporter
        self.sample_interval = sample_interval
        self.options = options or {}
        self.show_progress = progress
        self.console = console or Console(stderr=True)
        self.exporter = ProgressFileExporter(textfile_dir, ident.run_id, ident.host, out)
        self.stop = threading.Event()
        self.signum: int | None = None
        self._ctx: RunContext | None = None
        self.results_path = out / f"{ident.host}.jsonl"
        self.artifacts = out / f"{ident.host}.artifacts"
        self.counts = {"ok": 0, "failed": 0, "timeout": 0, "skipped": 0, "interrupted": 0, "resumed": 0}

    # -- signals --------------------------------------------------------------------------
    def _on_signal(self, signum: int, _frame: object) -> None:
        self.signum = signum
        self.stop.set()
        ctx = self._ctx
        if ctx is not None:
            ctx.terminate()

    # -- the run --------------------------------------------------------------------------
    def run(self) -> int:
        self.out.mkdir(parents=True, exist_ok=True)
        self.scratch.mkdir(parents=True, exist_ok=True)
        self._write_sysinfo()
        done = completed_executions(self.results_path, self.plan.sha256)
        todo = [
            (b, r)
            for b in self.plan.benchmarks
            if not self.only or b.name in self.only
            for r in range(b.repetitions)
        ]
        from testbed_agent.attest.binding import Binder  # evidence bound to the results (issue 14)

        binder = Binder(self.out, self.ident, self.results_path, self.options, self.console.print)
        binder.begin()
        handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            with ResultWriter(self.results_path) as writer, ExitStack() as stack:
                progress = self._progress(stack, len(todo))
                task = progress.add_task("starting", total=len(todo)) if progress else None
                for n, (bench, rep) in enumerate(todo, start=1):
                    if self.stop.is_set():
                        break
                    if (bench.index, bench.name, rep) in done:
                        self.counts["resumed"] += 1
                        if progress:
                            progress.advance(task)
                        continue
                    label = f"{bench.name} #{rep + 1}/{bench.repetitions}"
                    if progress:
                        progress.update(task, description=label)
                    self.exporter.update(n - 1, len(todo), bench.name, "running", rep + 1, bench.repetitions)
                    if bench.wait_s and self.stop.wait(bench.wait_s):
                        break  # interrupted while waiting: nothing started, nothing to record
                    record = self.execute(bench, rep)
                    writer.append(record)
                    self.counts[record["status"]] += 1
                    self._log(n, len(todo), label, record)
                    if progress:
                        progress.advance(task)
                    if record["status"] == "interrupted":
                        break
        finally:
            for s, h in handlers.items():
                signal.signal(s, h)
        binder.end()
        finished = not self.stop.is_set()
        self.exporter.update(sum(self.counts.values()), len(todo), "", "done" if finished else "interrupted")
        if finished and not self.options.get("keep_scratch"):
            shutil.rmtree(self.scratch, ignore_errors=True)
        self._summary()
        if self.signum is not None:
            return 128 + self.signum
        return EXIT_FAILURES if self.counts["failed"] or self.counts["timeout"] else 0

    def execute(self, bench: Benchmark, rep: int) -> dict[str, Any]:
        """Run one execution with telemetry; always return a record, whatever happened."""
        workload = REGISTRY[bench.type]()
        ctx = RunContext(
            bench=bench,
            repetition=rep,
            scratch=self.scratch,
            artifacts=self.artifacts,
            deadline=time.monotonic() + workload.timeout_s(bench),
            stop=self.stop,
            allow_device=bool(bench.params.get("allow_device", False)),
            options=self.options,
        )
        self._ctx = ctx
        sampler = Sampler(self.sample_interval)
        before = scrape_node_exporter(self.node_exporter)
        started = now_rfc3339()
        meter = ResourceMeter()
        sampler.start()
        status, error, outcome = "ok", None, None
        try:
            outcome = workload.run(ctx)
            status, error = outcome.status, outcome.error
        except Interrupted as exc:
            status, error = "interrupted", f"{exc}" + (f" (signal {self.signum})" if self.signum else "")
        except BenchmarkTimeout as exc:
            status, error = "timeout", f"{exc} ({workload.timeout_s(bench):.0f} s)"
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
            samples=outcome.samples if outcome else None,
            telemetry=telemetry,
            tool=(outcome.tool if outcome else None) or {"name": workload.tool},
            artifacts=[f"{self.artifacts.name}/{a}" for a in ctx.artifact_files()],
        )

    # -- helpers --------------------------------------------------------------------------
    def _write_sysinfo(self) -> None:
        from testbed_agent.sysinfo import collect

        path = self.out / f"{self.ident.host}.sysinfo.json"
        if path.exists():
            return
        host_facts = self.options.get("host_facts")
        facts = json.loads(Path(host_facts).read_text()) if host_facts else None
        info = collect(
            cloud=self.options.get("cloud") or "none", host_facts=facts, declared=self.options.get("declared")
        )
        info["testbed"] = {
            "label": self.ident.label,
            "groups": list(self.ident.groups),
            "run_id": self.ident.run_id,
            "plan": self.plan.name,
            "plan_sha256": self.plan.sha256,
        }
        from testbed_agent.sysinfo.cc import label_mismatch

        info["cc"]["label_mismatch"] = label_mismatch(self.ident.groups, info["cc"]["technology"])
        if info["cc"]["label_mismatch"]:
            self.console.print(f"[bold red]WARNING: {info['cc']['label_mismatch']}[/]")
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(info, indent=2, sort_keys=True, default=str) + "\n")
        os.replace(tmp, path)

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


def run_plan_cli(args: argparse.Namespace) -> int:
    """``testbed-agent run``."""
    plan = load_plan(args.plan)
    unknown = set(args.only) - {b.name for b in plan.benchmarks}
    if unknown:
        raise TestbedError(f"--only: no benchmark named {', '.join(sorted(unknown))} in {plan.path}")
    host = args.host or socket.gethostname()
    ident = Identity(
        run_id=args.run_id or args.out.resolve().name,
        host=host,
        label=args.label or host,
        groups=tuple(args.group),
        plan_sha256=plan.sha256,
        plan_name=plan.name,
    )
    options = {
        "cloud": args.cloud,
        "host_facts": str(args.host_facts) if args.host_facts else None,
        "keep_scratch": False,
    }
    if args.disk_encryption is not None:
        options["declared"] = {"disk_encryption": args.disk_encryption == "true"}
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
    )
    return runner.run()
