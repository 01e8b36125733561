"""``testbed-agent plan show PLAN [--json] [--inventory INV]...``: what a plan will run, and for
how long, before machines are paid for (issue 16 item 3).

Every execution (benchmark, type, params, repetition) is listed with an estimated duration: the
wait before it plus a typical duration of its type from its parameters (fio runtime and ramp, dd
bytes, notebook scale, pyperformance selection, FaaS calls and gaps, crypto cells from their bytes
and the measured cipher rates of :data:`CRYPTO_MBPS`), never more than its timeout. A crypto
execution also carries its cell matrix (``cells``: count and dimensions). A benchmark with
adaptive repetitions (``min``/``max``) lists its runs up to ``max``; the runs past ``min`` are
marked adaptive and the total is shown as a range. With ``--inventory``, the machine matrix of
that inventory (size, vCPUs, memory, OS disk, security type) is printed too, through
``ansible-inventory`` (the one beside this Python first, else on PATH) so that group_vars and
constructed groups apply as in a run.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from testbed_agent.plan import Benchmark, Plan, load_plan
from testbed_agent.plan_derive import add_derive_parser, add_set_argument, derived_plan
from testbed_shared.errors import TestbedError
from testbed_shared.studies import Element, Manifest, manifest_for_plan

#: typical seconds of one execution by type when its parameters say nothing more precise
TYPICAL_S = {"sysinfo": 5.0, "crypto": 60.0, "faas": 60.0, "pyperformance": 3600.0}
NOTEBOOK_S = {"quick": 30.0, "standard": 300.0, "large": 1800.0}
#: pyperformance seconds per benchmark by mode, and the size of its named groups
PYPERF_PER_BENCH_S = {"fast": 20.0, "debug-single-value": 5.0, "normal": 60.0, "rigorous": 180.0}
PYPERF_GROUPS = {"default": 60, "all": 90}
#: sequential write + read-back throughput assumed for dd and for fio's layout, B/s
DISK_BPS = 200e6
#: MB/s (10**6 B/s) of one CPU encrypting a streamed file, per algorithm and language: the
#: docs/crypto.md table "Streamed 64 MiB files" (development machine, 2 shared vCPUs under load,
#: so on the slow side). Algorithms without a row use AES-CBC's (GCM, CTR and HMAC are faster).
CRYPTO_MBPS = {
    "aes-cbc": {"python": 344, "go": 501, "rust": 556, "java": 303, "node": 448},
    "3des-cbc": {"python": 22, "go": 11, "rust": 5, "java": 6, "node": 13},
    "cast128-cbc": {"python": 51, "go": 48, "rust": 50, "java": 41, "node": 101},
    "blowfish-cbc": {"python": 112, "go": 99, "rust": 109, "java": 76, "node": 117},
    "twofish-cbc": {"python": 1, "go": 47, "rust": 1, "java": 65, "node": 42},
    "rsa-oaep": {"python": 759, "go": 2302, "rust": 677, "java": 42, "node": 454},
}
#: seconds of one operation besides its bytes: the RSA private-key unwrap (slowest language, about
#: 2x what the development machine measured) and an ECDSA signature
CRYPTO_OP_S = {2048: 0.003, 3072: 0.008, 4096: 0.02, "ecdsa": 0.002}
#: seconds to start one cell's process and check its vectors (about 2x the development machine's)
CRYPTO_START_S = {"python": 0.3, "go": 0.05, "rust": 0.05, "java": 1.5, "node": 0.3}
#: GiB of memory per vCPU of an Azure size family (D: general purpose, E: memory, F: compute)
MEMORY_PER_VCPU_GIB = {"D": 4, "E": 8, "F": 2}
#: the host variables the machine matrix shows, in order
MACHINE_VARS = (
    "testbed_label",
    "azure_vm_size",
    "azure_vm_os_disk_type",
    "azure_vm_os_disk_size_gb",
    "azure_vm_security_type",
    "azure_vm_security_encryption_type",
    "testbed_disk_encryption",
)
GROUPS = ("sev", "tdx", "amd_baseline", "intel_baseline", "kvm", "hyperv", "faas", "local")


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
    """Typical seconds of one execution (without the wait), capped by its timeout."""
    from testbed_agent.workloads import REGISTRY

    typical = _typical_s(bench)
    workload = REGISTRY.get(bench.type)
    timeout = workload.timeout_s(bench) if workload else (bench.timeout_s or typical)
    return min(typical, timeout)


def _typical_s(bench: Benchmark) -> float:
    from testbed_agent.params import parse_params

    p = parse_params(bench.type, bench.params)
    if bench.type == "fio":
        return p.runtime_s + p.ramp_s + 2 * p.size / DISK_BPS / 10 + 2
    if bench.type == "dd":
        return p.bs * p.count * (2 if p.read else 1) / DISK_BPS + p.pause_s + 1
    if bench.type == "kaggle_notebook":
        return NOTEBOOK_S[p.scale]
    if bench.type == "pyperformance":
        mode = "fast" if p.fast and p.mode == "normal" else p.mode
        count = sum(PYPERF_GROUPS.get(b, 1) for b in p.benchmarks)
        return count * PYPERF_PER_BENCH_S[mode]
    if bench.type == "faas":
        calls = p.calls * (2 if p.mode == "cold_warm" else 1) * (1 if p.mode != "cold" else 3)
        return 10.0 + calls * 0.5 + sum(p.gaps_s)
    if bench.type == "crypto" and (res := _crypto_resolved(bench)) is not None:
        return crypto_estimate_s(res)
    return TYPICAL_S.get(bench.type, 60.0)


# -- crypto cells ----------------------------------------------------------------------------


def _crypto_resolved(bench: Benchmark) -> dict[str, Any] | None:
    """The resolved parameters of a crypto benchmark with local cells (None for kms-envelope)."""
    from testbed_agent.workloads.crypto import resolve

    res = resolve(bench)
    return None if "key_bits" not in res else res


def crypto_cells(bench: Benchmark) -> dict[str, Any] | None:
    """The cell matrix of a crypto benchmark: its count and each dimension (None for other types)."""
    if bench.type != "crypto":
        return None
    from testbed_agent.workloads.crypto import resolve

    res = resolve(bench)
    if "key_bits" not in res:  # kms-envelope: languages x key-service keys
        keys = res["kms_keys"]
        count = len(res["languages"]) * len(keys)
        return {"count": count, "alg": res["alg"], "kms_keys": keys, "languages": res["languages"]}
    streamed = "file_sizes" in res
    sizes = res["file_sizes"] if streamed else res["payload_sizes"]
    dims = {
        "alg": res["alg"],
        "key_bits": res["key_bits"],
        "payload": res["payload"],
        "file_sizes" if streamed else "payload_bytes": sizes,
        "ops": res["ops"],
        "cpus": res["cpus"],
        "languages": res["languages"],
    }
    count = len(res["languages"]) * len(res["key_bits"]) * len(res["ops"]) * len(sizes)
    return {"count": count * max(1, len(res["cpus"])), **dims}


def crypto_estimate_s(res: dict[str, Any]) -> float:
    """Seconds of all cells of a resolved crypto benchmark: an estimate from bytes and rates.

    Per cell: process start, the steady-state warm-up (``warmup_s``, plus one operation it may
    overrun by) and every operation on the payload (cold, warm-up, timed and, for decryption, the
    ciphertext made before timing) at the algorithm's rate in that language. Cells run once per
    CPU count (cells over the machine's CPUs are skipped in a run: counted here all the same).
    """
    sizes = res.get("file_sizes") or res["payload_sizes"]
    total = sum(
        _cell_s(res, lang, bits, op, size)
        for lang, bits, op, size in itertools.product(res["languages"], res["key_bits"], res["ops"], sizes)
    )
    return total * max(1, len(res["cpus"]))


def _cell_s(res: dict[str, Any], lang: str, bits: int, op: str, size: int) -> float:
    alg = res["alg"]
    rate = CRYPTO_MBPS.get(alg, CRYPTO_MBPS["aes-cbc"])[lang] * 1e6
    extra = CRYPTO_OP_S["ecdsa"] if alg.startswith("ecdsa") else 0.0
    one = size / rate + (CRYPTO_OP_S.get(bits, 0.0) if alg == "rsa-oaep" else extra)
    ops = 1 + res["warmup"] + res["iterations"] + (op in ("decrypt", "verify"))
    warm = res["warmup_s"] + one if res["warmup_s"] else 0.0
    return CRYPTO_START_S[lang] + warm + ops * one


def expand(plan: Plan) -> list[Execution]:
    """The executions of a plan in run order (adaptive benchmarks up to their maximum)."""
    from testbed_agent.workloads import REGISTRY

    rows = []
    for b in plan.benchmarks:
        lo, hi = repetition_range(b)
        one = estimate_s(b)
        workload = REGISTRY.get(b.type)
        timeout = workload.timeout_s(b) if workload else (b.timeout_s or one)
        cells = crypto_cells(b)
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


def human(seconds: float) -> str:
    """``1h 05m``, ``12m 30s``, ``45s``."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s}s"


# -- machines --------------------------------------------------------------------------------


def azure_memory_gib(size: str, vcpus: int) -> int | None:
    """Memory of an Azure size from its family letter (Standard_DC2as_v5 -> D -> 4 GiB/vCPU)."""
    m = re.match(r"(?:Standard|Basic)_([A-Z])", size)
    per = MEMORY_PER_VCPU_GIB.get(m.group(1)) if m else None
    return per * vcpus if per else None


def azure_vcpus(size: str) -> int | None:
    """vCPUs from an Azure size name (Standard_DC4as_v5 -> 4; constrained E8-2as_v5 -> 2)."""
    m = re.match(r"^(?:Standard|Basic)_[A-Za-z]+?(\d+)(?:-(\d+))?[a-z]*(?:_v\d+)?$", size)
    return int(m.group(2) or m.group(1)) if m else None


def machines(inventories: list[Path]) -> list[dict[str, Any]]:
    """The machine matrix of the inventories, resolved by ``ansible-inventory``."""
    tool = ansible_inventory()
    if tool is None:
        raise TestbedError("ansible-inventory not found", hint="activate the project venv (make install)")
    cmd = [tool, "--list"]
    for inv in inventories:
        cmd += ["-i", str(inv)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise TestbedError(f"ansible-inventory failed on {', '.join(map(str, inventories))}: {tail[:300]}")
    return _matrix(json.loads(proc.stdout))


def ansible_inventory() -> str | None:
    """``ansible-inventory`` beside this Python (the venv's, activated or not), else on PATH."""
    beside = Path(sys.executable).parent / "ansible-inventory"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("ansible-inventory")


def role_defaults() -> dict[str, Any]:
    """Literal values of roles/azure_vm/defaults (what a host gets when its inventory is silent)."""
    import yaml

    path = Path(__file__).resolve().parents[2] / "roles" / "azure_vm" / "defaults" / "main.yml"
    if not path.is_file():
        return {}
    values = yaml.safe_load(path.read_text()) or {}
    return {k: v for k, v in values.items() if k in MACHINE_VARS and not (isinstance(v, str) and "{{" in v)}


def _matrix(inv: dict[str, Any]) -> list[dict[str, Any]]:
    hostvars = inv.get("_meta", {}).get("hostvars", {})
    defaults = role_defaults()
    groups: dict[str, list[str]] = {}
    for group in GROUPS:
        for host in inv.get(group, {}).get("hosts", []):
            groups.setdefault(host, []).append(group)
    rows = []
    for host in sorted(hostvars):
        hv = {**defaults, **hostvars[host]} if hostvars[host].get("azure_vm_size") else hostvars[host]
        row = {"host": host, "groups": groups.get(host, [])}
        row.update({k: hv.get(k) for k in MACHINE_VARS})
        size = str(hv.get("azure_vm_size") or "")
        row["vcpus"] = azure_vcpus(size)
        row["memory_gib"] = azure_memory_gib(size, row["vcpus"]) if row["vcpus"] else None
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
        study = study_of(args.plan)
        if study is not None:
            summary["study"] = {"id": study.id, "fidelity": study.counts()}
            for d in study.deviations():
                print(json.dumps({"deviation": _deviation(d)}, sort_keys=True))
        print(json.dumps({"summary": summary}))
        return 0
    _print_table(plan, rows, total)
    _print_datasets(plan)
    if matrix:
        _print_machines(matrix, total)
    study = study_of(args.plan)
    if study is not None:
        _print_deviations(study)
    return 0


def notebook_datasets(plan: Plan) -> list[dict[str, Any]]:
    """Each notebook benchmark's data sets: generator and where the files come from here."""
    from testbed_agent.workloads.nbaliases import dataset_source
    from testbed_agent.workloads.notebook import locate, notebook_datasets

    return [
        {"index": b.index, "benchmark": b.name, **dataset_source(name)}
        for b in plan.benchmarks
        if b.type == "kaggle_notebook"
        for name in notebook_datasets(b, locate(b.name))
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
    if any(r.type == "crypto" for r in rows):
        print("(crypto: estimated from file bytes and measured cipher rates, docs/crypto.md)")
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
            str(m["azure_vm_size"] or ""),
            str(m["vcpus"] or ""),
            f"{m['memory_gib']} GiB" if m["memory_gib"] else "",
            f"{m['azure_vm_os_disk_size_gb'] or ''} GB {m['azure_vm_os_disk_type'] or ''}".strip(),
            str(m["azure_vm_security_type"] or ""),
            str(m["azure_vm_security_encryption_type"] or "")
            if m["azure_vm_security_type"] == "ConfidentialVM"
            else "-",
        )
        for m in matrix
    ]
    print()
    _print_columns(head, table)
    each = human(total["estimated_s"])
    print(f"{len(matrix)} machines, each running the plan (estimated {each} each, in parallel)")


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
