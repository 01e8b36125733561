"""Workload types by name. Each module defines one :class:`Workload` subclass."""

from __future__ import annotations

from testbed_agent.workloads.base import RunContext, Workload

REGISTRY: dict[str, type[Workload]] = {}


def register(cls: type[Workload]) -> type[Workload]:
    """Class decorator: make a workload type known to plans and the runner."""
    REGISTRY[cls.type] = cls
    return cls


def _load() -> None:
    # Imported for their @register side effect; one module per workload type.
    from testbed_agent.workloads import dd, fio, pyperformance, sysinfo  # noqa: F401

    for optional in ("notebook", "crypto", "faas"):
        try:
            __import__(f"testbed_agent.workloads.{optional}")
        except ModuleNotFoundError as exc:
            if exc.name != f"testbed_agent.workloads.{optional}":
                raise


_load()

__all__ = ["REGISTRY", "RunContext", "Workload", "register"]
