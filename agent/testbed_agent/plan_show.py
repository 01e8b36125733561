"""``testbed-agent plan show PLAN [--json] [--inventory INV]...``: what a plan will run, and for
how long, before machines are paid for (issue 16 item 3).

Every execution (benchmark, type, params, repetition) is listed with an estimated duration: the
wait before it plus the typical duration its workload type estimates from its parameters
(``Workload.estimate_s``: fio runtime and ramp, dd bytes, notebook scale, pyperformance
selection, FaaS calls and gaps, crypto cells from their bytes and measured cipher rates), never
more than its timeout. A type with cells (crypto) also gives its cell matrix (``cells``: count
and dimensions). A benchmark with
adaptive repetitions (``min``/``max``) lists its runs up to ``max``; the runs past ``min`` are
marked adaptive and the total is shown as a range. With ``--inventory``, the machine matrix of
that inventory (size, vCPUs, memory, OS disk, security type) is printed too, through
``ansible-inventory`` (the one beside this Python first, else on PATH) so that group_vars and
constructed groups apply as in a run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from testbed_agent import clouds, workloads
from testbed_agent.faas_drivers.cli import print_cost
from testbed_agent.faas_drivers.pricing import load_pricing, plan_cost
from testbed_agent.plan import Benchmark, Plan, load_plan
from testbed_agent.plan_derive import add_derive_parser, add_set_argument, derived_plan
from testbed_agent.workloads import notebook
from testbed_agent.workloads.crypto.estimate import FILE_MBPS
from testbed_agent.workloads.notebook.aliases import dataset_origin
from testbed_shared.errors import TestbedError
from testbed_shared.groups import GROUPS
from testbed_shared.studies import Element, Manifest, manifest_for_plan

#: typical seconds of one execution of a type this agent does not know
UNKNOWN_TYPE_S = 60.0
#: the plan-level host variables the machine matrix shows (each cloud adds its own)
HOST_VARS = ("testbed_label", "testbed_disk_encryption")


@dataclass(frozen=True)
class Execution:
    """One run of one benchmark, as the runner will do it."""

    index: int
    benchmark: str
    type: str
    repetition: int
    params: dict[str, Any]
    wait_s: float
    timeout_s: float
    estimated_s: float
    adaptive: bool
    cells: dict[str, Any] | None = None


def repetition_range(bench: Benchmark) -> tuple[int, int]:
    """(min, max) runs of a benchmark: equal for a fixed count, a range when adaptive."""
    if bench.adaptive is None:
        return bench.repetitions, bench.repetitions
    return bench.adaptive.min, bench.adaptive.max


def estimate_s(bench: Benchmark) -> float:
    """Typical seconds of one execution (without the wait) by its workload type, capped by its
    timeout."""
    workload = workloads.get(bench.type)
    if workload is None:
        return min(UNKNOWN_TYPE_S, bench.timeout_s or UNKNOWN_TYPE_S)
    return min(workload.estimate_s(workload.parse(bench)), workload.timeout_s(bench))


def cell_matrix(bench: Benchmark) -> dict[str, Any] | None:
    """The cells one execution of ``bench`` runs (count and dimensions), for types that have them."""
    workload = workloads.get(bench.type)
    return None if workload is None else workload.cells(workload.parse(bench))


def expand(plan: Plan) -> list[Execution]:
    """The executions of a plan in run order (adaptive benchmarks up to their maximum)."""
    rows = []
    for b in plan.benchmarks:
        lo, hi = repetition_range(b)
        one = estimate_s(b)
        workload = workloads.get(b.type)
        timeout = workload.timeout_s(b) if workload else (b.timeout_s or one)
        cells = cell_matrix(b)
        for rep in range(hi):
            est = b.wait_s + one
            rows.append(
                Execution(
                    b.index, b.name, b.type, rep, dict(b.params), b.wait_s, timeout, est, rep >= lo, cells
                )
            )
    return rows


def totals(rows: list[Execution]) -> dict[str, Any]:
    """Executions and estimated seconds: fixed, and up to the adaptive maximum."""
    fixed = [r for r in rows if not r.adaptive]
    return {
        "executions": len(fixed),
        "executions_max": len(rows),
        "estimated_s": round(sum(r.estimated_s for r in fixed), 1),
        "estimated_max_s": round(sum(r.estimated_s for r in rows), 1),
    }


def guest_split(rows: list[Execution]) -> dict[int, float]:
    """Seconds (waits included) each guest of a ``guest_cpus`` plan spends: a guest runs only the
    crypto cells of its own vCPU count (S4's guests of 1, 2 and 4 vCPUs); empty for other plans."""
    split: dict[int, float] = {}
    for r in rows:
        for n in (r.cells or {}).get("guest_cpus") or []:
            split[n] = split.get(n, 0.0) + r.estimated_s + r.wait_s
    return {n: round(split[n], 1) for n in sorted(split)}


def human(seconds: float) -> str:
    """``1h 05m``, ``12m 30s``, ``45s``."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s}s"


# -- machines --------------------------------------------------------------------------------


def machines(inventories: list[Path]) -> list[dict[str, Any]]:
    """The machine matrix of the inventories, resolved by ``ansible-inventory``."""
    tool = ansible_inventory()
    if tool is None:
        raise TestbedError("ansible-inventory not found", hint="activate the project venv (make install)")
    missing = [str(inv) for inv in inventories if not Path(inv).exists()]
    if missing:  # ansible-inventory only warns and lists nothing: say which path is wrong
        raise TestbedError(
            f"inventory {', '.join(missing)}: no such file or directory",
            hint="give the inventory's path, e.g. -i inventory/azure.yml -i inventory/azure.constructed.yml",
        )
    cmd = [tool, "--list"]
    for inv in inventories:
        cmd += ["-i", str(inv)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)  # noqa: S603 - ansible-inventory on the controller, bounded, before any run
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise TestbedError(f"ansible-inventory failed on {', '.join(map(str, inventories))}: {tail[:300]}")
    found = _matrix(json.loads(proc.stdout))
    if not found:
        raise TestbedError(
            f"inventory {', '.join(map(str, inventories))}: no hosts in it (or Ansible could not parse it)",
            hint="ansible-inventory --graph -i INV shows what Ansible reads from it",
        )
    return found


def ansible_inventory() -> str | None:
    """``ansible-inventory`` beside this Python (the venv's, activated or not), else on PATH."""
    beside = Path(sys.executable).parent / "ansible-inventory"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("ansible-inventory")


def _matrix(inv: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per host: its groups, label, its cloud's machine variables (over the defaults of
    the role that makes that cloud's machines), vCPUs and memory where the size name says."""
    hostvars = inv.get("_meta", {}).get("hostvars", {})
    groups: dict[str, list[str]] = {}
    for group in GROUPS:
        for host in inv.get(group, {}).get("hosts", []):
            groups.setdefault(host, []).append(group)
    columns = (*HOST_VARS, *clouds.all_machine_vars())
    rows = []
    for host in sorted(hostvars):
        hv = hostvars[host]
        cloud = clouds.of_host(hv)
        row = {"host": host, "groups": groups.get(host, []), "cloud": cloud.name if cloud else None}
        row.update({k: hv.get(k) for k in columns})
        row.update(dict.fromkeys(("size", "vcpus", "memory_gib", "os_disk", "security", "encryption")))
        if cloud is not None:
            row.update(cloud.machine(hv))
        rows.append(row)
    return rows


# -- output ----------------------------------------------------------------------------------


def show(args: argparse.Namespace) -> int:
    """The ``plan show`` command."""
    plan = derived_plan(args.plan, args.set) if args.set else load_plan(args.plan)
    rows = expand(plan)
    total = totals(rows)
    matrix = machines(args.inventory) if args.inventory else []
    if args.json:
        for r in rows:
            row = asdict(r)
            if row["cells"] is None:
                del row["cells"]
            print(json.dumps(row, sort_keys=True))
        for m in matrix:
            print(json.dumps({"machine": m}, sort_keys=True))
        for row in notebook_datasets(plan):
            print(json.dumps({"dataset": row}, sort_keys=True))
        summary = {"plan": plan.name, "sha256": plan.sha256, "machines": len(matrix), **total}
        if guest_split(rows):
            summary["guest_estimated_s"] = {str(n): v for n, v in guest_split(rows).items()}
        for platform, cost in _faas_cost(plan).items():
            print(json.dumps({"faas_cost": {"platform": platform, **cost}}, sort_keys=True))
        study = study_of(args.plan)
        if study is not None:
            summary["study"] = {"id": study.id, "fidelity": study.counts()}
            for d in study.deviations():
                print(json.dumps({"deviation": _deviation(d)}, sort_keys=True))
        print(json.dumps({"summary": summary}))
        return 0
    _print_table(plan, rows, total)
    faas = _faas_cost(plan)
    if faas:
        print("\nOn real FaaS platforms (each benchmark on the platform its profile models):")
        print_cost(plan.name, faas, load_pricing())
    _print_datasets(plan)
    if matrix:
        _print_machines(matrix, total)
    study = study_of(args.plan)
    if study is not None:
        _print_deviations(study)
    return 0


def _faas_cost(plan: Plan) -> dict[str, Any]:
    """A real run's invocations, GB-seconds and price per platform (faas_drivers.pricing)."""
    if not any(b.type == "faas" for b in plan.benchmarks):
        return {}
    return plan_cost(plan.benchmarks)


def notebook_datasets(plan: Plan) -> list[dict[str, Any]]:
    """Each notebook benchmark's data sets: generator and where the files come from here."""
    return [
        {"index": b.index, "benchmark": b.name, **dataset_origin(name)}
        for b in plan.benchmarks
        if b.type == "kaggle_notebook"
        for name in notebook.notebook_datasets(b, notebook.locate(b.name))
    ]


def _print_datasets(plan: Plan) -> None:
    rows = notebook_datasets(plan)
    if not rows:
        return
    print()
    _print_columns(
        ("#", "notebook", "data set", "generator", "files here"),
        [(str(r["index"]), r["benchmark"], r["dataset"], r["generator"], r["source"]) for r in rows],
    )
    print("(real files: kaggle_notebooks/datasets/real/<generator>/, with the names docs/notebooks.md lists)")


def study_of(plan_path: Path) -> Manifest | None:
    """The fidelity manifest of the study whose plan this is (a derived plan: of its source)."""
    source = derived_source(plan_path)
    return manifest_for_plan(source or plan_path)


def derived_source(plan_path: Path) -> Path | None:
    """The source plan named in a derived plan's header, if ``plan_path`` is one."""
    try:
        with open(plan_path, encoding="utf-8", errors="replace") as fh:
            first = fh.readline()
    except OSError:
        return None
    m = re.match(r"# Derived from (\S+) \(sha256 ", first)
    return Path(m.group(1)) if m else None


def _deviation(d: Element) -> dict[str, Any]:
    return {"id": d.id, "what": d.what, "source": d.source, "status": d.status, "reason": d.reason}


def _print_deviations(study: Manifest) -> None:
    counts = study.counts()
    print()
    print(
        f"study {study.id} ({study.title}): {counts['exact']} exact, {counts['adapted']} adapted, "
        f"{counts['not here']} not here (workloads/studies/{study.path.parent.name}/manifest.yml)"
    )
    dev = study.deviations()
    if dev:
        _print_columns(
            ("status", "element", "source", "reason"),
            [(d.status, d.what, d.source, d.reason) for d in dev],
        )


def _print_table(plan: Plan, rows: list[Execution], total: dict[str, Any]) -> None:
    head = ("#", "benchmark", "type", "rep", "wait_s", "est", "cells", "params")
    table = [
        (
            str(r.index),
            r.benchmark,
            r.type,
            f"{r.repetition + 1}{'*' if r.adaptive else ''}",
            f"{r.wait_s:g}",
            human(r.estimated_s),
            str(r.cells["count"]) if r.cells else "",
            json.dumps(r.params, sort_keys=True, separators=(",", ":")) if r.params else "",
        )
        for r in rows
    ]
    _print_columns(head, table)
    span = human(total["estimated_s"])
    for wtype in dict.fromkeys(r.type for r in rows):
        workload = workloads.get(wtype)
        if workload is not None and workload.estimate_note:
            print(f"({wtype}: {workload.estimate_note})")
    if any(r.type == "crypto" for r in rows):
        _print_files(rows)
    split = guest_split(rows)
    if split:
        each = ", ".join(f"{n} vCPU{'s' if n > 1 else ''} {human(v)}" for n, v in split.items())
        print(f"(guest_cpus: each guest runs only the cells of its vCPU count, waits included: {each})")
    if total["executions_max"] != total["executions"]:
        span += f" .. {human(total['estimated_max_s'])}"
        print("(* adaptive: runs only while the confidence interval is wider than its target)")
    print(
        f"plan {plan.name}: {len(plan.benchmarks)} benchmarks, {total['executions']} executions"
        + (f" (up to {total['executions_max']})" if total["executions_max"] != total["executions"] else "")
        + f", estimated {span} per machine"
    )


def _print_machines(matrix: list[dict[str, Any]], total: dict[str, Any]) -> None:
    head = ("host", "label", "groups", "size", "vCPUs", "memory", "os disk", "security", "encryption")
    table = [
        (
            m["host"],
            str(m["testbed_label"] or ""),
            ",".join(m["groups"]),
            str(m["size"] or ""),
            str(m["vcpus"] or ""),
            f"{m['memory_gib']} GiB" if m["memory_gib"] else "",
            str(m["os_disk"] or ""),
            str(m["security"] or ""),
            str(m["encryption"] or "-"),
        )
        for m in matrix
    ]
    print()
    _print_columns(head, table)
    each = human(total["estimated_s"])
    print(f"{len(matrix)} machines, each running the plan (estimated {each} each, in parallel)")


def _print_files(rows: list[Execution]) -> None:
    """What the streamed files of crypto benchmarks cost: made once per run and kept in its scratch
    directory (each kind and size once), plus the largest ciphertext a decryption makes beside them."""
    files = [r.cells["files"] for r in rows if r.cells and "files" in r.cells]
    if not files:
        return
    distinct = {(f["kind"], s) for f in files for s in f["sizes"]}
    scratch = sum(s for _, s in distinct) + max(f["ciphertext_bytes"] for f in files)
    largest = max(s for _, s in distinct)
    make = sum(s / (FILE_MBPS.get(k, 200) * 1e6) for k, s in distinct)
    gib = 1 << 30
    print(
        f"(crypto files: {len(distinct)} made once per run and streamed, the largest {largest / gib:.3g} "
        f"GiB; scratch: {scratch / gib:.3g} GiB with the largest ciphertext; made in about {human(make)})"
    )


def _print_columns(head: tuple[str, ...], table: list[tuple[str, ...]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in table)) if table else len(h) for i, h in enumerate(head)]
    for line in (head, *table):
        print("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())


def add_parser(sub: Any) -> None:
    """``plan show`` under the ``plan`` command (registered through cli.PLUGIN_COMMANDS)."""
    plan = sub.add_parser("plan", help="inspect a plan")
    plan_sub = plan.add_subparsers(dest="plan_command", metavar="SUBCOMMAND", required=True)
    p = plan_sub.add_parser("show", help="the expanded executions and an estimated duration")
    p.add_argument("plan", type=Path, help="plan file (.yml/.yaml or the classic text form)")
    p.add_argument("--json", action="store_true", help="JSON lines: one per execution, then a summary")
    p.add_argument(
        "--inventory",
        "-i",
        type=Path,
        action="append",
        default=[],
        help="also print this inventory's machine matrix (repeatable, as ansible -i)",
    )
    add_set_argument(p)
    p.set_defaults(func=show)
    add_derive_parser(plan_sub)
