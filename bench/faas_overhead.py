"""Benchmark of the FaaS emulator itself: warm-call overhead and cold-start time.

Starts `testbed-agent faas serve --profile aws-lambda` on 127.0.0.1 through the toolkit's launcher
and measures
  - warm-call overhead: client round trip minus handler time, p50 (target below 1 ms) and p99
    (below 3 ms), each with its distribution-free 95 % interval (order statistics);
  - cold-start time: instance start (cgroup, /tmp mount, interpreter, function init), median with
    its distribution-free interval (target below 100 ms).
Each figure is decided against its target: when an interval spans it, the bench measures again with
twice the calls (up to ``--cap-factor`` times the first size, within ``--budget-s``) and otherwise
says how many calls would decide. The CPU tiers are bench/faas_tier_fidelity.py's.
Run: .venv/bin/python bench/faas_overhead.py [--warm-calls N] [--cold-calls N]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from testbed_services import launcher
from testbed_services.faas.client import FaasClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import quantile_interval

#: (quantile, target in ms) of the warm-call overhead; the cold start's median target in ms
WARM_TARGETS = ((0.5, 1.0), (0.99, 3.0))
COLD_TARGET_MS = 100.0


def quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def start(tmp: Path, *extra: str) -> launcher.Service:
    """The emulator under test, started by the toolkit's launcher (as the faas workload does)."""
    return launcher.emulator(tmp / "url", tmp / "state", "--profile", "aws-lambda", *extra, log=tmp / "log")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warm-calls", type=int, default=400, help="warm calls first (default 400)")
    ap.add_argument("--cold-calls", type=int, default=16, help="forced cold starts first (default 16)")
    ap.add_argument("--cap-factor", type=int, default=8, help="calls at most, x the first size (default 8)")
    ap.add_argument("--budget-s", type=float, default=120, help="no more calls after this (default 120)")
    args = ap.parse_args()
    if args.warm_calls < 2 or args.cold_calls < 2:
        ap.error("--warm-calls and --cold-calls: at least 2")
    with tempfile.TemporaryDirectory(prefix="faas-bench-") as d:
        svc = start(Path(d))
        try:
            return run(FaasClient(svc.url, timeout_s=600), args, svc.proc.pid)
        finally:
            svc.stop(timeout_s=30)


def proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def decide(values: list[float], q: float, target_ms: float) -> tuple[float, float, float, str]:
    """The q-quantile in ms, its interval (an end order statistics cannot give is open: 0 or
    infinity) and the decision against "below ``target_ms``"."""
    est, lo, hi = (1e3 * v for v in quantile_interval(values, q))
    lo, hi = (0.0 if math.isnan(lo) else lo), (math.inf if math.isnan(hi) else hi)
    return est, lo, hi, ("met" if hi < target_ms else "not met" if lo > target_ms else "not shown")


def until_decided(
    sample: Callable[[int], list[float]],
    first: int,
    checks: list[tuple[float, float]],
    args: argparse.Namespace,
) -> tuple[list[float], str]:
    """Values from ``sample(n)``, doubling until every (quantile, target ms) is decided, the cap or the
    budget; and why it stopped."""
    start, values, n = time.monotonic(), sample(first), first
    while True:
        open_ = [(q, t) for q, t in checks if decide(values, q, t)[3] == "not shown"]
        if not open_:
            return values, f"decided after {len(values)} calls"
        if len(values) >= first * args.cap_factor:
            return values, f"not decided after {len(values)} calls (the cap)"
        if time.monotonic() - start > args.budget_s / 2:
            return values, f"not decided after {len(values)} calls (the time budget)"
        values += sample(n)
        n = len(values)


def verdict(values: list[float], q: float, target_ms: float, what: str) -> str:
    est, lo, hi, decision = decide(values, q, target_ms)
    tail = ""
    if decision == "not shown":
        # order-statistic intervals narrow as 1/sqrt(n): the calls that would put this one clear
        width, gap = (hi - lo) / 2, abs(est - target_ms)
        more = int(len(values) * (width / gap) ** 2) + 1 if gap > 0 and math.isfinite(width) else None
        tail = f"; about {more} calls would decide" if more else ""
    return f"{what} {est:.3f} ms [{lo:.3f}, {hi:.3f}] -> {decision}{tail}   target: below {target_ms:g} ms"


def run(c: FaasClient, args: argparse.Namespace, server_pid: int) -> int:
    info = c.info()
    ncpu = info["host_cpus"]
    limits = "enforced" if info["limits_enforced"] else "NOT enforced"
    print(
        f"FaaS emulator benchmark (profile aws-lambda, cgroup {info['cgroup']}, limits {limits}, "
        f"{ncpu} CPUs, {info['cpu_model']})"
    )
    for w in info["warnings"]:
        print(f"  WARNING: {w}")

    c.deploy("noop", function="calcs", memory_mb=1769, timeout_s=60)
    c.invoke("noop", {"function_calls": 0})
    rtts: list[float] = []
    inst_cpu = [0.0]
    server0, client0 = proc_cpu_s(server_pid), time.process_time()

    def warm(n: int) -> list[float]:
        out = []
        for _ in range(n):
            status, body, rtt = c.invoke("noop", {"function_calls": 0})
            assert status == 200 and not body["inspector"]["new_instance"], body
            out.append(rtt - body["inspector"]["handler_s"])
            rtts.append(rtt)
            inst_cpu[0] += body["inspector"]["cpu_user_s"] + body["inspector"]["cpu_system_s"]
        return out

    load0 = os.getloadavg()[0]
    overhead, why = until_decided(warm, args.warm_calls, list(WARM_TARGETS), args)
    n = len(overhead)
    server_ms = (proc_cpu_s(server_pid) - server0) / n * 1e3
    client_ms = (time.process_time() - client0) / n * 1e3
    print(f"warm-call overhead (round trip - handler), {why}; 95 % distribution-free intervals:")
    for q, target in WARM_TARGETS:
        print("  " + verdict(overhead, q, target, f"p{round(q * 100)}"))
    print(
        f"  round trip p50 {quantile(rtts, 0.5) * 1e3:.3f} ms; CPU per warm call: emulator "
        f"{server_ms:.3f} ms, "
        f"instance {inst_cpu[0] / n * 1e3:.3f} ms, client {client_ms:.3f} ms (load-independent; load "
        f"average {load0:.2f} -> {os.getloadavg()[0]:.2f} on {ncpu} CPUs)"
    )

    init: list[float] = []
    cold_rtt: list[float] = []

    def cold(n: int) -> list[float]:
        out = []
        for _ in range(n):
            c.cold("noop")
            status, body, rtt = c.invoke("noop", {"function_calls": 0})
            assert status == 200 and body["inspector"]["new_instance"], body
            out.append(body["inspector"]["cold_start_s"])
            init.append(body["inspector"]["init_s"])
            cold_rtt.append(rtt)
        return out

    load0 = os.getloadavg()[0]
    starts, why = until_decided(cold, args.cold_calls, [(0.5, COLD_TARGET_MS)], args)
    print(f"cold start (instance start: cgroup, /tmp, interpreter, function init), {why}:")
    print("  " + verdict(starts, 0.5, COLD_TARGET_MS, "median"))
    print(
        f"  p90 {quantile(starts, 0.9) * 1e3:.1f} ms; function init {statistics.median(init) * 1e3:.1f} ms; "
        f"cold round trip median {statistics.median(cold_rtt) * 1e3:.1f} ms; load average {load0:.2f} -> "
        f"{os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
