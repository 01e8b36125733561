"""Figures of the report, returned as PNG data URIs (the HTML stays self-contained)."""

from __future__ import annotations

import base64
import io
import math

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

MAX_PANELS = 12
ECDF_POINTS = 400
DPI = 80


def _uri(fig: Figure) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def colors(labels: list[str]) -> dict[str, tuple]:
    cmap = matplotlib.colormaps["tab10" if len(labels) <= 10 else "tab20"]
    return {lab: cmap(i % cmap.N) for i, lab in enumerate(labels)}


def _grid(n: int, width: float = 3.4, height: float = 2.6) -> tuple[Figure, list[Axes]]:
    cols = min(n, 4)
    rows = math.ceil(n / cols)
    fig = Figure(figsize=(width * cols, height * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def bars(desc: pd.DataFrame, palette: dict[str, tuple]) -> str:
    """Mean per label with its 95% CI, one panel per metric of one benchmark."""
    metrics = list(dict.fromkeys(desc["metric"]))[:MAX_PANELS]
    fig, axes = _grid(len(metrics))
    for ax, m in zip(axes, metrics):
        part = desc[desc["metric"] == m]
        x = np.arange(len(part))
        mean = part["mean"].to_numpy(float)
        err = np.vstack([mean - part["ci95_low"].to_numpy(float), part["ci95_high"].to_numpy(float) - mean])
        err = np.where(np.isfinite(err), np.maximum(err, 0), 0)
        ax.bar(x, mean, yerr=err, capsize=3, color=[palette[str(lab)] for lab in part["label"]])
        ax.set_xticks(x, [str(lab) for lab in part["label"]], rotation=30, ha="right", fontsize=7)
        unit = str(part["unit"].iloc[0])
        ax.set_title(f"{m} ({part['better'].iloc[0]} is better)", fontsize=8)
        ax.set_ylabel(unit, fontsize=7)
        ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    return _uri(fig)


def ecdf(obs: pd.DataFrame, metrics: list[str], palette: dict[str, tuple]) -> str:
    """ECDF of the per-run values of each label (at most ECDF_POINTS quantiles per line)."""
    metrics = metrics[:MAX_PANELS]
    fig, axes = _grid(len(metrics))
    groups = obs.groupby(["metric", "label"], observed=True).indices
    values = obs["value"].to_numpy()
    unit_of = obs.groupby("metric", observed=True)["unit"].first()
    for ax, m in zip(axes, metrics):
        for (metric, label), rows in groups.items():
            if metric != m:
                continue
            v = np.sort(values[rows])
            if len(v) > ECDF_POINTS:
                p = np.linspace(0, 1, ECDF_POINTS)
                v = np.quantile(v, p)
            else:
                p = np.arange(1, len(v) + 1) / len(v)
            ax.step(v, p, where="post", color=palette[str(label)], label=str(label), lw=1.2)
        ax.set_title(m, fontsize=8)
        ax.set_xlabel(str(unit_of.get(m, "")), fontsize=7)
        ax.set_ylabel("fraction of runs", fontsize=7)
        ax.tick_params(labelsize=7)
    if axes:
        axes[0].legend(fontsize=6)
    fig.tight_layout()
    return _uri(fig)


def cv_bars(desc: pd.DataFrame, palette: dict[str, tuple]) -> str:
    """Coefficient of variation (%) with its bootstrap CI, per metric and label."""
    metrics = list(dict.fromkeys(desc["metric"]))[:MAX_PANELS]
    labels = list(dict.fromkeys(desc["label"]))
    fig = Figure(figsize=(max(4.0, 0.9 * len(metrics) * max(1, len(labels)) ** 0.5 + 2), 2.8))
    ax = fig.subplots()
    width = 0.8 / max(len(labels), 1)
    for j, lab in enumerate(labels):
        part = desc[desc["label"] == lab].set_index("metric").reindex(metrics)
        cv = part["cv_percent"].to_numpy(float)
        err = np.vstack([cv - part["cv_ci_low"].to_numpy(float), part["cv_ci_high"].to_numpy(float) - cv])
        err = np.where(np.isfinite(err), np.maximum(err, 0), 0)
        ax.bar(np.arange(len(metrics)) + j * width, np.nan_to_num(cv), width, yerr=err, capsize=2,
               color=palette[str(lab)], label=str(lab))
    ax.set_xticks(np.arange(len(metrics)) + 0.4 - width / 2, metrics, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("CV (%)", fontsize=8)
    ax.tick_params(axis="y", labelsize=7)
    ax.legend(fontsize=6)
    fig.tight_layout()
    return _uri(fig)


def heatmap(cmp: pd.DataFrame) -> str:
    """Overhead (%) per benchmark metric (rows) and comparison (columns); '*' marks significant."""
    cmp = cmp.assign(row=cmp["benchmark"].astype(str) + " · " + cmp["metric"].astype(str))
    grid = cmp.pivot_table(index="row", columns="comparison", values="overhead_percent", aggfunc="first")
    sig = cmp.pivot_table(index="row", columns="comparison", values="significant",
                          aggfunc=lambda s: bool(s.fillna(False).iloc[0]))
    data = grid.to_numpy(float)
    lim = np.nanpercentile(np.abs(data), 95) if np.isfinite(data).any() else 1.0
    lim = max(float(lim), 1.0)
    fig = Figure(figsize=(2.2 + 1.3 * grid.shape[1], 1.0 + 0.28 * grid.shape[0]))
    ax = fig.subplots()
    im = ax.imshow(data, cmap="RdYlGn_r", vmin=-lim, vmax=lim, aspect="auto")
    ax.set_xticks(range(grid.shape[1]), grid.columns, rotation=30, ha="right", fontsize=7)
    ax.set_yticks(range(grid.shape[0]), grid.index, fontsize=7)
    if data.size <= 2000:
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                if np.isfinite(data[i, j]):
                    star = "*" if bool(sig.iloc[i, j]) else ""
                    ax.text(j, i, f"{data[i, j]:+.1f}{star}", ha="center", va="center", fontsize=6)
    fig.colorbar(im, ax=ax, label="overhead % (positive = slower)")
    fig.tight_layout()
    return _uri(fig)


def percentiles(pct: pd.DataFrame, palette: dict[str, tuple]) -> str:
    """Latency percentiles (median over runs) per label and series, on a 'nines' axis."""
    fig = Figure(figsize=(5.5, 3.0))
    ax = fig.subplots()
    med = pct.groupby(["label", "series", "percentile"], observed=True)["value"].median().reset_index()
    for (label, series), part in med.groupby(["label", "series"], observed=True):
        p = part["percentile"].to_numpy(float)
        x = -np.log10(np.clip(1 - p / 100.0, 1e-9, 1))
        style = "-" if series == med["series"].iloc[0] else "--"
        ax.plot(x, part["value"], style, marker=".", color=palette.get(str(label), "k"),
                label=f"{label} {series}")
    ticks = [50, 90, 99, 99.9, 99.99]
    ax.set_xticks([-math.log10(1 - t / 100) for t in ticks], [f"p{t:g}" for t in ticks], fontsize=7)
    ax.set_yscale("log")
    ax.set_ylabel("latency", fontsize=8)
    ax.legend(fontsize=6)
    fig.tight_layout()
    return _uri(fig)
