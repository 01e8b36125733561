"""The ``crypto`` workload type: parameters, cells, metrics, skipped and failed cells, cost fields."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from crypto_helpers import CRYPTO, LANGUAGES, TOOLCHAIN, load_vectors, program, write_vectors

from testbed_agent.plan import Benchmark, ParamError
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.crypto import ALGS, Crypto, alg_from_name, json_payload
from testbed_shared import cost

sys.path.insert(0, str(CRYPTO / "python"))
import testbed_crypto
from testbed_crypto.algorithms import ALGS as PY_ALGS


def bench(name: str, **params: Any) -> Benchmark:
    return Benchmark(name=name, type="crypto", index=0, line=1, params=params)


def run(tmp_path: Path, b: Benchmark) -> Any:
    ctx = RunContext(
        bench=b,
        repetition=0,
        scratch=tmp_path / "scratch",
        artifacts=tmp_path / "art",
        deadline=time.monotonic() + 600,
    )
    ctx.scratch.mkdir(parents=True, exist_ok=True)
    return Crypto().run(ctx, Crypto.parse(ctx.bench))


def available() -> list[str]:
    return [lang for lang in LANGUAGES if TOOLCHAIN[lang] is None or shutil.which(TOOLCHAIN[lang])]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("aes-256-gcm", ("aes-gcm", 256)),
        ("aes-128-cbc", ("aes-cbc", 128)),
        ("rsa-oaep-4096", ("rsa-oaep", 4096)),
        ("blowfish-cbc-448", ("blowfish-cbc", 448)),
        ("ecdsa-p384", ("ecdsa-p384", None)),
        ("kms-envelope", ("kms-envelope", None)),
        ("fio_4k_read", None),
    ],
)
def test_algorithm_from_name(name: str, expected: tuple[str, int | None] | None) -> None:
    assert alg_from_name(name) == expected


def test_agent_table_matches_the_implementations() -> None:
    assert set(ALGS) == set(PY_ALGS)
    for name, (sizes, ops) in ALGS.items():
        assert PY_ALGS[name].key_bits == sizes and PY_ALGS[name].ops == ops, name


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"alg": "rot13"}, "params.alg"),
        ({"key_bits": 100}, "params.key_bits"),
        ({"ops": ["sign"]}, "params.ops"),
        ({"languages": ["cobol"]}, "params.languages"),
        ({"payload_bytes": 4096, "file_sizes": ["1M"]}, "params.file_sizes"),
        ({"warmup_s": -1}, "params.warmup_s"),
        ({"tolerance": 1.5}, "params.tolerance"),
        ({"iterations": 0}, "params.iterations"),
        ({"chunk_bytes": 100}, "params.chunk_bytes"),
        ({"price_table": {"per_gb_second": {"x86_64": 1e-5}}}, "params.memory_mb"),
        (
            {"price_table": {"per_gb_second": {"x86_64": 1e-5}}, "memory_mb": 128, "arch": "arm64"},
            "params.arch",
        ),
        ({"cpus": [0]}, "params.cpus"),
        ({"colour": "blue"}, "params.colour"),
    ],
)
def test_bad_parameters_name_their_field(params: dict[str, Any], field: str) -> None:
    with pytest.raises(ParamError) as err:
        Crypto.parse(bench("aes-256-gcm", **params))
    assert err.value.field == field


def test_defaults_come_from_the_name() -> None:
    res = Crypto.parse(bench("rsa-oaep-3072"))
    assert res.alg == "rsa-oaep" and res.key_bits == (3072,) and res.ops == ("encrypt", "decrypt")
    assert res.languages == LANGUAGES and res.payload_bytes == (4096,) and res.files is None


def test_json_payload_has_the_exact_size() -> None:
    for size in (64, 4096, 10_000):
        data = json_payload(size)
        assert len(data) == size and isinstance(json.loads(data), dict)


def test_every_language_runs_a_cell(tmp_path: Path) -> None:
    langs = available()
    for lang in langs:
        program(lang)  # fails loudly when a present toolchain's program was not built
    out = run(tmp_path, bench("aes-256-gcm", languages=langs, payload_bytes=1024, iterations=3, warmup=1))
    assert out.status == "ok", out.error
    for lang in langs:
        for op in ("encrypt", "decrypt"):
            m = out.metrics
            assert m[f"{lang}.{op}.time_per_op"]["unit"] == "s" and m[f"{lang}.{op}.time_per_op"]["value"] > 0
            assert m[f"{lang}.{op}.throughput"]["unit"] == "B/s"
            assert m[f"{lang}.{op}.cold_time"]["better"] == "lower"
            # rusage counts microseconds: a loop this short may show no CPU time at all
            assert m[f"{lang}.{op}.cpu_s_per_gb"]["value"] >= 0
            assert m[f"{lang}.{op}.cpu_percent"]["unit"] == "%"
            assert len(out.samples[f"{lang}.{op}"]["times_ns"]) == 3
            assert out.samples[f"{lang}.{op}"]["vectors"]["passed"] >= 4
    assert {c["status"] for c in out.samples["cells"]} == {"ok"}
    assert set(out.tool["implementations"]) == set(langs)


def test_streamed_files_cpus_and_skipped_cells(tmp_path: Path) -> None:
    out = run(
        tmp_path,
        bench(
            "blowfish-cbc",
            languages=["python", "go"],
            key_bits=[128, 448],
            ops=["encrypt"],
            file_sizes=["64K", "1M"],
            chunk_bytes="64K",
            iterations=1,
            cpus=[1, 4096],
        ),
    )
    assert out.status == "ok", out.error
    cells = {c["cell"]: c for c in out.samples["cells"]}
    assert len(cells) == 2 * 2 * 2 * 2
    assert cells["go.encrypt.k448.1M.cpu1"]["status"] == "ok"
    skipped = cells["python.encrypt.k128.64K.cpu4096"]
    assert skipped["status"] == "skipped" and "CPUs" in skipped["reason"]
    assert "go.encrypt.k448.1M.cpu1.throughput" in out.metrics
    assert "python.encrypt.k128.64K.cpu4096.throughput" not in out.metrics
    assert (tmp_path / "scratch" / "crypto" / "random-1048576.bin").stat().st_size == 1 << 20


def test_unbuilt_languages_are_skipped_with_the_reason(tmp_path: Path) -> None:
    bare = tmp_path / "crypto"
    shutil.copytree(CRYPTO / "python", bare / "python", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(CRYPTO / "vectors", bare / "vectors")
    out = run(tmp_path, bench("hmac-sha256", crypto_dir=str(bare), iterations=2))
    assert out.status == "ok"
    cells = {c["language"]: c for c in out.samples["cells"]}
    assert cells["python"]["status"] == "ok"
    for lang in ("go", "rust", "java", "node"):
        assert cells[lang]["status"] == "skipped" and cells[lang]["reason"], lang
    only_go = run(tmp_path, bench("hmac-sha256", crypto_dir=str(bare), languages=["go"], iterations=2))
    assert only_go.status == "skipped" and "not built" in (only_go.error or "")


def test_a_wrong_vector_fails_the_record(tmp_path: Path) -> None:
    bad = tmp_path / "crypto"
    shutil.copytree(CRYPTO / "python", bad / "python", ignore=shutil.ignore_patterns("__pycache__"))
    vectors = load_vectors()["vectors"]
    for v in vectors:
        if v["alg"] == "hmac-sha256":
            v["mac"] = ("00" if not v["mac"].startswith("00") else "11") + v["mac"][2:]
    (bad / "vectors").mkdir()
    write_vectors(bad / "vectors" / "vectors.json", vectors)
    out = run(tmp_path, bench("hmac-sha256", crypto_dir=str(bad), languages=["python"], iterations=2))
    assert out.status == "failed" and "vector" in (out.error or "")
    assert not any(k.startswith("python.") for k in out.metrics)


def test_faas_cost_fields(tmp_path: Path) -> None:
    table = {"per_gb_second": {"x86_64": 0.0000166667, "arm64": 0.0000133334}, "per_request": 2e-7}
    out = run(
        tmp_path,
        bench(
            "ecdsa-p256",
            languages=["python"],
            ops=["sign"],
            payload="json",
            iterations=5,
            warmup=2,
            price_table=table,
            memory_mb=512,
            arch="arm64",
        ),
    )
    assert out.status == "ok", out.error
    m = out.metrics
    median = m["python.sign.time_per_op"]["value"]
    expect = cost.invocation_cost(512, median, cost.PriceTable.from_dict(table), "arm64")
    assert m["python.sign.gb_seconds"]["value"] == pytest.approx(expect["gb_seconds"])
    assert m["python.sign.price_per_invocation"]["value"] == pytest.approx(expect["price"])
    assert m["python.sign.price_per_invocation"]["unit"] == "USD"
    assert m["python.sign.cost_efficiency"]["value"] == pytest.approx(
        m["python.sign.ops_per_s"]["value"] / expect["price"]
    )
    assert m["python.sign.cold_price_per_invocation"]["value"] >= expect["price"] * 0.999


def test_run_spec_is_the_faas_entry_point() -> None:
    out = testbed_crypto.run_spec({"alg": "hmac-sha384", "payload_bytes": 4096, "iterations": 3})
    assert out["language"] == "python" and len(out["times_ns"]) == 3 and out["vectors"]["passed"] == 2
    with pytest.raises(testbed_crypto.SpecError):
        testbed_crypto.run_spec({"alg": "aes-gcm", "iterations": 1})


def test_steady_state_warmup_and_file_decryption(tmp_path: Path) -> None:
    langs = [lang for lang in ("python", "go") if lang in available()]
    b = bench(
        "aes-cbc",
        languages=langs,
        key_bits=[256],
        file_sizes=["64K"],
        ops=["encrypt", "decrypt"],
        payload="text",
        iterations=3,
        warmup_s=0.3,
        tolerance=0.5,
    )
    out = run(tmp_path, b)
    assert out.status == "ok", out.error
    assert {(c["language"], c["op"], c["status"]) for c in out.samples["cells"]} == {
        (lang, op, "ok") for lang in langs for op in ("encrypt", "decrypt")
    }
    for lang in langs:
        # Python decrypts a file by streaming it (a ciphertext file made before timing); Go reads it
        assert out.samples[f"{lang}.decrypt"]["input"] == ("stream" if lang == "python" else "memory")
        assert out.samples[f"{lang}.encrypt"]["input"] == "stream"
        for op in ("encrypt", "decrypt"):
            m, s = out.metrics, out.samples[f"{lang}.{op}"]
            # the warm-up's counters are how the cell ran, kept in samples, never metrics (issue 30)
            assert not any(f"{lang}.{op}.{q}" in m for q in ("steady", "warmup_ops", "warmup_time"))
            assert s["steady"] in (True, False) and s["warmup_ops"] >= 1 and 0 < s["warmup_ns"] / 1e9 < 5
            assert 0 <= m[f"{lang}.{op}.system_cpu_percent"]["value"] <= 100
    text = (tmp_path / "scratch" / "crypto" / "text-65536.bin").read_bytes()
    assert len(text) == 65536 and text.isascii()


def _settled(batches: list[int], tolerance: float) -> bool:
    """CONTRACT.md's rule: the last 3 batch means lie within ``tolerance`` x their median."""
    last = sorted(batches[-3:])
    return len(last) == 3 and last[2] - last[0] <= tolerance * last[1]


