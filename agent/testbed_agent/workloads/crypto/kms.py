"""``crypto`` with ``alg: kms-envelope``: key-service crypto through each language's AWS SDK.

One process per language x key (so each has its own cold first call); metric names are
``<language>.<key>.<call>_rtt`` (key-service round trip, warm median), ``..._rtt_first`` (the first
call of the process), ``<language>.<key>.local_encrypt`` / ``local_decrypt`` (AES-256-GCM on this
machine, apart from the round trips) and ``<language>.<key>.client_init``.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
from pathlib import Path
from typing import Any

from testbed_agent.results import Outcome, metric
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.crypto.params import CryptoParams
from testbed_agent.workloads.crypto.tiers import TierCells, run_tiered
from testbed_services import kms
from testbed_services.kms import KmsConfig
from testbed_shared.errors import WorkloadError


def _run_client(ctx: RunContext, argv: list[str], env: dict[str, str]) -> tuple[str, dict[str, Any]]:
    proc = ctx.exec(argv, env={**os.environ, **env}, check=False)
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (json.JSONDecodeError, IndexError):
        tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-1:] or ["no output"]
        return "failed", {"error": f"exit {proc.returncode}: {tail[0][:300]}"}
    if proc.returncode != 0 or "error" in out:
        return "failed", {"error": f"exit {proc.returncode}: {out.get('error', '?')}"}
    return "ok", out


def run_kms(ctx: RunContext, params: CryptoParams, root: Path, tiers: TierCells | None = None) -> Outcome:
    """Every language x key cell against the configured or embedded key service (each client in its
    tier's cgroup when ``tiers``; the key service itself outside). ``params.kms`` is set."""
    if params.kms is None:
        raise WorkloadError(f"{params.alg} is not a key-service benchmark")
    cfg, keys, warm_after = params.kms.config, list(params.kms.keys), params.kms.warm_after
    metrics: dict[str, Any] = {}
    samples: dict[str, Any] = {"cells": []}
    versions: dict[str, str] = {}
    failures: list[str] = []
    size = params.payload_bytes[0]
    with kms.key_service(cfg, keys, tracker=ctx.tracker) as (url, key_ids, where):
        for lang in params.languages:
            cmd = client_command(lang, root)
            for name in keys:
                spec, usage = kms.KEYS[name]
                cell = {
                    "cell": f"{lang}.{name}",
                    "language": lang,
                    "key": name,
                    "key_spec": spec,
                    "usage": usage,
                }
                reason = cmd if isinstance(cmd, str) else None
                if reason is None and name not in key_ids:
                    reason = f"no key id configured for {name}"
                if reason is not None or isinstance(cmd, str):
                    samples["cells"].append({**cell, "status": "skipped", "reason": reason})
                    continue
                argv = [*cmd[0], "run", "--key-id", key_ids[name], "--key-spec", spec, "--usage", usage]
                argv += [
                    "--region",
                    cfg.region,
                    "--iterations",
                    str(params.iterations),
                    "--payload-bytes",
                    str(size),
                ]
                if url:
                    argv += ["--endpoint", url]
                env = {**cmd[1], **client_env(cfg)}
                status, out, cg_metrics = run_tiered(
                    tiers, cell["cell"], argv, lambda a, env=env: _run_client(ctx, a, env)
                )
                if status != "ok":
                    samples["cells"].append({**cell, "status": status, "reason": out["error"]})
                    failures.append(f"{cell['cell']}: {out['error']}")
                    continue
                versions[lang] = f"{out['runtime']}; {out['library']}"
                metrics |= call_metrics(cell["cell"], out["times_ns"], warm_after)
                metrics |= {f"{cell['cell']}.{q}": v for q, v in cg_metrics.items()}
                samples[cell["cell"]] = out["times_ns"]
                samples["cells"].append({**cell, "status": "ok", "reason": None})
    _envelope_totals(metrics)
    outcome = Outcome(
        metrics=metrics,
        samples=samples,
        tool={"name": "AWS SDK KMS clients", "version": "contract 2", "implementations": versions},
        params={
            "alg": "kms-envelope",
            "bytes": size,
            "service": where,
            "languages": list(params.languages),
            "kms_keys": keys,
            "warm_after": warm_after,
        },
    )
    ran = [c for c in samples["cells"] if c["status"] == "ok"]
    if failures:
        outcome.status, outcome.error = "failed", "; ".join(failures)[:2000]
    elif not ran:
        reasons = sorted({c["reason"] for c in samples["cells"]})
        outcome.status, outcome.error = "skipped", "no cell could run: " + "; ".join(reasons)[:2000]
    return outcome


def _envelope_totals(metrics: dict[str, Any]) -> None:
    """``<cell>.envelope_encrypt_total``: the data-key round trip plus local encryption (warm)."""
    for name in [n for n in metrics if n.endswith(".local_encrypt")]:
        cell = name.rsplit(".", 1)[0]
        rtt = metrics.get(f"{cell}.generate_data_key_rtt") or metrics.get(f"{cell}.encrypt_rtt")
        if rtt:
            metrics[f"{cell}.envelope_encrypt_total"] = metric(
                rtt["value"] + metrics[name]["value"], "s", "lower"
            )


def client_command(lang: str, root: Path) -> tuple[list[str], dict[str, str]] | str:
    """Command line of one language's key-service client (workloads/crypto/kms), or why it cannot run."""
    kms = root / "kms"
    if lang == "python":
        return [sys.executable, str(kms / "python" / "testbed_kms.py")], {}
    paths = {
        "go": (kms / "go/bin/testbed-kms", []),
        "rust": (kms / "rust/target/release/testbed-kms", []),
        "java": (kms / "java/target/testbed-kms.jar", ["java", "-jar"]),
        "node": (kms / "node/node_modules/@aws-sdk/client-kms", ["node", str(kms / "node/main.js")]),
    }
    path, prefix = paths[lang]
    if not path.exists():
        return f"{lang} key-service client not built ({path.relative_to(root)}; `make crypto-kms`)"
    if prefix and shutil.which(prefix[0]) is None:
        return f"{prefix[0]} runtime not found on PATH"
    if lang == "java":
        return [*prefix, str(path)], {}
    return (prefix or [str(path)]), {}


def client_env(cfg: KmsConfig) -> dict[str, str]:
    """Environment of a client process: dummy credentials for the local server only."""
    env = {"AWS_EC2_METADATA_DISABLED": "true", "AWS_REGION": cfg.region}
    if cfg.local:
        env |= {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    return env


def call_metrics(prefix: str, times_ns: dict[str, list[int]], warm_after: int) -> dict[str, Any]:
    """Cold (first call) and warm (median of the calls after ``warm_after``) seconds per call name."""
    out: dict[str, Any] = {}
    for call, values in times_ns.items():
        secs = [v / 1e9 for v in values]
        if call == "client_init":
            out[f"{prefix}.client_init"] = metric(secs[0], "s", "lower")
            continue
        name = call if call.startswith("local_") else f"{call}_rtt"
        warm = secs[warm_after:] if len(secs) > warm_after else secs[1:] or secs
        out[f"{prefix}.{name}"] = metric(statistics.median(warm), "s", "lower")
        out[f"{prefix}.{name}_first"] = metric(secs[0], "s", "lower")
    return out
