"""How the report shows numbers and metrics to a person (the CSV and JSON files keep exact SI values).

One formatter for tables and plots (issue 37): a value is written by :func:`human` in the unit
scaled for reading, and an axis takes the same scale (:func:`common_scale`) and writes its ticks
with :func:`number`, so a table and the plot beside it agree; nothing is written in scientific
notation.

- ``human(v, unit)``: a value in the unit scaled for reading (2.414e9 B/s -> "2.41 GB/s",
  0.00121 s -> "1.21 ms"); ``common_scale(values, unit)`` picks one scale for a column or an axis.
- ``number(v)``: plain digits (thousands separators, never an exponent); ``p_value(p)``.
- ``describe(metric)``: what a metric measures where its name alone misleads (process CPU time
  against machine-wide CPU use).
- ``is_counter(metric, unit)``: internal counters and flags of a workload (``steady``, warm-up
  operation counts) that are facts about a run, not measurements to average.
- ``is_machine_share(metric, unit)``: a share of the whole machine (bounded by 100 %).
- ``is_cpu_use(metric)``: a crypto cell's CPU accounting (process and machine CPU %, CPU seconds per
  operation or GB): telemetry of the measurement, shown apart from its results.
- ``FACT_TYPES``: workload types whose records are facts about a machine (the fingerprint), shown
  as facts, never as statistics or comparisons.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

import numpy as np

#: (factor, prefix) per scale, largest first; decimal prefixes, as fio and dd print MB/s
_DECIMAL = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_TIME = ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
#: units whose values get a decimal prefix (unit -> how the scaled unit is written)
#: units of plain counts, written without a unit
_PLAIN = {"1", "count"}
_PREFIXED = {"B/s": "{p}B/s", "B": "{p}B", "1/s": "{p}/s", "op/s": "{p}op/s", "op": "{p}op", "Hz": "{p}Hz"}

_COUNTER_NAMES = re.compile(r"(^|[._])(steady|warmup_ops)$")
_MACHINE_SHARE = re.compile(r"(^|[._])system_cpu_percent$")
_CPU_USE = re.compile(r"(^|[._])(cpu_percent|system_cpu_percent|cpu_s_per_op|cpu_s_per_gb)$")
#: workload types whose records are facts about a machine, not measurements
FACT_TYPES = frozenset({"sysinfo"})
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
    return 1.0, "" if unit in _PLAIN else unit


def common_scale(values: Iterable[float], unit: str) -> tuple[float, str]:
    """One scale for several values (a table column or an axis): the one of their median magnitude
    (missing, zero and non-finite values left out; a numeric array is used as it is)."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiu":
        a = values.astype(float, copy=False).ravel()
    else:
        a = np.fromiter((v for v in values if v is not None), dtype=float)
    mags = np.abs(a[np.isfinite(a) & (a != 0)])
    k = len(mags) // 2
    return scale_for(float(np.partition(mags, k)[k]) if len(mags) else 0.0, unit)


def number(v: float | None, digits: int = 3) -> str:
    """``v`` with ``digits`` significant digits in plain digits: thousands separators above 1,000,
    leading zeros below 1 ("0.000123"), never an exponent."""
    if v is None or not math.isfinite(v):
        return "—"
    if v == 0:
        return "0"
    a = abs(v)
    decimals = max(digits - 1 - math.floor(math.log10(a)), 0)
    text = f"{v:,.{decimals}f}"
    if decimals and float(text.replace(",", "")) == 0:  # rounded away below the last digit
        return f"{v:,.{decimals + 1}f}"
    return text


def short(v: float | None, digits: int = 4) -> str:
    """:func:`number` without trailing zeros after the point ("95", "2", "0.05", "12.35")."""
    text = number(v, digits)
    return text.rstrip("0").rstrip(".") if "." in text else text


def exact(v: float | None) -> str:
    """All the digits of ``v`` (its shortest round-trip form) without an exponent, for a hover text:
    2.7748e-05 -> "0.000027748"."""
    if v is None or not math.isfinite(v):
        return "—"
    text = repr(float(v))
    if "e" not in text:
        return text.removesuffix(".0")
    digits, exp = text.split("e")
    sign = "-" if digits.startswith("-") else ""
    whole, _, frac = digits.lstrip("-").partition(".")
    shift = int(exp)
    body = whole + frac
    point = len(whole) + shift
    if point <= 0:
        return f"{sign}0.{'0' * -point}{body}"
    if point >= len(body):
        return f"{sign}{body}{'0' * (point - len(body))}"
    return f"{sign}{body[:point]}.{body[point:]}"


def p_value(p: float | None) -> str:
    """A p-value for reading: two significant digits, "< 0.001" below it (never an exponent)."""
    if p is None or not math.isfinite(p):
        return "—"
    if p < 0.001:
        return "< 0.001"
    return number(p, 2)


def human(v: float | None, unit: str, scale: tuple[float, str] | None = None) -> str:
    """``v`` in ``unit`` scaled for reading, e.g. "2.41 GB/s", "1.21 ms", "99.9 %"."""
    if v is None or not math.isfinite(v):
        return "—"
    f, u = scale or scale_for(v, unit)
    text = f"{round(v):,}" if not u and float(v).is_integer() and abs(v) < 1e15 else number(v / f)
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


def is_machine_share(metric: str, unit: str) -> bool:
    """A share of the whole machine in % (all cores, every process): bounded by 100 %."""
    return unit == "%" and bool(_MACHINE_SHARE.search(metric))


def is_cpu_use(metric: str) -> bool:
    """A cell's CPU accounting (``go.encrypt.cpu_percent``, ``...system_cpu_percent``,
    ``...cpu_s_per_op``, ``...cpu_s_per_gb``): telemetry of the measurement, not its result."""
    return "." in metric and bool(_CPU_USE.search(metric))


def fact_name(metric: str) -> str:
    """A fact's name for reading: "memory_total_bytes" -> "memory total", "logical_cpus" -> "logical CPUs"."""
    name = re.sub(r"_(bytes|count)$", "", metric).replace("_", " ")
    return re.sub(r"\bcpus\b", "CPUs", name)


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
