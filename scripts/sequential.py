#!/usr/bin/env python3
"""Add machines until the comparison is decided or the cost cap is reached (issue 34).

    python scripts/sequential.py --compare SEV:AMD-Baseline --cap 40 --batch-hours 1.5 \\
        -i inventory/azure.yml -i inventory/azure.constructed.yml -l sev-1,amd-base-1 \\
        [-e plan=workloads/plans/standard.txt] [--margin 2] [--run-id NAME]

Batch 0 provisions the machines and runs the plan (run.yml's stages up to collect); batch k rotates
every machine once (playbooks/rotate.yml, rotation k: an Azure redeploy or deallocate and start, a
fresh KVM guest) and runs the plan again into the same store. After each batch the machines of the
two labels are counted as the report counts them, by the physical host each fingerprint names
(testbed_shared.machines); when both labels have gained machines, a look of the group-sequential
comparison is taken (``testbed-report sequential``: alpha spent over the looks up to the most
machines the cap can buy, the primary metrics' repeated confidence intervals and decisions). The
loop stops when the look says stop (every primary metric decided, or the last look), or before a
batch whose cost estimate would take the spending past the cap. Then the report is built and the
machines are torn down, whatever happened.

Cost: the Azure role's estimate (roles/azure_vm, ``azure_vm_cost``): every machine of the limit at
its ``azure_vm_hour_price`` (KVM guests: ``kvm_guest_hour_price``) for ``--batch-hours`` per batch;
a batch that took longer is charged its measured time, and the next estimate uses the longest batch
so far. The cap must be a finite positive amount and every machine needs a price. The ledger of
batches, looks and spending is ``results/<run_id>/sequential.json``. Exit status: 0 stopped
(decided or at the cap), 1 a batch failed (machines torn down all the same), 2 bad input.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from testbed_shared.atomic import write_atomically
from testbed_shared.errors import TestbedError, cli_main
from testbed_shared.machines import machine_key

ROOT = Path(__file__).resolve().parents[1]
#: run.yml's stages up to collect: the first batch
FIRST = [
    "playbooks/provision_azure.yml",
    "playbooks/provision_kvm.yml",
    "playbooks/deploy_agent.yml",
    "playbooks/run_plan.yml",
    "playbooks/collect.yml",
]
#: the price variable of each kind of machine the loop can rotate
PRICE_VARS = {"azure": "azure_vm_hour_price", "kvm": "kvm_guest_hour_price"}


def _role_cost() -> Callable[..., float]:
    """The Azure role's cost estimate (its filter plugin), so both price a run the same way."""
    path = ROOT / "roles/azure_vm/filter_plugins/azure_vm_arm.py"
    spec = importlib.util.spec_from_file_location("azure_vm_arm", path)
    if spec is None or spec.loader is None:
        raise TestbedError(f"{path}: cannot load the Azure role's cost estimate")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.azure_vm_cost


class Runner(Protocol):
    """What a batch does to the machines (Ansible here; the rehearsal passes its own)."""

    def first(self) -> None: ...
    def rotate(self, k: int) -> None: ...
    def finish(self, compare: str) -> None: ...


@dataclass
class Ansible:
    """Batches as ansible-playbook runs of the project's stages, on the given inventory and limit."""

    run_id: str
    inventories: list[str]
    limit: str
    extra: list[str]
    lifetime_hours: float
    log: Path

    def _play(self, *playbooks: str, extra: Sequence[str] = ()) -> None:
        cmd = [_tool("ansible-playbook"), *(a for i in self.inventories for a in ("-i", i))]
        cmd += ["-l", self.limit, "-e", f"run_id={self.run_id}"]
        for e in [*self.extra, *extra]:
            cmd += ["-e", e]
        cmd += list(playbooks)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("a") as out:
            out.write(f"\n$ {' '.join(cmd)}\n")
            out.flush()
            done = subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False)
        if done.returncode:
            raise BatchFailed(
                f"{' '.join(playbooks)} failed (ansible-playbook exit {done.returncode})", f"see {self.log}"
            )

    def first(self) -> None:
        self._play(*FIRST, extra=[f"azure_vm_lifetime_hours={self.lifetime_hours:g}"])

    def rotate(self, k: int) -> None:
        self._play("playbooks/rotate.yml", extra=["rotations=1", f"rotation_start={k}"])

    def finish(self, compare: str) -> None:
        try:
            self._play("playbooks/report.yml", extra=[json.dumps({"report_compare": [compare]})])
        finally:
            self._play("playbooks/teardown.yml")


def _tool(name: str) -> str:
    """A console script of this venv (beside this Python), else from PATH."""
    return shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name) or name


class BatchFailed(TestbedError):
    """A batch's playbook failed (the machines are torn down all the same)."""

    exit_code = 1


