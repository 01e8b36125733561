"""Matplotlib figures of the report (latency percentiles) as PNG data URIs, and the label colours.

The percentile figure is 340 px wide (a phone shows it at its own size) with 11 px text, its legend
below the plot; latencies are in seconds on the scale ``display`` picks (ms, µs), written in plain
digits like the tables. ``matplotlib.figure`` (about 14 MiB and a second to import) is imported only
when a report has percentiles to plot.
"""

from __future__ import annotations

import base64
import io
import math
import re
from typing import TYPE_CHECKING

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.colors import to_hex
from matplotlib.ticker import FuncFormatter, NullFormatter

from testbed_reports import display

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DPI = 80
#: text size in points (at DPI 80: 10 pt = 11 px)
FONT_PT = 10
_SERIES_UNIT = re.compile(r"(^|_)(ns|us|ms|s)(_|$)")
_TO_SECONDS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def to_seconds(series: str) -> float:
    """The factor that turns a percentile series' values into seconds, from its name
    (``clat_ns_percentiles`` -> 1e-9; seconds when the name names no unit)."""
    m = _SERIES_UNIT.search(series.split(".", 1)[0])
    return _TO_SECONDS[m.group(2)] if m else 1.0


def _uri(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def colors(labels: list[str]) -> dict[str, str]:
    """A stable colour per label (hex), the same in every chart of the report."""
    cmap = matplotlib.colormaps["tab10" if len(labels) <= 10 else "tab20"]
    return {lab: to_hex(cmap(i % cmap.N)) for i, lab in enumerate(labels)}


def percentiles(pct: pd.DataFrame, palette: dict[str, str]) -> str:
    """Latency percentiles (median over runs) per label and series, on a 'nines' axis."""
    med = pct.groupby(["label", "series", "percentile"], observed=True)["value"].median().reset_index()
    med["seconds"] = med["value"] * med["series"].astype(str).map(to_seconds)
    f, unit = display.common_scale(med["seconds"].to_numpy(float), "s")
    lines = med.groupby(["label", "series"], observed=True).ngroups
    from matplotlib.figure import Figure  # noqa: PLC0415 - lazy: most reports have no percentiles

    fig = Figure(figsize=(4.25, 3.0 + 0.24 * lines))
    ax = fig.subplots()
    legend_in = (0.55 + 0.24 * lines) / (3.0 + 0.24 * lines)
    fig.subplots_adjust(left=0.2, right=0.96, bottom=legend_in + 0.06, top=0.97)
    for (label, series), part in med.groupby(["label", "series"], observed=True):
        p = part["percentile"].to_numpy(float)
        x = -np.log10(np.clip(1 - p / 100.0, 1e-9, 1))
        style = "-" if series == med["series"].iloc[0] else "--"
        ax.plot(
            x,
            part["seconds"] / f,
            style,
            marker=".",
            color=palette.get(str(label), "k"),
            label=f"{label} {series}",
        )
    ticks = [50, 90, 99, 99.9, 99.99]
    ax.set_xticks([-math.log10(1 - t / 100) for t in ticks], [f"p{t:g}" for t in ticks], fontsize=FONT_PT)
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: display.short(v, 3)))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.tick_params(axis="y", labelsize=FONT_PT)
    ax.set_ylabel(f"latency ({unit})", fontsize=FONT_PT)
    ax.legend(fontsize=FONT_PT, loc="upper left", bbox_to_anchor=(-0.2, -0.12), frameon=False)
    return _uri(fig)
