"""Emulator fault campaign (issue 12): 1000 seeded faulty calls, then the emulator still answers
correctly and its memory, FDs, cgroups, mounts, instance directories and children are back at
baseline."""

from __future__ import annotations

import json
import os
import random
import socket
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from testbed_services.faas import cgroups, credentials

from .conftest import TEST_PROFILE

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CALLS = int(os.environ.get("FAAS_CAMPAIGN_CALLS", "1000"))
SEED = 20261124
GOOD = {"array_size": 20, "function_calls": 50, "seed": 7}
TRAVERSALS = ("/etc", "../calcs", "..%2Fcalcs", "..", "/functions/../calcs", "a/b", "", " calcs", "ca\x00lcs")


def _raw(url: str, data: bytes) -> int:
    line, sep, rest = data.partition(b"\r\n")  # the emulator's bearer token after the request line
    data = line + sep + f"Authorization: Bearer {credentials.find(url).token}\r\n".encode() + rest
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the emulator may answer (413) and close before reading a huge body
        reply = b""
        while chunk := sock.recv(1 << 16):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    json.loads(body, parse_constant=lambda c: (_ for _ in ()).throw(AssertionError(c)))
    return int(head.split()[1])


def _malformed(rng: random.Random) -> bytes:
    bodies = [
        b"{not json",
        bytes(rng.randrange(256) for _ in range(64)),
        b'{"keep_alive_s": NaN}',
        b"[" * 50_000,
        b'{"a": Infinity}',
        b"9" * 5000,
    ]
    body = rng.choice(bodies)
    path = rng.choice(["/functions/m", "/functions/good/invoke", "/cold"])
    method = "PUT" if path == "/functions/m" else "POST"
    return f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


class Campaign:
    """The faulty calls, each with the answers it may get."""

    def __init__(self, served, rng: random.Random) -> None:
        self.s, self.c, self.rng = served, served.client, rng
        self.reference: dict | None = None

    def good(self) -> bool:
        status, body, _ = self.c.invoke("good", GOOD)
        result = body.get("result") or {}
        if self.reference is None:
            self.reference = result
        return status == 200 and result.get("checksum") == self.reference["checksum"]

    def crash(self) -> bool:
        status, body, _ = self.c.invoke("crasher", {"op": "crash"})
        return status == 502 and body["error"]["type"] == "InstanceExited"

    def oom(self) -> bool:
        status, body, _ = self.c.invoke("hog", {"mb": 96})
        return status == 502 and body["error"]["type"] in ("MemoryLimitExceeded", "InstanceKilled")

    def timeout(self) -> bool:
        status, body, _ = self.c.invoke("slow", {"op": "sleep", "s": 5})
        return status == 504 and body["error"]["type"] == "Timeout"

    def tmp_full(self) -> bool:
        status, body, _ = self.c.invoke("filler", {"op": "fill"})
        return status == 200 and body["result"]["errno"] == 28

    def fork_bomb(self) -> bool:
        status, body, _ = self.c.invoke("forker", {"op": "fork", "n": 1100, "hold_s": 0.2})
        if status == 502:  # the pids limit or the memory limit stopped it: both are answers
            return body["error"]["type"] in ("MemoryLimitExceeded", "InstanceKilled", "InstanceExited")
        return status == 200 and body["result"]["failed"] > 0

    def huge(self) -> bool:
        head = b"POST /functions/good/invoke HTTP/1.1\r\nHost: x\r\nContent-Length: 200000000\r\n\r\n"
        return _raw(self.s.url, head + b"{" * 65536) == 413

    def big_ok(self) -> bool:
        status, body, _ = self.c.invoke("good", {**GOOD, "padding": "x" * (2 << 20)})
        return status == 200 and body["result"]["checksum"] == self.reference["checksum"]

    def malformed(self) -> bool:
        return _raw(self.s.url, _malformed(self.rng)) == 400

    def traversal(self) -> bool:
        name = self.rng.choice(TRAVERSALS)
        if self.rng.random() < 0.5:
            status, _ = self.c.request("PUT", "/functions/t", {"function": name})
        else:
            status, _ = self.c.request("PUT", "/functions/" + name.replace("/", "%2F") + "x/", {})
        return status in (400, 404)

    def bad_deploy(self) -> bool:
        spec = self.rng.choice(
            [{"keep_alive_s": float("nan")}, {"memory_mb": 10**9}, {"env": [1]}, {"timeout_s": -1}]
        )
        status, _ = self.c.request("PUT", "/functions/b", {"function": "calcs", **spec})
        return status == 400

    def nan_result(self) -> bool:
        status, body, _ = self.c.invoke("nan", {"op": "nan"})
        return status == 500 and body["error"]["type"] == "FunctionError"


