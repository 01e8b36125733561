"""Host facts for the inspector block: CPU model, steal time; timestamps."""

from __future__ import annotations

import functools
import os
from datetime import UTC, datetime


@functools.cache
def cpu_model() -> str:
    """CPU model name of this machine (what a function would read from /proc/cpuinfo)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith(("model name", "Processor", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return os.uname().machine


_STAT_FD: list[int] = []
#: clock ticks per second of /proc/stat's counters (a constant of the running kernel)
_HZ = os.sysconf("SC_CLK_TCK")


def steal_s() -> float:
    """Host-wide steal time so far (all CPUs), in seconds, from /proc/stat (kept open, pread)."""
    try:
        if not _STAT_FD:
            _STAT_FD.append(os.open("/proc/stat", os.O_RDONLY))
        fields = os.pread(_STAT_FD[0], 256, 0).split(b"\n", 1)[0].split()
        return int(fields[8]) / _HZ if len(fields) > 8 else 0.0
    except (OSError, ValueError):
        return 0.0


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
