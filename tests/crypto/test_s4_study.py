"""The S4 study as its paper ran it (issue 25): the plan's cells against the fidelity manifest
(Tables 4 and 6 row by row, S4 L189-257; the other ciphers' keys and cores, S4 L275-324), unsafe
key sizes only behind the plan's allow_weak_keys, and a reduced rerun on this machine under two
labels rebuilt by ``testbed-report study S4``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from crypto_helpers import ROOT

from testbed_agent.plan import load_plan
from testbed_agent.workloads.crypto import Crypto, CryptoParams
from testbed_reports.study import run_study
from testbed_shared.errors import PlanError
from testbed_shared.studies import manifest
from testbed_shared.units import parse_size

S4 = manifest("S4")
PLAN = ROOT / "workloads/plans/crypto-hypervisor.yml"


def _experiments(table: str) -> dict[int, dict]:
    """The paper's experiments of Table 4 or 6 as the manifest transcribes them."""
    out = {}
    for p in S4.published:
        if p.table == table and p.extra["hypervisor"] == "hyperv" and p.extra["quantity"] == "enc_time":
            out[p.extra["experiment"]] = p.extra
    return out


@pytest.fixture(scope="module")
def plan() -> dict[str, CryptoParams]:
    return {b.name: Crypto.parse(b) for b in load_plan(PLAN).benchmarks}


@pytest.mark.parametrize(
    ("table", "prefix", "alg"), [("Table 4", "rsa", "rsa-raw"), ("Table 6", "aes", "aes-cbc")]
)
def test_each_experiment_of_the_paper_is_a_benchmark(plan: dict, table: str, prefix: str, alg: str) -> None:
    rows = _experiments(table)
    assert sorted(rows) == list(range(1, 11))  # ten rows each (S4 L189-215, S4 L236-257)
    names = sorted(n for n in plan if n.startswith(f"{prefix}-e"))
    assert names == [f"{prefix}-e{e:02d}" for e in range(1, 11)]
    for e, row in rows.items():
        r = plan[f"{prefix}-e{e:02d}"]
        cell = (r.alg, r.key_bits, r.guest_cpus, r.file_sizes)
        assert cell == (alg, (row["key_bits"],), (row["cores"],), (row["file_bytes"],)), (table, e)


def test_rsa_keys_and_aes_files_are_the_paper_s(plan: dict) -> None:
    rsa = {bits for n, r in plan.items() if r.alg == "rsa-raw" for bits in r.key_bits}
    assert sorted(rsa) == S4.element("rsa.keys").value == [64, 256, 1024, 1536, 2048]  # S4 L189-215
    aes = {size for r in plan.values() if r.alg == "aes-cbc" for size in r.file_sizes}
    assert aes == {g << 30 for g in (1, 2, 3, 5)}  # 1, 2, 3 and 5 GB (S4 L234-257)


def test_the_other_ciphers_as_the_manifest_says(plan: dict) -> None:
    keys = {
        "3des-cbc": [S4.element("tdes.key").value],  # 192 (S4 L275)
        "cast128-cbc": [S4.element("cast.key").value],  # 128 (S4 L292)
        "blowfish-cbc": [S4.element("blowfish.key").value],  # 64 (S4 L308)
        "twofish-cbc": S4.element("twofish.keys").value,  # 128/192/256 (S4 L324)
    }
    files = S4.element("symmetric.files").value
    for r in plan.values():
        if r.alg in keys:
            assert list(r.key_bits) == keys[r.alg]
            assert list(r.guest_cpus) == S4.element("symmetric.cores").value == [2, 4]
            assert list(r.file_sizes) == [parse_size(s) for s in files[r.alg]]
    assert keys["blowfish-cbc"] == [64] and keys["3des-cbc"] == [192]


def test_guests_ops_language_and_kinds(plan: dict) -> None:
    loaded = load_plan(PLAN)
    assert loaded.allow_weak_keys is True
    assert {c for r in plan.values() for c in r.guest_cpus} == set(S4.element("guest.cores").value)
    assert all(r.ops == ("encrypt", "decrypt") and r.languages == ("python",) for r in plan.values())
    assert {r.payload for r in plan.values()} == {"pdf", "image", "archive"}  # S4 L169
    inv = yaml.safe_load((ROOT / "inventory/lab-s4.yml").read_text())["all"]["children"]
    for group, prefix in (("kvm", "kvm_guest"), ("hyperv", "hyperv_guest")):
        assert inv[group]["vars"][f"{prefix}_memory_mib"] == S4.element("guest.memory").value == 4096
        assert sorted(h[f"{prefix}_vcpus"] for h in inv[group]["hosts"].values()) == [1, 2, 4]


WEAK = [
    ("rsa-raw", 64),
    ("rsa-raw", 2048),
    ("blowfish-cbc", 64),
    ("3des-cbc", 192),
]


