"""The workload interface: validate parameters, run one execution, return an Outcome."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from testbed_agent.plan import Benchmark, ParamError
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
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def params(self) -> dict[str, Any]:
        return self.bench.params

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
    ) -> subprocess.CompletedProcess[str]:
        """Run ``cmd`` in its own session, bounded by the deadline; raise on timeout/interrupt."""
        if self.stop.is_set():
            raise Interrupted("interrupted before start")
        remaining = self.remaining()
        if remaining <= 0:
            raise BenchmarkTimeout("timed out before start")
        try:
            proc = subprocess.Popen(
                cmd,
                cwd=cwd,
                env=env,
                stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                start_new_session=True,
                preexec_fn=self.tracker.preexec() if self.tracker else None,  # noqa: PLW1509
            )
        except FileNotFoundError as exc:
            raise WorkloadError(f"{cmd[0]} not found", hint="install it or fix PATH") from exc
        if self.tracker:
            self.tracker.started(proc.pid)
        with self._lock:
            self._proc = proc
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

    def terminate(self) -> None:
        """Called from the signal handler: end the running subprocess group, if any."""
        with self._lock:
            proc = self._proc
        if proc is not None:
            _kill_group(proc, signal.SIGTERM)


def _kill_group(proc: subprocess.Popen, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


class Workload:
    """Base of workload types. Subclasses set ``type`` and implement ``check`` and ``run``."""

    type: ClassVar[str] = ""
    tool: ClassVar[str] = ""
    #: name for ``testbed-agent parse KIND FILE``; empty when the type has no raw-output parser
    parse_kind: ClassVar[str] = ""

    @staticmethod
    def parse_file(path: Path) -> dict[str, Any]:
        """Normalized metrics (``{"metrics": {...}, ...}``) of a raw tool output file."""
        raise NotImplementedError

    @classmethod
    def check(cls, bench: Benchmark) -> None:
        """Validate ``bench.params``; raise :class:`ParamError` naming the field."""

    @classmethod
    def timeout_s(cls, bench: Benchmark) -> float:
        """Timeout of one execution: the plan's ``timeout_s`` or the type's default."""
        return bench.timeout_s or DEFAULT_TIMEOUT_S

    def run(self, ctx: RunContext) -> Outcome:
        raise NotImplementedError


def require(
    params: dict[str, Any],
    key: str,
    kind: type | tuple[type, ...],
    *,
    default: Any = None,
    choices: tuple[Any, ...] | None = None,
) -> Any:
    """Read ``params[key]`` with a type (and choice) check; raise ParamError('params.key')."""
    if key not in params or params[key] is None:
        if default is None:
            raise ParamError(f"params.{key}", "is required")
        return default
    value = params[key]
    if isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,)):
        raise ParamError(f"params.{key}", f"expected {_kind_name(kind)}, got {value!r}")
    if not isinstance(value, kind):
        raise ParamError(f"params.{key}", f"expected {_kind_name(kind)}, got {value!r}")
    if choices is not None and value not in choices:
        raise ParamError(f"params.{key}", f"must be one of {', '.join(map(str, choices))}; got {value!r}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)
