"""How the report shows numbers and metrics to a person (the CSV and JSON files keep exact SI values).

- ``human(v, unit)``: a value in the unit scaled for reading (2.414e9 B/s -> "2.41 GB/s",
  0.00121 s -> "1.21 ms"); ``common_scale(values, unit)`` picks one scale for a column or an axis.
- ``describe(metric)``: what a metric measures where its name alone misleads (process CPU time
  against machine-wide CPU use).
- ``is_counter(metric, unit)``: internal counters and flags of a workload (``steady``, warm-up
  operation counts) that are facts about a run, not measurements to average.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

#: (factor, prefix) per scale, largest first; decimal prefixes, as fio and dd print MB/s
_DECIMAL = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_TIME = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
#: units whose values get a decimal prefix (unit -> how the scaled unit is written)
_PREFIXED = {"B/s": "{p}B/s", "B": "{p}B", "1/s": "{p}/s", "op/s": "{p}op/s", "op": "{p}op", "Hz": "{p}Hz"}

_COUNTER_NAMES = re.compile(r"(^|[._])(steady|warmup_ops)$")
_DESCRIPTIONS = (
    (re.compile(r"(^|[._])system_cpu_percent$"), "machine CPU: all cores, every process (% of the machine)"),
    (re.compile(r"(^|[._])cpu_percent$"), "process CPU: the benchmark's own CPU time (% of one core)"),
    (re.compile(r"(^|[._])cpu_s_per_op$"), "process CPU seconds per operation"),
    (re.compile(r"(^|[._])cpu_s_per_gb$"), "process CPU seconds per GB processed"),
)


def scale_for(magnitude: float, unit: str) -> tuple[float, str]:
    """(divisor, unit text) that shows ``magnitude`` with 1-3 digits before the point."""
    a = abs(magnitude) if math.isfinite(magnitude) else 0.0
    if unit == "s":
        if a == 0:
            return 1.0, "s"
        for f, u in _TIME:
            if a >= f * 0.9995:
                return f, u
        return 1e-9, "ns"
    if unit in _PREFIXED:
        for f, p in _DECIMAL:
            if a >= f * 0.9995:
                return f, _PREFIXED[unit].format(p=p)
        return 1.0, _PREFIXED[unit].format(p="")
    return 1.0, unit


def common_scale(values: Iterable[float], unit: str) -> tuple[float, str]:
    """One scale for several values (a table column or an axis): the one of their median magnitude."""
    mags = sorted(abs(v) for v in values if v is not None and math.isfinite(v) and v != 0)
    return scale_for(mags[len(mags) // 2] if mags else 0.0, unit)


def number(v: float | None, digits: int = 3) -> str:
    """``v`` with ``digits`` significant digits, plain (no exponent) between 1e-3 and 1e6."""
    if v is None or not math.isfinite(v):
        return "—"
    if v == 0:
        return "0"
    a = abs(v)
    if 1e-3 <= a < 1e6:
        decimals = max(digits - 1 - math.floor(math.log10(a)), 0)
        return f"{v:,.{decimals}f}"
    return f"{v:.{digits - 1}e}"


def human(v: float | None, unit: str, scale: tuple[float, str] | None = None) -> str:
    """``v`` in ``unit`` scaled for reading, e.g. "2.41 GB/s", "1.21 ms", "99.9 %"."""
    if v is None or not math.isfinite(v):
        return "—"
    f, u = scale or scale_for(v, unit)
    text = number(v / f)
    return f"{text} {u}".rstrip() if u else text


def interval(lo: float | None, hi: float | None, unit: str, scale: tuple[float, str] | None = None) -> str:
    """ "[lo, hi] unit" on one scale (that of the larger end unless given)."""
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return "—"
    f, u = scale or scale_for(max(abs(lo), abs(hi)), unit)
    return f"[{number(lo / f)}, {number(hi / f)}] {u}".rstrip()


def describe(metric: str) -> str:
    """What ``metric`` measures, where its name alone would mislead ('' otherwise)."""
    for rx, text in _DESCRIPTIONS:
        if rx.search(metric):
            return text
    return ""


def is_counter(metric: str, unit: str) -> bool:
    """A workload's internal counter or flag (not a measurement with a mean and an interval)."""
    return unit == "bool" or bool(_COUNTER_NAMES.search(metric))


def pretty_metric(metric: str) -> str:
    """A metric name for a headline: "read_bw_bytes" -> "read bandwidth"."""
    words = {
        "bw_bytes": "bandwidth",
        "iops": "IOPS",
        "clat_mean_s": "completion latency (mean)",
        "lat_mean_s": "latency (mean)",
        "wall_s": "wall time",
        "throughput": "throughput",
        "ops_per_s": "operations per second",
        "time_per_op": "time per operation",
        "latency_s": "latency",
    }
    for suffix, word in words.items():
        if metric == suffix or metric.endswith("_" + suffix) or metric.endswith("." + suffix):
            head = metric[: -len(suffix)].rstrip("._")
            return f"{head.replace('_', ' ').replace('.', ' ')} {word}".strip()
    return metric
