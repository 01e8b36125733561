"""Which driver a ``faas`` benchmark runs through, and what its record says about the target.

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

from testbed_agent.faas_drivers import open_driver
from testbed_agent.faas_drivers.base import Driver, FunctionSpec
from testbed_agent.faas_drivers.emulator import EmulatorDriver
from testbed_agent.faas_drivers.pricing import benchmark_cost, platform_of
from testbed_agent.faas_drivers.target import Target, target_from, target_from_env


def real_target(options: dict[str, Any] | None = None) -> Target | None:
    """The host's real FaaS target (``TESTBED_FAAS_TARGET``), if any."""
    given = (options or {}).get("faas_driver")
    target = given.target if given is not None else (options or {}).get("faas_target") or target_from_env()
    return target if target is not None and target.platform != "emulator" else None


def skip_reason(target: Target, profile: str, architecture: str | None = None) -> str | None:
    """Why a benchmark about ``profile`` (and ``architecture``) does not run on ``target``."""
    modelled = platform_of(profile)
    if modelled != target.platform:
        about = f"the {modelled} platform" if modelled else f"the emulator profile {profile!r} only"
        return f"this host's FaaS target is {target.platform}; the benchmark ({profile}) is about {about}"
    if architecture and architecture != target.architecture:
        return f"this host's FaaS target runs {target.architecture}; the benchmark asks for {architecture}"
    return None


@contextlib.contextmanager
def driver_for(
    options: dict[str, Any],
    emulator_url: Callable[[], contextlib.AbstractContextManager[str]],
    timeout_s: float,
) -> Iterator[Driver]:
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
        driver = EmulatorDriver(
            target_from({"platform": "emulator", "options": {"url": url}}), timeout_s=timeout_s
        )
        try:
            yield driver
        finally:
            driver.close()


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


def check_budget(driver: Driver, p: Any, what: str) -> None:
    """Refuse an execution whose estimated price would take the run over its cost cap."""
    budget = getattr(driver, "budget", None)
    if budget is None:
        return
    params = {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}  # every mode's parameters
    params["architecture"] = p.architecture or driver.target.architecture
    budget.check(benchmark_cost(params, 1, driver.platform)["price"], what)


def settle(driver: Driver, name: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    """The platform's late figures of the calls (request logs, metrics), where the driver reads any."""
    read = getattr(driver, "settle", None)
    if read is None or driver.dry_run:
        return {}
    return read(name, [c["call"] for c in calls if "call" in c]) or {}


def record_params(driver: Driver, info: dict[str, Any]) -> dict[str, Any]:
    """What the record says about where the benchmark ran: platform, region, architecture,
    runtime, real or emulated (and, emulated, the platform the profile models)."""
    desc = driver.describe()
    out = {
        "platform": desc["platform"],
        "region": desc.get("region"),
        "architecture": desc.get("architecture"),
        "runtime": desc.get("runtime"),
        "real": bool(desc.get("real")),
        "driver": desc.get("driver"),
    }
    if driver.platform == "emulator":
        profile = (info.get("profile") or {}).get("name", "")
        out |= {
            "models": platform_of(profile),
            "limits_enforced": info.get("limits_enforced"),
            "cgroup": info.get("cgroup"),
        }
    elif not out["real"]:
        out["rehearsal"] = desc.get("emulator_profile") or desc.get("standin") or "dry run"
    return out