@pytest.mark.parametrize(("alg", "bits"), WEAK)
def test_unsafe_keys_are_refused_without_the_setting(tmp_path: Path, alg: str, bits: int) -> None:
    body = f"  - {{name: x, type: crypto, params: {{alg: {alg}, key_bits: [{bits}], file_sizes: [4K]}}}}\n"
    plan = tmp_path / "mine.yml"
    plan.write_text("benchmarks:\n" + body)
    with pytest.raises(PlanError, match="allow_weak_keys") as err:
        load_plan(plan)
    assert err.value.line == 2 and "params.key_bits" in str(err.value)
    plan.write_text("allow_weak_keys: true\nbenchmarks:\n" + body)
    assert load_plan(plan).benchmarks[0].allow_weak_keys


def test_the_setting_is_a_boolean_and_safe_keys_need_none(tmp_path: Path) -> None:
    plan = tmp_path / "p.yml"
    plan.write_text("allow_weak_keys: yes please\nbenchmarks:\n  - {name: aes-256-cbc, type: crypto}\n")
    with pytest.raises(PlanError, match="allow_weak_keys"):
        load_plan(plan)
    plan.write_text(
        "benchmarks:\n  - {name: x, type: crypto, params: {alg: blowfish-cbc, key_bits: [128]}}\n"
    )
    load_plan(plan)


def test_the_cli_error_names_the_setting(tmp_path: Path) -> None:
    plan = tmp_path / "weak.yml"
    plan.write_text("benchmarks:\n  - {name: x, type: crypto, params: {alg: blowfish-cbc, key_bits: [64]}}\n")
    proc = subprocess.run(
        [sys.executable, "-m", "testbed_agent", "validate", str(plan)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "allow_weak_keys: true" in proc.stderr and f"{plan}:2" in proc.stderr


def test_plan_show_prints_deviations_and_the_files_cost() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "testbed_agent", "plan", "show", str(PLAN), "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    lines = [json.loads(x) for x in proc.stdout.splitlines()]
    summary = lines[-1]["summary"]
    assert summary["study"] == {"id": "S4", "fidelity": S4.counts()}
    assert [x["deviation"]["id"] for x in lines if "deviation" in x] == [d.id for d in S4.deviations()]
    rows = [x for x in lines if "benchmark" in x]
    aes3 = next(r for r in rows if r["benchmark"] == "aes-e03")  # the 5 GB file
    assert aes3["cells"]["files"]["largest_bytes"] == 5 << 30
    assert aes3["cells"]["files"]["scratch_bytes"] >= 2 * (5 << 30)  # the file and its ciphertext
    assert summary["estimated_s"] > 3600
    # each guest runs its own core count's cells: the 1-vCPU guest only RSA's six one-core rows
    split = summary["guest_estimated_s"]
    assert set(split) == {"1", "2", "4"} and split["1"] < 0.1 * split["2"]
    waits = sum(r["wait_s"] for r in rows)
    assert max(split.values()) <= summary["estimated_s"] + waits


REDUCED = {
    # experiment -> the same cell with a file small enough for a test (S4 Tables 4 and 6)
    "rsa-e01": {"file_sizes": ["16K"]},
    "rsa-e02": {},
    "aes-e10": {"file_sizes": ["1M"]},
    "blowfish": {"file_sizes": ["1M"]},
}


@pytest.mark.slow
@pytest.mark.integration
def test_a_reduced_rerun_under_two_labels_rebuilds_the_tables(tmp_path: Path) -> None:
    """The plan cut to four benchmarks and small files, each cell pinned to one CPU (cpus, not the
    guests' guest_cpus), run twice on this machine as the two sides; the study view rebuilds
    Tables 4 and 6 with the paper's values beside the rerun's."""
    doc = yaml.safe_load(PLAN.read_text())
    doc["benchmarks"] = [b for b in doc["benchmarks"] if b["name"] in REDUCED]
    doc["defaults"].update({"wait_s": 0, "repetitions": 2})
    for b in doc["benchmarks"]:
        cores = b["params"].pop("guest_cpus")
        b["params"].update({"cpus": [1], **REDUCED[b["name"]]})
        assert cores in ([1], [2], [4], [2, 4])
    plan = tmp_path / "s4-small.yml"
    plan.write_text(yaml.safe_dump(doc))
    for label, group in (("side-a", "hyperv"), ("side-b", "kvm")):
        out = tmp_path / "results" / label
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "testbed_agent",
                "run",
                str(plan),
                "--out",
                str(out),
                "--label",
                label,
                "--group",
                group,
                "--node-exporter",
                "",
                "--host",
                label,
            ],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        records = [json.loads(x) for f in out.glob("*.jsonl") for x in f.read_text().splitlines()]
        assert {r["status"] for r in records} == {"ok"}, [(r["benchmark"], r["error"]) for r in records]
    view = run_study("S4", [tmp_path / "results"], tmp_path / "study")
    t4 = next(t for t in view.tables if t.id == "Table 4")
    e2 = t4.rows[1]  # experiment 2: 1024-bit key, 12.2 k (S4 L198-199), cores 1 here as in the paper
    assert e2["Hyper-V enc time (s)"].rerun > 0 and e2["Hyper-V enc time (s)"].paper.value == 14.5
    assert e2["KVM dec time (s)"].rerun > 0 and e2["KVM dec time (s)"].low is not None
    assert (tmp_path / "study" / "table-4.csv").is_file()
