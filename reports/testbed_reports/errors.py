"""Errors shown to users as one line plus a hint (tracebacks only with --debug)."""

from __future__ import annotations

from testbed_shared.errors import TestbedError


class ReportError(TestbedError):
    """A problem with the input or the options of ``testbed-report``."""


class SchemaError(ReportError):
    """A result record that breaks the schema; names the file and line."""

    def __init__(self, path: str, line: int | None, problem: str) -> None:
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {problem}", "see docs/design.md section 4 for the record schema")
        self.path = path
        self.line = line
        self.problem = problem

    def __reduce__(self) -> tuple:
        return (SchemaError, (self.path, self.line, self.problem))
