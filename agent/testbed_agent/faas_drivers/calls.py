"""The one model of a FaaS call: how long a function's handler runs for an event, and how many
calls a benchmark's mode makes. ``plan show``'s time estimate (``workloads/faas/estimate.py``) and
a real run's price (``pricing.py``) both read it.

Rates are this development machine's, measured once (2 shared cores, a loop-mounted ext4 /tmp;
the calcs function at 0.27-0.83 million calculations per second under load, taken as 0.5 million
per vCPU-second): a figure for planning and for a cost cap's estimate, not a measurement. The
calcs function's stress levels are read from its handler's ``LEVELS`` table (parsed, not run);
dd's block sizes follow the plans' one size grammar (``testbed_shared.units``).
"""

from __future__ import annotations

import ast
import math
import shlex
from functools import lru_cache
from typing import Any

from testbed_services.faas import faas_dir
from testbed_shared.units import SizeError, parse_size

#: calcs: calculations per second at one full vCPU
CALCS_PER_VCPU_S = 5e5
#: the smallest CPU share a call's work is scaled by (a tiny tier still runs)
MIN_SHARE = 0.05
#: dd: seconds per I/O operation by /tmp kind and direct or cached I/O (512 B operations on this
#: machine: an ext4 loop image, a tmpfs), and seconds per byte copied and drawn from /dev/urandom
DD_OP_S = {
    ("disk", "direct"): 30e-6,
    ("disk", "cached"): 3e-6,
    ("memory", "direct"): 1.2e-6,
    ("memory", "cached"): 1.5e-6,
}
COPY_S_PER_BYTE = 1 / 1.5e9
URANDOM_S_PER_BYTE = 1 / 150e6
#: a key-service round trip on loopback (moto) plus local crypto, at a quarter vCPU or more
KMS_CALL_S = 0.03
#: seconds of one call by function when its event says nothing more precise
FUNCTION_S = {"crypto": 0.5, "fio": 5.0}
DEFAULT_CALL_S = 0.5
#: the shortest a caller's call takes end to end on a real platform (a client's HTTPS round trip to
#: the region): a ramp's back-to-back callers make at most one call per this many seconds each
ROUND_TRIP_FLOOR_S = 0.05


def call_s(function: str, event: dict[str, Any], vcpus: float, tmp: str = "disk") -> float:
    """Seconds the handler of ``function`` runs for ``event`` with ``vcpus`` and a /tmp of kind
    ``tmp`` (``disk`` or ``memory``)."""
    share = max(min(vcpus, 1.0), MIN_SHARE)
    if function == "calcs":
        return calcs(event) / CALCS_PER_VCPU_S / share
    if function == "dd":
        secs, _ = dd_s(event, 0, tmp)
        return DEFAULT_CALL_S if secs is None else secs
    if function == "kms-crypto":
        return KMS_CALL_S / max(min(vcpus * 4, 1.0), MIN_SHARE)
    if function == "fio":
        return float(event.get("runtime_s") or FUNCTION_S["fio"])
    if function in FUNCTION_S:
        return FUNCTION_S[function] / share
    return DEFAULT_CALL_S


@lru_cache(maxsize=1)
def calcs_levels() -> dict[int, int]:
    """The calcs function's stress levels (level -> calculations), from its handler's ``LEVELS``."""
    path = faas_dir() / "functions" / "calcs" / "handler.py"
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "LEVELS" for t in node.targets):
            table = ast.literal_eval(node.value)
            return {int(level): int(row[0]) for level, row in table.items()}
    return {}


def calcs(event: dict[str, Any]) -> float:
    """Calculations one calcs call makes: its level's, or ``calcs`` (default array size x calls)."""
    if "level" in event:
        return float(calcs_levels().get(int(event["level"]), 0))
    size, calls = int(event.get("array_size", 20)), int(event.get("function_calls", 1000))
    return float(event.get("calcs", size * calls))