def hosts_and_prices(inventories: list[str], limit: str) -> tuple[dict[str, float], dict[str, str]]:
    """Every machine of the limit with its hour price and its label (``ansible-inventory``, the real
    variable resolution); a host that cannot be rotated, or has no positive price, is refused."""
    cmd = [
        _tool("ansible-inventory"),
        *(a for i in inventories for a in ("-i", i)),
        "--limit",
        limit,
        "--list",
    ]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise TestbedError(f"ansible-inventory failed for -l {limit}: {last}")
    inv = json.loads(done.stdout)
    hostvars = inv.get("_meta", {}).get("hostvars", {})
    kvm = set(inv.get("kvm", {}).get("hosts", []))
    every = {h for name, group in inv.items() if name != "_meta" for h in (group or {}).get("hosts", [])}
    out: dict[str, float] = {}
    labels: dict[str, str] = {}
    for host in sorted(every):
        hv = hostvars.get(host, {})
        kind = "azure" if hv.get("testbed_cloud") == "azure" else "kvm" if host in kvm else None
        if kind is None:
            raise TestbedError(
                f"{host}: not an Azure VM or a KVM guest, so it cannot be rotated onto another host",
                "limit the loop (-l) to the machines of the two labels",
            )
        var = PRICE_VARS[kind]
        try:
            price = float(hv.get(var, 0))
        except (TypeError, ValueError):
            price = math.nan
        if not (math.isfinite(price) and price > 0):
            raise TestbedError(
                f"{host}: {var} is {hv.get(var, 'not set')!r}, not a positive price",
                "the cost cap needs every machine's price per hour (your price list) in the inventory",
            )
        out[host] = price
        labels[host] = str(hv.get("testbed_label") or host)
    if not out:
        raise TestbedError(f"-l {limit} matches no host of the inventory")
    return out, labels


def machines_per_label(store: Path) -> dict[str, set[str]]:
    """The machines of each label in a run's store, keyed as the report keys them: the physical host
    a fingerprint names, else the VM (testbed_shared.machines)."""
    out: dict[str, set[str]] = {}
    for path in sorted(store.rglob("*.sysinfo.json")):
        if not path.with_name(path.name.replace(".sysinfo.json", ".jsonl")).exists():
            continue  # not a run's fingerprint (e.g. the sysinfo benchmark's artifact)
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        host = path.name.removesuffix(".sysinfo.json")
        label = ((info.get("testbed") or {}).get("label")) if isinstance(info, dict) else None
        if isinstance(label, str):
            out.setdefault(label, set()).add(machine_key(info, host))
    return out


@dataclass
class Loop:
    """The sequential loop's state: the cap, the spending, the looks, the ledger."""

    run_id: str
    store: Path
    compare: str
    cap: float
    batch_hours: float
    prices: dict[str, float]
    per_label: int
    margin: float
    runner: Runner
    cost: Callable[..., float] = field(default_factory=_role_cost)
    say: Callable[[str], None] = print
    spent: float = 0.0
    looks: list[int] = field(default_factory=list)
    batches: list[dict[str, Any]] = field(default_factory=list)
    stop: str = ""
    longest_hours: float = 0.0
    max_machines: int = 0

    def __post_init__(self) -> None:
        # fixed before the first look: machines per label at the cap (each affordable batch adds at
        # most one per VM of a label); the alpha spending plans its looks up to it
        self.max_machines = self.per_label * math.floor(self.cap / self.estimate())

    @property
    def labels(self) -> tuple[str, str]:
        a, _, b = self.compare.partition(":")
        return a, b

    def estimate(self) -> float:
        """The next batch's cost: every machine at its price for the longest batch time so far."""
        return self.cost(list(self.prices.values()), max(self.batch_hours, self.longest_hours), self.cap)

    def run(self) -> int:
        if self.max_machines < 2:
            raise TestbedError(
                f"--cap {self.cap:g} buys {math.floor(self.cap / self.estimate())} batch(es) of "
                f"{self.estimate():.2f}: at most {self.max_machines} machine(s) per label, a look needs 2",
                "raise the cap, shorten --batch-hours or add VMs per label",
            )
        self.say(
            f"sequential: {self.compare}, cap {self.cap:g}, a batch {self.estimate():.2f} "
            f"({len(self.prices)} machines x {self.batch_hours:g} h), at most {self.max_machines} "
            f"machines per label"
        )
        try:
            k = 0
            while not self.stop:
                if self.spent + self.estimate() > self.cap:
                    self.stop = (
                        f"cost cap: batch {k} would cost {self.estimate():.2f}, {self.spent:.2f} of "
                        f"{self.cap:g} spent"
                    )
                    break
                self._batch(k)
                k += 1
        except TestbedError as exc:
            self.stop = f"batch {len(self.batches)} failed: {exc.message}"
            raise
        finally:
            self.say(f"sequential: stop: {self.stop}")
            self._write()
            self.runner.finish(self.compare)  # the report and the teardown, whatever happened
        return 0

    def _batch(self, k: int) -> None:
        start = time.monotonic()
        if k == 0:
            self.runner.first()
        else:
            self.runner.rotate(k)
        hours = (time.monotonic() - start) / 3600
        self.longest_hours = max(self.longest_hours, hours)
        charge = self.cost(list(self.prices.values()), max(self.batch_hours, hours), self.cap)
        self.spent += charge
        per = machines_per_label(self.store)
        counts = {label: len(per.get(label, ())) for label in self.labels}
        entry: dict[str, Any] = {
            "batch": k,
            "kind": "provision" if k == 0 else f"rotation {k}",
            "seconds": round(hours * 3600, 1),
            "charged": charge,
            "spent": self.spent,
            "machines": counts,
        }
        self.batches.append(entry)
        machines = min(counts.values())
        line = f"sequential: batch {k}: {counts}, spent {self.spent:.2f} of {self.cap:g}"
        if machines >= 2 and (not self.looks or machines > self.looks[-1]):
            look = self._look(machines)
            entry["look"] = look
            line += f"; look at {machines}: {look['action']}: {look['why']}"
            if look["action"] == "stop":
                self.stop = f"look {len(self.looks)} says stop: {look['why']}"
        self.say(line)
        self._write()

    def _look(self, machines: int) -> dict[str, Any]:
        self.looks.append(machines)
        cmd = [_tool("testbed-report"), "sequential", str(self.store), "--compare", self.compare]
        cmd += ["--looks", ",".join(map(str, self.looks)), "--max-machines", str(self.max_machines)]
        cmd += ["--margin", f"{self.margin:g}", "--json"]
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
        if done.returncode:
            last = (done.stderr.strip().splitlines() or ["no output"])[0]
            raise TestbedError(f"testbed-report sequential failed: {last.removeprefix('error: ')}")
        return json.loads(done.stdout)

    def _write(self) -> None:
        self.store.mkdir(parents=True, exist_ok=True)
        ledger = {
            "run_id": self.run_id,
            "compare": self.compare,
            "cap": self.cap,
            "batch_hours": self.batch_hours,
            "prices": self.prices,
            "max_machines_per_label": self.max_machines,
            "looks": self.looks,
            "spent": self.spent,
            "batches": self.batches,
            "stop": self.stop,
        }
        write_atomically(self.store / "sequential.json", json.dumps(ledger, indent=1) + "\n", what="ledger")


