"""``tier_profile``: crypto cells (Go, Python) in FaaS instance cgroups at 128 MB vs 1024 MB."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from crypto_helpers import program

from testbed_agent.plan import Benchmark, ParamError
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.crypto import Crypto
from testbed_services.faas import cgroups


def bench(name: str = "hmac-sha256", **params: Any) -> Benchmark:
    return Benchmark(name=name, type="crypto", index=0, line=1, params=params)


def run(tmp_path: Path, memory_mb: int) -> Any:
    # RSA-4096 decryption: enough CPU per call (ms) that the 128 MB quota throttles every language
    b = bench(
        "rsa-oaep-4096",
        ops=["decrypt"],
        languages=["go", "python"],
        payload="json",
        payload_bytes=4096,
        iterations=20,
        warmup=9,
        memory_mb=memory_mb,
        tier_profile="aws-lambda",
    )
    ctx = RunContext(
        bench=b,
        repetition=0,
        scratch=tmp_path / f"scratch{memory_mb}",
        artifacts=tmp_path / "art",
        deadline=time.monotonic() + 120,
    )
    ctx.scratch.mkdir(parents=True, exist_ok=True)
    return Crypto().run(ctx, Crypto.parse(ctx.bench))


def test_tier_params_checked() -> None:
    tier = Crypto.parse(bench(memory_mb=512, tier_profile="aws-lambda")).tier
    assert tier is not None and tier.memory_mb == 512 and tier.profile.name == "aws-lambda"
    for params, field, says in (
        (
            {"memory_mb": 512, "tier_profile": "no-such-platform"},
            "params.tier_profile",
            "unknown FaaS profile",
        ),
        ({"tier_profile": "aws-lambda"}, "params.memory_mb", "needs memory_mb"),
        ({"memory_mb": 1, "tier_profile": "aws-lambda"}, "params.tier_profile", "outside"),
    ):
        with pytest.raises(ParamError, match=says) as exc:
            Crypto.parse(bench(**params))
        assert exc.value.field == field


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="cgroup limits need root")
def test_small_tier_throttled_below_large(tmp_path: Path) -> None:
    program("go")
    small, large = run(tmp_path, 128), run(tmp_path, 1024)
    for out in (small, large):
        assert out.status == "ok", out.error
        assert out.samples["tier"]["limits_enforced"] is True, out.samples["tier"]
        assert out.params["limits_enforced"] is True
    assert small.samples["tier"]["vcpus"] < large.samples["tier"]["vcpus"]
    for lang in ("go", "python"):
        m_small, m_large = small.metrics, large.metrics
        assert m_small[f"{lang}.decrypt.cg_throttled_s"]["value"] > 0
        assert m_small[f"{lang}.decrypt.cg_nr_throttled"]["value"] > 0
        assert m_small[f"{lang}.decrypt.cg_memory_peak"]["value"] > 0
        share_small = m_small[f"{lang}.decrypt.cg_cpu_share"]["value"]
        share_large = m_large[f"{lang}.decrypt.cg_cpu_share"]["value"]
        print(f"{lang}: cpu share 128 MB {share_small:.3f}, 1024 MB {share_large:.3f}")
        assert share_small < share_large
    # the cell cgroups and the run's own cgroup directories are gone after the run
    assert not list(Path("/sys/fs/cgroup").glob(f"**/*crypto-{os.getpid()}-*"))


def test_unconfined_run_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        cgroups, "detect", lambda *_a, **_k: cgroups.Backend("not running as root: no limits")
    )
    b = bench(languages=["python"], iterations=2, memory_mb=128, tier_profile="aws-lambda")
    ctx = RunContext(
        bench=b, repetition=0, scratch=tmp_path, artifacts=tmp_path, deadline=time.monotonic() + 60
    )
    out = Crypto().run(ctx, Crypto.parse(ctx.bench))
    assert out.status == "ok", out.error
    assert out.samples["tier"]["limits_enforced"] is False
    assert out.samples["tier"]["reason"] == "not running as root: no limits"
    assert out.params["limits_enforced"] is False
    assert not [m for m in out.metrics if ".cg_" in m]
