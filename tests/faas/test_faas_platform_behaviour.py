"""Issue 17 item 2: what the emulator does, not what it is set to: host expiry and container expiry
drawn from the profile's retention models, placement on hosts with a capacity, provider/host/
container cold starts as distinct paths with their own measured costs."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import yaml

from testbed_services.faas.client import FaasClient
from testbed_services.faas.emulator import Deployment, Emulator
from testbed_services.faas.instance import Host
from testbed_services.faas.profiles import load_profile

from .conftest import TEST_PROFILE

pytestmark = pytest.mark.integration

EVENT = {"array_size": 10, "function_calls": 5}


@pytest.fixture(scope="module")
def short_lived(tmp_path_factory, request):
    """An emulator whose hosts live 3-4 s and whose containers idle 0.5-1 s before reclaim."""
    from .conftest import Served, needs_root

    needs_root()
    tmp = tmp_path_factory.mktemp("lifetimes")
    doc = yaml.safe_load(TEST_PROFILE.read_text())
    doc["retention"] = {
        "container": {"model": "uniform", "low_s": 0.5, "high_s": 1.0},
        "host": {"model": "uniform", "low_s": 3.0, "high_s": 4.0},
    }
    doc["host"] = {"memory_mb": 512}
    profile = tmp / "short.yml"
    profile.write_text(yaml.safe_dump(doc))
    s = Served(tmp, "--profile", str(profile))
    yield s
    s.client.close()
    s.stop()


def test_cold_start_paths_are_distinct(served):
    # hosts that do not expire (the test profile has no retention model): on a loaded machine the
    # two long calls below can outlast a 3-4 s host, and the last call would rightly be cold
    c = served.client
    c.deploy("paths", function="calcs", memory_mb=128)
    first = c.invoke("paths", EVENT)[1]["inspector"]
    assert first["cold_start_kind"] == "provider" and first["provider_s"] > 0 and first["host_s"] > 0
    # a second container of the same function on the same host: the package is there already
    with ThreadPoolExecutor(2) as pool:
        own = [FaasClient(served.url) for _ in range(2)]
        both = list(pool.map(lambda cl: cl.invoke("paths", {**EVENT, "function_calls": 20000})[1], own))
    news = [b["inspector"] for b in both if b["inspector"]["new_instance"]]
    assert news and all(i["cold_start_kind"] in ("container", "host") for i in news)
    same_host = [i for i in news if i["host_id"] == first["host_id"]]
    assert all(i["cold_start_kind"] == "container" and i["provider_s"] == i["host_s"] == 0 for i in same_host)
    assert all(i["container_s"] > 0 for i in [first, *news])
    warm = c.invoke("paths", EVENT)[1]["inspector"]
    assert warm["recycled"] and warm["cold_start_kind"] is None and warm["container_s"] == 0


def test_containers_expire_after_drawn_idle_lifetimes(short_lived):
    c = short_lived.client
    c.deploy("idle", function="calcs", memory_mb=128)
    insp = c.invoke("idle", EVENT)[1]["inspector"]
    assert 0.5 <= insp["instance_keep_alive_s"] <= 1.0, "drawn from the profile's container model"
    listed = {i["id"]: i for i in c.info()["instances"]}[insp["instance_id"]]
    assert listed["keep_alive_s"] == insp["instance_keep_alive_s"] and listed["host_expired"] is False
    time.sleep(0.2)
    assert c.invoke("idle", EVENT)[1]["inspector"]["recycled"], "reused within its idle lifetime"
    time.sleep(1.5)
    assert not c.invoke("idle", EVENT)[1]["inspector"]["recycled"], "reclaimed after it"


@pytest.mark.slow
def test_hosts_expire_and_capacity_places_containers(short_lived):
    c = short_lived.client
    c.deploy("pack", function="calcs", memory_mb=256, keep_alive_s=60)
    clients = [FaasClient(short_lived.url) for _ in range(4)]
    with ThreadPoolExecutor(4) as pool:
        bodies = list(pool.map(lambda cl: cl.invoke("pack", {**EVENT, "function_calls": 3000})[1], clients))
    assert all("inspector" in b for b in bodies), [b.get("error") for b in bodies]
    ins = [b["inspector"] for b in bodies]
    per_host: dict[str, set] = {}
    for i in ins:
        per_host.setdefault(i["host_id"], set()).add(i["instance_id"])
    assert all(len(v) <= 2 for v in per_host.values()), "512 MB hosts hold two 256 MB containers"
    hosts = {h["id"]: h for h in c.info()["hosts"]}
    assert all(3.0 <= hosts[h]["lifetime_s"] <= 4.0 for h in per_host if h in hosts)
    assert all(i["host_uptime_s"] >= 0 for i in ins)
    time.sleep(4.5)
    after = c.invoke("pack", EVENT)[1]["inspector"]
    assert after["host_id"] not in per_host and after["new_instance"], "expired hosts take their containers"


class Warm:
    """Stand-in for a started instance: what the pool's pick reads of one (no process)."""

    def __init__(self, dep: Deployment, host: Host, idle_s: float = 0.0, keep_alive_s: float = 60) -> None:
        self.deployment, self.host, self.keep_alive_s = dep, host, keep_alive_s
        self.id, self.retired, self.inflight = f"i-{id(self)}", False, 0
        self.last_used = time.monotonic() - idle_s

    def alive(self) -> bool:
        return True


@pytest.fixture
def pool(tmp_path: Path):
    """An emulator object with no reaper running, so only the pick decides what is reused."""
    emu = Emulator(load_profile(TEST_PROFILE), tmp_path, function_dirs=[], cgroup="none", seed=1)
    emu._stop.set()
    emu._reaper.join()
    dep = Deployment(
        name="f", code=None, memory_mb=128, timeout_s=3, keep_alive_s=60, tmp_mb=16, concurrency=1, env={}
    )
    yield emu, dep
    emu.instances.clear()
    emu.shutdown()


def live_host() -> Host:
    return Host(capacity_mb=512, lifetime_s=3600)


def test_warm_pick_skips_instances_on_expired_hosts(pool):
    emu, dep = pool
    gone = Host(capacity_mb=512, lifetime_s=5.0, booted=time.monotonic() - 10, used_mb=128, containers=1)
    stale = Warm(dep, gone)
    emu.hosts, emu.instances = [gone], [stale]
    picked = emu._pick(dep)
    assert isinstance(picked, Host) and picked is not gone, "a new container on a new host, not the stale one"
    assert stale.inflight == 0 and gone.requests == 0
    fresh = Warm(dep, live_host())
    emu.instances.append(fresh)
    assert emu._pick(dep) is fresh and fresh.inflight == 1, "a warm instance on a live host is reused"


def test_warm_pick_skips_instances_past_their_idle_lifetime(pool):
    emu, dep = pool
    host = live_host()
    idle = Warm(dep, host, idle_s=2.0, keep_alive_s=1.0)
    within = Warm(dep, host, idle_s=3.0, keep_alive_s=10.0)
    emu.hosts, emu.instances = [host], [idle, within]
    assert emu._pick(dep) is within, "the more recently used one is past its idle lifetime"
    assert isinstance(emu._pick(dep), Host), "the only other one is busy or expired"
