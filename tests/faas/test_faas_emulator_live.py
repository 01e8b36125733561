"""The emulator for real: cold/warm, forced cold, keep-alive, memory kill, /tmp full, CPU quota."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from testbed_services.faas.client import FaasClient

pytestmark = pytest.mark.integration

SMALL_CALCS = {"array_size": 20, "function_calls": 50}


def test_first_call_cold_then_warm(served):
    c = served.client
    c.deploy("cw", function="calcs", memory_mb=512)
    s1, b1, _ = c.invoke("cw", SMALL_CALCS)
    s2, b2, _ = c.invoke("cw", SMALL_CALCS)
    assert (s1, s2) == (200, 200)
    i1, i2 = b1["inspector"], b2["inspector"]
    assert i1["new_instance"] is True and i2["new_instance"] is False
    assert i1["instance_id"] == i2["instance_id"] and i1["host_id"] == i2["host_id"]
    assert i1["cold_start_s"] > i1["init_s"] > 0 and i2["cold_start_s"] == 0
    assert b1["result"]["calcs"] == 1000
    for key in (
        "cpu_model",
        "cpu_user_s",
        "cpu_system_s",
        "cpu_steal_s",
        "memory_peak_bytes",
        "started_at",
        "ended_at",
        "host_uptime_s",
        "handler_s",
    ):
        assert key in i2
    assert i2["limits_enforced"] is True and i2["cgroup"] in ("v1", "v2")
    assert i2["memory_peak_bytes"] > 5 << 20, "the interpreter's memory is charged to the instance cgroup"
    assert b2["billing"]["gb_seconds"] > 0 and b2["billing"]["price"] > 0


def test_forced_cold_redeploy_and_host_cold(served):
    c = served.client
    c.deploy("fc", function="calcs", memory_mb=256)
    first = c.invoke("fc", SMALL_CALCS)[1]["inspector"]
    assert c.cold("fc")["retired"] == 1
    forced = c.invoke("fc", SMALL_CALCS)[1]["inspector"]
    assert forced["new_instance"] and forced["instance_id"] != first["instance_id"]
    c.deploy("fc", function="calcs", memory_mb=320)
    redeployed = c.invoke("fc", SMALL_CALCS)[1]["inspector"]
    assert redeployed["new_instance"] and redeployed["version"] == 2
    c.cold("fc", scope="host")
    fresh = c.invoke("fc", SMALL_CALCS)[1]["inspector"]
    assert fresh["new_instance"] and fresh["host_id"] != redeployed["host_id"]
    assert fresh["host_uptime_s"] < redeployed["host_uptime_s"] + 60


def test_keep_alive_recycles_idle_instance(served):
    c = served.client
    c.deploy("ka", function="calcs", keep_alive_s=0.5)
    first = c.invoke("ka", SMALL_CALCS)[1]["inspector"]
    deadline = time.monotonic() + 10
    while any(i["function"] == "ka" for i in c.info()["instances"]):
        assert time.monotonic() < deadline, "idle instance was not reclaimed after its keep-alive"
        time.sleep(0.1)
    again = c.invoke("ka", SMALL_CALCS)[1]["inspector"]
    assert again["new_instance"] and again["instance_id"] != first["instance_id"]


def test_memory_limit_kills_instance_not_emulator(served):
    c = served.client
    c.deploy("hog", function="memhog", memory_mb=128)
    status, body, _ = c.invoke("hog", {"mb": 400})
    assert status == 502
    assert body["error"]["type"] == "MemoryLimitExceeded"
    assert "memory limit of 128 MB" in body["error"]["message"]
    status, body, _ = c.invoke("hog", {"mb": 16})
    assert status == 200 and body["inspector"]["new_instance"] is True
    assert c.info()["inflight"] == 0


def test_tmp_full_fails_the_write_not_the_emulator(served):
    c = served.client
    info = c.deploy("io", function="dd", tmp_mb=16)
    assert info["tmp_mb"] == 16
    ok = c.invoke("io", {"args": ["if=/dev/zero", "of=small", "bs=1M", "count=4"]})[1]
    assert ok["status"] == "ok" and ok["result"]["bytes"] == 4 << 20 and ok["result"]["tmp"] == "/tmp"
    assert ok["inspector"]["tmp"] == {"kind": "disk", "size_bytes": 16 << 20, "enforced": True}
    status, body, _ = c.invoke("io", {"args": ["if=/dev/zero", "of=big", "bs=1M", "count=64"]})
    assert status == 500 and body["error"]["type"] == "FunctionError"
    assert "No space left on device" in body["error"]["message"]
    status, body, _ = c.invoke(
        "io", {"args": ["if=/dev/zero", "of=big", "bs=1M", "count=1"], "cleanup": True}
    )
    assert status == 200 and body["inspector"]["new_instance"] is False


def test_cpu_quota_follows_memory(served):
    c = served.client
    c.deploy("slow", function="calcs", memory_mb=128)
    c.invoke("slow", SMALL_CALCS)
    insp = c.invoke("slow", {"array_size": 20, "function_calls": 1500})[1]["inspector"]
    cpu = insp["cpu_user_s"] + insp["cpu_system_s"]
    assert insp["vcpus"] == pytest.approx(128 / 1769)
    # 0.072 vCPU: the wall time is many times the CPU time, and CFS reports throttling
    assert insp["handler_s"] > 4 * cpu
    assert insp["cpu_throttled_s"] > 0


def test_concurrent_calls_get_separate_instances(served):
    c = served.client
    c.deploy("par", function="calcs", memory_mb=200)
    c.cold(None, scope="host")

    def one(_):
        own = FaasClient(served.url)
        try:
            return own.invoke("par", {"array_size": 20, "function_calls": 2000})[1]["inspector"]
        finally:
            own.close()

    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(one, range(4)))
    assert len({i["instance_id"] for i in got}) == 4
    assert all(i["new_instance"] for i in got)
    # 512 MB emulated hosts hold two 200 MB instances each
    assert len({i["host_id"] for i in got}) == 2


def test_api_errors(served):
    c = served.client
    assert c.request("POST", "/functions/nope/invoke", {})[0] == 404
    status, body = c.request("PUT", "/functions/x", {"function": "calcs", "memory_mb": 99999})
    assert status == 400 and "outside" in body["error"]["message"]
    status, body = c.request("PUT", "/functions/x", {"function": "no-such-fn"})
    assert status == 400 and "unknown function" in body["error"]["message"]
    assert c.request("GET", "/nowhere")[0] == 404


def test_crypto_function_uses_the_crypto_suite_and_key_service(served):
    c = served.client
    c.deploy("enc", function="crypto", memory_mb=512)
    event = {
        "alg": "aes-gcm",
        "key_bits": 256,
        "op": "encrypt",
        "payload_bytes": 1024,
        "iterations": 5,
        "key_service": True,
        "key_id": "k1",
    }
    status, body, _ = c.invoke("enc", event)
    assert status == 200, body["error"]
    out = body["result"]
    assert out["crypto"]["language"] == "python" and out["crypto"]["alg"] == "aes-gcm"
    assert len(out["crypto"]["times_ns"]) == 5 and out["crypto"]["vectors"]["passed"] >= 1
    assert out["key_fetch_s"] > 0
    again = c.invoke("enc", event)[1]["result"]
    assert again["key_fingerprint"] == out["key_fingerprint"], "the key service returns a stable key per id"


def test_gcf_in_memory_tmp_counts_against_memory(start_emulator):
    c = start_emulator("--profile", "gcf-gen2").client
    c.deploy("io", function="dd", memory_mb=256)
    status, body, _ = c.invoke("io", {"args": ["if=/dev/zero", "of=f", "bs=1M", "count=96"]})
    assert status == 200
    assert body["inspector"]["tmp"] == {"kind": "memory", "size_bytes": 256 << 20, "enforced": True}
    assert body["inspector"]["memory_peak_bytes"] >= 96 << 20, "tmpfs pages are charged to the instance"
    status, body, _ = c.invoke("io", {"args": ["if=/dev/zero", "of=g", "bs=1M", "count=300"]})
    assert status in (500, 502), body  # /tmp full or the memory limit, never the emulator
    assert c.invoke("io", {"args": ["if=/dev/zero", "of=h", "bs=1k", "count=1"]})[0] == 200


def test_timeout_kills_the_instance(served):
    c = served.client
    c.deploy("late", function="calcs", memory_mb=128, timeout_s=0.5)
    status, body, _ = c.invoke("late", {"array_size": 20, "function_calls": 20000})
    assert status == 504 and body["error"]["type"] == "Timeout"
    assert "timed out after 0.50 seconds" in body["error"]["message"]
    status, body, _ = c.invoke("late", SMALL_CALCS)
    assert status == 200 and body["inspector"]["new_instance"] is True


def test_restart_cleans_up_after_a_killed_emulator(start_emulator, tmp_path):
    first = start_emulator("--profile", "aws-lambda", "--state-dir", str(tmp_path / "state"))
    first.client.deploy("f", function="dd")
    assert first.client.invoke("f", {"args": ["if=/dev/zero", "of=x", "bs=1k", "count=1"]})[0] == 200
    emu_id = first.client.info()["emulator_id"]
    os.kill(first.proc.pid, signal.SIGKILL)  # no shutdown: mounts and cgroups stay behind
    first.proc.wait()
    stale = tmp_path / "state" / f"emu-{emu_id}"
    assert _mounts_under(stale), "the killed emulator left its instance's /tmp mounted"
    second = start_emulator("--profile", "aws-lambda", "--state-dir", str(tmp_path / "state"))
    assert not stale.exists() and not _mounts_under(stale)
    leftovers = [p for p in Path("/sys/fs/cgroup").glob("*/**/testbed-faas/*") if p.name == emu_id]
    assert not leftovers, "stale cgroups removed"
    assert "cleaned up after 1 emulator" in second.log.read_text()


def _mounts_under(d):
    with open("/proc/self/mountinfo") as fh:
        return [line.split()[4] for line in fh if line.split()[4].startswith(str(d) + "/")]


def test_bad_requests_get_answers_not_crashes(served):
    c = served.client
    status, body = c.request("PUT", "/functions/y", ["not", "an", "object"])
    assert status == 400 and "JSON object" in body["error"]["message"]
    status, body = c.request("PUT", "/functions/y", {"function": "calcs", "keep_alive_s": "soon"})
    assert status == 400
    status, body = c.request("POST", "/cold", {"scope": "galaxy"})
    assert status == 400
    assert c.info()["inflight"] == 0
