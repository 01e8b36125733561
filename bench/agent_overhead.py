"""Agent overhead, measured side by side in one run.

1. fio throughput through the agent vs the same fio job run bare on the same pre-laid-out file,
   alternating agent/bare so drift hits both equally (target: ratio >= 0.97).
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=5, help="agent/bare pairs (default 5)")
    ap.add_argument("--runtime", type=int, default=5, help="seconds per fio run (default 5)")
    ap.add_argument("--size", default="256M", help="test file size (default 256M)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(dir="/var/tmp") as tmp:
        tmpd = Path(tmp)
        scratch = tmpd / "scratch"
        params = {
            "size": args.size,
            "runtime_s": args.runtime,
            "ramp_s": 1,
            "ioengine": "libaio",
            "iodepth": 16,
        }
        plan = tmpd / "plan.yml"
        plan.write_text(
            json.dumps(
                {"name": "bench", "benchmarks": [{"name": "fio_64k_read", "type": "fio", "params": params}]}
            )
        )
        agent_bw, bare_bw, agent_cpu = [], [], []
        for i in range(args.pairs):
            out = tmpd / f"run{i}"
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
                    str(scratch),
                    "--node-exporter",
                    "",
                    "--host",
                    "bench",
                ],
                check=True,
                capture_output=True,
            )
            rec = json.loads((out / "bench.jsonl").read_text().splitlines()[0])
            agent_bw.append(rec["metrics"]["read_bw_bytes"]["value"])
            agent_cpu.append(rec["telemetry"]["agent_cpu_percent"])
            # the agent removes its scratch at the end of a plan; keep a laid-out copy for bare fio
            target = tmpd / "bare.dat"
            if not target.exists():
                subprocess.run(
                    [
                        "fio",
                        "--name=layout",
                        f"--filename={target}",
                        f"--size={args.size}",
                        "--rw=write",
                        "--bs=1M",
                        "--direct=1",
                        "--end_fsync=1",
                        "--output=/dev/null",
                    ],
                    check=True,
                )
            env = {
                **os.environ,
                "FIO_FILENAME": str(target),
                "FIO_SIZE": args.size,
                "FIO_IOENGINE": "libaio",
                "FIO_IODEPTH": "16",
                "FIO_RUNTIME": str(args.runtime),
                "FIO_RAMP": "1",
            }
            bare = subprocess.run(
                ["fio", "--output-format=json", str(JOB)], env=env, check=True, capture_output=True, text=True
            )
            bare_bw.append(json.loads(bare.stdout[bare.stdout.find("{") :])["jobs"][0]["read"]["bw_bytes"])
            print(
                f"pair {i + 1}: agent {agent_bw[-1] / 1e6:8.1f} MB/s   bare {bare_bw[-1] / 1e6:8.1f} MB/s",
                flush=True,
            )
    ratio = statistics.median(agent_bw) / statistics.median(bare_bw)
    ratios = [a / b for a, b in zip(agent_bw, bare_bw, strict=True)]
    print(f"fio 64k read, {args.pairs} pairs of {args.runtime} s, libaio depth 16, direct I/O")
    print(
        f"  throughput ratio agent/bare (medians): {ratio:.3f}   "
        f"(pairwise min {min(ratios):.3f}, max {max(ratios):.3f}; target >= 0.97)"
    )
    print(
        f"  agent CPU while fio ran: mean {statistics.mean(agent_cpu):.2f}% of one core, "
        f"max {max(agent_cpu):.2f}% (target < 1%)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
