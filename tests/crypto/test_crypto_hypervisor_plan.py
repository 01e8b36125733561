"""The hypervisor crypto study plan at reduced scale on localhost: the report's crypto tables have the
study's shape (algorithm x key size x file size, encrypt and decrypt, per label)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pandas as pd
import pytest
from test_crypto_plans import available, cut_down, run_plan

from testbed_agent.cli import main
from testbed_agent.plan import load_plan
from testbed_agent.workloads.crypto import Crypto, resolve
from testbed_reports import crypto_tables
from testbed_reports.build import build

KEEP = {"aes-cbc-text", "3des-cbc-binary"}
SIZES = [1024, 16384]
PLAN = Path(__file__).resolve().parents[2] / "workloads/plans/crypto-hypervisor.yml"

#: the published study's matrix (N. Abdel Karim et al., CMC 2024; docs/crypto.md "The study plans"):
#: algorithm -> key sizes, RSA as the hybrid envelope, 3DES two- and three-key
STUDY_KEYS = {
    "aes-cbc": [128, 192, 256],
    "3des-cbc": [128, 192],
    "cast128-cbc": [128],
    "blowfish-cbc": [128, 256, 448],
    "twofish-cbc": [128, 192, 256],
    "rsa-oaep": [2048, 3072, 4096],
}
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
#: file sizes as the plan states them: 1 KiB .. 1 GiB; Twofish up to 100 MiB (a documented departure)
STUDY_SIZES = [KiB, MiB, 100 * MiB, GiB]
TWOFISH_SIZES = [KiB, MiB, 100 * MiB]
STUDY_KINDS = {"text": "text", "random": "binary"}
STUDY_OPS = ["encrypt", "decrypt"]
STUDY_CPUS = [1, 2, 4]
LANGUAGES = ["python", "go", "rust", "java", "node"]


def study_cells() -> set[tuple[str, int, str, int, str, int, str]]:
    """Every cell of the study: (algorithm, key bits, file kind, file size, op, vCPUs, language)."""
    return {
        (alg, bits, kind, size, op, cpus, lang)
        for alg, keys in STUDY_KEYS.items()
        for bits in keys
        for kind in STUDY_KINDS.values()
        for size in (TWOFISH_SIZES if alg == "twofish-cbc" else STUDY_SIZES)
        for op in STUDY_OPS
        for cpus in STUDY_CPUS
        for lang in LANGUAGES
    }


def test_plan_show_lists_the_study_matrix_cell_by_cell(capsys: pytest.CaptureFixture[str]) -> None:
    """``plan show --json`` of the plan: every repetition runs each study cell exactly once."""
    assert main(["plan", "show", str(PLAN), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    rows, summary = lines[:-1], lines[-1]["summary"]
    assert {r["repetition"] for r in rows} == {0, 1, 2} and summary["executions"] == len(rows)
    expected = study_cells()
    for rep in range(3):
        got: list[tuple[str, int, str, int, str, int, str]] = []
        for r in (r for r in rows if r["repetition"] == rep):
            c = r["cells"]
            assert r["type"] == "crypto"
            dims = (c["key_bits"], [STUDY_KINDS[c["payload"]]], c["file_sizes"], c["ops"], c["cpus"])
            cells = [(c["alg"], *rest) for rest in itertools.product(*dims, c["languages"])]
            assert c["count"] == len(cells), r["benchmark"]
            got += cells
        assert len(got) == len(set(got)), "a cell runs twice in one repetition"
        assert sorted(set(got) - expected) == [], "cells the study does not have"
        assert sorted(expected - set(got)) == [], "study cells the plan misses"
    assert len(expected) == 3420
    # the estimate: days of the slow ciphers, far more than a flat minute per benchmark
    assert summary["estimated_s"] > 10 * len(rows) * Crypto.typical_s


@pytest.fixture(scope="module")
def reduced_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("hv")
    langs = [lang for lang in ("python", "go") if lang in available()]
    params = {"file_sizes": ["1K", "16K"], "cpus": [1], "iterations": 1, "languages": langs, "warmup_s": 0.2}
    plan = cut_down("crypto-hypervisor", tmp, params, KEEP)
    records = run_plan(plan, tmp / "out")
    assert [r["status"] for r in records] == ["ok"] * len(KEEP), [r["error"] for r in records]
    return tmp / "out"


@pytest.mark.slow
@pytest.mark.integration
def test_reduced_hypervisor_plan_gives_the_study_table(reduced_run: Path, tmp_path: Path) -> None:
    build([reduced_run], tmp_path / "report")
    table = pd.read_csv(tmp_path / "report" / "crypto_table.csv")
    plan = load_plan(PLAN)
    expected = {
        (r["alg"], bits, size, op)
        for b in plan.benchmarks
        if b.name in KEEP
        for r in [resolve(b)]
        for bits in r["key_bits"]
        for size in SIZES
        for op in ("encrypt", "decrypt")
    }
    for (label, lang), part in table.groupby(["label", "language"]):
        got = set(zip(part["alg"], part["key_bits"], part["file_bytes"], part["op"], strict=True))
        assert got == expected, (label, lang)
    assert (table["time_s"] > 0).all() and (table["n"] == 1).all()
    assert table["cpu_percent"].notna().all()
    # system CPU % needs the cell's process to outlast a /proc/stat tick (10 ms); Python's always does
    sys_pct = table.loc[table["language"] == "python", "system_cpu_percent"]
    assert sys_pct.notna().all() and table["system_cpu_percent"].dropna().between(0, 100).all()
    assert (tmp_path / "report" / "crypto_ratio.csv").exists()


def test_ratio_of_averages_between_labels() -> None:
    rows = []
    for label, scale in (("hyperv", 1.0), ("kvm", 0.8)):
        for alg, t in (("aes-cbc", 1.0), ("3des-cbc", 3.0)):
            rows.append(
                {
                    "label": label,
                    "language": "go",
                    "cpus": 1,
                    "alg": alg,
                    "key_bits": 128,
                    "file_bytes": 1024,
                    "op": "encrypt",
                    "time_s": t * scale,
                    "cold_time_s": t,
                    "throughput_Bps": 1.0,
                    "cpu_percent": 50.0 * scale,
                    "system_cpu_percent": 60.0,
                }
            )
    table = crypto_tables.seed004_table(pd.DataFrame(rows))
    ratio = crypto_tables.ratio_of_averages(table)
    assert len(ratio) == 1 and ratio.loc[0, "cells"] == 2
    assert ratio.loc[0, ["a", "b"]].tolist() == ["hyperv", "kvm"]
    assert ratio.loc[0, "time_ratio_b_a"] == pytest.approx(0.8)
    assert ratio.loc[0, "cpu_ratio_b_a"] == pytest.approx(0.8)
