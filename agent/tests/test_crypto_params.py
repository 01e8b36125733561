"""The crypto workload's typed params (issue 28): one frozen CryptoParams with a part per variant,
and the plan's parameter names for defaults.params, as for every other type."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from testbed_agent import workloads
from testbed_agent.benchmark import Benchmark
from testbed_agent.plan import load_plan
from testbed_agent.workloads.crypto import Crypto
from testbed_agent.workloads.crypto.params import PLAN_KEYS, FileParams


def bench(name: str, **params: object) -> Benchmark:
    return Benchmark(name, "crypto", 0, 1, params=params)


def test_each_variant_fills_its_part() -> None:
    local = Crypto.parse(bench("aes-256-gcm"))
    assert (local.files, local.kms, local.tier, local.price) == (None, None, None, None)
    assert local.alg == "aes-gcm" and local.key_bits == (256,) and local.payload_bytes == (4096,)
    assert not local.streamed and local.chunk_bytes == 1 << 20 and local.cpus == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        local.alg = "aes-ctr"  # type: ignore[misc]
    files = Crypto.parse(bench("aes-256-cbc", file_sizes=["1M", "2M"]))
    assert files.files == FileParams(sizes=(1 << 20, 2 << 20)) and files.payload_bytes == ()
    assert files.streamed and files.file_sizes == (1 << 20, 2 << 20)
    mine = Crypto.parse(bench("aes-256-cbc", files_dir="/data/mine"))
    assert mine.files == FileParams(dir="/data/mine") and mine.streamed and mine.file_sizes == ()
    kms = Crypto.parse(bench("kms-envelope", kms_keys=["sym"], iterations=5))
    assert kms.kms is not None and kms.kms.keys == ("sym",) and kms.kms.config.local
    assert kms.kms.warm_after == 1 and kms.key_bits == () and kms.ops == ()
    table = {"per_gb_second": {"x86_64": 1e-5}}
    priced = Crypto.parse(bench("aes-256-gcm", price_table=table, memory_mb=128))
    assert priced.price is not None and (priced.price.memory_mb, priced.price.arch) == (128.0, "x86_64")


def test_the_plan_names_are_the_keys_crypto_takes() -> None:
    assert workloads.known_keys("crypto") == set(PLAN_KEYS)


def test_defaults_params_of_another_type_are_not_pushed_into_crypto(tmp_path: Path) -> None:
    """defaults.params go to the benchmarks whose type takes them (fio's size is not crypto's)."""
    plan = tmp_path / "p.yml"
    plan.write_text(
        "defaults: {params: {size: 64M, iterations: 3}}\nbenchmarks:\n"
        "  - {name: fio_4k_randread, type: fio}\n  - {name: aes-256-gcm, type: crypto}\n"
    )
    fio, crypto = load_plan(plan).benchmarks
    assert fio.params == {"size": "64M"} and crypto.params == {"iterations": 3}
    assert Crypto.parse(crypto).iterations == 3


def test_files_dir_is_estimated_from_the_users_files_when_readable(tmp_path: Path) -> None:
    """The estimate used to count one 4,096-byte payload for a directory of any size."""
    (tmp_path / "big.txt").write_bytes(b"x" * (8 << 20))
    (tmp_path / "small.pdf").write_bytes(b"y" * 1000)
    mine = Crypto.parse(bench("aes-256-cbc", files_dir=str(tmp_path), languages=["python"]))
    cells = Crypto.cells(mine)
    assert cells is not None and cells["file_sizes"] == [8 << 20, 1000] and cells["count"] == 4
    assert cells["files_dir"] == str(tmp_path)
    default = Crypto.parse(bench("aes-256-cbc", languages=["python"]))
    assert Crypto.estimate_s(mine) > Crypto.estimate_s(default) + 8 * (1 + mine.iterations) / 344 / 2
    away = Crypto.parse(bench("aes-256-cbc", files_dir=str(tmp_path / "absent"), languages=["python"]))
    cells = Crypto.cells(away)
    assert cells is not None and "not readable here: sizes unknown" in cells["files_dir"]
    assert cells["payload_bytes"] == [4096]
