"""The workload interface: a workload type is one class in one module of this package.

The class owns everything about its type: its name and aliases (``type``, ``aliases``, the classic
``standard`` names it claims), its typed params dataclass (``Params``: defaults and checks in one
place), what the plan loader checks beyond the values (``check_environment``), its timeout and
duration estimate, its primary metrics, its raw-output parser (``parse_kind``/``parse_file``) and
``run``, which receives the parsed params. The registry (:mod:`testbed_agent.workloads`) finds the
classes; nothing else lists them.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from testbed_agent.benchmark import Benchmark
from testbed_agent.params import field_names, parse_into
from testbed_agent.procs import ProcessTracker
from testbed_agent.results import Outcome
from testbed_shared.errors import BenchmarkTimeout, Interrupted, WorkloadError

DEFAULT_TIMEOUT_S = 3600.0


@dataclass
class RunContext:
    """What a workload gets for one execution.

    ``scratch`` is the run's scratch directory (test files live here); ``artifacts`` is where
    raw tool output is kept beside the results. Subprocesses must go through :meth:`exec`, so
    that timeouts and SIGINT/SIGTERM end the whole process group of the benchmark.
    """

    bench: Benchmark
    repetition: int
    scratch: Path
    artifacts: Path
    deadline: float
    stop: threading.Event = field(default_factory=threading.Event)
    allow_device: bool = False
    #: run-wide options from the command line (cloud, host_facts, ...)
    options: dict[str, Any] = field(default_factory=dict)
    #: pid file and cgroup of the run (benchmarks die with the agent); None outside the runner
    tracker: ProcessTracker | None = None
    _proc: subprocess.Popen | None = field(default=None, repr=False)
    #: re-entrant: the signal handler (:meth:`terminate`) runs in the thread that may hold it
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    @property
    def artifact_prefix(self) -> str:
        """File name prefix of this execution's raw outputs."""
        return f"{self.bench.index:03d}-{self.bench.name.replace('/', '_')}-r{self.repetition}."

    def artifact(self, suffix: str) -> Path:
        """Path for a raw output file of this execution, e.g. ``artifact('fio.json')``."""
        self.artifacts.mkdir(parents=True, exist_ok=True)
        return self.artifacts / f"{self.artifact_prefix}{suffix}"

    def artifact_files(self) -> list[str]:
        """Names of the raw outputs this execution left, whatever became of it."""
        if not self.artifacts.is_dir():
            return []
        return sorted(p.name for p in self.artifacts.glob(f"{self.artifact_prefix}*") if p.is_file())

    def exec(
        self,
        cmd: list[str],
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        check: bool = True,
        input_text: str | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> subprocess.CompletedProcess[str]:
        """Run ``cmd`` in its own session, bounded by the deadline; raise on timeout/interrupt.

        ``pass_fds``: descriptors the tool inherits (a target the agent opened, named to the tool
        as ``/proc/self/fd/N``: the guard's way of handing over a file that cannot be swapped)."""
        if self.stop.is_set():
            raise Interrupted("interrupted before start")
        remaining = self.remaining()
        if remaining <= 0:
            raise BenchmarkTimeout("timed out before start")
        try:
            proc = subprocess.Popen(  # noqa: S603 - RunContext.exec: the tracked path every benchmark tool takes
                cmd,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
                preexec_fn=self.tracker.preexec() if self.tracker else None,  # noqa: PLW1509
                pass_fds=pass_fds,
            )
        except FileNotFoundError as exc:
            raise WorkloadError(f"{cmd[0]} not found", hint="install it or fix PATH") from exc
        with self._lock:
            self._proc = proc
        if self.stop.is_set():  # a signal came while it started: its handler found nothing to end
            _kill_group(proc, signal.SIGTERM)
        if self.tracker:
            self.tracker.started(proc.pid)
        try:
            out, err = proc.communicate(input=input_text, timeout=remaining)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate()
            raise BenchmarkTimeout(f"{Path(cmd[0]).name} exceeded the timeout") from None
        finally:
            with self._lock:
                self._proc = None
            _kill_group(proc)  # nothing of a benchmark outlives it
            if self.tracker:
                self.tracker.finished(proc.pid)
        if self.stop.is_set():
            raise Interrupted(f"{Path(cmd[0]).name} interrupted by signal")
        if check and proc.returncode != 0:
            tail = (err or out or "").strip().splitlines()[-1:] or [""]
            raise WorkloadError(f"{Path(cmd[0]).name} exited with {proc.returncode}: {tail[0][:300]}")
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    def sleep(self, seconds: float) -> None:
        """Sleep, waking early (and raising) on interrupt."""
        if seconds > 0 and self.stop.wait(seconds):
            raise Interrupted("interrupted while waiting")

    def terminate(self, sig: int = signal.SIGTERM) -> None:
        """Called from the signal handler: signal the running subprocess group, if any (a process
        that starts after ``stop`` was set is ended by :meth:`exec` itself)."""
        with self._lock:
            proc = self._proc
        if proc is not None:
            _kill_group(proc, sig)


def _kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


@dataclass(frozen=True)
class NoParams:
    """The params of a type that takes none."""


class Workload:
    """Base of workload types: subclasses set ``type`` (and what else applies) and implement ``run``."""

    #: the type name plans write (``type: fio``)
    type: ClassVar[str] = ""
    #: the tool recorded when a run produced no tool information
    tool: ClassVar[str] = ""
    #: other spellings of ``type`` a plan may use
    aliases: ClassVar[tuple[str, ...]] = ()
    #: classic ``standard`` entries whose (lower-case) name starts with one of these are this type
    name_prefixes: ClassVar[tuple[str, ...]] = ()
    #: ... or ends with one of these
    name_suffixes: ClassVar[tuple[str, ...]] = ()
    #: the typed parameters: a frozen dataclass of :func:`testbed_agent.params.spec` fields
    Params: ClassVar[type] = NoParams
    #: regular expressions over metric names: every match is a primary metric (docs/design.md section 6)
    primary: ClassVar[tuple[str, ...]] = ()
    #: timeout of one execution when the plan gives none
    default_timeout_s: ClassVar[float] = DEFAULT_TIMEOUT_S
    #: typical seconds of one execution when the params say nothing more precise (plan show)
    typical_s: ClassVar[float] = 60.0
    #: how ``estimate_s`` estimates, when plan show should say so
    estimate_note: ClassVar[str] = ""
    #: name for ``testbed-agent parse KIND FILE``; empty when the type has no raw-output parser
    parse_kind: ClassVar[str] = ""

    @classmethod
    def parse(cls, bench: Benchmark) -> Any:
        """The typed params of ``bench``; raise :class:`ParamError` naming the field."""
        return parse_into(cls.Params, bench.params, cls.type)

    @classmethod
    def param_keys(cls) -> set[str]:
        """The parameter names a plan entry of this type may give: the fields of ``Params`` (a type
        whose ``parse`` builds its params from other names says which)."""
        return field_names(cls.Params)

    @classmethod
    def check_environment(cls, bench: Benchmark, params: Any) -> None:
        """What the plan loader checks beyond the values (files a benchmark names exist...)."""

    @classmethod
    def check(cls, bench: Benchmark) -> Any:
        """Everything the plan loader checks: the params, then the environment; the typed params."""
        params = cls.parse(bench)
        cls.check_environment(bench, params)
        return params

    @classmethod
    def timeout_s(cls, bench: Benchmark) -> float:
        """Timeout of one execution: the plan's ``timeout_s`` or the type's default for its params."""
        return bench.timeout_s or cls.default_timeout(cls.parse(bench))

    @classmethod
    def default_timeout(cls, params: Any) -> float:
        """The type's timeout of one execution with these params."""
        return cls.default_timeout_s

    @classmethod
    def estimate_s(cls, params: Any) -> float:
        """Typical seconds of one execution with these params (without the wait)."""
        return cls.typical_s

    @classmethod
    def cells(cls, params: Any) -> dict[str, Any] | None:
        """The cell matrix one execution runs (count and dimensions), for types that have one."""
        return None

    @classmethod
    def primary_metrics(cls, names: Iterable[str]) -> list[str]:
        """The primary metrics among ``names`` (sorted): those matching a ``primary`` pattern."""
        return sorted(n for n in set(names) if any(re.fullmatch(p, n) for p in cls.primary))

    @staticmethod
    def parse_file(path: Path) -> dict[str, Any]:
        """Normalized metrics (``{"metrics": {...}, ...}``) of a raw tool output file."""
        raise NotImplementedError

    def run(self, ctx: RunContext, params: Any) -> Outcome:
        """One execution with the parsed params."""
        raise NotImplementedError
