"""Agent overhead: does running fio through the agent change what fio measures? (target: within +-1 %)

fio through the agent against the same fio job run bare, in alternating pairs whose order is drawn
from a seeded generator (bench/agent_vs_bare.py). Two series: the real disk (libaio, direct I/O,
pre-laid-out files) and fio's null engine, which is CPU-bound and so shows any CPU the agent takes
from the benchmark. Each series runs until its decision is made or the cap:

- estimand: the geometric mean of the per-pair ratios agent/bare of read bandwidth; unit: the pair;
- interval: t on the per-pair log ratios, at level 1 - 0.05/L for the L planned looks (after 6, 10,
  14, 18 pairs and at the cap of 20), so stopping at the first decided look keeps the error rate at
  5 % (Bonferroni over the looks);
- decision (testbed_reports.inference.decide): "equivalent within +-1 %" when the interval lies
  inside +-1 %, "slower"/"faster" when it excludes 0, otherwise "not shown" with the pairs that took
  and how many more would resolve 1 % at the observed spread.

The agent's own CPU while fio runs (its rusage over the execution, % of one core; target < 1 %): mean
with its t interval over the agent arms (the shared core's), "met" when the whole interval is below 1 %.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_vs_bare import Arms, run_pairs
from benchlib import against, looks, mean_interval, paired_ratio

from testbed_reports.inference import ALPHA, units_needed

MARGIN = 1.0


def series(engine: str, args: argparse.Namespace) -> tuple[Arms, str]:
    plan = looks(args.first, args.cap, args.every)
    alpha = ALPHA / len(plan)
    arms = Arms(job="fio_64k_read", size=args.size, runtime_s=args.runtime, ioengine=engine, run_id="bench")

    def decided(a: Arms) -> bool:
        n = len(a.agent)
        if n not in plan:
            return False
        return paired_ratio(a.agent, a.bare, "", MARGIN, alpha).decision.decision != "inconclusive"

    with tempfile.TemporaryDirectory(dir="/var/tmp", prefix="agent-overhead-") as tmp:
        run_pairs(Path(tmp) / "results", arms, args.cap, args.seed, stop=decided)
    r = paired_ratio(arms.agent, arms.bare, f"{engine}: agent/bare read bandwidth", MARGIN, alpha)
    line = r.line("equivalent within +-1 %")
    if r.decision.decision == "inconclusive":
        sd = float(np.std(np.log(arms.agent) - np.log(arms.bare), ddof=1))
        more = units_needed(sd / math.sqrt(2), alpha, MARGIN)
        line += f"\n    not shown after {r.n} pairs (the cap); about {more} pairs would resolve +-1 %"
        line += f" at this spread (sd of a pair's log ratio {100 * sd:.1f} %)"
    else:
        at = ", ".join(map(str, plan))
        line += f"\n    decided after {r.n} pairs (looks at {at}; {r.level:.2%} interval per look)"
    return arms, line


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--first", type=int, default=6, help="pairs before the first look (default 6)")
    ap.add_argument("--every", type=int, default=4, help="pairs between looks (default 4)")
    ap.add_argument("--cap", type=int, default=20, help="pairs at most per series (default 20)")
    ap.add_argument("--runtime", type=int, default=3, help="seconds per fio run (default 3)")
    ap.add_argument("--size", default="256M", help="test file size (default 256M)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the arms' order (default 1)")
    ap.add_argument("--engines", default="libaio,null", help="series to run (default libaio,null)")
    args = ap.parse_args()
    if not 2 <= args.first <= args.cap:
        ap.error("--first must be between 2 and --cap")
    print(f"agent overhead: fio_64k_read, agent vs bare, up to {args.cap} pairs per series", flush=True)
    lines, cpu = [], []
    for engine in args.engines.split(","):
        arms, line = series(engine, args)
        lines.append(line)
        cpu += [c for c in arms.agent_cpu if math.isfinite(c)]
    for line in lines:
        print(line)
    if len(cpu) >= 2:
        mean, lo, hi = mean_interval(cpu)
        print(
            f"  agent CPU while fio ran: mean {mean:.3f} % of one core [{lo:.3f}, {hi:.3f}] "
            f"(95 % interval, {len(cpu)} executions) -> {against(lo, hi, below=1.0)}   target: below 1 %"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
