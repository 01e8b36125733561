"""Benchmark agent of the testbed toolkit: plan, runner, workloads, sysinfo, results."""

__version__ = "0.1.0"
SCHEMA_VERSION = 1
