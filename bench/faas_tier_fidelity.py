"""CPU-tier fidelity of the FaaS emulator, one call at a time (uncontended: no other call runs, and
the emulator is started with ``--cpu-boost`` so the machine's other work does not take the tier's
CPU), from the handler times and the instance cgroup's CPU throttling statistics.

Every AWS-Lambda-like tier (128, 512, 1024, 1769 MB: 0.072-1.0 vCPU) gets the calcs function,
deployed and warmed up (a cold call and a call with the work, neither counted). A throttled tier's
calls then get the smallest whole multiple of the work that makes a call as long as the warm-up
span ``--min-periods`` CFS periods (default 50): an idle instance starts a call with the period's
whole quota, which a call of a few periods shows as a share above its tier's (2026-11-30: +6 to
+7.5 % at 1024 and 512 MB with calls of 7.5 and 15 periods, +0.3 to +1.8 % with 27-230). Then
``--runs`` rounds call each tier once, in a seeded random order. This VM's vCPU has fast and slow stretches
(bench/throttle_speed.py), so the tiers are interleaved and the speed ratio is taken round by
round, paired (until 2026-11-30 each tier ran all its calls in turn and the ratio compared the
tiers' samples, Welch). Measures of the CPU share a tier got, each compared with the profile's
vCPU figure:
  - wall share = CPU time / handler wall time (what the function experiences; other work on the
    machine lowers it);
  - quota share = CPU time / (CPU time + throttled time) from the cgroup's cpu.stat (what the
    CFS quota enforced; independent of other work competing for the core).
  - period share = CPU time / (CFS periods the cgroup was active x period): the CPU granted per
    enforcement period (cpu.stat nr_periods).
CPU time is the scheduler's exact figure (cpuacct.usage / usage_usec), not the tick-sampled
user/system split, which reads 30-40 % high for a task throttled at 0.07 vCPU. The speed ratio
1769/128 MB is the geometric mean of the rounds' ratios of handler time per unit of work, with a t
interval on their logs. Targets (issue 38): each share and the speed ratio
within +-5 % of the profile, each decided by its 95 % interval lying inside the band (the rule's
error rates: tests/test_bench_scripts.py). The bench splits the speed ratio into the wall-share
ratio (the emulator's enforcement, decided against the same +-5 %) and the ratio of CPU seconds the
same call took in each tier: on 2026-11-29 the shares' ratio was within 2 % of the profile while
the CPU per call was 0.53-0.62 s at 1769 MB (0.62 in a run before the uncounted warm-up call with
the work was added, 0.53 in one after it) and 0.59-0.60 s in the throttled tiers, which moves the
handler-time ratio to 13.2-15.2. Why a throttled call costs more CPU: bench/throttle_speed.py
(this VM's vCPU stays at its slow end while it halts between quota bursts).
Run: .venv/bin/python bench/faas_tier_fidelity.py [--runs N] [--work N] [--min-periods N] [--fill-idle-cpus]
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import against, geo_interval, paired_interval
from faas_overhead import start

from testbed_services.faas.client import FaasClient

TIERS = (1769, 1024, 512, 128)


def deploy(c: FaasClient, mb: int, work: int) -> tuple[str, dict[str, Any]]:
    """The calcs function at ``mb``, its cold start and a warm-up call with the work not counted:
    its name and the warm-up's inspector (handler time, vCPUs, CFS period)."""
    name = f"tier{mb}"
    c.deploy(name, function="calcs", memory_mb=mb, timeout_s=900, keep_alive_s=3600)
    c.invoke(name, {"function_calls": 0})
    status, body, _ = c.invoke(name, {"array_size": 20, "function_calls": work})
    assert status == 200, body
    return name, body["inspector"]


def tier_work(work: int, vcpus: float, warm_s: float, period_s: float, min_periods: int) -> int:
    """The work of a throttled tier's calls: ``work`` times the smallest whole factor that makes a
    call (as long as the warm-up's) span ``min_periods`` CFS periods; ``work`` when unthrottled."""
    if vcpus >= 1 or not period_s or warm_s <= 0 or min_periods <= 0:
        return work
    return work * max(1, math.ceil(min_periods * period_s / warm_s))


def call(c: FaasClient, name: str, work: int, out: dict[str, Any]) -> None:
    """One counted call: its handler and CPU time and the three shares into ``out``."""
    status, body, _ = c.invoke(name, {"array_size": 20, "function_calls": work})
    assert status == 200, body
    i = body["inspector"]
    cpu = i["cpu_user_s"] + i["cpu_system_s"]
    out["handler_s"].append(i["handler_s"])
    out["cpu_s"].append(cpu)
    out["wall"].append(cpu / i["handler_s"])
    out["quota"].append(cpu / (cpu + i["cpu_throttled_s"]))
    if i.get("cpu_periods"):
        out["period"].append(cpu / (i["cpu_periods"] * i["cpu_period_s"]))
    out["vcpus"] = i["vcpus_enforced"] or i["vcpus"]
    out["period_s"] = i.get("cpu_period_s") or 0.0


