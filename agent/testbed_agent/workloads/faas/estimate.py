"""How long a ``faas`` execution takes, for ``plan show``: the emulator's start, each call's work
(dd's bytes and I/O operations, the calcs function's calculations at the tier's CPU share, a
key-service call), concurrent calls sharing this machine's CPUs, and the idle times (gaps and
pauses over the time scale, ramp durations). Rates are this development machine's, measured once
(2 shared cores, a loop-mounted ext4 /tmp): the estimate is for planning, not a measurement.
"""

from __future__ import annotations

import os
import shlex
from typing import Any

from testbed_services.faas.profiles import load_profile

#: seconds to start a private emulator and deploy (both sides of a benchmark)
START_S = 3.0
#: seconds of one call besides its work (HTTP, worker, inspector)
CALL_S = 0.02
#: seconds of a cold start (a worker process)
COLD_S = 0.5
#: dd: seconds per I/O operation by /tmp kind and direct or cached I/O (512 B operations on this
#: machine: an ext4 loop image, a tmpfs), and seconds per byte drawn from /dev/urandom
DD_OP_S = {
    ("disk", "direct"): 30e-6,
    ("disk", "cached"): 3e-6,
    ("memory", "direct"): 1.2e-6,
    ("memory", "cached"): 1.5e-6,
}
URANDOM_S_PER_BYTE = 1 / 150e6
#: dd: seconds per byte copied (any source)
COPY_S_PER_BYTE = 1 / 1.5e9
#: calcs: CPU seconds per calculation at one full vCPU (the study's Table I levels)
CALC_S = 1.0e-6
LEVELS = {
    1: 0,
    2: 2_000,
    3: 20_000,
    4: 200_000,
    5: 500_000,
    6: 2_000_000,
    7: 10_000_000,
    8: 10_000_000,
    9: 6_000_000,
}
#: a key-service round trip on loopback (moto) plus local crypto
KMS_CALL_S = 0.03


def estimate(p: Any) -> float:
    vcpus, tmp = _profile(p)
    one = _call_s(p, p.event, vcpus, tmp)
    cpus = os.cpu_count() or 2

    def burst(n: int, calls: int = 1) -> float:
        """``n`` concurrent callers of ``calls`` calls: the slower of one caller's chain and the
        total CPU the calls need spread over this machine's CPUs."""
        work = one - CALL_S
        return max(calls * one, n * calls * work * min(vcpus, 1.0) / cpus) + COLD_S

    mode = p.mode
    if mode == "sequence":
        size = 0
        total = COLD_S
        for item in p.sequence:
            if "pause_s" in item:
                total += float(item["pause_s"]) / p.time_scale
                continue
            secs, size = _dd_s(item.get("event", {}), size, tmp)
            total += CALL_S + (secs if secs is not None else one)
        return START_S + total
    if mode == "warm":
        return START_S + COLD_S + (p.warmup + p.calls + (p.first == "cold")) * one
    if mode in ("cold", "cold_warm"):
        return START_S + p.calls * (COLD_S + one) * (2 if mode == "cold_warm" else 1)
    if mode == "scaling":
        levels = [int(x) for x in p.ladder] or [p.concurrency]
        pauses = p.level_pause_s / p.time_scale * max(0, len(levels) - 1)
        return START_S + sum(burst(n, p.calls) for n in levels) + pauses + p.warmup * one
    if mode == "retention":
        sets = len(p.gaps_s) * (1 if not p.fresh_per_gap else 2) + (not p.fresh_per_gap)
        return START_S + sets * burst(p.concurrency) + sum(p.gaps_s) / p.time_scale
    if mode == "sets":
        sizes = max(1, len(p.memory_sweep))
        sets = (p.warmup_sets + p.sets) * sizes * (p.batches if p.memory_sweep else 1)
        return START_S + sets * (burst(p.concurrency) + p.set_pause_s / p.time_scale)
    if mode == "ramp":
        return START_S + sum(p.step_s) * len(p.steps)
    return START_S + p.calls * one


def _profile(p: Any) -> tuple[float, str]:
    """(vCPUs of the benchmark's memory size, /tmp kind) from its profile."""
    try:
        prof = load_profile(p.profile)
        return max(0.01, prof.vcpus(p.memory_mb or prof.memory_default_mb)), prof.tmp_kind
    except Exception:  # noqa: BLE001 - an estimate: an unreadable profile counts as one vCPU on disk
        return 1.0, "disk"


def _call_s(p: Any, event: dict[str, Any], vcpus: float, tmp: str) -> float:
    """One warm call's seconds from its event."""
    if p.function == "calcs":
        level = event.get("level")
        if level in LEVELS:
            calcs = LEVELS[level]
        else:
            size, calls = int(event.get("array_size", 20)), int(event.get("function_calls", 1000))
            calcs = int(event.get("calcs", size * calls))
        return CALL_S + calcs * CALC_S / min(vcpus, 1.0)
    if p.function == "kms-crypto":
        return CALL_S + KMS_CALL_S / min(vcpus * 4, 1.0)
    if p.function == "dd":
        secs, _ = _dd_s(event, 0, tmp)
        return CALL_S + (secs or 0.5)
    return CALL_S + 0.5


def _dd_s(event: dict[str, Any], last_size: int, tmp: str) -> tuple[float | None, int]:
    """(seconds, file size afterwards) of the dd run an event describes; a read without count reads
    the file the last write left."""
    if "command" in event:
        args = shlex.split(str(event["command"]))
    elif "args" in event:
        args = [str(a) for a in event["args"]]
    else:
        return None, last_size
    ops = dict(a.split("=", 1) for a in args if "=" in a)
    try:
        bs = _bytes(ops.get("bs", "512"))
    except ValueError:
        return None, last_size
    count = int(ops["count"]) if ops.get("count", "").isdigit() else max(1, last_size // max(bs, 1))
    direct = "direct" in ops.get("iflag", "") or "direct" in ops.get("oflag", "")
    secs = count * DD_OP_S[(tmp if tmp in ("disk", "memory") else "disk", "direct" if direct else "cached")]
    secs += count * bs * COPY_S_PER_BYTE
    if ops.get("if") == "/dev/urandom":
        secs += count * bs * URANDOM_S_PER_BYTE
    size = count * bs if ops.get("of", "/dev/null") != "/dev/null" else last_size
    return secs, size


def _bytes(text: str) -> int:
    """dd's block size: a number with an optional k/M/G suffix (powers of 1024, as GNU dd)."""
    units = {"k": 1024, "K": 1024, "M": 1 << 20, "G": 1 << 30}
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)
