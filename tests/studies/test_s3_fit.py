"""The emulator's aws-lambda-2017 profile reproduces what the factors study observed, within the
tolerances its manifest states (workloads/studies/S3/manifest.yml, physics.*): the models alone,
seeded; tests/faas/test_faas_study_fit.py checks a live, time-scaled emulator."""

from __future__ import annotations

import random
import statistics

import pytest

from testbed_services.faas.profiles import load_profile
from testbed_shared.studies import manifest

PROFILE = load_profile("aws-lambda-2017")
S3 = manifest("S3")


def _published(pid: str) -> float:
    return float(S3.published_value(pid).value)


def test_container_idle_lifetimes_give_the_10_minute_and_40_minute_observations() -> None:
    recreated = _published("rq4.recreated_10min")
    survival = PROFILE.container_retention.survival(600)
    assert 1 - survival == pytest.approx(recreated, abs=0.005)
    assert PROFILE.container_retention.survival(2400) == 0.0  # none reused after 40 minutes idle
    rng = random.Random(24)
    draws = [PROFILE.container_retention.draw(rng) for _ in range(20000)]
    assert sum(d <= 600 for d in draws) / len(draws) == pytest.approx(recreated, abs=0.015)


def test_host_ages_reproduce_the_uptimes_of_91_hosts() -> None:
    """Over many samples of 91 hosts, the study's mean uptime is typical and its min and max are
    within the sampling spread the manifest states (physics.host_uptime)."""
    n = int(_published("host.count"))
    rng = random.Random(145)
    means, mins, maxs = [], [], []
    for _ in range(2000):
        ages = [PROFILE.host_age.draw(rng) for _ in range(n)]
        means.append(statistics.fmean(ages))
        mins.append(min(ages))
        maxs.append(max(ages))
    means.sort()
    lo, hi = means[int(0.025 * len(means))], means[int(0.975 * len(means))]
    assert lo <= _published("host.uptime_mean") <= hi
    assert (lo, hi) == pytest.approx((7111, 8256), abs=120)  # the range the manifest quotes
    assert statistics.median(mins) == pytest.approx(_published("host.uptime_min"), rel=0.35)
    assert statistics.median(maxs) == pytest.approx(_published("host.uptime_max"), rel=0.05)
    assert PROFILE.host_retention.draw(rng) >= max(maxs), "no host is older than its lifetime"


def test_host_packing_is_the_observed_26_and_12() -> None:
    assert PROFILE.host_max_containers == int(_published("rq3.max_containers_128"))
    assert PROFILE.host_memory_mb // 512 == int(_published("rq3.max_containers_512"))
    assert PROFILE.host_memory_mb // 128 >= PROFILE.host_max_containers


def test_modelled_vm_cold_path_is_the_derived_12_2_s() -> None:
    warm, vm_cold = _published("rq4.warm_time"), _published("rq4.vm_cold_time")
    container_cold = (2 * warm - (1 - _published("rq4.recreated_10min")) * warm) / _published(
        "rq4.recreated_10min"
    )
    assert container_cold == pytest.approx(3.41, abs=0.01)
    assert PROFILE.cold_start_s["host"] == pytest.approx(vm_cold - container_cold, abs=0.05)


def test_time_scale_divides_every_emulated_time() -> None:
    scaled = PROFILE.container_retention.scaled(100)
    assert scaled.survival(6.0) == pytest.approx(PROFILE.container_retention.survival(600))
    assert PROFILE.host_age.scaled(100).mean() == pytest.approx(PROFILE.host_age.mean() / 100)
