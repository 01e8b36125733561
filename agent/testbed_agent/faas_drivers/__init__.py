"""FaaS drivers: one interface (:class:`~testbed_agent.faas_drivers.base.Driver`) for the local
emulator and for AWS Lambda, Google Cloud Functions (2nd gen) and Azure Functions.

``open_driver(target)`` gives the driver of a :class:`~testbed_agent.faas_drivers.target.Target`;
``teardown(driver, run_id)`` deletes what a run created (found by its run tag, cross-checked with the
run's journal), also after the run was killed.
"""

from __future__ import annotations

from typing import Any

from testbed_agent.faas_drivers.base import Call, Driver, FunctionSpec
from testbed_agent.faas_drivers.target import Target, load_target, target_from, target_from_env
from testbed_shared.errors import TestbedError

__all__ = [
    "Call",
    "Driver",
    "FunctionSpec",
    "Target",
    "load_target",
    "open_driver",
    "target_from",
    "target_from_env",
    "teardown",
]

#: kinds of resources in the order teardown deletes them (dependents first)
DELETE_ORDER = (
    "function",
    "function-app",
    "log-group",
    "source-object",
    "iam-role",
    "app-service-plan",
    "storage-account",
    "resource-group",
)


def open_driver(target: Target, *, dry_run: bool = False, out: Any = None) -> Driver:
    """The driver of ``target``'s platform (its SDK is imported here, when first needed)."""
    try:
        if target.platform == "emulator":
            from testbed_agent.faas_drivers.emulator import EmulatorDriver  # noqa: PLC0415 - per platform

            return EmulatorDriver(target, dry_run=dry_run, out=out)
        if target.platform == "aws-lambda":
            from testbed_agent.faas_drivers.aws import LambdaDriver  # noqa: PLC0415 - its SDK only when used

            return LambdaDriver(target, dry_run=dry_run, out=out)
        if target.platform == "gcf-gen2":
            from testbed_agent.faas_drivers.gcf import GcfDriver  # noqa: PLC0415 - its SDK only when used

            return GcfDriver(target, dry_run=dry_run, out=out)
        from testbed_agent.faas_drivers.azure import AzureFunctionsDriver  # noqa: PLC0415 - its SDK only when used

        return AzureFunctionsDriver(target, dry_run=dry_run, out=out)
    except ModuleNotFoundError as exc:
        raise TestbedError(
            f"{target.platform}: its SDK is not installed here ({exc.name})",
            hint="install the agent with its platforms extra: pip install 'testbed-agent[platforms]'",
        ) from exc


def teardown(driver: Any, run_id: str | None, now: float | None = None) -> dict[str, Any]:
    """Delete the resources tagged with ``run_id`` (None: every testbed resource past its deadline).

    The platform's tag query decides what is deleted: nothing without the toolkit's owner tag and
    the run's tag is touched. The run's journal is read beside it: entries it lists that the query
    no longer finds are reported as already gone.
    """
    found = driver.owned(run_id, now)
    found.sort(
        key=lambda r: DELETE_ORDER.index(r["kind"]) if r["kind"] in DELETE_ORDER else len(DELETE_ORDER)
    )
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
