"""Why a throttled FaaS tier pays more CPU for the same call: the CPU's speed while its vCPU idles
between quota bursts. An experiment behind bench/faas_tier_fidelity.py's handler-time ratio (not
part of ``make bench``; root, cgroup v1 cpu and cpuacct).

The same fixed pure-Python work runs in a child process, everything pinned to one CPU, under four
conditions interleaved round by round:

- ``free``: no CPU quota;
- ``throttled``: the 128 MB tier's quota (7.2 ms of every 100 ms period), the CPU otherwise idle,
  so the vCPU halts about 93 ms of every 100;
- ``filled``: the same quota, with a filler process spinning on the CPU in a cgroup of its own with
  the smallest weight (cpu.shares 2), so the vCPU never halts but the work still gets its quota;
- ``free+filler``: no quota, with the filler (what the filler itself takes from the work).

The cgroups are the emulator's own: the work runs in an instance cgroup of
``testbed_services.faas.cgroups`` (its quota and its ``cpuacct.usage``), the filler is
``--fill-idle-cpus``' (``idle_fill``); ``free`` is a quota of every CPU of the machine, which a
process pinned to one CPU never reaches.

The CPU a run costs is its cgroup's ``cpuacct.usage`` (the scheduler's exact runtime). Estimand:
each condition's geometric mean CPU per run against ``free``'s, with a t interval on the per-round
log ratios (unit: the round). If the vCPU's halts are what makes a throttled call cost more,
``throttled`` is above 1 and ``filled`` is not.

Measured on this 2-CPU VM (2026-11-29, CPU 0, the other CPU busy with a pinned bench, 8 rounds
each; CPU s a run, the range over rounds, and the ratio to free):

- this script: free 1.23 (0.89-1.64); throttled x1.27 [1.04, 1.55] (1.45-1.63); filled x1.01
  [0.86, 1.19] (1.10-1.42); free+filler x0.96; **filled / throttled x0.80 [0.73, 0.87]**;
- this script without that last line: free 1.19 (0.93-1.56); throttled x1.40 [1.21, 1.63]
  (1.57-1.76); filled x1.15 [0.99, 1.34] (1.23-1.47); free+filler x1.04;
- a first run, filler in the root cgroup: free 1.35 (0.96-1.65); throttled x1.22 [1.19, 1.25]
  (1.59-1.71); filled x1.06 [0.98, 1.15]; free+filler x0.97.

This VM's vCPU runs some stretches up to 1.7 times faster than others. Throttled runs are always
at the slow end; with the vCPU kept busy by the filler, the same quota-limited work costs less in
every round. A vCPU that keeps halting does not get the fast stretches: the machine, not the
emulator's quota, which bench/faas_tier_fidelity.py finds within 2 % of the profile.

    python bench/throttle_speed.py [--cpu 0] [--rounds 8] [--loops 6000000]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchlib import paired_interval

from testbed_services.faas import cgroups, idle_fill

QUOTA_VCPUS = 0.072  # the 128 MB tier: 7.2 ms of every 100 ms period
MEMORY = 1 << 30
CONDITIONS = ("free", "throttled", "filled", "free+filler")


@contextlib.contextmanager
def work_group(backend: cgroups.Backend) -> Iterator[cgroups.InstanceCgroup]:
    """The work's cgroup, made and removed the way the emulator makes an instance's."""
    group = backend.create("work")
    try:
        yield group
    finally:
        group.kill()
        group.remove()
        backend.cleanup()


def run_once(loops: int, work: cgroups.InstanceCgroup, vcpus: float) -> float:
    """CPU seconds one run of the work cost in its cgroup under a quota of ``vcpus``."""
    work.set_limits(vcpus, MEMORY)
    before = work.stats(full=False)
    code = f"x = 0\nfor i in range({loops}):\n    x += i * i % 7\n"
    procs = work.procs_files()

    def enter() -> None:  # in the child, before it runs the work (inherits the CPU pin)
        for f in procs:
            Path(f).write_text(str(os.getpid()))

    subprocess.run([sys.executable, "-c", code], preexec_fn=enter, check=True)
    after = work.stats(full=False)
    return (after.cpu_user_s + after.cpu_system_s) - (before.cpu_user_s + before.cpu_system_s)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cpu", type=int, default=0, help="CPU every process runs on (default 0)")
    ap.add_argument("--rounds", type=int, default=8, help="rounds of the four conditions (default 8)")
    ap.add_argument("--loops", type=int, default=6_000_000, help="loop iterations of the work (default 6e6)")
    args = ap.parse_args()
    if args.rounds < 2:
        ap.error("--rounds must be at least 2")
    run_id = f"throttle-speed-{os.getpid()}"  # the emulator id its cgroups and the filler's are named by
    backend = cgroups.detect(run_id, prefer="v1")
    if not isinstance(backend, cgroups.V1Backend):
        raise SystemExit(
            f"throttle speed: needs root and cgroup v1 cpu/cpuacct ({backend.reason or backend.version})"
        )
    os.sched_setaffinity(0, {args.cpu})  # the work and the filler (one, on this CPU) inherit it
    # "free": a quota of every CPU of the machine, which a process pinned to one CPU never reaches
    free_vcpus = float(os.cpu_count() or 1)
    cost: dict[str, list[float]] = {k: [] for k in CONDITIONS}
    with work_group(backend) as work:
        for r in range(args.rounds):
            for k in CONDITIONS:
                filler = idle_fill.IdleFill(backend, run_id) if "fill" in k else None
                try:
                    cost[k].append(
                        run_once(
                            args.loops, work, QUOTA_VCPUS if k in ("throttled", "filled") else free_vcpus
                        )
                    )
                finally:
                    if filler is not None:
                        filler.stop()
                print(f"  round {r + 1}/{args.rounds} {k:<11} {cost[k][-1]:.3f} CPU s", flush=True)
    load = os.getloadavg()[0]
    print(f"throttle speed: {args.loops:,} loops on CPU {args.cpu}, {args.rounds} rounds, load {load:.2f}")
    for k in CONDITIONS:
        ratio, lo, hi = paired_interval(cost[k], cost["free"])
        spread = f"{min(cost[k]):.2f}-{max(cost[k]):.2f}"
        print(
            f"  {k:<11} {statistics.geometric_mean(cost[k]):.3f} CPU s a run ({spread}); "
            f"x{ratio:.3f} [{lo:.3f}, {hi:.3f}] of free (95 % t interval over rounds)"
        )
    ratio, lo, hi = paired_interval(cost["filled"], cost["throttled"])
    print(
        f"  filled / throttled: x{ratio:.3f} [{lo:.3f}, {hi:.3f}] (a throttled run without the vCPU's halts)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
