"""Reduced reruns of the serverless studies (make test-studies): each study plan derived smaller with
`testbed-agent plan derive` (never an edited copy), run on the emulator, and its tables rebuilt by
`testbed-report study`. The checks are what must hold whatever this machine's speed: the designs'
cells all present, the emulator's physics as fitted (host packing, retention, cold paths), the
paper's values beside the rebuilt ones. The figures a run gives go to the study report (and to the
issue's closing note); the emulated platforms are not the papers' clouds, so their absolute times
are not compared here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scipy import stats

from .conftest import needs_root

pytestmark = [pytest.mark.study, pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[2]
PLANS = ROOT / "workloads" / "plans"


def _agent(*args: str, timeout: int = 3600) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "testbed_agent", *args], capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stderr[-2000:] + proc.stdout[-2000:]
    return proc


def _rerun(tmp: Path, plan: str, sets: list[str], only: list[str] = (), name: str | None = None) -> Path:
    """Derive ``plan`` with ``sets``, run it (or its ``only`` benchmarks); the results directory."""
    name = name or Path(plan).stem
    derived = tmp / f"{name}.derived.yml"
    args = ["plan", "derive", str(PLANS / plan), "-o", str(derived)]
    for s in sets:
        args += ["--set", s]
    _agent(*args, timeout=120)
    out = tmp / name
    run = ["run", str(derived), "--out", str(out), "--host", "faas", "--node-exporter", "", "--no-progress"]
    for o in only:
        run += ["--only", o]
    _agent(*run)
    records = [json.loads(line) for line in (out / "faas.jsonl").read_text().splitlines()]
    assert records and all(r["status"] == "ok" for r in records), [r["error"] for r in records]
    return out


def _study(study: str, dirs: list[Path], out: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "testbed_reports", "study", study, *map(str, dirs), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    print(proc.stdout)
    return json.loads((out / "study.json").read_text())


def _table(view: dict, tid: str) -> dict:
    return next(t for t in view["tables"] if t["id"] == tid)


def _cell(row: dict, column: str) -> dict:
    return row[column] if isinstance(row[column], dict) else {"rerun": row[column]}


# the thesis's 1 GB file at 512 B I/O is 2,000,000 direct writes: on the aws profile's loop-mounted
# /tmp one such cell took 6-10 min on the shared 2-core machine (GCF's tmpfs: under 1 min), so the
# 16 cells at 2 repetitions outlast pytest.ini's 1200 s default
@pytest.mark.timeout(3600)
def test_s1_reduced_rerun_rebuilds_tables_13_to_19(tmp_path: Path) -> None:
    """faas-io.yml at 2 repetitions: the sixteen cells of the thesis's design, its dd commands."""
    needs_root()
    res = _rerun(tmp_path, "faas-io.yml", ["repetitions=2"])
    view = _study("S1", [res], tmp_path / "report")
    for t in ("Table 13", "Table 15", "Table 17", "Table 19"):
        anova = _table(view, t)
        assert [r["Degrees of freedom"] for r in anova["rows"]] == [1, 1, 1, 4, 7]
        assert anova["rows"][0]["Sum of squares (%)"]["paper"] is not None
        cells = _table(view, f"{t} cells")
        assert all(r["n"] == 2 for r in cells["rows"] if "n" in r)
    # the writes are cached and the reads direct, so GCF's in-memory /tmp reads 1 GB faster than
    # the disk-backed /tmp: the direction the thesis found (S1 L916-918)
    reads = {
        (r["Platform"], r["I/O size"]): r["Mean (s)"]["rerun"]
        for r in _table(view, "Table 17 cells")["rows"]
        if "n" in r
    }
    assert reads[("GCF", "512 B")] < reads[("AWS Lambda", "512 B")]


