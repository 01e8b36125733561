"""scripts/sequential.py, the loop "add machines until decided or until the cost cap" (issue 34),
rehearsed against the ARM stand-in with seeded synthetic measurements.

The machines are real to the loop: VMs created and rotated over ARM (redeploy, deallocate and
start), each placed by the stand-in on a simulated host whose name reaches the guest through its
KVP pool, read by the agent's identity code into the fingerprint. Only the measurements are drawn:
value = base x (1 + effect on label A) x the physical host's level (seeded by the host's name: a VM
back on a host it had has that host's level) x run noise. The looks are ``testbed-report
sequential``'s; the cost is the Azure role's estimate."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from armclient import Client, stand_in
from repotest import ROOT

from testbed_agent.sysinfo import identity
from testbed_shared import records

pytestmark = [pytest.mark.slow, pytest.mark.integration]
SCRIPT = ROOT / "scripts/sequential.py"


def _load():
    spec = importlib.util.spec_from_file_location("sequential_loop", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


seq = _load()


class Synthetic:
    """Batches on the stand-in: VM -> (label, rotation mode); measurements with a known effect."""

    def __init__(
        self, client: Client, guests: Path, store: Path, vms: dict[str, tuple[str, str]], **kw
    ) -> None:
        self.client, self.guests, self.store, self.vms = client, guests, store, vms
        self.effect, self.seed = kw.get("effect", 0.0), kw.get("seed", 1)
        self.spread, self.noise, self.runs = kw.get("spread", 0.02), kw.get("noise", 0.01), kw.get("runs", 3)
        self.metrics = ("m0", "m1")
        self.group = "testbed-" + store.name
        self.finished = ""

    def first(self) -> None:
        self.client.create_vms(self.group, list(self.vms))
        self._measure(0)

    def rotate(self, k: int) -> None:
        for vm, (_, mode) in self.vms.items():
            for action in ["redeploy"] if mode == "redeploy" else ["deallocate", "start"]:
                self.client.action(self.group, vm, action)
        self._measure(k)

    def finish(self, compare: str) -> None:
        self.finished = compare

    def _level(self, host: str, j: int) -> float:
        return float(np.random.default_rng([self.seed, zlib.crc32(host.encode()), j]).normal(0, self.spread))

    def _measure(self, k: int) -> None:
        run_id = self.store.name if k == 0 else f"{self.store.name}-r{k}"
        out = self.store if k == 0 else self.store / f"rotation-{k}"
        out.mkdir(parents=True, exist_ok=True)
        for n, (vm, (label, _)) in enumerate(self.vms.items()):
            os.environ["TESTBED_HYPERV_KVP_POOL"] = str(self.guests / vm / ".kvp_pool_3")
            try:
                section = identity.describe({}, None, rotation=k)
            finally:
                del os.environ["TESTBED_HYPERV_KVP_POOL"]
            host = section["physical_host"]
            info = {
                "testbed": {"label": label, "run_id": run_id},
                "machine": section,
                "cc": {"technology": "none"},
            }
            (out / f"{vm}.sysinfo.json").write_text(json.dumps(info))
            rng = np.random.default_rng([self.seed, k, n])
            factor = 1 + self.effect if label == "A" else 1.0
            lines = []
            for r in range(self.runs):
                metrics = {
                    m: records.metric(
                        float(1e-3 * factor * math.exp(self._level(host, j) + rng.normal(0, self.noise))),
                        "s",
                        "lower",
                    )
                    for j, m in enumerate(self.metrics)
                }
                rec = records.make(
                    run_id=run_id,
                    host=vm,
                    label=label,
                    benchmark="synthetic",
                    btype="synthetic",
                    index=0,
                    repetition=r,
                    status="ok",
                    started_at=f"2026-01-01T00:{k:02d}:{r:02d}Z",
                    ended_at=f"2026-01-01T00:{k:02d}:{r:02d}Z",
                    metrics=metrics,
                    primary=list(self.metrics),
                    tool={"name": "synthetic"},
                )
                lines.append(json.dumps(rec))
            (out / f"{vm}.jsonl").write_text("\n".join(lines) + "\n")


def _loop(tmp_path: Path, vms: dict, cap: float, server: list[str], **kw):
    guests = tmp_path / "guests"
    arm = stand_in(tmp_path / "arm", "--guest-root", str(guests), *server)
    endpoint = arm.__enter__()
    store = tmp_path / "results" / "seqtest"
    runner = Synthetic(Client(endpoint), guests, store, vms, **kw)
    said: list[str] = []
    loop = seq.Loop(
        "seqtest",
        store,
        "A:B",
        cap,
        1.0,
        dict.fromkeys(vms, 1.0),
        per_label=min(sum(1 for lab, _ in vms.values() if lab == side) for side in "AB"),
        margin=2.0,
        runner=runner,
        say=said.append,
    )
    try:
        loop.run()
        stats = Client(endpoint)._send("GET", endpoint["proxy"] + "/_rehearsal/stats", None, {})[2]
    finally:
        arm.__exit__(None, None, None)
    return loop, runner, said, stats


def _hosts_per_label(stats: dict, vms: dict, upto: int) -> dict[str, int]:
    """Distinct hosts per label over the first ``upto`` placements of each VM (the stand-in's log)."""
    seen: dict[str, list[str]] = {}
    for p in stats["placements"]:
        seen.setdefault(p["vm"], []).append(p["host"])
    out: dict[str, set[str]] = {}
    for vm, (label, _) in vms.items():
        out.setdefault(label, set()).update(seen[vm][:upto])
    return {label: len(hosts) for label, hosts in out.items()}


def test_a_true_difference_is_decided_before_the_cap(tmp_path: Path) -> None:
    vms = {
        "a-1": ("A", "redeploy"),
        "a-2": ("A", "redeploy"),
        "b-1": ("B", "redeploy"),
        "b-2": ("B", "redeploy"),
    }
    loop, runner, said, stats = _loop(tmp_path, vms, cap=24, server=["--seed", "3"], effect=0.15, seed=11)
    assert loop.max_machines == 12  # two VMs per label x six affordable batches
    assert loop.stop.startswith("look "), said
    assert "all 2 primary metrics decided" in loop.stop
    last = loop.batches[-1]["look"]
    assert {m["decision"] for m in last["metrics"]} == {"slower"}
    assert len(loop.batches) < 6 and loop.spent <= loop.cap
    assert runner.finished == "A:B"  # the report and the teardown ran
    ledger = json.loads((runner.store / "sequential.json").read_text())
    assert ledger["stop"] == loop.stop and ledger["looks"] == loop.looks
    for k, batch in enumerate(ledger["batches"]):
        assert batch["machines"] == _hosts_per_label(stats, vms, k + 1), batch


def test_rotations_onto_hosts_already_seen_add_no_machine_and_the_cap_stops_the_loop(tmp_path: Path) -> None:
    """Two hosts per location and starts that mostly land where the VM was: machines grow slower
    than batches, and the loop stops before a batch the cap cannot pay for."""
    vms = {"a-1": ("A", "deallocate"), "b-1": ("B", "deallocate")}
    server = ["--seed", "2", "--hosts-per-location", "2", "--same-host-p", "0.9"]
    loop, runner, said, stats = _loop(tmp_path, vms, cap=7, server=server, effect=0.0, seed=5)
    assert loop.max_machines == 3  # one VM per label x three affordable batches of 2
    assert "cost cap" in loop.stop, said
    assert loop.spent <= loop.cap and len(loop.batches) == 3
    placed = [p["host"] for p in stats["placements"] if p["vm"] == "a-1"]
    assert len(set(placed)) < len(placed)  # a start landed on the host the VM left
    for k, batch in enumerate(loop.batches):
        assert batch["machines"] == _hosts_per_label(stats, vms, k + 1), batch
    assert runner.finished == "A:B"


def _script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("cap", ["nan", "inf", "-1", "0", "ten"])
def test_a_cap_that_is_no_finite_positive_amount_is_refused(cap: str) -> None:
    done = _script("--compare", "A:B", "--cap", cap, "--batch-hours", "1", "-l", "x")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == f"error: --cap {cap!r}: expected a finite positive number"


def test_a_machine_without_a_price_or_that_cannot_rotate_is_refused(tmp_path: Path) -> None:
    inv = tmp_path / "inv.yml"
    hosts = {
        "a-1": {"testbed_cloud": "azure", "testbed_label": "A", "azure_vm_hour_price": 0.5},
        "b-1": {"testbed_cloud": "azure", "testbed_label": "B"},
    }
    inv.write_text(json.dumps({"all": {"hosts": hosts, "children": {"local": {"hosts": {"localhost": {}}}}}}))
    done = _script("--compare", "A:B", "--cap", "10", "--batch-hours", "1", "-i", str(inv), "-l", "a-1,b-1")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[0] == "error: b-1: azure_vm_hour_price is 'not set', not a positive price"
    done = _script(
        "--compare", "A:B", "--cap", "10", "--batch-hours", "1", "-i", str(inv), "-l", "a-1,localhost"
    )
    assert "localhost: not an Azure VM or a KVM guest" in done.stderr.splitlines()[0]


def test_a_cap_that_buys_fewer_than_two_machines_per_label_is_refused(tmp_path: Path) -> None:
    loop = seq.Loop(
        "r", tmp_path, "A:B", 3.0, 1.0, {"a": 1.0, "b": 1.0}, per_label=1, margin=2.0, runner=None
    )
    with pytest.raises(seq.TestbedError, match="buys 1 batch"):
        loop.run()
