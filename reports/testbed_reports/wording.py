"""How a comparison reads: which side is faster or slower, by how much, with both values and units.

Every comparison headline and verdict says it in words (issue 37): the two labels' typical values
in the unit of the metric (the geometric mean of a positive quantity, scaled for reading), then the
decision read from the printed interval:

- ``slower`` / ``faster``: "A is 5.3% faster [1.2, 9.6] than B". The magnitude is the winner's
  advantage as a ratio (a rate 5.3 % higher, or a time that is 1/1.053 of the other's), its interval
  the same transform of the interval's ends, so both ends are positive;
- ``equivalent``: "A and B are the same within +-2%: A lies between 0.4% faster and 1.1% slower";
- ``inconclusive``: "cannot tell which is faster: A lies between 9.6% faster and 14.1% slower than
  B", then what would tell (the runs, pairs or machines that would resolve the margin).

The signed overhead (positive = A slower) stays in the tables, CSV and JSON.
"""

from __future__ import annotations

import math

from testbed_reports import display
from testbed_reports.inference import Decision


def values(va: float | None, vb: float | None, unit: str) -> tuple[str, str]:
    """The two typical values on one scale, e.g. ("315 MB/s", "299 MB/s")."""
    scale = display.common_scale([v for v in (va, vb) if v is not None], unit)
    return display.human(va, unit, scale), display.human(vb, unit, scale)


def _pct(x: float) -> str:
    return f"{x:.1f}"


def _side(ovh: float) -> str:
    """An overhead (positive = slower) as "4.1% slower" / "3.9% faster" (the faster side's ratio)."""
    cost = 1 + ovh / 100
    if not math.isfinite(cost) or cost <= 0:
        return "—"
    if ovh >= 0:
        return f"{_pct(ovh)}% slower"
    return f"{_pct(100 * (1 / cost - 1))}% faster"


def magnitude(dec: Decision) -> tuple[float, float, float]:
    """The winner's advantage in % and its interval (both ends positive for a decided interval)."""
    if dec.decision == "faster":
        inv = [100 * (1 / (1 + x / 100) - 1) for x in (dec.overhead, dec.hi, dec.lo)]
        return inv[0], inv[1], inv[2]
    return dec.overhead, dec.lo, dec.hi


def outcome(a: str, b: str, dec: Decision, margin: float) -> str:
    """The decision in words about ``a`` against ``b`` (no values, no scope)."""
    if dec.decision in ("slower", "faster"):
        x, lo, hi = magnitude(dec)
        return f"{a} is {_pct(x)}% {dec.decision} [{_pct(lo)}, {_pct(hi)}] than {b}"
    span = f"{a} lies between {_side(dec.lo)} and {_side(dec.hi)} than {b}"
    if dec.decision == "equivalent":
        return f"{a} and {b} are the same within ±{margin:g}%: {span}"
    if not (math.isfinite(dec.lo) and math.isfinite(dec.hi)):
        return f"cannot tell which is faster: {dec.reason}"
    return f"cannot tell which is faster: {span}"


def sentence(
    what: str, a: str, b: str, va: float | None, vb: float | None, unit: str, dec: Decision, margin: float
) -> str:
    """The headline sentence: "WHAT: A 315 MB/s, B 299 MB/s: A is 5.3% faster [1.2, 9.6] than B"."""
    sa, sb = values(va, vb, unit)
    return f"{what}: {a} {sa}, {b} {sb}: {outcome(a, b, dec, margin)}"


def would_tell(dec: Decision) -> str:
    """For an inconclusive decision, what would tell (the part of its reason after the interval)."""
    if dec.decision != "inconclusive":
        return ""
    head, _, rest = dec.reason.partition("; ")
    return rest if head.startswith("[") else dec.reason