def _positive(option: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise TestbedError(f"{option} {text!r}: expected a finite positive number")
    return value


def _cmd(args: argparse.Namespace) -> int:
    cap = _positive("--cap", args.cap)
    batch_hours = _positive("--batch-hours", args.batch_hours)
    margin = _positive("--margin", args.margin)
    if args.compare.count(":") != 1 or not all(args.compare.split(":")):
        raise TestbedError(f"--compare {args.compare!r}: expected LABEL_A:LABEL_B")
    if not args.run_id.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise TestbedError(f"--run-id {args.run_id!r}: expected a plain name (A-Z a-z 0-9 . _ -)")
    prices, labels = hosts_and_prices(args.inventory, args.limit)
    a, b = args.compare.split(":")
    per_label = min(sum(1 for lab in labels.values() if lab == side) for side in (a, b))
    if per_label == 0:
        raise TestbedError(
            f"-l {args.limit}: no machine labelled {a if a not in labels.values() else b}",
            f"the limit holds {', '.join(sorted(set(labels.values())))}",
        )
    store = ROOT / "results" / args.run_id
    n_batches = math.floor(cap / _role_cost()(list(prices.values()), batch_hours))
    runner = Ansible(
        args.run_id,
        args.inventory,
        args.limit,
        args.extra_vars,
        n_batches * batch_hours + 1,
        store / "sequential.log",
    )
    loop = Loop(
        args.run_id,
        store,
        args.compare,
        cap,
        batch_hours,
        prices,
        per_label=per_label,
        margin=margin,
        runner=runner,
    )
    return loop.run()


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="scripts/sequential.py",
        description="Add machines (rotations) until the comparison is decided or the cost cap is reached.",
        epilog="docs/azure.md, 'The sequential loop'; docs/report.md, 'Sequential over machines'.",
    )
    ap.add_argument("--compare", required=True, metavar="A:B", help="the two labels compared")
    ap.add_argument("--cap", required=True, metavar="AMOUNT", help="cost cap, in the prices' currency")
    ap.add_argument(
        "--batch-hours",
        required=True,
        metavar="H",
        help="machine-hours one batch takes per machine (setup or rotation and one run of the plan)",
    )
    ap.add_argument("--margin", default="2", metavar="PCT", help="equivalence margin in %% (default 2)")
    ap.add_argument("-i", "--inventory", action="append", default=[], help="inventory (repeatable)")
    ap.add_argument("-l", "--limit", required=True, help="the machines of the two labels (ansible --limit)")
    ap.add_argument("-e", "--extra-vars", action="append", default=[], help="ansible extra variables")
    ap.add_argument(
        "--run-id",
        default=time.strftime("seq%Y%m%dt%H%M%Sz", time.gmtime()),
        help="run id (default: seq<UTC time>)",
    )
    ap.add_argument("--debug", action="store_true", help="show tracebacks")
    ap.set_defaults(func=_cmd)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    return cli_main(build_parser(), argv)


if __name__ == "__main__":
    sys.exit(main())
