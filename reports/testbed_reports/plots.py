"""Matplotlib figures of the report (heat map, latency percentiles) as PNG data URIs."""

from __future__ import annotations

import base64
import io
import math

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

DPI = 80


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
    fig = Figure(figsize=(7.5, 3.2))
    ax = fig.subplots()
    fig.subplots_adjust(left=0.1, right=0.62, bottom=0.12, top=0.95)
    med = pct.groupby(["label", "series", "percentile"], observed=True)["value"].median().reset_index()
    for (label, series), part in med.groupby(["label", "series"], observed=True):
        p = part["percentile"].to_numpy(float)
        x = -np.log10(np.clip(1 - p / 100.0, 1e-9, 1))
        style = "-" if series == med["series"].iloc[0] else "--"
        ax.plot(
            x, part["value"], style, marker=".", color=palette.get(str(label), "k"), label=f"{label} {series}"
        )
    ticks = [50, 90, 99, 99.9, 99.99]
    ax.set_xticks([-math.log10(1 - t / 100) for t in ticks], [f"p{t:g}" for t in ticks], fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("latency", fontsize=8)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    return _uri(fig)
