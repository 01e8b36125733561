"""Which metrics a benchmark's charts plot, and the figures across benchmarks (fio jobs, pyperformance).

A benchmark's bar and ECDF charts show its primary metrics first, then one metric per quantity kind
(bandwidth, IOPS, latency) of each primary metric's direction (``read_``/``write_``), then the next
metrics up to MIN_PANELS, at most MAX_PANELS in all. The figures across benchmarks: a grouped bar
chart of bandwidth and one of IOPS over a run's fio jobs (one group per fio benchmark and direction,
one bar per label, 95% CI whiskers), and the pyperformance benchmark times of every label relative to
the first label of its CPU vendor (one figure per vendor). All are horizontal bar charts
(``svgplot.hbars``) on the scale ``display`` picks for the unit, so they read on a phone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from testbed_reports import display, svgplot

#: quantity kinds plotted after the primary metrics, in this order
KINDS = ("bandwidth", "iops", "latency")
#: the charts show at least MIN_PANELS metrics (when a benchmark has them) and at most MAX_PANELS
MIN_PANELS = 4
MAX_PANELS = 6
_TIME_UNITS = {"s", "ms", "us", "ns"}


def quantity_kind(metric: str, unit: str) -> str | None:
    """bandwidth, iops, latency or None, from the metric's name and unit."""
    m = metric.lower()
    if re.search(r"(^|_)bw(_|$)", m) or unit == "B/s":
        return "bandwidth"
    if "iops" in m or unit == "1/s":
        return "iops"
    if "lat" in m or unit in _TIME_UNITS:
        return "latency"
    return None


def _of_kind(metrics: Sequence[str], units: dict[str, str], kind: str, prefix: str) -> list[str]:
    """Metrics of one kind starting with ``prefix``; latency means before percentiles."""
    found = [m for m in metrics if m.startswith(prefix) and quantity_kind(m, units.get(m, "")) == kind]
    return sorted(found, key=lambda m: "mean" not in m) if kind == "latency" else found


def plot_metrics(metrics: Sequence[str], units: dict[str, str], primary: Sequence[str]) -> list[str]:
    """The metrics a benchmark's bar and ECDF charts show, by role (see the module doc)."""
    chosen = [m for m in metrics if m in set(primary)][:MAX_PANELS]
    prefixes = list(dict.fromkeys(m.split("_", 1)[0] + "_" for m in chosen if "_" in m)) or [""]
    for kind in KINDS:
        picks = [c[0] for pre in prefixes if (c := _of_kind(metrics, units, kind, pre))]
        if not picks:
            picks = _of_kind(metrics, units, kind, "")[:1]
        chosen += [m for m in dict.fromkeys(picks) if m not in chosen]
    chosen += [m for m in metrics if m not in chosen][: max(MIN_PANELS - len(chosen), 0)]
    return chosen[:MAX_PANELS]


#: groups per figure: a longer series (pyperformance's default group has ~60 benchmarks) is split
#: into figures "part k/n" so no chart grows wider than a page
MAX_GROUPS = 20


def _parts(values: dict[tuple[str, str], Any]) -> list[dict[tuple[str, str], Any]]:
    """``values`` split by group into consecutive parts of at most MAX_GROUPS groups."""
    groups = list(dict.fromkeys(g for g, _ in values))
    chunks = [set(groups[i : i + MAX_GROUPS]) for i in range(0, len(groups), MAX_GROUPS)]
    return [{k: v for k, v in values.items() if k[0] in chunk} for chunk in chunks]


def _titled(title: str, k: int, n: int) -> str:
    return title if n == 1 else f"{title} (part {k}/{n})"


def _rows(
    values: dict[tuple[str, str], tuple[float, float, float]], scale: float = 1.0
) -> list[tuple[str, str, float, float, float]]:
    """``svgplot.hbars`` rows of ``{(group, label): (value, lo, hi)}``, divided by ``scale``."""
    return [(g, lab, v / scale, lo / scale, hi / scale) for (g, lab), (v, lo, hi) in values.items()]


def _value(row: Any, scale: float = 1.0) -> tuple[float, float, float]:
    """The bar (the geometric mean where the interval is of it: positive quantities) and its CI."""
    centre = float(getattr(row, "geomean", float("nan")))
    centre = centre if math.isfinite(centre) else float(row.mean)
    return (centre / scale, float(row.ci95_low) / scale, float(row.ci95_high) / scale)


