"""SimplePrime through the agent's kaggle_notebook workload: run-to-run stability and overhead.

What runs is what the workload runs: kaggle_notebooks/SimplePrime.ipynb (the S2 paper's code: the
first 100,000 primes by trial division, then one ``print`` call each) executed with nbclient in a
fresh kernel per run, as the runner executes it (``NotebookWorkload.run``).

1. Run-to-run CV (sd / mean) of the cell time (the notebook's work, kernel timestamps of each cell)
   over the runs, against the target "at most 1 % on a quiet machine". Interval: Vangel's modified
   McKay interval at 95 % / L for the L planned looks (Bonferroni); decision: "met" when its upper
   end is at most 1 %, "not met" when its lower end is above, otherwise "not shown" with the runs
   that would decide at the CV seen. Runs continue to the next look until decided, the cap, or the
   time budget (``--budget-s``), and the bench says which. The target is a quiet machine's: when the
   other processes of the machine (not this bench's: :class:`benchlib.OthersCpu`) used more than
   ``--quiet-share`` (5 %) of its CPUs during the runs, the CV is printed without a verdict. The
   load average is printed too, but it counts the bench's own kernel and client.
2. The machine's floor: after each counted notebook run, the notebook's code cells once more in a
   fresh bare Python on the same CPU (no kernel, no agent; the prints go to /dev/null). Its CV is
   what this machine gives the same work without the toolkit. When even its interval lies above
   the target, the target cannot be reached on this machine and the bench says so, with the ratio
   of the two run-to-run spreads (notebook sd / floor sd, an F interval) as what the toolkit adds.
   ``--no-floor`` leaves it out.
3. The agent's timing overhead: total wall time minus the cell times minus kernel start-up, as a
   fraction of the total (target: below 2 %), mean with its t interval.

``--pin`` (default on machines with 2 or more CPUs) runs the kernel on the last CPU (a kernelspec of
the same ipykernel under ``taskset``) and this process, which receives the kernel's 100,000 lines
of output, on the others, so the two do not take turns on one CPU; ``--warmup`` runs that are not
counted come first (imports and the page cache). The load average is printed before and after
every run: a CV measured beside other work says little about the notebook.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.stats as sps

from testbed_agent.plan import Benchmark
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.notebook import NotebookWorkload
from testbed_reports.numerics import cv_ci

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import ALPHA, OthersCpu, Progress, against, looks, mean_interval

TARGET_CV = 1.0
PINNED_KERNEL = "python3-pinned"
NOTEBOOK = Path(__file__).resolve().parent.parent / "kaggle_notebooks" / "SimplePrime.ipynb"
#: the floor arm: the notebook's code cells in order (``scale`` set after the parameters cell) in
#: a bare interpreter; prints its own time in seconds on stderr
FLOOR_RUNNER = """
import json, sys, time
cells = json.load(open(sys.argv[1]))["cells"]
ns = {}
start = time.perf_counter()
for cell in cells:
    if cell["cell_type"] == "code":
        exec("".join(cell["source"]), ns)
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            ns["scale"] = sys.argv[2]
sys.stderr.write(f"{time.perf_counter() - start:.6f}\\n")
"""


def cv(values: list[float]) -> float:
    """Sample CV in percent."""
    return 100 * statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else math.nan


def cv_decision(values: list[float], target: float, alpha: float) -> tuple[float, float, float, str]:
    """(CV %, low, high, decision) of ``values`` against "CV at most ``target`` %"."""
    c = cv(values)
    lo, hi = (float(x[0]) for x in cv_ci([c], [len(values)], alpha))
    return c, lo, hi, against(lo, hi, below=target)


def cv_decisions(cvs: np.ndarray, n: int, target: float, alpha: float) -> list[str]:
    """:func:`cv_decision` of many CVs (percent) of ``n`` runs each, vectorised (the calibration)."""
    lo, hi = cv_ci(cvs, np.full(len(cvs), n), alpha)
    return [against(a, b, below=target) for a, b in zip(lo, hi, strict=True)]


def runs_needed(c: float, target: float, alpha: float, have: int) -> int | None:
    """Runs whose Vangel interval at this CV would lie on one side of ``target`` (None: never)."""
    if not math.isfinite(c) or abs(c - target) < 1e-9:
        return None
    for n in range(max(have, 3), 2000):
        lo, hi = (float(x[0]) for x in cv_ci([c], [n], alpha))
        if hi <= target or lo > target:
            return n
    return None


def pinned_kernelspec(root: Path, cpu: int) -> None:
    """A kernelspec ``python3-pinned``: this interpreter's ipykernel on CPU ``cpu`` (taskset)."""
    spec = root / "kernels" / PINNED_KERNEL
    spec.mkdir(parents=True)
    argv = ["taskset", "-c", str(cpu), sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    doc = {"argv": argv, "display_name": f"Python 3 on CPU {cpu}", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(doc))
    os.environ["JUPYTER_PATH"] = f"{root}{os.pathsep}{os.environ.get('JUPYTER_PATH', '')}".rstrip(os.pathsep)


def one_run(bench: Benchmark, tmp: Path, rep: int) -> dict[str, float]:
    ctx = RunContext(
        bench=bench,
        repetition=rep,
        scratch=tmp / "scratch",
        artifacts=tmp / "artifacts",
        deadline=time.monotonic() + 900,
    )
    out = NotebookWorkload().run(ctx, NotebookWorkload.parse(ctx.bench))
    if out.status != "ok":
        raise SystemExit(f"notebook-stability: run {rep}: {out.status}: {out.error}")
    shutil.rmtree(tmp / "scratch", ignore_errors=True)
    return {k: v["value"] for k, v in out.metrics.items()}


def floor_run(scale: str, cpu: int | None) -> float:
    """Seconds the notebook's code cells take in a fresh bare interpreter (on ``cpu`` if given)."""
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    done = subprocess.run(
        [*pin, sys.executable, "-c", FLOOR_RUNNER, str(NOTEBOOK), scale],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=900,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"notebook-stability: the floor run failed: {done.stderr.strip()[-300:]}")
    return float(done.stderr.split()[-1])


def measure(
    bench: Benchmark, tmp: Path, args: argparse.Namespace, plan: list[int], alpha: float
) -> tuple[list[dict[str, float]], list[float], str]:
    """Counted runs until a decision at a planned look, the cap or the budget: (rows, loads, why).
    Each row holds the notebook run's metrics, ``floor_s`` (with the floor arm) and ``others``
    (the other processes' share of the CPUs during the pair)."""
    start = time.monotonic()
    for w in range(args.warmup):
        m = one_run(bench, tmp, -1 - w)
        print(f"  warm-up: cells {m['cells_s']:.3f} s (not counted)", flush=True)
    rows: list[dict[str, float]] = []
    loads: list[float] = []
    prog = Progress("SimplePrime runs", args.cap)
    while len(rows) < args.cap:
        begun, load0, others = time.monotonic(), os.getloadavg()[0], OthersCpu()
        m = one_run(bench, tmp, len(rows))
        floor_note = ""
        if args.floor:
            m["floor_s"] = floor_run(args.scale, args.kernel_cpu)
            floor_note = f"; floor {m['floor_s']:.3f} s"
        m["others"] = others.share()
        rows.append(m)
        loads += [load0, os.getloadavg()[0]]
        prog.step(
            f"wall {m['wall_s']:.3f} s = kernel start {m['kernel_startup_s']:.3f} + cells "
            f"{m['cells_s']:.3f} + overhead {m['overhead_s'] * 1000:.1f} ms{floor_note}; "
            f"others {100 * m['others']:.1f} % of the CPUs, load {load0:.2f} -> {loads[-1]:.2f}"
        )
        quiet = max(r["others"] for r in rows) <= args.quiet_share
        decided = cv_decision([r["cells_s"] for r in rows], TARGET_CV, alpha)[3] in ("met", "not met")
        if len(rows) in plan and quiet and (decided or below_floor(floor_decision(rows, alpha))):
            return rows, loads, f"a decision at the look after run {len(rows)}"
        if len(rows) < args.cap and time.monotonic() - start + (time.monotonic() - begun) > args.budget_s:
            return rows, loads, f"the time budget ({args.budget_s:.0f} s) after run {len(rows)}"
    return rows, loads, "the cap"


def floor_times(rows: list[dict[str, float]]) -> list[float]:
    """The floor arm's times (the runs that had one)."""
    return [r["floor_s"] for r in rows if "floor_s" in r]


def floor_decision(rows: list[dict[str, float]], alpha: float) -> tuple[float, float, float, str] | None:
    """:func:`cv_decision` of the floor arm's times (None without two of them); "not met" there
    means the target lies below this machine's floor (unreachable here)."""
    floors = floor_times(rows)
    return cv_decision(floors, TARGET_CV, alpha) if len(floors) >= 2 else None


def below_floor(floor: tuple[float, float, float, str] | None) -> bool:
    """Whether a floor decision puts the target below this machine's floor."""
    return floor is not None and floor[3] == "not met"


def sd_ratio(a: list[float], b: list[float], alpha: float) -> tuple[float, float, float]:
    """sd(a) / sd(b) of two independent normal samples with its F interval at 1 - ``alpha``."""
    f = statistics.variance(a) / statistics.variance(b)
    d1, d2 = len(a) - 1, len(b) - 1
    lo = f / sps.f.ppf(1 - alpha / 2, d1, d2)
    hi = f / sps.f.ppf(alpha / 2, d1, d2)
    return math.sqrt(f), math.sqrt(lo), math.sqrt(hi)


def report(rows: list[dict[str, float]], alpha: float, busy: str) -> None:
    cells = [r["cells_s"] for r in rows]
    c, lo, hi, verdict = cv_decision(cells, TARGET_CV, alpha)
    floor = floor_decision(rows, alpha)
    tail = ""
    if busy:
        verdict = f"no verdict: {busy}"
    elif verdict != "met" and below_floor(floor):
        verdict = "not reachable on this machine (below its floor, next line)"
    elif verdict not in ("met", "not met"):
        more = runs_needed(c, TARGET_CV, alpha, len(rows))
        tail = f"; about {more} runs would decide at this CV" if more else ""
    print(
        f"  run-to-run CV of the cell time (the notebook's work, mean {statistics.mean(cells):.3f} s): "
        f"{c:.2f} % [{lo:.2f}, {hi:.2f}] (Vangel {1 - alpha:.2%}) -> {verdict}{tail}   "
        f"target: at most {TARGET_CV:g} % (quiet machine)"
    )
    if floor is not None:
        floors = floor_times(rows)
        fc, flo, fhi, fverdict = floor
        print(
            f"  the machine's floor: the same code cells in a bare Python on the same CPU, mean "
            f"{statistics.mean(floors):.3f} s: CV {fc:.2f} % [{flo:.2f}, {fhi:.2f}] -> {fverdict} "
            "against the same target"
        )
        r, rlo, rhi = sd_ratio(cells, floors, alpha)
        print(
            f"  what the toolkit adds: run-to-run sd, notebook / bare Python, {r:.2f} [{rlo:.2f}, {rhi:.2f}] "
            f"(F {1 - alpha:.2%}; 1 = no more spread than the machine's own)"
        )
    walls = [r["wall_s"] for r in rows]
    cw = cv(walls)
    wlo, whi = (float(x[0]) for x in cv_ci([cw], [len(walls)], alpha))
    print(
        f"  run-to-run CV of the total wall time (kernel start included): {cw:.2f} % [{wlo:.2f}, {whi:.2f}]"
    )
    fractions = [r["overhead_s"] / r["wall_s"] for r in rows]
    m, lo, hi = (100 * x for x in mean_interval(fractions))
    print(
        f"  timing overhead (wall - cells - kernel start) / wall: mean {m:.2f} % [{lo:.2f}, {hi:.2f}] "
        f"(t 95 %) -> {against(lo, hi, below=2.0)}   target: below 2 %"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--first", type=int, default=6, help="runs before the first look (default 6)")
    ap.add_argument("--every", type=int, default=4, help="runs between looks (default 4)")
    ap.add_argument("--cap", type=int, default=14, help="runs at most (default 14)")
    ap.add_argument("--budget-s", type=float, default=240, help="no new run after this (default 240)")
    ap.add_argument(
        "--quiet-share",
        type=float,
        default=0.05,
        help="a quiet machine: other processes use at most this share of its CPUs (default 0.05)",
    )
    ap.add_argument(
        "--no-floor", dest="floor", action="store_false", help="leave out the bare-Python floor runs"
    )
    ap.add_argument("--warmup", type=int, default=1, help="runs first, not counted (default 1)")
    ap.add_argument(
        "--scale", default="standard", help="SimplePrime scale (default standard: 100,000 primes)"
    )
    pin = ap.add_mutually_exclusive_group()
    pin.add_argument(
        "--pin", dest="pin", action="store_true", default=None, help="pin kernel and client apart"
    )
    pin.add_argument("--no-pin", dest="pin", action="store_false", help="leave placement to the scheduler")
    args = ap.parse_args()
    if not 2 <= args.first <= args.cap:
        ap.error("--first: between 2 and --cap (a CV needs two runs)")
    cpus = sorted(os.sched_getaffinity(0))
    pinned = (len(cpus) >= 2) if args.pin is None else args.pin
    if pinned and len(cpus) < 2:
        ap.error("--pin needs at least 2 CPUs")
    plan = looks(args.first, args.cap, args.every)
    alpha = ALPHA / len(plan)
    with tempfile.TemporaryDirectory(prefix="nb-bench-") as d:
        tmp = Path(d)
        kernel, where = "python3", "placement left to the scheduler"
        args.kernel_cpu = cpus[-1] if pinned else None
        if pinned:
            pinned_kernelspec(tmp / "jupyter", cpus[-1])
            os.sched_setaffinity(0, cpus[:-1])
            kernel, where = PINNED_KERNEL, f"kernel on CPU {cpus[-1]}, client on {cpus[:-1]}"
        params = {"scale": args.scale, "kernel": kernel}
        bench = Benchmark(name="SimplePrime.ipynb", type="kaggle_notebook", index=0, line=0, params=params)
        NotebookWorkload.check(bench)
        print(
            f"SimplePrime ({args.scale}) through the agent's notebook workload: {where}; {args.warmup} "
            f"warm-up run(s), looks after runs {', '.join(map(str, plan))} ({1 - alpha:.2%} CV "
            f"intervals), budget {args.budget_s:.0f} s",
            flush=True,
        )
        rows, loads, stop = measure(bench, tmp, args, plan, alpha)
    print(
        f"SimplePrime ({args.scale}), {len(rows)} runs ({where}), stopped at {stop}; load average "
        f"{min(loads):.2f}-{max(loads):.2f} on {os.cpu_count()} CPUs during the runs"
    )
    busy = ""
    others = max(r["others"] for r in rows)
    if others > args.quiet_share:
        busy = (
            f"other processes used up to {100 * others:.0f} % of the CPUs "
            f"(above {100 * args.quiet_share:g} %: not a quiet machine)"
        )
    report(rows, alpha, busy)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
