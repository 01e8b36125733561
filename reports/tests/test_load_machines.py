"""The report's machine is the physical host a fingerprint names (testbed_shared.machines), not the
VM: rotations of one VM onto two hosts are two machines, two rotations onto one host are one
machine with more runs, and a VM whose host is unknown stays its own machine."""

from __future__ import annotations

import json
from pathlib import Path

from report_support.synth import Machine, write_run

from testbed_reports.load import load
from testbed_reports.stats import describe


def _rotation(store: Path, index: int, placements: dict[str, str | None], seed: int) -> None:
    """Rotation ``index`` of the VMs in ``placements`` (VM -> physical host, None: unknown) under
    ``store``, laid out as playbooks/rotate.yml collects it (run id R-r<k>, rotation-<k>/)."""
    run_id = "R" if index == 0 else f"R-r{index}"
    machines = [
        Machine(vm, "SEV" if vm.startswith("sev") else "AMD", ["sev" if vm.startswith("sev") else "amd"])
        for vm in placements
    ]
    out = write_run(store, run_id, machines, ["b"], reps=3, seed=seed)
    for vm, host in placements.items():
        path = out / f"{vm}.sysinfo.json"
        info = json.loads(path.read_text())
        info["machine"] = {"id": f"hyperv-host:{host}" if host else None, "rotation": index}
        path.write_text(json.dumps(info))
    if index:
        out.rename(store / "R" / f"rotation-{index}")


def test_machines_are_counted_by_physical_host(tmp_path: Path) -> None:
    store = tmp_path / "results"
    _rotation(store, 0, {"sev-1": "NODE1", "sev-2": "NODE2", "amd-1": None, "amd-2": None}, 1)
    _rotation(store, 1, {"sev-1": "NODE3", "sev-2": "NODE1"}, 2)  # sev-2 lands where sev-1 was
    _rotation(store, 2, {"sev-1": "NODE3"}, 3)  # the same host again: more runs, no new machine
    ds = load([store / "R"])
    desc = describe(ds.obs).set_index(["label", "metric"])
    assert desc.loc[("SEV", "bw_bytes"), "machines"] == 3  # NODE1, NODE2, NODE3
    assert desc.loc[("SEV", "bw_bytes"), "n"] == 3 * 5  # five placements of three runs
    assert desc.loc[("AMD", "bw_bytes"), "machines"] == 2  # host unknown: one machine per VM
    hosts = set(ds.obs["host"].astype(str))
    assert hosts == {"hyperv-host:NODE1", "hyperv-host:NODE2", "hyperv-host:NODE3", "amd-1", "amd-2"}
    assert set(ds.records["host"]) == {"sev-1", "sev-2", "amd-1", "amd-2"}  # the VMs stay in the records
    assert set(ds.records.loc[ds.records["run_id"] == "R-r1", "machine"]) == {
        "hyperv-host:NODE3",
        "hyperv-host:NODE1",
    }


def test_an_unusable_machine_id_is_ignored_with_a_warning(tmp_path: Path) -> None:
    store = tmp_path / "results"
    _rotation(store, 0, {"sev-1": "NODE1", "amd-1": None}, 1)
    path = store / "R" / "sev-1.sysinfo.json"
    info = json.loads(path.read_text())
    info["machine"]["id"] = "not an id"
    path.write_text(json.dumps(info))
    ds = load([store / "R"])
    assert "sev-1" in set(ds.obs["host"].astype(str))
    assert any("sev-1.sysinfo.json: sysinfo field 'machine.id'" in w for w in ds.warnings), ds.warnings