def measure(c: FaasClient, work: int, runs: int, seed: int, min_periods: int) -> dict[int, dict[str, Any]]:
    """Every tier deployed and warm, its work set so a throttled call spans ``min_periods`` CFS
    periods, then ``runs`` rounds of one call per tier in a seeded random order: a round's calls
    meet the same stretch of the machine's speed, so the speed ratio is taken round by round
    (paired, per unit of work), not tier after tier."""
    keys = ("wall", "quota", "period", "handler_s", "cpu_s")
    out: dict[int, dict[str, Any]] = {mb: {"vcpus": 0.0, **{k: [] for k in keys}} for mb in TIERS}
    names = {}
    for mb in TIERS:
        names[mb], warm = deploy(c, mb, work)
        vcpus = warm["vcpus_enforced"] or warm["vcpus"]
        period_s = warm.get("cpu_period_s") or 0.0
        out[mb]["work"] = tier_work(work, vcpus, warm["handler_s"], period_s, min_periods)
    order = random.Random(seed)
    for r in range(runs):
        tiers = list(TIERS)
        order.shuffle(tiers)
        for mb in tiers:
            call(c, names[mb], out[mb]["work"], out[mb])
        print(f"  [round {r + 1}/{runs}] {', '.join(f'{mb} MB' for mb in tiers)}", flush=True)
    for name in names.values():
        c.request("DELETE", f"/functions/{name}")
    return out


def per_work(r: dict[str, Any], key: str) -> list[float]:
    """A tier's ``key`` values (handler or CPU seconds) per unit of its calls' work."""
    return [v / r["work"] for v in r[key]]


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


#: a throttled call shorter than this many CFS periods gets a share measurably above its tier's
#: (2026-11-30: calls of 7.5 and 15 periods at 1024 and 512 MB read +6.0 to +7.5 %; at --work 120000,
#: 27-230 periods, every tier was within +0.3 to +1.8 % and met)
SHORT_CALL_PERIODS = 25
#: the periods a throttled tier's call spans by default (--min-periods): the work is scaled up to it
MIN_PERIODS = 50


def short_calls(results: dict[int, dict[str, Any]]) -> list[str]:
    """Lines naming the throttled tiers whose calls span few CFS periods, and why that shows."""
    short = []
    for mb, r in results.items():
        period, calls = r.get("period_s") or 0.0, r["handler_s"]
        if r["vcpus"] < 1 and period and calls and statistics.median(calls) / period < SHORT_CALL_PERIODS:
            short.append(f"{mb} MB {statistics.median(calls) / period:.1f}")
    if not short:
        return []
    return [
        f"  short calls (CFS periods per call: {', '.join(short)}): an idle instance starts a call with"
        " the period's whole quota at a random point of the period, about one period's quota more"
        " than its share over the call; shares of such calls read high. Calls of at least"
        f" {SHORT_CALL_PERIODS} periods (--min-periods, the default {MIN_PERIODS}) measure the tier itself."
    ]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=4, help="rounds, one call per tier each (default 4)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the tiers' order within rounds (default 1)")
    ap.add_argument(
        "--work", type=int, default=30000, help="calcs function_calls x 20 calculations (default 30000)"
    )
    ap.add_argument(
        "--min-periods",
        type=int,
        default=MIN_PERIODS,
        help=f"a throttled tier's calls get whole multiples of the work until a call spans this many"
        f" CFS periods (default {MIN_PERIODS}; 0: the same work in every tier)",
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
            results = measure(c, args.work, args.runs, args.seed, args.min_periods)
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
            f"{statistics.median(r['cpu_s']):.3f} CPU s, work x{r['work'] // args.work})"
        )
    for line in short_calls(results):
        print(line)
    expected = results[1769]["vcpus"] / results[128]["vcpus"]
    ratio, lo, hi = paired_interval(per_work(results[128], "handler_s"), per_work(results[1769], "handler_s"))
    print(
        f"speed ratio 1769/128 MB from the handler times per unit of work: {ratio:.2f} [{lo:.2f}, {hi:.2f}] "
        f"(95% t interval on the rounds' log ratios, {args.runs} rounds), expected {expected:.2f} "
        f"-> {in_band(lo, hi, expected)}   target: within +-5%"
    )
    # the handler-time ratio is the wall-share ratio times the CPU-per-call ratio: the first is the
    # emulator's enforcement, the second what the same work costs the CPU in each tier
    walls, wlo, whi = paired_interval(results[1769]["wall"], results[128]["wall"])
    enforced = in_band(wlo, whi, expected)
    off = (walls / expected - 1) * 100
    cpu_ratio, clo, chi = paired_interval(per_work(results[128], "cpu_s"), per_work(results[1769], "cpu_s"))
    small, full = (
        geo_interval(results[mb]["cpu_s"])[0] / results[mb]["work"] * args.work for mb in (128, 1769)
    )
    print(
        f"  = wall-share ratio {walls:.2f} [{wlo:.2f}, {whi:.2f}] ({off:+.1f}% from the "
        f"profile) -> {enforced} (the emulator's enforcement; target: within +-5%) "
        f"x CPU per call 128/1769 MB {cpu_ratio:.3f} [{clo:.3f}, {chi:.3f}] ({small:.3f} / {full:.3f} CPU s: "
        "what the same work costs the CPU in each tier)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
