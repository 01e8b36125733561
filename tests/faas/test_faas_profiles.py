"""Platform profiles: CPU share by memory, /tmp sizes, prices."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed_services.faas.profiles import MIB, available, load_profile
from testbed_shared import errors

#: the physics parameters an era profile (a platform as a paper measured it) must source
ERA_PHYSICS = ("memory", "cpu.mb_per_vcpu", "tmp", "timeout_s", "retention.container", "retention.host")


def test_shipped_profiles_load_with_sources():
    assert {"aws-lambda", "gcf-gen2", "azure-consumption"} <= set(available())
    for name in available():
        p = load_profile(name)
        text = Path(p.path).read_text(encoding="utf-8")
        documented = ("Sources" in text and "https://" in text) or p.sources
        assert documented, f"{name} must document its sources"
        if p.sources:  # a sources: block names one source per physics parameter the profile sets
            keys = set(p.sources)
            wanted = [k for k in ERA_PHYSICS if k in keys or not k.startswith(("cpu.", "retention."))]
            if p.cpu_model == "proportional":
                wanted.append("cpu.mb_per_vcpu")
            if p.container_retention.model != "never":
                wanted.append("retention.container")
            missing = [k for k in wanted if not any(s == k or s.startswith(k + ".") for s in keys)]
            assert not missing, f"{name}: no source for {missing}"
            for key in ("host.max_containers", "host.reclaim_empty_s", "scale_out.interval_s"):
                set_here = {
                    "host.max_containers": p.host_max_containers,
                    "host.reclaim_empty_s": p.host_reclaim_empty_s != float("inf"),
                    "scale_out.interval_s": p.scale_out_interval_s,
                }[key]
                assert not set_here or key in keys, f"{name}: {key} is set without a source"
            for path in p.cold_start_s:
                assert f"cold_start_s.{path}" in keys, f"{name}: cold_start_s.{path} without a source"


def test_aws_cpu_proportional_to_memory():
    p = load_profile("aws-lambda")
    assert p.vcpus(1769) == pytest.approx(1.0)
    assert p.vcpus(128) == pytest.approx(128 / 1769)
    assert p.vcpus(10240) == pytest.approx(10240 / 1769) and p.vcpus(20000) == 6  # capped at 6
    assert p.tmp_kind == "disk" and p.tmp_mb(128) == 512 and p.tmp_mb(128, 10240) == 10240
    with pytest.raises(errors.TestbedError, match="outside"):
        p.check_memory(64)
    with pytest.raises(errors.TestbedError, match="/tmp size"):
        p.tmp_mb(128, 100)


def test_gcf_tiers_and_memory_tmp():
    p = load_profile("gcf-gen2")
    assert p.vcpus(128) == pytest.approx(0.083) and p.vcpus(2048) == 1.0
    with pytest.raises(errors.TestbedError, match="not a tier"):
        p.check_memory(300)
    assert p.tmp_kind == "memory" and p.tmp_mb(512) == 512  # the /tmp is as large as the memory limit
    # per-vCPU + per-GiB rates become one per-GB-second rate for the tier
    table = p.price_table(1024)
    assert table.per_gb_second["x86_64"] == pytest.approx(0.583 * 0.000024 + 0.0000025)
    assert table.granularity_ms == 100


def test_azure_bills_observed_memory():
    p = load_profile("azure-consumption")
    assert p.instance_concurrency > 1 and p.vcpus(1536) == 1.0
    assert p.billed_memory_mb(1536, 200 * MIB) == 256  # rounded up to 128 MB steps
    assert p.billed_memory_mb(1536, 1 * MIB) == 128
    assert p.billed_memory_mb(1536, None) == 1536


def test_unknown_and_invalid_profiles(tmp_path):
    with pytest.raises(errors.TestbedError, match="unknown FaaS profile"):
        load_profile("no-such-platform")
    bad = tmp_path / "bad.yml"
    bad.write_text("name: bad\nmemory: {min_mb: 1, max_mb: 2}\ncpu: {model: magic}\ntmp: {kind: disk}\n")
    with pytest.raises(errors.TestbedError, match="invalid FaaS profile"):
        load_profile(bad)
