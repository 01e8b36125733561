"""``faas serve --fill-idle-cpus``: one spinning process per CPU, pinned, in a cgroup of the smallest
CPU weight beside the emulator's tree; stopped with the emulator, gone soon after a SIGKILLed one,
and its cgroup removed by the next emulator."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
from repotest import gone_within

from testbed_services.faas import cgroups
from testbed_services.faas.emulator import Emulator
from testbed_services.faas.functions import default_dirs
from testbed_services.faas.idle_fill import PREFIX, SHARES_V1, WEIGHT_V2
from testbed_services.faas.profiles import load_profile
from testbed_shared import errors


def _fill_groups(emu_id: str) -> list[Path]:
    return [p for p in Path("/sys/fs/cgroup").glob("**/" + PREFIX + emu_id) if p.is_dir()]


def _pids(group: Path) -> list[int]:
    return [int(p) for p in (group / "cgroup.procs").read_text().split()]


def _allowed(pid: int) -> str:
    status = Path(f"/proc/{pid}/status").read_text()
    return next(line.split()[1] for line in status.splitlines() if line.startswith("Cpus_allowed_list"))


def test_fillers_run_one_per_cpu_at_the_smallest_weight_and_stop_with_the_emulator(start_emulator):
    emu = start_emulator("--profile", "aws-lambda", "--fill-idle-cpus", "--cpu-boost")
    info = emu.client.info()
    cpus = sorted(os.sched_getaffinity(emu.proc.pid))
    assert info["fill_idle_cpus"] == len(cpus)
    [group] = _fill_groups(info["emulator_id"])
    weight = (group / "cpu.shares") if info["cgroup"] == "v1" else (group / "cpu.weight")
    assert int(weight.read_text()) == (SHARES_V1 if info["cgroup"] == "v1" else WEIGHT_V2)
    # beside the emulator's tree, not under it: --cpu-boost's weight must not reach the fillers
    assert cgroups.BASE not in group.parent.parts and not group.parent.name.startswith(cgroups.BASE)
    pids = _pids(group)
    assert sorted(_allowed(p) for p in pids) == sorted(str(c) for c in cpus), "one filler pinned per CPU"
    # calls still run, and the instance's CPU time is its own (the filler is in another cgroup)
    emu.client.deploy("c", function="calcs", memory_mb=128)
    status, body, _ = emu.client.invoke("c", {"array_size": 5, "function_calls": 10})
    assert status == 200 and body["result"]["calcs"] == 50
    emu.stop()
    assert emu.proc.returncode == 0, emu.log.read_text()
    assert gone_within(pids, 10), "fillers outlived the emulator's shutdown"
    assert not _fill_groups(info["emulator_id"]), "the filler cgroup was left behind"


def test_a_killed_emulators_fillers_end_and_the_next_emulator_removes_their_cgroup(start_emulator, tmp_path):
    state = str(tmp_path / "state")
    first = start_emulator("--profile", "aws-lambda", "--fill-idle-cpus", "--state-dir", state)
    emu_id = first.client.info()["emulator_id"]
    [group] = _fill_groups(emu_id)
    pids = _pids(group)
    os.kill(first.proc.pid, signal.SIGKILL)
    first.proc.wait()
    # at the smallest weight on a busy machine a filler may wait long for the CPU it needs to notice
    assert gone_within(pids, 60), "fillers kept spinning after their emulator was killed"
    second = start_emulator("--profile", "aws-lambda", "--state-dir", state)
    assert not _fill_groups(emu_id), "the next emulator removes a dead emulator's filler cgroup"
    assert second.client.info()["fill_idle_cpus"] == 0


def test_without_cgroups_the_option_stops_with_a_hint(tmp_path):
    if os.geteuid() != 0:
        pytest.fail("needs root, as every emulator test")
    with pytest.raises(errors.TestbedError, match="--fill-idle-cpus: cannot start the fillers") as err:
        Emulator(
            load_profile("aws-lambda"),
            tmp_path,
            function_dirs=default_dirs(),
            cgroup="none",
            fill_idle_cpus=True,
        )
    assert "cgroup backend" in (err.value.hint or "")
    assert not list(tmp_path.glob("emu-*")), "the refused emulator left its state directory"
