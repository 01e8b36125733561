"""Issue 17: the factors study's plans end to end at reduced scale (faas-factors-reduced.yml, on
tests/faas/factors-profile.yml: 3072 MB hosts); its outcomes (containers per host, requests per
host sd, the retention curve) come from what the emulator did: placements on hosts and containers
reclaimed after their drawn idle lifetimes."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testbed_agent.workloads.faas import _host_regression, _observe, _retention_metrics, ols
from testbed_services.faas.profiles import load_profile
from testbed_services.faas.retention import Retention

from .conftest import needs_root

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PROFILE = Path(__file__).resolve().parent / "factors-profile.yml"
#: containers of the ladder's 1024 MB on one 3072 MB host
PER_HOST = 3
GAPS = [0.5, 3.5, 4.5, 6, 8, 11]


@pytest.fixture(scope="module")
def records(tmp_path_factory):
    needs_root()
    out = tmp_path_factory.mktemp("factors")
    plan = yaml.safe_load((ROOT / "workloads/plans/faas-factors-reduced.yml").read_text())
    for bench in plan["benchmarks"]:
        bench["params"]["profile"] = "test-factors"
    (out / "plan.yml").write_text(yaml.safe_dump(plan))
    # profiles are named (params.profile): a FaaS directory with the test profile next to the real ones
    faas = out / "faas-dir"
    (faas / "profiles").mkdir(parents=True)
    (faas / "functions").symlink_to(ROOT / "workloads/faas/functions")
    (faas / "profiles/test-factors.yml").symlink_to(PROFILE)
    cmd = [sys.executable, "-m", "testbed_agent", "run", str(out / "plan.yml")]
    cmd += ["--out", str(out), "--host", "faas", "--node-exporter", "", "--no-progress"]
    env = {**os.environ, "TESTBED_FAAS_DIR": str(faas)}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    recs = [json.loads(line) for line in (out / "faas.jsonl").read_text().splitlines()]
    assert all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    return {r["benchmark"]: r for r in recs}


def placements(calls: list[dict]) -> tuple[dict[str, set], dict[str, int]]:
    """Containers (instance ids) and requests per host, from the per-call samples."""
    per_host: dict[str, set] = {}
    requests: dict[str, int] = {}
    for s in calls:
        per_host.setdefault(s["host_id"], set()).add(s["instance_id"])
        requests[s["host_id"]] = requests.get(s["host_id"], 0) + 1
    return per_host, requests


def test_concurrency_ladder_outcomes_come_from_placements(records):
    spreads = []
    for c in (1, 4, 6):
        r = records[f"faas_factors_conc_{c}"]
        m, calls = r["metrics"], r["samples"]["calls"]
        per_host, requests = placements(calls)
        containers = [len(v) for v in per_host.values()]
        assert m["containers_per_host_mean"]["value"] == pytest.approx(statistics.fmean(containers))
        assert m["hosts_used"]["value"] == len(per_host) >= math.ceil(m["instances_used"]["value"] / PER_HOST)
        assert max(containers) <= PER_HOST, "a 3072 MB host holds three 1024 MB containers"
        for host, ids in per_host.items():  # the emulator's own count of the host's containers
            assert max(s["host_containers"] for s in calls if s["host_id"] == host) == len(ids)
        sd = statistics.stdev(requests.values()) if len(requests) > 1 else 0.0
        assert m["requests_per_host_sd"]["value"] == pytest.approx(sd)
        assert m["requests_per_host_mean"]["value"] == pytest.approx(len(calls) / len(per_host))
        assert m["instances_used"]["value"] <= c and all(s["host_uptime_s"] >= 0 for s in calls)
        spreads.append(sd)
    assert records["faas_factors_conc_4"]["metrics"]["hosts_used"]["value"] >= 2
    assert max(spreads) > 0, "4 containers on 3-container hosts: one host serves more requests"


def num(gap: float) -> str:
    return f"{gap:g}".replace(".", "_")


def gap_runs(r: dict) -> list[tuple[float, list[dict], dict, list[dict]]]:
    """Per gap: (gap, its warm-up calls, what the pool held after it, its calls after it)."""
    calls, seen = r["samples"]["calls"], r["samples"]["retention"]
    warm = [s for s in calls if s["phase"] == "warmup"]
    n = len(warm) // len(GAPS)
    return [
        (
            g,
            warm[k * n : (k + 1) * n],
            seen[k],
            [s for s in calls if s["phase"] == f"gap_{num(g)}s"],
        )
        for k, g in enumerate(GAPS)
    ]


def binomial_tol(p: float, n: int) -> float:
    """Half-width of a share of n draws with probability p: 4 sd (a false alarm ~1e-4 per check),
    plus one draw for the discreteness."""
    return 4 * math.sqrt(p * (1 - p) / n) + 1 / n


def test_each_container_lives_its_drawn_idle_lifetime(records):
    r = records["faas_factors_retention"]
    assert [o["gap_s"] for o in r["samples"]["retention"]] == GAPS
    for gap, warm, seen, after in gap_runs(r):
        pool = seen["containers"]
        assert len(after) == len(warm) == len(pool) == 16 and all(s["new_instance"] for s in warm), gap
        life = {s["instance_id"]: s["instance_keep_alive_s"] for s in warm}
        for c in pool:  # retained exactly while idle within the drawn lifetime
            if c["idle_s"] is not None:
                assert gap <= c["idle_s"] <= seen["max_idle_s"], c
                assert c["retained"] == (c["idle_s"] <= life[c["instance_id"]]), c
            else:  # reclaimed: its lifetime ran out before the observation
                assert not c["retained"] and life[c["instance_id"]] < seen["max_idle_s"], c
        used = {s["instance_id"] for s in after if s["recycled"]}
        kept = {c["instance_id"] for c in pool if c["retained"]}
        assert used <= kept, f"gap {gap}: reused only if retained (this gap's fresh containers)"
        assert all(life[i] >= gap for i in used), f"gap {gap}: a container reused after its lifetime"


def test_retention_curve_follows_the_profile_model(records):
    r = records["faas_factors_retention"]
    m, model = r["metrics"], load_profile(PROFILE).container_retention
    curve = [m[f"retained_fraction_gap_{num(g)}s"]["value"] for g in GAPS]
    assert curve[0] == 1 and m["recycled_fraction_gap_0_5s"]["value"] == 1, "all within the 3 s minimum"
    n = 16
    for (gap, _, seen, _), frac in zip(gap_runs(r), curve, strict=True):
        # each container was idle between the gap and the time since its warm-up started
        hi, lo = model.survival(gap), model.survival(seen["max_idle_s"])
        assert frac == sum(c["retained"] for c in seen["containers"]) / n
        assert lo - binomial_tol(lo, n) <= frac <= hi + binomial_tol(hi, n), (gap, frac, lo, hi)
    for k in range(1, len(GAPS)):  # independent gaps: non-increasing up to chance
        sd = math.hypot(
            *(math.sqrt(model.survival(g) * (1 - model.survival(g)) / n) for g in GAPS[k - 1 : k + 1])
        )
        assert curve[k] <= curve[k - 1] + 4 * sd, f"the curve rises at {GAPS[k]} s beyond chance"
    # all drawn lifetimes of the run: their survival curve is non-increasing and follows the model
    drawn = [s["instance_keep_alive_s"] for _, warm, _, _ in gap_runs(r) for s in warm]
    survival = [sum(x > g for x in drawn) / len(drawn) for g in GAPS]
    assert survival == sorted(survival, reverse=True) and survival[0] == 1
    for gap, share in zip(GAPS, survival, strict=True):
        p = model.survival(gap)
        assert abs(share - p) <= binomial_tol(p, len(drawn)), (gap, share, p)
    assert "keep_alive_s" not in r["params"], "the curve is not a configured keep-alive"


def test_memory_and_stress_cells_run(records):
    for name in ("faas_factors_mem_128", "faas_factors_mem_1536"):
        assert records[name]["metrics"]["calcs_per_s"]["value"] > 0
    cw = records["faas_factors_stress_3"]["metrics"]
    assert cw["cold_fraction"]["value"] == 0.5 and cw["cold_start_s"]["value"] > 0
    kinds = {s["cold_start_kind"] for s in records["faas_factors_stress_3"]["samples"]["calls"]}
    assert kinds & {"provider", "host", "container"}


def test_survival_is_what_draw_gives():
    import random

    rng = random.Random(7)
    for model in (
        load_profile(PROFILE).container_retention,
        Retention(model="exponential", mean_s=2.0, max_s=5.0),
        Retention(model="uniform", low_s=1.0, high_s=3.0, min_s=1.5),
        Retention(model="fixed", value_s=2.0),
    ):
        drawn = [model.draw(rng) for _ in range(4000)]
        for x in (0.5, 1.6, 2.5, 3.5, 4.5, 6, 11, 18):
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


def test_host_regression_without_scipy_is_left_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agent's core has no scipy (it comes with the notebooks extra): no slope, no crash."""
    import sys

    monkeypatch.setitem(sys.modules, "scipy", None)
    assert ols([1, 2, 3], [1.0, 2.0, 3.0]) is None
    calls = [{"inspector": {"host_containers": x, "handler_s": 0.1}, "round_trip_s": 0.2} for x in (1, 2, 3)]
    assert _host_regression(calls) == {}


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