def fio_figures(desc: pd.DataFrame, types: dict[str, str], palette: dict[str, str]) -> list[dict[str, Any]]:
    """Grouped bars of bandwidth and IOPS across the fio benchmarks (two groups at least)."""
    fio = desc[desc["benchmark"].astype(str).map(types).eq("fio")]
    out = []
    for pattern, what, unit in (
        (r"(read|write|trim)_bw_bytes", "bandwidth", "B/s"),
        (r"(read|write|trim)_iops", "IOPS", "1/s"),
    ):
        part = fio[fio["metric"].astype(str).str.fullmatch(pattern)]
        values = {
            (f"{r.benchmark} {str(r.metric).split('_', 1)[0]}", str(r.label)): _value(r)
            for r in part.itertuples(index=False)
        }
        if len({g for g, _ in values}) < 2:
            continue
        f, scaled = display.common_scale([v for v, _, _ in values.values()], unit)
        parts = _parts(values)
        for k, part in enumerate(parts, start=1):
            title = _titled(f"fio {what} across benchmarks", k, len(parts))
            sub = f"95% CI [{scaled}], higher is better" if scaled else "95% CI, higher is better"
            image = svgplot.hbars(_rows(part, f), palette, title, sub)
            alt = _titled(f"fio {what} grouped bar chart", k, len(parts))
            out.append({"caption": title, "image": image, "alt": alt})
    return out


def pyperf_figures(
    desc: pd.DataFrame, types: dict[str, str], factors: pd.DataFrame, palette: dict[str, str]
) -> list[dict[str, Any]]:
    """Every pyperformance benchmark's mean time per label, relative to the vendor's first label."""
    py = desc[desc["benchmark"].astype(str).map(types).eq("pyperformance")]
    if py.empty:
        return []
    vendor = {str(r.label): r.vendor for r in factors.itertuples(index=False) if isinstance(r.vendor, str)}
    several = py["benchmark"].nunique() > 1
    py = py.assign(
        group=[f"{b}:{m}" if several else str(m) for b, m in zip(py["benchmark"], py["metric"], strict=True)],
        vendor=py["label"].astype(str).map(lambda lab: vendor.get(lab, "unknown vendor")),
    )
    out = []
    for ven, part in py.groupby("vendor", sort=True):
        labels = sorted(part["label"].astype(str).unique())
        ref = part[part["label"].astype(str) == labels[0]].set_index("group")["mean"]
        values = {}
        for r in part.sort_values(["group", "label"]).itertuples(index=False):
            base = float(ref.get(r.group, np.nan))
            if np.isfinite(base) and base > 0:
                values[(r.group, str(r.label))] = _value(r, base)
        if not values:
            continue
        n = len(set(part["group"]))
        note = (
            f"Labels with CPU vendor {ven}; each of the {n} benchmarks' mean time divided by {labels[0]}'s."
        )
        chunks = _parts(values)
        for k, chunk in enumerate(chunks, start=1):
            title = _titled(f"pyperformance ({ven}): time / {labels[0]}", k, len(chunks))
            sub = f"{len({g for g, _ in chunk})} of {n} benchmarks, 95% CI, lower is better"
            image = svgplot.hbars(_rows(chunk), palette, title, sub, ref=1.0)
            alt = _titled(f"pyperformance {ven} figure", k, len(chunks))
            out.append({"caption": title, "image": image, "alt": alt, "note": note})
    return out


def section(
    desc: pd.DataFrame, types: dict[str, str], factors: pd.DataFrame, palette: dict[str, str]
) -> dict[str, Any] | None:
    """The report section of the figures across benchmarks (None when there is none)."""
    tables = fio_figures(desc, types, palette) + pyperf_figures(desc, types, factors, palette)
    if not tables:
        return None
    note = (
        "fio: one group per benchmark and direction, one bar per label (mean, 95% CI). pyperformance: "
        "each benchmark's mean time relative to the first label of the same CPU vendor (dashed line = 1)."
    )
    return {"id": "across", "title": "Across benchmarks", "note": note, "tables": tables}
