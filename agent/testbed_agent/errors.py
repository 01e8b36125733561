"""Errors the agent reports to users: one readable line plus a hint."""

from __future__ import annotations


class TestbedError(Exception):
    """An error shown to the user as one line, with an optional hint."""

    exit_code = 2

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class PlanError(TestbedError):
    """A plan that cannot be read; names the file, line and field."""

    def __init__(
        self,
        path: str,
        line: int | None,
        field: str | None,
        problem: str,
        hint: str | None = None,
    ) -> None:
        where = path if line is None else f"{path}:{line}"
        what = f" field '{field}'" if field else ""
        super().__init__(f"{where}:{what} {problem}".replace(": ", ": ", 1), hint)
        self.path = path
        self.line = line
        self.field = field
        self.problem = problem


class WorkloadError(TestbedError):
    """A benchmark failed; the runner records it with status ``failed``."""


class TargetRefused(WorkloadError):
    """An I/O workload was pointed at something it must not write to."""


class BenchmarkTimeout(WorkloadError):
    """A benchmark ran past its timeout; recorded with status ``timeout``."""


class Interrupted(WorkloadError):
    """SIGINT/SIGTERM arrived while a benchmark ran; recorded as ``interrupted``."""
