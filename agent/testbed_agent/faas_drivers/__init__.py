"""FaaS drivers: one class per platform (:class:`~testbed_agent.faas_drivers.base.Platform`, a
module of ``platforms/`` each: the local emulator, AWS Lambda, Google Cloud Functions 2nd gen,
Azure Functions), found by the registry (``platforms.registry()``).

``open_driver(target)`` gives the driver of a :class:`~testbed_agent.faas_drivers.target.Target`
(its credentials checked first, in one line when missing); ``teardown(driver, run_id)`` deletes
what a run created (found by its run tag, cross-checked with the run's journal), also after the run
was killed.
"""

from __future__ import annotations

from typing import Any, TextIO

from testbed_agent.faas_drivers import platforms
from testbed_agent.faas_drivers.base import Call, FunctionSpec, Platform
from testbed_agent.faas_drivers.target import Target
from testbed_agent.faas_drivers.target_file import load_target, target_from, target_from_env
from testbed_shared.errors import TestbedError

__all__ = [
    "Call",
    "FunctionSpec",
    "Platform",
    "Target",
    "load_target",
    "open_driver",
    "target_from",
    "target_from_env",
    "teardown",
]


def open_driver(target: Target, *, dry_run: bool = False, out: TextIO | None = None) -> Platform:
    """The driver of ``target``'s platform; outside a dry run its credentials are checked first
    (one line naming what is missing), its SDK imported when it connects."""
    platform = platforms.get(target.platform)
    try:
        return platform(target, dry_run=dry_run, out=out)
    except ModuleNotFoundError as exc:
        raise TestbedError(
            f"{target.platform}: its SDK is not installed here ({exc.name})",
            hint="install the agent with its platforms extra: pip install 'testbed-agent[platforms]'",
        ) from exc


def teardown(driver: Platform, run_id: str | None, now: float | None = None) -> dict[str, Any]:
    """Delete the resources tagged with ``run_id`` (None: every testbed resource past its deadline).

    The platform's tag query decides what is deleted: nothing without the toolkit's owner tag and
    the run's tag is touched. The run's journal is read beside it: entries it lists that the query
    no longer finds are reported as already gone.
    """
    order = driver.delete_order
    found = driver.owned(run_id, now)
    found.sort(key=lambda r: order.index(r["kind"]) if r["kind"] in order else len(order))
    deleted = []
    for resource in found:
        driver.remove(resource)
        deleted.append({"kind": resource["kind"], "id": resource["id"]})
    seen = {(r["kind"], r["id"]) for r in found}
    gone = []
    if run_id is not None and run_id == driver.target.run_id:
        gone = [
            {"kind": e["kind"], "id": e["id"]}
            for e in driver.journal.live()
            if (e["kind"], e["id"]) not in seen
        ]
        for entry in gone:
            driver.journal.deleted(entry["kind"], entry["id"])
    return {"deleted": deleted, "already_gone": gone, "requests": driver.counts()}
