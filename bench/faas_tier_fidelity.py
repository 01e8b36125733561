"""CPU-tier fidelity of the FaaS emulator, each tier measured alone (uncontended: nothing else
deployed, and the emulator started with ``--cpu-boost`` so the machine's other work does not take
the tier's CPU) and from the instance cgroup's CPU throttling statistics.

For each AWS-Lambda-like tier (128, 512, 1024, 1769 MB: 0.072-1.0 vCPU) the calcs function runs
``--runs`` times, one call at a time, nothing else deployed. Two measures of the CPU share the
tier got, each compared with the profile's vCPU figure:
  - wall share = CPU time / handler wall time (what the function experiences; other work on the
    machine lowers it);
  - quota share = CPU time / (CPU time + throttled time) from the cgroup's cpu.stat (what the
    CFS quota enforced; independent of other work competing for the core).
  - period share = CPU time / (CFS periods the cgroup was active x period): the CPU granted per
    enforcement period (cpu.stat nr_periods).
CPU time is the scheduler's exact figure (cpuacct.usage / usage_usec), not the tick-sampled
user/system split, which reads 30-40 % high for a task throttled at 0.07 vCPU. The speed ratio
1769/128 MB comes from the handler wall times. Targets (issue 38): each share and the speed ratio
within +-5 % of the profile, each decided by its 95 % interval lying inside the band (the rule's
error rates: tests/test_bench_scripts.py). The bench splits the speed ratio into the wall-share
ratio (the emulator's enforcement, decided against the same +-5 %) and the ratio of CPU seconds the
same call took in each tier: on 2026-11-29 the shares' ratio was within 2 % of the profile while
the CPU per call was 0.53-0.62 s at 1769 MB (0.62 in a run before the uncounted warm-up call with
the work was added, 0.53 in one after it) and 0.59-0.60 s in the throttled tiers, which moves the
handler-time ratio to 13.2-15.2. Why a throttled call costs more CPU: bench/throttle_speed.py
(this VM's vCPU stays at its slow end while it halts between quota bursts).
Run: .venv/bin/python bench/faas_tier_fidelity.py [--runs N] [--work N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import against, geo_interval, ratio_of_samples
from faas_overhead import start

from testbed_services.faas.client import FaasClient

TIERS = (1769, 1024, 512, 128)


def measure(c: FaasClient, mb: int, work: int, runs: int) -> dict[str, float]:
    name = f"tier{mb}"
    c.deploy(name, function="calcs", memory_mb=mb, timeout_s=900, keep_alive_s=600)
    c.invoke(name, {"function_calls": 0})  # cold start outside the measurement
    c.invoke(name, {"array_size": 20, "function_calls": work})  # a warm-up call with the work, not counted
    shares: dict[str, list[float]] = {"wall": [], "quota": [], "period": [], "handler_s": [], "cpu_s": []}
    vcpus = 0.0
    for _ in range(runs):
        status, body, _ = c.invoke(name, {"array_size": 20, "function_calls": work})
        assert status == 200, body
        i = body["inspector"]
        cpu = i["cpu_user_s"] + i["cpu_system_s"]
        shares["handler_s"].append(i["handler_s"])
        shares["cpu_s"].append(cpu)
        shares["wall"].append(cpu / i["handler_s"])
        shares["quota"].append(cpu / (cpu + i["cpu_throttled_s"]))
        if i.get("cpu_periods"):
            shares["period"].append(cpu / (i["cpu_periods"] * i["cpu_period_s"]))
        vcpus = i["vcpus_enforced"] or i["vcpus"]
    c.request("DELETE", f"/functions/{name}")
    return {"vcpus": vcpus, **shares}


#: the band every tier figure is decided against (issue 38): within +-5 % of the profile
BAND = (0.95, 1.05)


def in_band(lo: float, hi: float, expected: float) -> str:
    """The decision of an interval [lo, hi] against ``BAND`` around ``expected``."""
    return against(lo / expected, hi / expected, within=BAND)


def share(values: list[float], expected: float) -> tuple[str, str]:
    """ "0.071 [0.069, 0.073] (-1.2%)" and the decision against +-5 % of ``expected``."""
    if not values:
        return "—", "not shown (no data)"
    g, lo, hi = geo_interval(values)
    text = f"{g:.3f} [{lo:.3f}, {hi:.3f}] ({(g / expected - 1) * 100:+.1f}%)"
    return text, in_band(lo, hi, expected)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=4, help="calls per tier (default 4)")
    ap.add_argument(
        "--work", type=int, default=30000, help="calcs function_calls x 20 calculations (default 30000)"
    )
    ap.add_argument(
        "--fill-idle-cpus",
        action="store_true",
        help="start the emulator with --fill-idle-cpus (keeps a vCPU from halting between a "
        "throttled tier's quota bursts; see bench/throttle_speed.py)",
    )
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="faas-tiers-") as d:
        svc = start(Path(d), "--cpu-boost", *(["--fill-idle-cpus"] if args.fill_idle_cpus else []))
        try:
            c = FaasClient(svc.url, timeout_s=900)
            results = {mb: measure(c, mb, args.work, args.runs) for mb in TIERS}
        finally:
            svc.stop(timeout_s=30)
    print(f"load average before: {load0:.2f}, after: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    if args.fill_idle_cpus:
        print("emulator: --fill-idle-cpus (every CPU kept busy at the smallest weight)")
    print(f"each share: geometric mean of {args.runs} calls [95% t interval on logs]; target: within +-5%")
    for mb, r in results.items():
        v = r["vcpus"]
        quota, q_dec = share(r["quota"], v)
        wall, w_dec = share(r["wall"], v)
        period, _ = share(r["period"], v)
        print(
            f"{mb:>5} MB: {v:.3f} vCPU expected; quota share {quota} -> {q_dec}; "
            f"wall share {wall} -> {w_dec}; "
            f"period share {period} ({statistics.median(r['handler_s']):.2f} s per call, "
            f"{statistics.median(r['cpu_s']):.3f} CPU s)"
        )
    expected = results[1769]["vcpus"] / results[128]["vcpus"]
    ratio = ratio_of_samples(results[128]["handler_s"], results[1769]["handler_s"], "", 10.0, "lower")
    print(
        f"speed ratio 1769/128 MB from the handler times: {ratio.ratio:.2f} [{ratio.lo:.2f}, {ratio.hi:.2f}] "
        f"(95% Welch interval on logs), expected {expected:.2f} "
        f"-> {in_band(ratio.lo, ratio.hi, expected)}   target: within +-5%"
    )
    # the handler-time ratio is the wall-share ratio times the CPU-per-call ratio: the first is the
    # emulator's enforcement, the second what the same work costs the CPU in each tier
    walls = ratio_of_samples(results[1769]["wall"], results[128]["wall"], "", 5.0, "higher")
    enforced = in_band(walls.lo, walls.hi, expected)
    off = (walls.ratio / expected - 1) * 100
    small, full = (geo_interval(results[mb]["cpu_s"])[0] for mb in (128, 1769))
    cpu_ratio = small / full
    print(
        f"  = wall-share ratio {walls.ratio:.2f} [{walls.lo:.2f}, {walls.hi:.2f}] ({off:+.1f}% from the "
        f"profile) -> {enforced} (the emulator's enforcement; target: within +-5%) "
        f"x CPU per call 128/1769 MB {cpu_ratio:.3f} ({small:.3f} / {full:.3f} CPU s: what the same work "
        "costs the CPU in each tier)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
