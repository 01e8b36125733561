"""Result directories shaped like an S2 rerun (the six machines of Table 1), with known ratios."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

MACHINES = {
    # host: (label, groups, disk encryption, technology, true slowdown factor)
    "study-sev-enc-1": ("SEV-Encrypted", ["sev"], True, "sev-snp", 1.30),
    "study-sev-1": ("SEV-Non-Encrypted", ["sev"], False, "sev-snp", 1.20),
    "study-amd-base-1": ("AMD-Non-SEV", ["amd_baseline"], False, "none", 1.00),
    "study-tdx-enc-1": ("TDX-Encrypted", ["tdx"], True, "tdx", 1.00),
    "study-tdx-1": ("TDX-Non-Encrypted", ["tdx"], False, "tdx", 1.00),
    "study-intel-base-1": ("Intel-Non-TDX", ["intel_baseline"], False, "none", 1.33),
}
NOTEBOOKS = {
    "SimplePrime.ipynb": 5,
    "credit-fraud-dealing-with-imbalanced-datasets.ipynb": 1,
    "airline-delay-notebook.ipynb": 1,
    "energy-eda-segmentation-and-prediction.ipynb": 3,
}


def _metric(value: float, unit: str, better: str) -> dict:
    return {"value": float(value), "unit": unit, "better": better}


def _record(
    run_id: str, head: dict, bench: str, btype: str, index: int, rep: int, metrics: dict, samples: dict | None
) -> dict:
    return {
        "schema": 1,
        "run_id": run_id,
        **head,
        "plan_sha256": "0" * 64,
        "plan": "cc-datascience-study",
        "benchmark": bench,
        "type": btype,
        "index": index,
        "params": {},
        "repetition": rep,
        "started_at": "2026-01-01T00:00:00Z",
        "ended_at": "2026-01-01T00:00:01Z",
        "status": "ok",
        "error": None,
        "metrics": metrics,
        "samples": samples or {},
        "telemetry": {},
        "tool": {"name": "synth"},
        "artifacts": [],
    }


def write(root: Path, run_id: str = "s2-synth", seed: int = 3, sigma: float = 0.02) -> Path:
    """results/<run_id>/<host>.jsonl for fio, pyperformance and notebooks; values = base x factor x noise."""
    rng = np.random.default_rng(seed)
    out = root / run_id
    out.mkdir(parents=True, exist_ok=True)
    for host, (label, groups, enc, tech, factor) in MACHINES.items():
        lines: list[str] = []
        head = {"host": host, "label": label, "groups": groups}

        def rec(
            bench: str,
            btype: str,
            rep: int,
            metrics: dict,
            samples: dict | None = None,
            *,
            out=lines,
            head=head,
        ) -> None:
            out.append(json.dumps(_record(run_id, head, bench, btype, len(out), rep, metrics, samples)))

        def noisy(x: float) -> float:
            return x * float(np.exp(rng.normal(0, sigma)))

        for bs in ("4k", "64k", "1m"):
            for op in ("sequentialread", "sequentialwrite", "randomread", "randomwrite"):
                d = "read" if op.endswith("read") else "write"
                lat = 5e-4 * (7 if enc and d == "write" else 1)
                rec(
                    f"fio_{bs}_{op}",
                    "fio",
                    0,
                    {
                        f"{d}_bw_bytes": _metric(noisy(2e8), "B/s", "higher"),
                        f"{d}_iops": _metric(noisy(200), "1/s", "higher"),
                        f"{d}_clat_mean_s": _metric(noisy(lat), "s", "lower"),
                    },
                )
        values = {
            b: [noisy(base * factor) for _ in range(20)]
            for b, base in (("crypto_pyaes", 0.15), ("float", 0.137), ("raytrace", 0.69), ("regex_v8", 0.03))
        }
        rec(
            "pyperformance default",
            "pyperformance",
            0,
            {b: _metric(float(np.mean(v)), "s", "lower") for b, v in values.items()},
            {b: {"values": v} for b, v in values.items()},
        )
        for nb, reps in NOTEBOOKS.items():
            for r in range(reps):
                rec(nb, "kaggle_notebook", r, {"wall_s": _metric(noisy(10 * factor), "s", "lower")})
        (out / f"{host}.jsonl").write_text("\n".join(lines) + "\n")
        sysinfo = {
            "cpu": {"model": "synthetic"},
            "kernel": {"release": "6.8"},
            "hypervisor": {"vendor": "microsoft"},
            "cc": {
                "technology": tech,
                "evidence": [],
                "paravisor": True,
                "disk_encryption": {"active": enc, "source": "inventory"},
                "attestation": None,
            },
        }
        (out / f"{host}.sysinfo.json").write_text(json.dumps(sysinfo))
    return out