def test_java_reaches_steady_state_and_reports_cold_apart(tmp_path: Path) -> None:
    """A JIT language (Java) and a compiled one (Go) on a small in-memory AES-GCM cell with a
    time-based warm-up: the warm-up settles (``steady`` = 1), lasts at least half of ``warmup_s``
    (CONTRACT.md: a JIT compiles its last tier late), and the cold first operation is reported on
    its own, outside the timed ones; Java's cold operation runs interpreted, its warm ones compiled.

    Every attempt must follow the rule (steady exactly when its last 3 batches agree after S/2;
    unsettled only after S); the machine's load decides whether an attempt settles, so the cell
    gets three attempts to settle (CI 2026-11-30, 35a7ca6: at nice -10 beside three lanes, Java's
    batch means still ranged 1.3-19.6 us for the whole 8 s)."""
    for lang in ("java", "go"):
        program(lang)  # skips without the toolchain, fails when not built
    warmup_s, iterations, tolerance = 8.0, 20, 0.5  # batches of >= 160 ms; interpreted is 10-100x off
    b = bench(
        "aes-128-gcm",
        languages=["java", "go"],
        ops=["encrypt"],
        payload_bytes=1024,
        iterations=iterations,
        warmup_s=warmup_s,
        tolerance=tolerance,
    )
    # The rule under test is the harness's, not the machine's load: beside make test's other lanes
    # (load 5-6 on 2 cores) Java's batch means kept jumping past the tolerance for the whole 8 s
    # (2026-11-30 18:24 clean clone); the programs run ahead of them (nice -10, inherited).
    niceness = os.getpriority(os.PRIO_PROCESS, 0)
    unsettled: list[list[int]] = []
    for attempt in range(3):
        os.setpriority(os.PRIO_PROCESS, 0, -10)
        try:
            out = run(tmp_path / f"attempt-{attempt}", b)
        finally:
            os.setpriority(os.PRIO_PROCESS, 0, niceness)
        assert out.status == "ok", out.error
        samples = [out.samples[f"{lang}.encrypt"] for lang in ("java", "go")]
        for sample in samples:
            batches, took_s = sample["warmup_batches_ns"], sample["warmup_ns"] / 1e9
            if sample["steady"]:
                assert _settled(batches, tolerance) and took_s >= warmup_s / 2, (took_s, batches)
            else:
                assert sample["steady"] is False and took_s >= warmup_s, (took_s, batches)
        if all(sample["steady"] for sample in samples):
            break
        unsettled += [s["warmup_batches_ns"] for s in samples if not s["steady"]]
    else:
        pytest.fail(f"no attempt settled in {warmup_s} s: {json.dumps(unsettled)}")
    m = out.metrics
    for lang in ("java", "go"):
        sample = out.samples[f"{lang}.encrypt"]
        assert sample["warmup_ns"] / 1e9 >= warmup_s / 2
        assert sample["warmup_ops"] >= 1
        assert len(sample["times_ns"]) == iterations  # the cold operation is not among the timed
        assert m[f"{lang}.encrypt.cold_time"]["value"] == pytest.approx(sample["cold_ns"] / 1e9)
        warm = statistics.median(sample["times_ns"]) / 1e9
        assert m[f"{lang}.encrypt.time_per_op"]["value"] == pytest.approx(warm)
    assert m["java.encrypt.cold_time"]["value"] > 2 * m["java.encrypt.time_per_op"]["value"]
