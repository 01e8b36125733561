"""``--fill-idle-cpus``: keep every CPU busy while the emulator runs, a user-space ``idle=poll``.

Why: on a VM whose vCPU runs slower after it halts, a throttled tier's call costs more CPU than the
same call unthrottled, because between its quota bursts (7.2 ms of every 100 ms at 128 MB) the
vCPU halts. bench/throttle_speed.py measured it on this project's 2-CPU Firecracker VM (no cpuidle
driver, so ``/dev/cpu_dma_latency`` cannot keep it polling): the same work cost x1.27 [1.04, 1.55]
the CPU under the 128 MB quota, and x0.80 [0.73, 0.87] of that with a spinning process of the
smallest weight beside it. Bare-metal benchmark hosts get the same from ``idle=poll`` or a
latency PM QoS request; this is the option for hosts where neither is available.

What: one spinning process per CPU of the emulator's affinity, pinned to it, all in one cgroup of
their own (``testbed-faas-fill-<emulator id>``, beside the emulator's ``testbed-faas`` tree, so
``--cpu-boost`` does not raise it) with the smallest CPU weight: v1 ``cpu.shares`` 2, v2
``cpu.weight`` 1. The scheduler gives it a CPU only when nothing else there is runnable; an
instance that wakes preempts it. The cost: every CPU reads 100 % busy (``/proc/stat``,
node_exporter) while the emulator runs, and the group's parent competes for its whole weight
against its siblings. A filler ends when the emulator stops it or within about 10 ms of the
emulator's death (it watches its parent); a dead emulator's empty cgroup is removed by the next
one (:func:`reclaim`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from testbed_services.faas import cgroups

#: the filler's CPU weight: v1 cpu.shares minimum is 2, v2 cpu.weight minimum is 1
SHARES_V1, WEIGHT_V2 = 2, 1
#: the default weights, given back before the fillers are killed (``_release``)
DEFAULT = {"cpu.shares": 1024, "cpu.weight": 100}
#: how long the fillers may take to join their cgroup
JOIN_S = 10.0
PREFIX = "testbed-faas-fill-"
#: pins itself, joins its cgroup (the sign it is ready), then spins until its parent (the emulator) is gone
SPIN = (
    "import os, sys\n"
    "cpu, parent = int(sys.argv[1]), int(sys.argv[2])\n"
    "os.sched_setaffinity(0, {cpu})\n"
    "with open(sys.argv[3], 'w') as fh:\n"
    "    fh.write(str(os.getpid()))\n"
    "while os.getppid() == parent:\n"
    "    for _ in range(5_000):\n"
    "        pass\n"
)


def _group(backend: cgroups.Backend, emulator_id: str) -> tuple[Path, str, int] | None:
    """The fillers' cgroup directory, its weight file and weight (None: no cgroup backend)."""
    name = PREFIX + emulator_id
    if isinstance(backend, cgroups.V1Backend):
        # bases are <own>/testbed-faas/<id>: the filler sits beside testbed-faas, in <own>
        return backend.bases["cpu"].parent.parent / name, "cpu.shares", SHARES_V1
    if isinstance(backend, cgroups.V2Backend):
        return backend.base.parent / name, "cpu.weight", WEIGHT_V2
    return None


class IdleFill:
    """The running fillers of one emulator; :meth:`stop` ends them and removes their cgroup."""

    def __init__(self, backend: cgroups.Backend, emulator_id: str) -> None:
        group = _group(backend, emulator_id)
        if group is None:
            raise OSError("no cgroup backend: the filler needs a cgroup of the smallest weight")
        self.group = group
        self.procs: list[subprocess.Popen[bytes]] = []
        d, weight_file, weight = group
        try:
            d.mkdir(exist_ok=True)
            (d / weight_file).write_text(str(weight))
            procs = str(d / "cgroup.procs")
            for cpu in sorted(os.sched_getaffinity(0)):
                self.procs.append(
                    subprocess.Popen(  # noqa: S603 - the emulator's own spin loop, stopped with it
                        [
                            sys.executable,
                            "-I",
                            "-c",
                            SPIN,
                            str(cpu),
                            str(os.getpid()),
                            str(d / "cgroup.procs"),
                        ],
                        stdin=subprocess.DEVNULL,
                        env={"PATH": "/usr/bin:/bin"},
                        start_new_session=True,
                    )
                )
            self._joined(Path(procs))
        except BaseException:
            self.stop()
            raise

    def _joined(self, procs: Path) -> None:
        """Wait until every filler is in its cgroup (it writes its own pid when it starts)."""
        want = {p.pid for p in self.procs}
        end = time.monotonic() + JOIN_S
        while not want <= {int(x) for x in procs.read_text().split()}:
            if time.monotonic() > end or any(p.poll() is not None for p in self.procs):
                raise OSError(f"the fillers did not join {procs.parent} within {JOIN_S:.0f} s")
            time.sleep(0.01)

    @property
    def cpus(self) -> int:
        """How many fillers run."""
        return sum(p.poll() is None for p in self.procs)

    def stop(self) -> None:
        _release(*self.group[:2])
        for p in self.procs:  # also those that never joined the group
            with contextlib.suppress(ProcessLookupError):
                p.kill()
        for p in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
        self.procs.clear()


def _release(d: Path, weight_file: str) -> None:
    """Give the group its default weight back (a task dies only once it runs, and at the smallest
    weight on a busy machine that can take seconds), then kill its tasks and remove it."""
    if not d.is_dir():
        return
    with contextlib.suppress(OSError):
        (d / weight_file).write_text(str(DEFAULT[weight_file]))
    cgroups.reclaim_dir(d)


def reclaim(backend: cgroups.Backend, emulator_id: str) -> None:
    """Kill what a dead emulator's fillers left and remove their cgroup."""
    group = _group(backend, emulator_id)
    if group is not None:
        _release(*group[:2])
