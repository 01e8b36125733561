"""Benchmark of the FaaS emulator itself: warm-call overhead, cold-start time, CPU-tier fidelity.

Starts `testbed-agent faas serve --profile aws-lambda` on 127.0.0.1 and measures
  - warm-call overhead: client round trip minus handler time (p50, p99; target p50 < 2 ms);
  - cold-start time: instance start (cgroup, /tmp mount, interpreter, function init), median;
  - CPU-tier fidelity: calcs time at 128 MB / time at 1769 MB vs the expected 1769/128 = 13.8.
Run: .venv/bin/python bench/faas_overhead.py [--warm-calls N] [--cold-calls N] [--work CALLS]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from testbed_services import launcher
from testbed_services.faas.client import FaasClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import against, median_interval, quantile_interval, ratio_of_samples


def quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))]


def start(tmp: Path, *extra: str) -> launcher.Service:
    """The emulator under test, started by the toolkit's launcher (as the faas workload does)."""
    return launcher.emulator(tmp / "url", tmp / "state", "--profile", "aws-lambda", *extra, log=tmp / "log")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--warm-calls", type=int, default=300, help="warm calls for the overhead (default 300)")
    ap.add_argument("--cold-calls", type=int, default=12, help="forced cold starts (default 12)")
    ap.add_argument(
        "--work",
        type=int,
        default=1500,
        help="calcs function_calls (x20 calculations) for the fidelity run (default 1500)",
    )
    args = ap.parse_args()
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
    overhead, rtts, inst_cpu = [], [], 0.0
    server0, client0 = proc_cpu_s(server_pid), time.process_time()
    for _ in range(args.warm_calls):
        status, body, rtt = c.invoke("noop", {"function_calls": 0})
        assert status == 200 and not body["inspector"]["new_instance"], body
        overhead.append(rtt - body["inspector"]["handler_s"])
        rtts.append(rtt)
        inst_cpu += body["inspector"]["cpu_user_s"] + body["inspector"]["cpu_system_s"]
    n = len(overhead)
    server_ms = (proc_cpu_s(server_pid) - server0) / n * 1e3
    client_ms = (time.process_time() - client0) / n * 1e3
    p50, lo50, hi50 = (1e3 * v for v in median_interval(overhead))
    p99, lo99, hi99 = (1e3 * v for v in quantile_interval(overhead, 0.99))
    load = os.getloadavg()[0]
    print(
        f"warm-call overhead (round trip - handler), n={n}: p50 {p50:.3f} ms [{lo50:.3f}, {hi50:.3f}] "
        f"-> {against(lo50, hi50, below=2.0)}   target: p50 below 2 ms (95% distribution-free intervals)"
    )
    print(f"  p99 {p99:.3f} ms [{lo99:.3f}, {hi99:.3f}]; round trip p50 {quantile(rtts, 0.5) * 1e3:.3f} ms")
    print(
        f"  CPU per warm call: emulator {server_ms:.3f} ms, instance {inst_cpu / n * 1e3:.3f} ms, "
        f"client {client_ms:.3f} ms (load-independent; wall times above at load average {load:.1f} "
        f"on {ncpu} CPUs)"
    )

    cold, init, cold_rtt = [], [], []
    for _ in range(args.cold_calls):
        c.cold("noop")
        status, body, rtt = c.invoke("noop", {"function_calls": 0})
        assert status == 200 and body["inspector"]["new_instance"], body
        cold.append(body["inspector"]["cold_start_s"])
        init.append(body["inspector"]["init_s"])
        cold_rtt.append(rtt)
    c50, clo, chi = (1e3 * v for v in median_interval(cold))
    print(
        f"cold start, n={len(cold)}: instance start median {c50:.1f} ms [{clo:.1f}, {chi:.1f}] "
        f"-> {against(clo, chi, below=1000.0)}   target: below 1 s (p90 {quantile(cold, 0.9) * 1e3:.1f} ms; "
        f"function init {statistics.median(init) * 1e3:.1f} ms; cold round trip median "
        f"{statistics.median(cold_rtt) * 1e3:.1f} ms)"
    )

    event = {"array_size": 20, "function_calls": args.work}
    times, samples = {}, {}
    for mb, n in ((1769, 5), (128, 3)):
        c.deploy(f"calcs{mb}", function="calcs", memory_mb=mb, timeout_s=600)
        c.invoke(f"calcs{mb}", {"function_calls": 0})
        runs = [c.invoke(f"calcs{mb}", event)[1]["inspector"] for _ in range(n)]
        samples[mb] = [r["handler_s"] for r in runs]
        times[mb] = statistics.median(samples[mb])
        cpu = statistics.median(r["cpu_user_s"] + r["cpu_system_s"] for r in runs)
        thr = statistics.median(r["cpu_throttled_s"] for r in runs)
        print(
            f"calcs {args.work * 20} calculations at {mb:>4} MB ({runs[0]['vcpus']:.3f} vCPU): "
            f"median {times[mb]:.3f} s wall, {cpu:.3f} s CPU, {thr:.3f} s throttled, "
            f"CPU share achieved {cpu / times[mb]:.3f} of {runs[0]['vcpus']:.3f} (n={n})"
        )
    expected = 1769 / 128
    r = ratio_of_samples(samples[128], samples[1769], "", 15.0, "lower")
    print(
        f"CPU-tier fidelity: time(128 MB) / time(1769 MB) = {r.ratio:.2f} [{r.lo:.2f}, {r.hi:.2f}] "
        f"(95% Welch interval on logs), expected {expected:.2f} "
        f"-> {against(r.lo / expected, r.hi / expected, within=(0.85, 1.15))}   target: within +-15%"
    )
    print(
        f"  on {ncpu} CPUs: the 1769 MB tier is 1 vCPU and needs a whole idle core for its 1.0 share; "
        f"this machine's {ncpu} cores are shared with other work, so a busy core lowers the 1769 MB speed "
        "and the ratio; tiers above 1 vCPU (>1769 MB) cannot get more than "
        f"{ncpu} CPUs here and are capped at that (vcpus_enforced)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
