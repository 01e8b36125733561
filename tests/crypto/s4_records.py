"""Result directories shaped like an S4 rerun: crypto records of the paper's experiments on a
Hyper-V and a KVM guest of each core count, with a known Hyper-V slowdown."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

#: (alg, key, cores, bytes, payload) of each synthetic cell: Table 4's first rows, Table 6's, one 3DES
CELLS = [
    ("rsa-raw", 64, 1, 620544, "pdf"),
    ("rsa-raw", 1024, 1, 12493, "pdf"),
    ("rsa-raw", 1024, 2, 12493, "pdf"),
    ("aes-cbc", 128, 2, 2 << 30, "archive"),
    ("aes-cbc", 256, 4, 1 << 30, "archive"),
    ("3des-cbc", 192, 2, 10 << 20, "pdf"),
]


def write(root: Path, slowdown: float = 1.15, reps: int = 3, run_id: str = "s4-synth", seed: int = 5) -> Path:
    rng = np.random.default_rng(seed)
    out = root / run_id
    out.mkdir(parents=True, exist_ok=True)
    for hyp, factor in (("hyperv", slowdown), ("kvm", 1.0)):
        for cores in (1, 2, 4):
            host, lines = f"{hyp}-{cores}cpu", []
            for i, (alg, key, c, size, kind) in enumerate(CELLS):
                if c != cores:
                    continue
                for rep in range(reps):
                    cells, metrics = [], {}
                    for op in ("encrypt", "decrypt"):
                        name = f"python.{op}.cpu{c}"
                        t = size / 2e8 * factor * float(np.exp(rng.normal(0, 0.02)))
                        metrics[f"{name}.time_per_op"] = {"value": t, "unit": "s", "better": "lower"}
                        metrics[f"{name}.system_cpu_percent"] = {
                            "value": 50 * factor,
                            "unit": "%",
                            "better": "lower",
                        }
                        cells.append(
                            {
                                "cell": name,
                                "language": "python",
                                "op": op,
                                "key_bits": key,
                                "bytes": size,
                                "cpus": c,
                                "status": "ok",
                                "reason": None,
                            }
                        )
                    lines.append(
                        json.dumps(
                            {
                                "schema": 1,
                                "run_id": run_id,
                                "host": host,
                                "label": f"{hyp}-{cores}",
                                "groups": [hyp],
                                "plan_sha256": "0" * 64,
                                "plan": "crypto-hypervisor",
                                "benchmark": f"{alg}-{i}",
                                "type": "crypto",
                                "index": i,
                                "params": {"alg": alg, "payload": kind},
                                "repetition": rep,
                                "started_at": "2026-01-01T00:00:00Z",
                                "ended_at": "2026-01-01T00:00:01Z",
                                "status": "ok",
                                "error": None,
                                "metrics": metrics,
                                "samples": {"cells": cells},
                                "telemetry": {},
                                "tool": {"name": "testbed-crypto"},
                                "artifacts": [],
                            }
                        )
                    )
            if lines:
                (out / f"{host}.jsonl").write_text("\n".join(lines) + "\n")
    return out
