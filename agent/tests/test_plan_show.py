"""``testbed-agent plan show`` (issue 16 item 3): executions, estimates, adaptive ranges."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from testbed_agent.cli import main
from testbed_agent.plan import Benchmark, load_plan
from testbed_agent.plan_show import (
    ansible_inventory,
    cell_matrix,
    estimate_s,
    expand,
    human,
    machines,
    repetition_range,
    totals,
)
from testbed_agent.workloads.crypto import Crypto
from testbed_agent.workloads.crypto.estimate import CRYPTO_MBPS, CRYPTO_OP_S, CRYPTO_START_S, FILE_MBPS
from testbed_shared.errors import TestbedError as AgentError

PLAN = """name: show
defaults: {wait_s: 2}
benchmarks:
  - {name: fio_4k_randread, type: fio, repetitions: 2, params: {size: 64M, runtime_s: 30, ramp_s: 5}}
  - {name: dd_w, type: dd, params: {bs: 1m, count: 200, pause_s: 1}}
  - {name: SimplePrime.ipynb, type: kaggle_notebook, params: {scale: quick}, timeout_s: 10}
  - {name: pyperformance, params: {benchmarks: [float, nbody], mode: fast}}
"""


def _bench(name: str, btype: str, reps: object = 1, **params: object) -> Benchmark:
    # allow_weak_keys: 3DES is refused outside a study plan that says so (crypto.study)
    return Benchmark(
        name=name, type=btype, index=0, line=1, repetitions=reps, params=params, allow_weak_keys=True
    )  # type: ignore[arg-type]


def test_json_lines_list_every_execution(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "show.yml"
    plan.write_text(PLAN)
    assert main(["plan", "show", str(plan), "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    rows, summary = lines[:-1], lines[-1]["summary"]
    assert [(r["benchmark"], r["repetition"]) for r in rows] == [
        ("fio_4k_randread", 0),
        ("fio_4k_randread", 1),
        ("dd_w", 0),
        ("SimplePrime.ipynb", 0),
        ("pyperformance", 0),
    ]
    fio, _, dd, nb, pyperf = rows
    assert fio["params"] == {"size": "64M", "runtime_s": 30, "ramp_s": 5} and fio["type"] == "fio"
    # fio: wait + runtime + ramp and a little; dd: 200 MiB written and read back; the notebook's
    # estimate is capped by its 10 s timeout; pyperformance: two benchmarks in fast mode
    assert 37 <= fio["estimated_s"] <= 45
    assert dd["estimated_s"] > 2 + 1 + 2 * 200 * 2**20 / 200e6
    assert nb["estimated_s"] == 2 + 10
    assert pyperf["estimated_s"] == 2 + 2 * 20
    assert summary["executions"] == 5
    assert summary["estimated_s"] == pytest.approx(sum(r["estimated_s"] for r in rows), abs=0.1)


def test_table_names_the_total(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "show.yml"
    plan.write_text(PLAN)
    assert main(["plan", "show", str(plan)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["#", "benchmark", "type", "rep", "wait_s", "est", "cells", "params"]
    assert len(out) == 1 + 5 + 1
    assert out[-1].startswith("plan show: 4 benchmarks, 5 executions, estimated ")


def test_bad_plan_is_a_clean_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "bad.yml"
    plan.write_text("benchmarks:\n  - {name: dd_w, type: dd, params: {bs: 1kB}}\n")
    assert main(["plan", "show", str(plan)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {plan}:2: field 'params.bs' ambiguous size")


def test_adaptive_repetitions_show_a_range(tmp_path: Path) -> None:
    """The mapping form of ``repetitions``, parsed by the plan loader into ``Benchmark.adaptive``."""
    path = tmp_path / "a.yml"
    path.write_text(
        "name: a\nbenchmarks:\n  - {name: fio_4k_randread, type: fio, params: {size: 64M, runtime_s: 10,"
        " ramp_s: 0}, repetitions: {min: 3, max: 10, target_ci_percent: 2}}\n"
    )
    plan = load_plan(path)
    assert repetition_range(plan.benchmarks[0]) == (3, 10)
    rows = expand(plan)
    assert len(rows) == 10 and [r.adaptive for r in rows] == [False] * 3 + [True] * 7
    t = totals(rows)
    assert (t["executions"], t["executions_max"]) == (3, 10)
    assert t["estimated_max_s"] == pytest.approx(t["estimated_s"] * 10 / 3, abs=0.2)


def test_estimates_never_exceed_the_timeout() -> None:
    assert estimate_s(_bench("x", "kaggle_notebook", scale="large")) == 1800
    slow = Benchmark("x", "pyperformance", 0, 1, timeout_s=60.0, params={"benchmarks": "all"})
    assert estimate_s(slow) == 60
    assert estimate_s(_bench("f", "faas", 1, function="calcs", mode="retention", gaps_s=[10, 20])) >= 30


def test_human_durations() -> None:
    assert [human(s) for s in (5, 65, 3600 * 2 + 61)] == ["5s", "1m 05s", "2h 01m"]


def test_crypto_estimate_from_bytes_and_rates() -> None:
    """Per cell: start + warm-up (+ the one operation it may overrun by) + every pass over the bytes."""
    b = _bench(
        "aes-cbc", "crypto", alg="aes-cbc", languages=["go"], file_sizes=["1M"], cpus=[1, 2],
        iterations=3, warmup=1, warmup_s=2,
    )  # fmt: skip
    one = 2**20 / (CRYPTO_MBPS["aes-cbc"]["go"] * 1e6)
    start = CRYPTO_START_S["go"]
    encrypt = start + 2 + one + (1 + 1 + 3) * one
    decrypt = start + 2 + one + (1 + 1 + 3 + 1) * one  # + the ciphertext made before timing
    assert estimate_s(b) == pytest.approx(2 * (encrypt + decrypt))
    # the same cells in 3DES take as much longer as its rate is lower; RSA adds its unwrap per op
    slow = _bench("3des", "crypto", alg="3des-cbc", languages=["go"], file_sizes=["100M"], iterations=3)
    fast = _bench("aes", "crypto", alg="aes-cbc", languages=["go"], file_sizes=["100M"], iterations=3)
    ratio = CRYPTO_MBPS["aes-cbc"]["go"] / CRYPTO_MBPS["3des-cbc"]["go"]
    starts = 2 * CRYPTO_START_S["go"]  # encrypt and decrypt: one process each
    make = round(100 * 2**20 / (FILE_MBPS["random"] * 1e6), 1)  # the file, made once before its cells
    assert estimate_s(slow) - starts - make == pytest.approx(
        (estimate_s(fast) - starts - make) * ratio, rel=1e-3
    )
    rsa = _bench("r", "crypto", alg="rsa-oaep", key_bits=[4096], languages=["go"], payload_bytes=16)
    assert estimate_s(rsa) > 2 * 31 * CRYPTO_OP_S[4096]


def test_crypto_estimate_is_capped_and_kms_stays_flat() -> None:
    big = _bench("3des", "crypto", alg="3des-cbc", languages=["rust"], file_sizes=["1G"], iterations=9)
    assert estimate_s(big) == 3600  # the workload's default timeout
    kms = _bench("kms-envelope", "crypto", kms=True, languages=["go", "java"], kms_keys=["sym", "p256"])
    assert estimate_s(kms) == Crypto.typical_s
    assert cell_matrix(kms) == {
        "count": 4, "alg": "kms-envelope", "kms_keys": ["sym", "p256"], "languages": ["go", "java"],
    }  # fmt: skip


def test_crypto_executions_carry_their_cells(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "c.yml"
    plan.write_text(
        "name: c\nbenchmarks:\n  - {name: dd_w, type: dd, params: {bs: 1m, count: 2}}\n"
        "  - {name: bf, type: crypto, params: {alg: blowfish-cbc, key_bits: [128, 448], payload: text,"
        " file_sizes: [1K, 1M, 1G], cpus: [1, 4], languages: [go, java], ops: [encrypt]}}\n"
        "  - {name: aes-256-gcm, type: crypto, params: {languages: [node], payload_bytes: [64, 4096]}}\n"
    )
    assert main(["plan", "show", str(plan), "--json"]) == 0
    dd, bf, gcm = [json.loads(x) for x in capsys.readouterr().out.splitlines()][:3]
    assert "cells" not in dd
    assert bf["cells"] == {
        "count": 2 * 2 * 1 * 3 * 2,
        "alg": "blowfish-cbc",
        "key_bits": [128, 448],
        "payload": "text",
        "file_sizes": [1024, 2**20, 2**30],
        "ops": ["encrypt"],
        "cpus": [1, 4],
        "languages": ["go", "java"],
        "files": {
            "kind": "text",
            "sizes": [1024, 2**20, 2**30],
            "largest_bytes": 2**30,
            "ciphertext_bytes": 0,  # encryption only
            "scratch_bytes": 1024 + 2**20 + 2**30,
            "make_s": round((1024 + 2**20 + 2**30) / (FILE_MBPS["text"] * 1e6), 1),
        },
    }
    assert gcm["cells"]["payload_bytes"] == [64, 4096] and gcm["cells"]["count"] == 1 * 1 * 2 * 2
    assert gcm["cells"]["cpus"] == [] and gcm["cells"]["ops"] == ["encrypt", "decrypt"]
    assert main(["plan", "show", str(plan)]) == 0
    table = capsys.readouterr().out.splitlines()
    at = table[0].index("cells")
    assert table[2][at:].split()[0] == "24" and table[1][at:].startswith(" ")


FAKE_INVENTORY = """#!/bin/sh
echo '{"_meta": {"hostvars": {"%s": {"azure_vm_size": "Standard_D4s_v5"}}}}'
"""


def _fake_tool(directory: Path, host: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    tool = directory / "ansible-inventory"
    tool.write_text(FAKE_INVENTORY % host)
    tool.chmod(0o755)
    return tool


def test_ansible_inventory_beside_the_python_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The venv's ansible-inventory is found without the venv activated (not on PATH), and wins."""
    venv_bin = tmp_path / "venv" / "bin"
    _fake_tool(venv_bin, "from-venv")
    monkeypatch.setattr(sys, "executable", str(venv_bin / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert ansible_inventory() == str(venv_bin / "ansible-inventory")
    (tmp_path / "inv.yml").write_text("all: {}\n")  # the fake tool answers for it
    assert [m["host"] for m in machines([tmp_path / "inv.yml"])] == ["from-venv"]
    _fake_tool(tmp_path / "path", "from-path")
    monkeypatch.setenv("PATH", str(tmp_path / "path"))
    assert [m["host"] for m in machines([tmp_path / "inv.yml"])] == ["from-venv"]
    (venv_bin / "ansible-inventory").unlink()  # then PATH
    assert [m["host"] for m in machines([tmp_path / "inv.yml"])] == ["from-path"]
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(AgentError, match="ansible-inventory not found"):
        machines([tmp_path / "inv.yml"])


def test_a_mistyped_inventory_is_an_error_not_an_empty_matrix(tmp_path: Path) -> None:
    with pytest.raises(AgentError, match=r"inventory .*nosuch.yml: no such file or directory"):
        machines([tmp_path / "nosuch.yml"])
    (tmp_path / "empty.yml").write_text("all: {}\n")
    with pytest.raises(AgentError, match="no hosts in it"):
        machines([tmp_path / "empty.yml"])
