"""Synthetic result directories with a known slowdown and seeded noise (test data and the scale bench)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from testbed_shared import records
from testbed_shared.atomic import write_atomically

#: (metric, unit, better, base value) of each synthetic benchmark
DEFAULT_METRICS = (("clat_mean_s", "s", "lower", 2.0e-4), ("bw_bytes", "B/s", "higher", 1.5e8))


@dataclass
class Machine:
    """One synthetic host: its label, groups, true slowdown factor and recorded cc state."""

    host: str
    label: str
    groups: list[str]
    factor: float = 1.0
    technology: str = "none"
    disk_encryption: bool = False
    cpu_model: str = "AMD EPYC 7763 64-Core Processor"
    extra_status: dict[int, str] = field(default_factory=dict)  # repetition -> non-ok status


def write_run(
    root: Path,
    run_id: str,
    machines: list[Machine],
    benchmarks: list[str],
    reps: int,
    seed: int = 1,
    sigma: float = 0.03,
    metrics: tuple[tuple[str, str, str, float], ...] = DEFAULT_METRICS,
) -> Path:
    """Write results/<run_id>/<host>.jsonl + sysinfo.json; values = base x factor x lognormal noise.
    The records are made by :func:`testbed_shared.records.make`, as the agent's are."""
    metrics_spec = metrics
    out = root / run_id
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for m in machines:
        noise = np.exp(rng.normal(0.0, sigma, size=(len(benchmarks), reps, len(metrics_spec))))
        lines = []
        for bi, bench in enumerate(benchmarks):
            for r in range(reps):
                status = m.extra_status.get(r, "ok")
                metrics = {}
                if status == "ok":
                    for k, (name, unit, better, base) in enumerate(metrics_spec):
                        cost = m.factor if better == "lower" else 1.0 / m.factor
                        metrics[name] = records.metric(float(base * cost * noise[bi, r, k]), unit, better)
                rec = records.make(
                    run_id=run_id,
                    host=m.host,
                    label=m.label,
                    groups=m.groups,
                    plan_sha256="0" * 64,
                    plan="synthetic",
                    benchmark=bench,
                    btype="synthetic",
                    index=bi,
                    repetition=r,
                    started_at="2026-01-01T00:00:00Z",
                    ended_at="2026-01-01T00:00:01Z",
                    status=status,
                    error=None if status == "ok" else f"synthetic {status}",
                    metrics=metrics,
                    tool={"name": "synth"},
                )
                lines.append(json.dumps(rec))
        write_atomically(out / f"{m.host}.jsonl", "\n".join(lines) + "\n", what="synthetic results")
        sysinfo = {
            "cpu": {"model": m.cpu_model},
            "kernel": {"release": "6.1.0-synthetic"},
            "hypervisor": {"vendor": "synthetic"},
            "cc": {
                "technology": m.technology,
                "evidence": [f"synthetic: {m.technology}"],
                "paravisor": False,
                "disk_encryption": m.disk_encryption,
                "attestation": None,
            },
        }
        write_atomically(out / f"{m.host}.sysinfo.json", json.dumps(sysinfo), what="synthetic results")
    return out
