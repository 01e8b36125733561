"""How the report's cost grows with its data: collecting a run into the results store, then building
the report from it, for 10^6 and 10^7 observations (10^8 with --sizes).

The data: 8 labels (SEV/TDX/baselines, encrypted and plain) x 2 machines each, 10 benchmarks x 8
metrics, seeded lognormal noise; the number of repetitions sets the size. Each step runs in its own
process, so its peak RSS is its own: ``store add`` (JSON Lines through the record path into Parquet,
what the collect role does once per run; it loads and writes one host's file at a time, so its peak
is one of the 16 files, not the whole run) and ``build`` (the report end to end from the store:
Parquet read, statistics, HTML, CSV, stats.json; the observations a part of whole benchmarks at a
time, ``testbed_reports.parts``, so its peak is the records and one part), ``--repeats`` times each.
10^8 takes about 45 minutes on one CPU: 8 min to write the data, 17-27 to add it, 7 to build.
Targets (issue 36): a build of 10^7 observations in under 30 s and 1 GiB; 10^8 within 4 GiB.
The load average is printed beside each size: wall time on a shared machine includes waiting for
the CPUs (CPU time less so).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "reports" / "tests"))
from benchlib import Progress, against, geo_interval
from report_support.synth import Machine, write_run

#: issue 36's targets: 10^7 observations built in under 30 s within 1 GiB; 10^8 within 4 GiB
TARGETS = {10**7: (30.0, 1024.0), 10**8: (None, 4096.0)}

METRICS = tuple(
    (
        f"m{k}_{'lat' if k % 2 else 'bw'}",
        "s" if k % 2 else "B/s",
        "lower" if k % 2 else "higher",
        1e-4 * (k + 1) if k % 2 else 1e8 * (k + 1),
    )
    for k in range(8)
)
BENCHMARKS = [f"bench_{i:02d}" for i in range(10)]
LABELS = [
    ("SEV-Encrypted", "sev", "sev-snp", True, 1.06),
    ("SEV-Plain", "sev", "sev-snp", False, 1.03),
    ("AMD-Encrypted", "amd_baseline", "none", True, 1.02),
    ("AMD-Plain", "amd_baseline", "none", False, 1.0),
    ("TDX-Encrypted", "tdx", "tdx", True, 1.05),
    ("TDX-Plain", "tdx", "tdx", False, 1.02),
    ("Intel-Encrypted", "intel_baseline", "none", True, 1.02),
    ("Intel-Plain", "intel_baseline", "none", False, 1.0),
]

# peak memory: the larger of the process and its workers (the loader parses large runs in workers)
CHILD = """
import json, resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
if sys.argv[1] == "add":
    from testbed_reports.store import Store
    Store(Path(sys.argv[3])).add(Path(sys.argv[2]))
    extra = {}
else:
    from testbed_reports.build import build
    rep = build([Path(sys.argv[2])], Path(sys.argv[4]), store=Path(sys.argv[3]))
    extra = {"comparisons": len(rep.comparisons), "parts": rep.parts}
dt = time.perf_counter() - t0
me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": dt, "cpu": me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime,
                  "peak_mib": max(me.ru_maxrss, kids.ru_maxrss) / 1024, **extra}))
"""


def machines() -> list[Machine]:
    out = []
    for label, group, tech, enc, factor in LABELS:
        cpu = "AMD EPYC 7763" if group in ("sev", "amd_baseline") else "Intel Xeon Platinum 8370C"
        for h in range(2):
            out.append(Machine(f"{label.lower()}-{h}", label, [group], factor, tech, enc, cpu))
    return out


def _child(args: list[str], what: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run(size: int, tmp: Path, repeats: int) -> tuple[dict, list[dict], dict]:
    """The data set of about ``size`` observations: its store add and ``repeats`` builds."""
    ms = machines()
    per_rep = len(ms) * len(BENCHMARKS) * len(METRICS)
    reps = max(2, round(size / per_rep))
    results = write_run(tmp / "results", f"scale{size}", ms, BENCHMARKS, reps, seed=size, metrics=METRICS)
    store = tmp / "results" / "_store"
    add = _child(["add", str(results), str(store)], f"store add of {size} observations")
    builds = [
        _child(
            ["build", str(results), str(store), str(tmp / f"out{size}-{k}")], f"build of {size} observations"
        )
        for k in range(repeats)
    ]
    info = {"observations": reps * per_rep, "records": reps * len(ms) * len(BENCHMARKS)}
    info["store_mib"] = sum(f.stat().st_size for f in store.rglob("*.parquet")) / 2**20
    info["jsonl_mib"] = sum(f.stat().st_size for f in results.glob("*.jsonl")) / 2**20
    return add, builds, info


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000000,10000000", help="comma-separated observation counts")
    parser.add_argument(
        "--repeats", type=int, default=3, help="builds per size (default 3: two leave a t interval on 1 df)"
    )
    args = parser.parse_args()
    print(
        f"report scale (one process per step; build: {args.repeats} per size, geometric mean "
        "[95% t interval on logs])"
    )
    sizes = [int(s) for s in args.sizes.split(",")]
    prog = Progress("report sizes", len(sizes))
    table = ["| observations | store add (s, CPU s, MiB) | build (s [95% CI], CPU s, MiB) | load average |"]
    table.append("|---|---|---|---|")
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="report-scale-") as tmp:
            load = os.getloadavg()[0]
            add, builds, info = run(size, Path(tmp), args.repeats)
            wall = geo_interval([x["seconds"] for x in builds])
            cpu = geo_interval([x["cpu"] for x in builds])
            peak = max(x["peak_mib"] for x in builds)
            line = (
                f"{info['observations']:>11,} observations ({info['records']:,} records, "
                f"{builds[0]['comparisons']} comparisons, read in {builds[0]['parts']} part(s); "
                f"JSON Lines {info['jsonl_mib']:.0f} MiB, store "
                f"{info['store_mib']:.0f} MiB), load average {load:.1f} on {os.cpu_count()} CPUs:\n"
                f"    store add {add['seconds']:.1f} s (CPU {add['cpu']:.1f} s, "
                f"peak {add['peak_mib']:.0f} MiB); build {wall[0]:.1f} s [{wall[1]:.1f}, {wall[2]:.1f}], "
                f"CPU {cpu[0]:.1f} s, peak {peak:.0f} MiB"
            )
            target = next((t for s, t in TARGETS.items() if abs(info["observations"] - s) < 0.01 * s), None)
            if target:
                secs, mib = target
                if secs is not None:
                    line += f"\n    -> build under {secs:g} s: {against(wall[1], wall[2], below=secs)}"
                met = "met" if peak < mib else "not met"
                line += f"\n    -> peak under {mib:g} MiB: {met} (the largest of the builds)"
            print(line, flush=True)
            table.append(
                f"| {info['observations']:,} | {add['seconds']:.0f}, {add['cpu']:.0f}, "
                f"{add['peak_mib']:.0f} | "
                f"{wall[0]:.1f} [{wall[1]:.1f}, {wall[2]:.1f}], {cpu[0]:.1f}, {peak:.0f} | {load:.1f} |"
            )
            shutil.rmtree(Path(tmp) / "results", ignore_errors=True)
        prog.step(f"{info['observations']} observations")
    print("\n".join(table))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
