"""Agent overhead, measured side by side in one run.

1. fio throughput through the agent vs the same fio job run bare, alternating agent/bare so drift
   hits both equally (target: ratio >= 0.97). Two series: the real disk (libaio, direct I/O, on
   the same kind of pre-laid-out file) and fio's null engine, which is CPU-bound and so shows any
   CPU the agent takes from the benchmark.
2. The agent's own CPU use while a benchmark runs, from its rusage (target: < 1% of one core).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
JOB = ROOT / "workloads" / "fio" / "fio_64k_read.fio"


def through_agent(tmpd: Path, i: int, engine: str, runtime: int, size: str) -> tuple[float, float]:
    """Bandwidth (B/s) of one agent run and the agent's CPU % over it."""
    plan = tmpd / f"plan-{engine}.yml"
    params = {"size": size, "runtime_s": runtime, "ramp_s": 1, "ioengine": engine, "iodepth": 16}
    plan.write_text(
        json.dumps(
            {"name": "bench", "benchmarks": [{"name": "fio_64k_read", "type": "fio", "params": params}]}
        )
    )
    out = tmpd / f"run-{engine}-{i}"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "testbed_agent",
            "run",
            str(plan),
            "--out",
            str(out),
            "--scratch",
            str(tmpd / "scratch"),
            "--node-exporter",
            "",
            "--host",
            "bench",
        ],
        check=True,
        capture_output=True,
    )
    rec = json.loads((out / "bench.jsonl").read_text().splitlines()[0])
    return rec["metrics"]["read_bw_bytes"]["value"], rec["telemetry"]["agent_cpu_percent"]


def bare(target: Path, engine: str, runtime: int, size: str) -> float:
    env = {
        **os.environ,
        "FIO_FILENAME": str(target),
        "FIO_SIZE": size,
        "FIO_IOENGINE": engine,
        "FIO_IODEPTH": "16",
        "FIO_RUNTIME": str(runtime),
        "FIO_RAMP": "1",
    }
    res = subprocess.run(
        ["fio", "--output-format=json", str(JOB)], env=env, check=True, capture_output=True, text=True
    )
    return json.loads(res.stdout[res.stdout.find("{") :])["jobs"][0]["read"]["bw_bytes"]


def series(tmpd: Path, engine: str, pairs: int, runtime: int, size: str) -> list[float]:
    target = tmpd / "bare.dat"
    if engine != "null" and not target.exists():
        subprocess.run(
            [
                "fio",
                "--name=layout",
                f"--filename={target}",
                f"--size={size}",
                "--rw=write",
                "--bs=1M",
                "--direct=1",
                "--end_fsync=1",
                "--output=/dev/null",
            ],
            check=True,
        )
    agent_bw, bare_bw, cpu = [], [], []
    for i in range(pairs):
        bw, pct = through_agent(tmpd, i, engine, runtime, size)
        agent_bw.append(bw)
        cpu.append(pct)
        bare_bw.append(bare(target, engine, runtime, size))
        print(
            f"  {engine} pair {i + 1}: agent {agent_bw[-1] / 1e6:10.1f} MB/s   "
            f"bare {bare_bw[-1] / 1e6:10.1f} MB/s",
            flush=True,
        )
    ratios = sorted(a / b for a, b in zip(agent_bw, bare_bw, strict=True))
    q1, _, q3 = statistics.quantiles(ratios, n=4) if len(ratios) >= 2 else (ratios[0], 0, ratios[0])
    print(
        f"  {engine}: ratio agent/bare, median of pairs {statistics.median(ratios):.3f} "
        f"(IQR {q1:.3f}-{q3:.3f}); ratio of medians "
        f"{statistics.median(agent_bw) / statistics.median(bare_bw):.3f}   target >= 0.97"
    )
    return cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=7, help="agent/bare pairs per series (default 7)")
    ap.add_argument("--runtime", type=int, default=4, help="seconds per fio run (default 4)")
    ap.add_argument("--size", default="256M", help="test file size (default 256M)")
    args = ap.parse_args()
    print(f"agent overhead: fio_64k_read, {args.pairs} alternating pairs of {args.runtime} s per series")
    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        cpu = series(Path(tmp), "libaio", args.pairs, args.runtime, args.size)
        cpu += series(Path(tmp), "null", args.pairs, args.runtime, args.size)
    print(
        f"  agent CPU while fio ran: mean {statistics.mean(cpu):.3f}% of one core, "
        f"max {max(cpu):.3f}%   target < 1%"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