def test_s3_reduced_reruns_rebuild_the_research_questions(tmp_path: Path) -> None:
    needs_root()
    fast = "faas.time_scale=100"
    dirs = [
        _rerun(
            tmp_path,
            "faas-factors-concurrency.yml",
            ["faas.ladder=[1,4,8]", "faas.memory_mb=1536", "faas.level_pause_s=1", fast],
            only=["s3_rq1_container_cold_ladder"],
            name="rq1",
        ),
        _rerun(
            tmp_path,
            "faas-factors-concurrency.yml",
            ["faas.concurrency=8", "faas.calls=3", "faas.event={level: 4}", fast],
            only=["s3_rq3_3000_requests_level9"],
            name="rq3",
        ),
        _rerun(
            tmp_path,
            "faas-factors-stress.yml",
            ["faas.sets=2", "faas.concurrency=6", "faas.set_pause_s=1"],
            only=["s3_rq2_level1", "s3_rq2_level2", "s3_rq2_level4"],
            name="rq2",
        ),
        _rerun(
            tmp_path,
            "faas-factors-retention.yml",
            ["faas.concurrency=16", "faas.time_scale=20", "faas.gaps_s=[10,600,2400]"],
            name="rq4",
        ),
        _rerun(
            tmp_path,
            "faas-factors-memory.yml",
            [
                "faas.memory_sweep=[128,512,1536]",
                "faas.batches=1",
                "faas.sets=2",
                "faas.concurrency=4",
                "faas.set_pause_s=1",
                fast,
            ],
            name="rq5",
        ),
        _rerun(
            tmp_path,
            "faas-factors-azure.yml",
            # warmup_ramps first: each --set is checked, and one ramp must stay measured
            ["faas.steps=[1,2,4,8]", "faas.warmup_ramps=0", "faas.step_s=[2]", "faas.time_scale=10"],
            name="azure",
        ),
    ]
    view = _study("S3", dirs, tmp_path / "report")
    rq1 = _table(view, "RQ-1")
    assert [r["Concurrent requests"] for r in rq1["rows"]] == [1, 4, 8]
    assert all(r["Containers"] == r["Concurrent requests"] for r in rq1["rows"]), "container-cold: one each"
    calls = json.loads((dirs[0] / "faas.jsonl").read_text().splitlines()[0])["samples"]["calls"]
    # container-cold: each level starts new containers and the emulator retires the old ones, so a
    # host holds at most four 1536 MB containers at a time (6144 MB hosts), counted level by level
    per_host: dict[tuple[str, str], set[str]] = {}
    for c in calls:
        per_host.setdefault((c["phase"], c["host_id"]), set()).add(c["instance_id"])
        if c["phase"] != "warmup":
            assert c["cold_start_kind"] in ("container", "host")
    assert max(len(v) for v in per_host.values()) <= 4, per_host
    rq4 = {r["Idle gap (min)"]: r for r in _table(view, "RQ-4")["rows"]}
    ten = rq4[10.0]["Containers recreated"]
    lo, hi = stats.binom.ppf(0.005, 16, 0.418) / 16, stats.binom.ppf(0.995, 16, 0.418) / 16
    assert lo <= ten["rerun"] <= hi and ten["paper"] == 0.418
    assert rq4[40.0]["Containers recreated"]["rerun"] == 1.0 and rq4[40.0]["Hosts recycled"]["rerun"] == 0.0
    rq5 = {r["Memory (MB)"]: r for r in _table(view, "RQ-5")["rows"]}
    assert rq5[1536]["Warm mean time (s)"]["rerun"] < rq5[128]["Warm mean time (s)"]["rerun"]
    uptimes = _table(view, "Host uptimes")["rows"][0]
    assert 0 <= uptimes["Minimum (s)"]["rerun"] <= uptimes["Maximum (s)"]["rerun"] <= 12910 + 600
    assert {t["id"] for t in view["tables"]} >= {"RQ-2", "RQ-3 (cold)", "RQ-3 (warm)", "Azure (Figure 13)"}


def test_s0_reduced_rerun_rebuilds_tables_v_and_vi(tmp_path: Path) -> None:
    needs_root()
    only = [
        "s0_sha256_128",
        "s0_sha256_3008",
        "s0_aes256-decrypt_512",
        "s0_aes256-decrypt_1769",
        "s0_rsa2048-encrypt_1024",
        "s0_ecc256-verify_128",
        "s0_sha384_1769",
    ]
    res = _rerun(tmp_path, "faas-crypto-kms.yml", ["faas.warmup=2", "faas.calls=5"], only=only)
    records = [json.loads(line) for line in (res / "faas.jsonl").read_text().splitlines()]
    for r in records:  # the handler's time includes the key service's round trips
        calls = r["samples"]["calls"]
        assert [c["phase"] for c in calls] == ["cold", "warmup", "warmup", *["measured"] * 5]
        assert all(c["handler_s"] > 0 for c in calls)
    view = _study("S0", [res], tmp_path / "report")
    t5 = _table(view, "Table V")
    rows = {(r["Workload"], r["Start type"]): r for r in t5["rows"]}
    sha = rows[("SHA256", "Warm")]  # the records' own best of two sizes, apart from the paper's row
    assert sha["Its configuration"] in ("python x86_64 128 MB", "python x86_64 3008 MB")
    paper_row = sha["Mean execution time (ms)"]  # the paper's Python x86_64 1769 MB: not run here
    assert (
        paper_row["paper"] == 8.09
        and paper_row["rerun"] is None
        and "not in these records" in paper_row["verdict"]
    )
    sha384 = rows[("SHA384", "Warm")]  # the paper's configuration (Python x86_64 1769 MB) was run
    t = sha384["Mean execution time (ms)"]
    assert t["paper"] == 7.74 and t["verdict"] in ("inside", "outside")
    cost = sha384["Mean cost (USD)"]["rerun"]
    assert cost == pytest.approx(t["rerun"] * 1769 / 1024 * 0.0000166667 / 1000)
    assert rows[("RSA4096 Decrypt", "Cold")]["Mean execution time (ms)"]["rerun"] is None  # not run
