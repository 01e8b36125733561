"""Units of the factors study's machinery, without an emulator: retention models (what ``draw``
gives is what ``survival`` says), the latency regression on containers per host, and what the
retention mode counts as retained."""

from __future__ import annotations

import math

import pytest

from testbed_agent.workloads.faas import _host_regression, _observe, _retention_metrics, ols
from testbed_services.faas.profiles import load_profile
from testbed_services.faas.retention import Retention


def binomial_tol(p: float, n: int) -> float:
    """Half-width of a share of n draws with probability p: 4 sd (a false alarm ~1e-4 per check),
    plus one draw for the discreteness."""
    return 4 * math.sqrt(p * (1 - p) / n) + 1 / n


def test_survival_is_what_draw_gives():
    import random

    rng = random.Random(7)
    for model in (
        load_profile("aws-lambda-2017").container_retention,
        Retention(model="triangular", low_s=0.0, mode_s=10130.0, high_s=12910.0),
        Retention(model="exponential", mean_s=2.0, max_s=5.0),
        Retention(model="uniform", low_s=1.0, high_s=3.0, min_s=1.5),
        Retention(model="fixed", value_s=2.0),
    ):
        drawn = [model.draw(rng) for _ in range(4000)]
        for x in (0.5, 1.6, 2.5, 3.5, 4.5, 6, 11, 18, 300, 600, 2400, 7680, 12000):
            p = model.survival(x)
            assert abs(sum(d > x for d in drawn) / len(drawn) - p) <= binomial_tol(p, len(drawn)), (model, x)
    assert Retention().survival(1e9) == 1 and Retention(model="fixed", value_s=2).survival(2) == 0


def synthetic(xs: list[int], slope: float, noise: list[float]) -> list[dict]:
    return [
        {"inspector": {"host_containers": x, "handler_s": 0.1 + slope * x + e}, "round_trip_s": 0.2 + e}
        for x, e in zip(xs, noise, strict=True)
    ]


def test_latency_regression_on_host_containers():
    from scipy import stats

    xs = [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    exact = _host_regression(synthetic(xs, 0.02, [0.0] * len(xs)))
    assert exact["handler_s_per_host_container"]["value"] == pytest.approx(0.02)
    assert exact["handler_s_per_host_container_se"]["value"] == pytest.approx(0, abs=1e-12)
    assert exact["round_trip_s_per_host_container"]["value"] == pytest.approx(0, abs=1e-12)
    noise = [0.003, -0.002, 0.001, -0.004, 0.002, 0.0, -0.001, 0.003, -0.002, 0.001]
    m = _host_regression(synthetic(xs, 0.02, noise))
    ref = stats.linregress(xs, [0.1 + 0.02 * x + e for x, e in zip(xs, noise, strict=True)])
    assert m["handler_s_per_host_container"]["value"] == pytest.approx(ref.slope)
    assert m["handler_s_per_host_container_se"]["value"] == pytest.approx(ref.stderr)
    low, high = (m[f"handler_s_per_host_container_ci_{q}"]["value"] for q in ("low", "high"))
    assert low < 0.02 < high and high - low == pytest.approx(2 * stats.t.ppf(0.975, 8) * ref.stderr)
    assert ols(xs, [2.0 * x for x in xs])["slope"] == pytest.approx(2.0)
    assert _host_regression(synthetic([3, 3, 3], 0.02, [0.0] * 3)) == {}, "one distinct value: no slope"


def test_host_regression_needs_no_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's core has no scipy (it comes with the notebooks extra): the slope and its interval
    come from the shared interval core all the same."""
    import sys

    monkeypatch.setitem(sys.modules, "scipy", None)
    calls = [
        {"inspector": {"host_containers": x, "handler_s": 0.1 * x}, "round_trip_s": 0.2} for x in (1, 2, 3, 3)
    ]
    assert _host_regression(calls)["handler_s_per_host_container"]["value"] == pytest.approx(0.1)


class Pool:
    """A client whose /info lists a fixed pool."""

    def __init__(self, instances: list[dict]) -> None:
        self.instances = instances

    def info(self) -> dict:
        return {"instances": self.instances}


def test_retained_means_listed_within_lifetime_on_a_live_host():
    import time

    def row(iid, idle, keep, expired=False):
        return {"id": iid, "idle_s": idle, "keep_alive_s": keep, "host_expired": expired}

    pool = Pool([row("a", 4.0, 5.0), row("b", 4.0, 3.9), row("c", 4.0, 9.0, expired=True), row("d", 4, None)])
    warm = [{"ok": True, "inspector": {"instance_id": i}} for i in "abcde"]
    seen = _observe(pool, 4, warm, time.monotonic() - 5)
    retained = {c["instance_id"]: c["retained"] for c in seen["containers"]}
    assert retained == {"a": True, "b": False, "c": False, "d": True, "e": False}
    assert seen["containers"][4]["idle_s"] is None and seen["max_idle_s"] >= 5 and seen["phase"] == "gap_4s"
    m: dict = {}
    _retention_metrics(m, [], [seen])
    assert m["retained_fraction_gap_4s"]["value"] == 2 / 5
