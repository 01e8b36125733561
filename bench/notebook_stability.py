"""SimplePrime through the agent's kaggle_notebook workload: run-to-run stability and overhead.

1. Run-to-run CV (sd / mean) of SimplePrime's time over N runs (default 5) through the workload
   class, as the runner executes it: fresh kernel, papermill parameters, nbclient timing
   (target: <= 2% on a quiet machine).
2. The agent's timing overhead: total wall time minus the sum of the cell times minus kernel
   start-up, as a fraction of the total (target: < 2%).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from testbed_agent.plan import Benchmark
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.notebook import NotebookWorkload
from testbed_reports.numerics import cv_ci

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import against, mean_interval


def cv(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.mean(values) if len(values) > 1 else 0.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5, help="executions (default 5)")
    ap.add_argument("--scale", default="standard", help="SimplePrime scale (default standard: 100000 primes)")
    args = ap.parse_args()

    bench = Benchmark(
        name="SimplePrime.ipynb", type="kaggle_notebook", index=0, line=0, params={"scale": args.scale}
    )
    NotebookWorkload.check(bench)
    rows = []
    with tempfile.TemporaryDirectory(prefix="nb-bench-") as tmp:
        for rep in range(args.runs):
            ctx = RunContext(
                bench=bench,
                repetition=rep,
                scratch=Path(tmp) / "scratch",
                artifacts=Path(tmp) / "artifacts",
                deadline=time.monotonic() + 900,
            )
            out = NotebookWorkload().run(ctx, NotebookWorkload.parse(ctx.bench))
            if out.status != "ok":
                print(f"run {rep}: {out.status}: {out.error}", file=sys.stderr)
                return 1
            m = {k: v["value"] for k, v in out.metrics.items()}
            rows.append(m)
            print(
                f"run {rep + 1}: wall {m['wall_s']:.3f} s = kernel start {m['kernel_startup_s']:.3f} s "
                f"+ cells {m['cells_s']:.3f} s + overhead {m['overhead_s'] * 1000:.1f} ms"
            )
    walls = [r["wall_s"] for r in rows]
    cells = [r["cells_s"] for r in rows]
    fractions = [r["overhead_s"] / r["wall_s"] for r in rows]
    load = os.getloadavg()[0]
    print(
        f"SimplePrime ({args.scale}) over {len(rows)} runs through the agent "
        f"(load average {load:.1f} on {os.cpu_count()} CPUs; CV needs a quiet machine):"
    )
    for what, values, target in (
        ("cell time (the notebook's work)", cells, 2.0),
        ("total wall time", walls, None),
    ):
        c = cv(values) * 100
        lo, hi = (float(x[0]) for x in cv_ci([c], [len(values)]))
        verdict = f" -> {against(lo, hi, below=target)}   target: at most {target:g} %" if target else ""
        print(f"  run-to-run CV of the {what}: {c:.2f} % [{lo:.2f}, {hi:.2f}] (Vangel 95 %){verdict}")
    m, lo, hi = (100 * x for x in mean_interval(fractions))
    print(
        f"  timing overhead (wall - cells - kernel start) / wall: mean {m:.2f} % [{lo:.2f}, {hi:.2f}] "
        f"(t 95 %) -> {against(lo, hi, below=2.0)}   target: below 2 %"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
