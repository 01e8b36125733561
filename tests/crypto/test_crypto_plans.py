"""The study plans validate, and cut-down copies run through ``testbed-agent run``."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from crypto_helpers import LANGUAGES, ROOT, TOOLCHAIN

from testbed_agent.plan import load_plan
from testbed_agent.workloads.crypto import Crypto

PLANS = ROOT / "workloads" / "plans"


def available() -> list[str]:
    return [lang for lang in LANGUAGES if TOOLCHAIN[lang] is None or shutil.which(TOOLCHAIN[lang])]


@pytest.mark.parametrize("name", ["crypto-hypervisor", "crypto-faas", "crypto-smoke"])
def test_plan_validates(name: str) -> None:
    plan = load_plan(PLANS / f"{name}.yml")
    for b in plan.benchmarks:
        Crypto.parse(b)


# the S4 plan's cells against its paper: tests/crypto/test_s4_study.py


def test_faas_matrix() -> None:
    plan = load_plan(PLANS / "crypto-faas.yml")
    res = [Crypto.parse(b) for b in plan.benchmarks]
    algs = {(r.alg, r.key_bits) for r in res}
    assert algs == {
        ("hmac-sha256", (256,)),
        ("hmac-sha384", (384,)),
        ("aes-gcm", (256,)),
        ("aes-ctr", (256,)),
        ("ecdsa-p256", (256,)),
        ("ecdsa-p384", (384,)),
        ("rsa-oaep", (2048,)),
        ("rsa-oaep", (3072,)),
        ("rsa-oaep", (4096,)),
        ("kms-envelope", ()),
    }
    for r in res:
        assert r.payload_bytes == (4096,) and r.payload == "json"
        if r.kms is None:  # the 30-call protocol: 1 cold, 9 untimed, 20 warm
            assert (1, r.warmup, r.iterations) == (1, 9, 20) and r.price is not None
        else:
            assert (r.iterations, r.kms.warm_after) == (30, 10) and r.languages == LANGUAGES


def cut_down(name: str, tmp_path: Path, params: dict[str, Any], keep: set[str]) -> Path:
    """The plan with small sizes, one repetition and only the ``keep`` benchmarks (test time budget:
    every benchmark runs the same workload code; tests of the vectors cover every key size)."""
    doc = yaml.safe_load((PLANS / f"{name}.yml").read_text())
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["name"] in keep]
    assert len(doc["benchmarks"]) == len(keep)
    doc["defaults"].update({"wait_s": 0, "repetitions": 1})
    doc["defaults"]["params"].update(params)
    for b in doc["benchmarks"]:  # the reduced scale wins over a benchmark's own counts and sizes
        for key in ("iterations", "warm_after", "file_sizes", "warmup_s"):
            b.get("params", {}).pop(key, None)
    path = tmp_path / f"{name}-small.yml"
    path.write_text(yaml.safe_dump(doc))
    return path


def run_plan(plan: Path, out: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "testbed_agent", "run", str(plan), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    files = list(out.glob("*.jsonl"))
    assert len(files) == 1
    return [json.loads(line) for line in files[0].read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.integration
def test_cut_down_hypervisor_plan_runs(tmp_path: Path) -> None:
    """Two S4 experiments, every language: AES in all five, textbook RSA in Python only (the other
    programs' cells skipped with the reason, never faked)."""
    langs = available()
    plan = cut_down(
        "crypto-hypervisor",
        tmp_path,
        {"file_sizes": ["16K"], "iterations": 1, "languages": langs, "ops": ["encrypt"]},
        {"aes-e10", "rsa-e02"},
    )
    doc = yaml.safe_load(plan.read_text())
    for b in doc["benchmarks"]:  # one machine: taskset to 1 CPU instead of a guest's count
        b["params"].pop("guest_cpus")
        b["params"]["cpus"] = [1]
    plan.write_text(yaml.safe_dump(doc))
    records = run_plan(plan, tmp_path / "out")
    assert [r["benchmark"] for r in records] == [b.name for b in load_plan(plan).benchmarks]
    for rec in records:
        assert rec["status"] == "ok", rec["error"]
        cells = {c["language"]: (c["status"], c["reason"]) for c in rec["samples"]["cells"]}
        for lang in langs:
            if rec["benchmark"] == "rsa-e02" and lang != "python":
                assert cells[lang][0] == "skipped" and "Python only" in cells[lang][1]
                continue
            assert cells[lang] == ("ok", None), rec["benchmark"]
            assert rec["metrics"][f"{lang}.encrypt.cpu1.cpu_s_per_gb"]["unit"] == "s/GB"


@pytest.mark.slow
@pytest.mark.integration
def test_cut_down_faas_plan_runs(tmp_path: Path) -> None:
    langs = available()
    plan = cut_down(
        "crypto-faas",
        tmp_path,
        {"iterations": 2, "warmup": 0, "languages": langs, "kms_keys": ["sym"]},
        {"hmac-sha384", "ecdsa-p256", "rsa-oaep-2048", "kms-envelope"},
    )
    records = run_plan(plan, tmp_path / "out")
    assert len(records) == 4
    for rec in records:
        assert rec["status"] == "ok", rec["error"]
        tier = rec["samples"]["tier"]  # the tier is enforced, or the record says why not
        assert rec["params"]["resolved_limits_enforced"] is tier["limits_enforced"]
        assert tier["limits_enforced"] or tier["reason"]
        if rec["benchmark"] == "kms-envelope":
            for lang in langs:
                assert rec["metrics"][f"{lang}.sym.generate_data_key_rtt"]["value"] > 0
            continue
        ops = rec["params"]["resolved_ops"]
        assert {(c["language"], c["op"]) for c in rec["samples"]["cells"] if c["status"] == "ok"} == {
            (lang, op) for lang in langs for op in ops
        }
        for lang in langs:
            assert rec["metrics"][f"{lang}.{ops[0]}.price_per_invocation"]["unit"] == "USD"
            assert rec["metrics"][f"{lang}.{ops[0]}.cold_time"]["value"] > 0
