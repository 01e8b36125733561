"""Which driver a ``faas`` benchmark runs through, and whether its cost fits the run's cap.

A host whose environment names a real target (``TESTBED_FAAS_TARGET``, written by the
``faas_platform`` role) runs every faas benchmark of its plan on that platform, unchanged: the
benchmark's ``profile`` names the platform it is about, and a benchmark about another platform is
recorded as skipped (a plan comparing AWS with GCF runs each half on the host of its platform).
Otherwise the benchmark's ``endpoint`` decides, as before: a private emulator (``auto``), this
host's emulator service (``local``) or a URL, all through the emulator's own API.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

from testbed_agent.faas_drivers import open_driver, platforms
from testbed_agent.faas_drivers.base import FunctionSpec, Platform
from testbed_agent.faas_drivers.calls import emulator_only
from testbed_agent.faas_drivers.platforms.emulator import EmulatorDriver
from testbed_agent.faas_drivers.pricing import benchmark_cost
from testbed_agent.faas_drivers.target import Target
from testbed_agent.faas_drivers.target_file import target_from_env


def real_target(options: dict[str, Any] | None = None) -> Target | None:
    """The host's real FaaS target (``TESTBED_FAAS_TARGET``), if any."""
    given = (options or {}).get("faas_driver")
    target = given.target if given is not None else (options or {}).get("faas_target") or target_from_env()
    return target if target is not None and platforms.get(target.platform).real else None


def skip_reason(target: Target, p: Any) -> str | None:
    """Why a faas benchmark (its typed ``FaasParams``) does not run on the real ``target``: it is
    about another platform or architecture, or it needs the emulator itself (a faster clock, a key
    service on loopback)."""
    modelled = platforms.modelled_by(p.profile)
    if modelled != target.platform:
        about = f"the {modelled} platform" if modelled else f"the emulator profile {p.profile!r} only"
        return f"this host's FaaS target is {target.platform}; the benchmark ({p.profile}) is about {about}"
    if p.architecture and p.architecture != target.architecture:
        return f"this host's FaaS target runs {target.architecture}; the benchmark asks for {p.architecture}"
    return emulator_only({"time_scale": p.time_scale, "key_service": p.key_service})


@contextlib.contextmanager
def driver_for(
    options: dict[str, Any],
    emulator_url: Callable[[], contextlib.AbstractContextManager[str]],
    timeout_s: float,
) -> Iterator[Platform]:
    """The driver of one execution: the host's real target, else the emulator at the benchmark's
    endpoint (``emulator_url()`` yields its URL, starting a private emulator for ``auto``)."""
    given = options.get("faas_driver")
    if given is not None:  # one driver for many executions (the dry run's)
        yield given
        return
    target = real_target(options)
    if target is not None:
        driver = open_driver(target, dry_run=bool(options.get("faas_dry_run")))
        try:
            yield driver
        finally:
            driver.close()
        return
    with emulator_url() as url:
        emulator = EmulatorDriver.at(url, timeout_s)
        try:
            yield emulator
        finally:
            emulator.close()


def function_spec(name: str, p: Any, tags: dict[str, str] | None = None) -> FunctionSpec:
    """What a faas benchmark deploys, from its typed parameters (``FaasParams``)."""
    return FunctionSpec(
        name=name,
        function=str(p.function),
        memory_mb=p.memory_mb,
        timeout_s=p.function_timeout_s,
        architecture=p.architecture,
        runtime=p.runtime,
        tags=dict(tags or {}),
        env={str(k): str(v) for k, v in (p.env or {}).items()},
        tmp_mb=p.tmp_mb,
        keep_alive_s=p.keep_alive_s,
    )


def check_budget(driver: Platform, p: Any, what: str) -> None:
    """Refuse an execution whose cost ceiling (every call to its timeout) would take the run over
    its cost cap."""
    if driver.budget is None:
        return
    params = {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}  # every mode's parameters
    params["architecture"] = p.architecture or driver.target.architecture
    driver.budget.check(benchmark_cost(params, 1, driver.name)["price_ceiling"], what)
