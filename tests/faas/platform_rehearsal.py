"""Rehearse the three real-platform drivers against their local stand-ins, and count the requests.

Starts the emulator (Lambda's stand-in: its Lambda API), moto's server (IAM, CloudWatch Logs), the
Google Cloud stand-in and the ARM stand-in (Azure), all on loopback; then, per platform, the same
sequence through the driver: deploy calcs, three calls (the first cold), a forced cold start, one
more call, the platform's late figures, delete, teardown of the run. Prints, per platform, the
requests each stand-in served per operation (counted on the server side) and what was left.

    python tests/faas/platform_rehearsal.py [--workdir DIR] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


class Env:
    """os.environ edits undone at the end (the rehearsal is also run from tests)."""

    def __init__(self) -> None:
        self.saved: dict[str, str | None] = {}

    def setenv(self, key: str, value: str) -> None:
        self.saved.setdefault(key, os.environ.get(key))
        os.environ[key] = value

    def delenv(self, key: str, raising: bool = False) -> None:
        self.saved.setdefault(key, os.environ.get(key))
        os.environ.pop(key, None)

    def undo(self) -> None:
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _sequence(platform: str, work: Path, **options: Any) -> dict[str, Any]:
    from faas.standins import target
    from testbed_agent.faas_drivers import FunctionSpec, open_driver, teardown

    driver = open_driver(target(platform, work, run_id=f"rehearsal-{platform}", **options))
    dep = driver.deploy(
        FunctionSpec("calcs-0", "calcs", memory_mb=256 if platform != "azure-functions" else None)
    )
    calls = [driver.invoke("calcs-0", {"level": 2}) for _ in range(3)]
    driver.cold("calcs-0")
    calls.append(driver.invoke("calcs-0", {"level": 2}))
    late = driver.settle("calcs-0", calls, 5)  # GCF adds its request log to each call instead
    where = driver.describe()
    driver.delete("calcs-0")
    down = teardown(driver, driver.target.run_id)
    return {
        "deployed": dep["name"],
        "calls_ok": sum(c.ok for c in calls),
        "cold": [bool(c.inspector.get("new_instance")) for c in calls],
        "real": where["real"],
        "late_figures": late or ("per call" if platform == "gcf-gen2" else None),
        "teardown_deleted": [r["kind"] for r in down["deleted"]],
        "driver_requests": down["requests"],
    }


def _arm_ops(log: Path) -> Counter:
    """The ARM stand-in's requests per operation (method and resource path, names dropped)."""
    ops: Counter = Counter()
    for line in log.read_text().splitlines():
        r = json.loads(line)
        path = r["path"].split("?")[0]
        if r["host"] == "management.azure.com":
            path = re.sub(r"/subscriptions/[^/]+", "", path)
            path = re.sub(r"(?i)/resourcegroups/[^/]+", "/resourceGroups/*", path)
            path = re.sub(
                r"(?i)/(sites|serverfarms|storageaccounts|functions|operations|operationresults)/[^/]+",
                r"/\1/*",
                path,
            )
            ops[f"ARM {r['method']} {path}"] += 1
        elif r["host"].endswith(".scm.azurewebsites.net"):
            ops[f"Kudu {r['method']} {path}"] += 1
        elif r["host"].endswith(".azurewebsites.net"):
            ops[f"function {r['method']} {path}"] += 1
        elif r["host"] != "control":
            ops[f"{r['host']} {r['method']} {re.sub(r'/[0-9a-f-]{36}/', '/TENANT/', path)}"] += 1
    return ops


def rehearse(work: Path) -> dict[str, Any]:
    """Run the three rehearsals; their results and the stand-ins' request counts."""
    from faas.conftest import Served
    from faas.standins import aws_env, azure_standin, gcp_standin, stats

    out: dict[str, Any] = {}
    env = Env()
    stack = contextlib.ExitStack()
    try:
        served = Served(work / "emulator", "--cgroup", "none")
        stack.callback(served.stop)
        moto = stack.enter_context(aws_env(served.url, env))  # type: ignore[arg-type]
        aws = _sequence("aws-lambda", work / "aws")
        lam = served.client.request("GET", "/_lambda/stats")[1]["requests"]  # the client holds the token
        aws["standin_requests"] = {f"Lambda {k}": v for k, v in sorted(lam.items())}
        aws["standin_requests"]["moto (IAM, Logs)"] = sum(
            v for k, v in aws["driver_requests"].items() if k.startswith(("iam:", "logs:"))
        )
        aws["left"] = served.client.info()["functions"]
        aws["moto"] = moto
        out["aws-lambda"] = aws
        with gcp_standin(work / "gcp", env) as ep:  # type: ignore[arg-type]
            gcf = _sequence(
                "gcf-gen2",
                work / "gcf-driver",
                source_bucket=ep["bucket"],
                project=ep["project"],
                log_wait_s=5,
            )
            got = stats(ep)
            gcf["standin_requests"] = dict(sorted(got["requests"].items()))
            gcf["left"] = {"functions": got["functions_left"], "objects": got["objects_left"]}
        out["gcf-gen2"] = gcf
        try:
            with azure_standin(work / "arm", env) as ep:  # type: ignore[arg-type]
                azf = _sequence("azure-functions", work / "az-driver", metrics_wait_s=5)
                got = stats(ep)
                azf["standin_requests"] = dict(sorted(_arm_ops(work / "arm" / "requests.jsonl").items()))
                azf["left"] = got["resources_left"]
        except Exception as exc:  # noqa: BLE001 - reported per platform; the others' counts still print
            azf = {"error": f"{type(exc).__name__}: {exc}"}
        out["azure-functions"] = azf
    finally:
        stack.close()
        env.undo()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--workdir", type=Path, help="keep the stand-ins' files here (default: a temporary directory)"
    )
    ap.add_argument("--json", action="store_true", help="one JSON document")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="platform-rehearsal-") as tmp:
        result = rehearse(args.workdir or Path(tmp))
    if args.json:
        print(json.dumps(result, indent=1, sort_keys=True, default=str))
        return 0
    for platform, r in result.items():
        if "error" in r:
            print(f"{platform}: FAILED: {r['error']}")
            continue
        left = r["left"] or "nothing"
        print(f"{platform}: {r['calls_ok']}/4 calls ok, cold {r['cold']}, real {r['real']}, left {left}")
        for op, n in r["standin_requests"].items():
            print(f"  {n:4d}  {op}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
