"""Errors shown to users as one line plus a hint (tracebacks only with --debug)."""

from __future__ import annotations

from testbed_shared.errors import TestbedError
from testbed_shared.records import RecordError


class ReportError(TestbedError):
    """A problem with the input or the options of ``testbed-report``."""


class SchemaError(RecordError, ReportError):
    """A result record that breaks the schema (the record module's error, as the report's): names
    the file and line."""