def dd_s(event: dict[str, Any], last_size: int, tmp: str) -> tuple[float | None, int]:
    """(seconds, file size afterwards) of the dd runs an event describes (``command``, ``args`` or
    ``steps``); a read without ``count`` reads the file the last write left. None: no dd run given,
    or operands the model cannot read."""
    if "steps" in event:
        total = 0.0
        for step in event.get("steps") or ():
            secs, last_size = dd_s(step, last_size, tmp)
            if secs is None:
                return None, last_size
            total += secs
        return total, last_size
    if "command" in event:
        args = shlex.split(str(event["command"]))
    elif "args" in event:
        args = [str(a) for a in event["args"]]
    else:
        return None, last_size
    ops = dict(a.split("=", 1) for a in args if "=" in a)
    try:
        bs = parse_size(ops.get("bs", "512"))
    except SizeError:
        return None, last_size
    count = int(ops["count"]) if ops.get("count", "").isdigit() else max(1, last_size // max(bs, 1))
    direct = "direct" in ops.get("iflag", "") or "direct" in ops.get("oflag", "")
    kind = tmp if tmp in ("disk", "memory") else "disk"
    secs = count * DD_OP_S[(kind, "direct" if direct else "cached")] + count * bs * COPY_S_PER_BYTE
    if ops.get("if") == "/dev/urandom":
        secs += count * bs * URANDOM_S_PER_BYTE
    size = count * bs if ops.get("of", "/dev/null") != "/dev/null" else last_size
    return secs, size


def invocations(p: dict[str, Any], one_call_s: float = 1.0) -> tuple[int, int]:
    """(calls, of which cold) one execution of a faas benchmark makes; ``one_call_s`` (one call's
    seconds) sizes a ramp's continuous load."""
    mode = p.get("mode", "warm")
    calls = int(p.get("calls") or (1 if mode in ("scaling", "ramp") else 5))
    conc = int(p.get("concurrency") or 1)
    if mode == "cold":
        return calls, calls
    if mode == "cold_warm":
        return 2 * calls, calls
    if mode == "scaling":
        levels = [int(x) for x in p.get("ladder") or ()] or [conc]
        warm = int(p.get("warmup", 1)) if p.get("ladder") else 0
        cold = sum(levels) if p.get("cold", "host") != "none" else max(levels)
        return warm + sum(levels) * calls, min(warm, 1) + cold
    if mode == "retention":
        gaps = len(p.get("gaps_s") or ())
        if p.get("fresh_per_gap", True) is False:  # one sequence: each set warms the next gap's
            return (gaps + 1) * conc, conc
        return 2 * gaps * conc, gaps * conc
    if mode == "sets":
        configs = len(p.get("memory_sweep") or ()) * int(p.get("batches", 1)) or 1
        per_config = (int(p.get("warmup_sets", 1)) + int(p.get("sets", 0))) * conc
        return configs * per_config, configs * conc
    if mode == "sequence":
        return sum("phase" in item for item in p.get("sequence") or ()), 1
    if mode == "ramp":
        steps = [int(x) for x in p.get("steps") or ()]
        each = max(one_call_s, ROUND_TRIP_FLOOR_S)
        per_caller = [max(1, math.ceil(float(d) / each)) for d in p.get("step_s") or ()]
        return sum(n * k for n in steps for k in per_caller), max(steps, default=0)
    first = 1 if p.get("first") == "cold" else 0
    return first + int(p.get("warmup", 1)) + calls, 1


def emulator_only(params: dict[str, Any]) -> str | None:
    """Why a faas benchmark needs the emulator itself and is skipped on a real platform, if it does:
    a faster clock (``time_scale``) or the key service on the agent's loopback (``key_service``)."""
    scale = float(params.get("time_scale") or 1)
    if scale != 1:
        return f"time_scale {scale:g} speeds up the emulator's clock; a platform runs in real time"
    if params.get("key_service"):
        return "key_service runs on this host's loopback, which a real platform cannot reach"
    return None
