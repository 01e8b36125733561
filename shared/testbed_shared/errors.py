"""Errors the agent reports to users: one readable line plus a hint."""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence


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


def cli_main(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None) -> int:
    """Parse, dispatch to ``args.func`` and turn a :class:`TestbedError` into one line plus a hint
    (the traceback only with ``--debug``). Shared by ``testbed-agent`` and ``testbed-report``."""
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except TestbedError as exc:
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"error: {exc.message}", file=sys.stderr)
        if exc.hint:
            print(f"hint: {exc.hint}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into a reader that stopped early (``| head``)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        return 141