WEIGHTS = {
    "good": 18,
    "crash": 6,
    "oom": 1.5,
    "timeout": 3,
    "tmp_full": 5,
    "fork_bomb": 0.5,
    "huge": 5,
    "big_ok": 2,
    "malformed": 25,
    "traversal": 20,
    "bad_deploy": 8,
    "nan_result": 4,
}


def _children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:  # the emulator's request threads come and go: a task may end between listing and reading
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def _cgroup_dirs(pid: int, emu_id: str) -> int:
    own = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, ctrls, path = line.split(":", 2)
        for c in ctrls.split(",") if ctrls else [""]:
            own[c] = path
    count = 0
    for root, point, fstype, opts in cgroups._mounts():
        ctrl = "" if fstype == "cgroup2" else next((c for c in opts if c in own and c), None)
        if ctrl is None:
            continue
        here = cgroups._join(point, root, own.get(ctrl, "/"))
        for base in (here / "testbed-faas" / emu_id, here.parent / f"testbed-faas-{emu_id}"):
            if base.is_dir():
                count += sum(1 for p in base.iterdir() if p.is_dir() and p.name.startswith("i-"))
    return count


def snapshot(served, emu_id: str) -> dict[str, float]:
    pid = served.proc.pid
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kb = int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:")))
    state = Path(served.log).parent / "state"
    with open("/proc/self/mountinfo") as fh:
        mounts = sum(1 for line in fh if line.split()[4].startswith(str(state) + "/"))
    return {
        "rss_mb": rss_kb / 1024,
        "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "cgroups": _cgroup_dirs(pid, emu_id),
        "mounts": mounts,
        "instance_dirs": sum(1 for _ in state.glob("emu-*/i-*")),
        "children": len(_children(pid)),
    }


def _settle(served, emu_id: str, want: Callable[[dict], bool]) -> dict:
    end = time.monotonic() + 20
    snap = snapshot(served, emu_id)
    while not want(snap) and time.monotonic() < end:
        time.sleep(0.2)
        snap = snapshot(served, emu_id)
    return snap


def test_fault_campaign(start_emulator):
    served = start_emulator("--profile", str(TEST_PROFILE))
    c = served.client
    c.deploy("good", function="calcs", memory_mb=128)
    # the faults that restart an instance get a larger CPU share: their cold starts dominate the time
    c.deploy("crasher", function="probe", memory_mb=1024)
    c.deploy("filler", function="probe", memory_mb=128, tmp_mb=8)
    c.deploy("nan", function="probe", memory_mb=128)
    c.deploy("slow", function="probe", memory_mb=1024, timeout_s=0.3)
    c.deploy("hog", function="memhog", memory_mb=64)
    c.deploy("forker", function="probe", memory_mb=2048, timeout_s=60)
    camp = Campaign(served, random.Random(SEED))
    assert camp.good()
    emu_id = c.info()["emulator_id"]
    c.cold(None, scope="host")
    idle = _settle(served, emu_id, lambda s: s["children"] == 0)
    kinds = random.Random(SEED).choices(list(WEIGHTS), weights=list(WEIGHTS.values()), k=CALLS)
    done, unexpected, spent = Counter(), Counter(), Counter()
    t0 = time.monotonic()
    for kind in kinds:
        done[kind] += 1
        t = time.monotonic()
        if not getattr(camp, kind)():
            unexpected[kind] += 1
        spent[kind] += time.monotonic() - t
    elapsed = time.monotonic() - t0
    assert camp.good(), "the emulator still answers correctly"
    c.cold(None, scope="host")
    after = _settle(served, emu_id, lambda s: s["children"] == 0 and s["instance_dirs"] == 0)
    print(f"\nfault campaign: {CALLS} faulty calls in {elapsed:.0f} s, {sum(unexpected.values())} unexpected")
    print("  by kind: " + ", ".join(f"{k} {n} ({spent[k]:.0f} s)" for k, n in sorted(done.items())))
    print(f"  baseline {idle}\n  after    {after}")
    assert not unexpected, f"unexpected answers: {dict(unexpected)}"
    for key in ("fds", "cgroups", "mounts", "instance_dirs", "children"):
        assert after[key] <= idle[key], f"{key}: {idle[key]} -> {after[key]}"
    growth = f"RSS {idle['rss_mb']:.1f} -> {after['rss_mb']:.1f} MB"
    assert after["rss_mb"] < idle["rss_mb"] * 1.5 + 16, growth
