"""Helpers the serverless study views (``s0.py``, ``s1.py``, ``s3.py``) share: records of a plan's
benchmarks with their parameters and per-call samples, intervals of one sample, published values
by id, and small SVG charts (line and scatter plots; bars, ECDFs and histograms come from
:mod:`testbed_reports.svgplot`).

Intervals are of one cell's observations taken as independent: the t interval of the mean, the
order-statistic (binomial) interval of the median, Vangel's interval of the CV. Where a paper's
observations are a campaign over time this is the paper's own assumption; the views say so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from testbed_reports.numerics import cv_ci
from testbed_reports.study.view import Cell
from testbed_shared.studies import Manifest, Published

#: colours of the platforms and levels in the serverless figures
PALETTE = (
    "#4c72b0",
    "#dd8452",
    "#55a868",
    "#c44e52",
    "#8172b3",
    "#937860",
    "#da8bc3",
    "#8c8c8c",
)


def palette(labels: Iterable[str]) -> dict[str, str]:
    """A colour per label, in order."""
    return {lab: PALETTE[i % len(PALETTE)] for i, lab in enumerate(dict.fromkeys(labels))}


@dataclass(frozen=True)
class Run:
    """One execution record of a study benchmark: its parameters, metrics, start and samples."""

    benchmark: str
    params: dict[str, Any]
    metrics: dict[str, float]
    started_at: pd.Timestamp
    run_id: str
    host: str
    source: str
    line: int

    def samples(self) -> dict[str, Any]:
        """The record's ``samples`` (read again from its result file, where the loader left them)."""
        with open(self.source, encoding="utf-8") as fh:
            for i, raw in enumerate(fh, start=1):
                if i == self.line:
                    return dict(json.loads(raw).get("samples") or {})
        return {}

    def calls(self) -> list[dict[str, Any]]:
        """Per-call samples of a faas record (``samples.calls``)."""
        return [c for c in self.samples().get("calls") or [] if isinstance(c, dict)]


def runs(ds: Any, prefixes: tuple[str, ...], type_: str = "faas") -> list[Run]:
    """The ok records of ``type_`` whose benchmark name starts with one of ``prefixes``."""
    rec = ds.records
    if rec.empty:
        return []
    mask = (rec["type"] == type_) & (rec["status"] == "ok") & rec["benchmark"].str.startswith(prefixes)
    out = []
    obs = ds.obs[ds.obs["record"].isin(np.flatnonzero(mask.to_numpy()))]
    by_record: dict[int, dict[str, float]] = {}
    for r, metric, value in zip(obs["record"], obs["metric"].astype(str), obs["value"], strict=True):
        by_record.setdefault(int(r), {})[metric] = float(value)
    for i in np.flatnonzero(mask.to_numpy()):
        row = rec.iloc[i]
        out.append(
            Run(
                benchmark=str(row["benchmark"]),
                params=dict(ds.params[i] or {}),
                metrics=by_record.get(int(i), {}),
                started_at=pd.Timestamp(row["started_at"]),
                run_id=str(row["run_id"]),
                host=str(row["host"]),
                source=str(row["source"]),
                line=int(row["line"]),
            )
        )
    return out


def paper(manifest: Manifest, value_id: str) -> Published | None:
    """The published value ``value_id`` of the manifest, or None."""
    try:
        return manifest.published_value(value_id)
    except KeyError:
        return None


def mean_cell(values: np.ndarray, published: Published | None, scale: float = 1.0, note: str = "") -> Cell:
    """Mean with its t 95 % interval (values times ``scale``)."""
    v = np.asarray(values, dtype=float) * scale
    n = len(v)
    if n == 0:
        return Cell(None, paper=published, note="no observations")
    mean = float(v.mean())
    if n < 2:
        return Cell(mean, paper=published, note=f"n=1{', ' + note if note else ''}")
    half = float(sps.t.ppf(0.975, n - 1) * v.std(ddof=1) / math.sqrt(n))
    return Cell(
        mean, mean - half, mean + half, published, f"mean, t 95 % CI, n={n}{', ' + note if note else ''}"
    )


def median_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Distribution-free interval of the median from order statistics (binomial); NaN when n < 6."""
    v = np.sort(np.asarray(values, dtype=float))
    n = len(v)
    if n < 6:
        return math.nan, math.nan
    lo = int(sps.binom.ppf((1 - level) / 2, n, 0.5))
    hi = int(sps.binom.isf((1 - level) / 2, n, 0.5))
    return float(v[max(lo - 1, 0)]), float(v[min(hi, n - 1)])


def median_cell(values: np.ndarray, published: Published | None, scale: float = 1.0, note: str = "") -> Cell:
    """Median with its order-statistic 95 % interval."""
    v = np.asarray(values, dtype=float) * scale
    if len(v) == 0:
        return Cell(None, paper=published, note="no observations")
    lo, hi = median_interval(v)
    ok = math.isfinite(lo)
    extra = f", {note}" if note else ""
    return Cell(
        float(np.median(v)), lo if ok else None, hi if ok else None, published, f"median, n={len(v)}{extra}"
    )


def cv_cell(values: np.ndarray, published: Published | None, note: str = "") -> Cell:
    """CV (%) with Vangel's 95 % interval."""
    v = np.asarray(values, dtype=float)
    n = len(v)
    if n < 2 or v.mean() == 0:
        return Cell(None, paper=published, note="needs two observations")
    cv = float(100 * v.std(ddof=1) / abs(v.mean()))
    lo, hi = cv_ci(np.array([cv]), np.array([n]))
    extra = f", {note}" if note else ""
    lo_f, hi_f = float(lo[0]), float(hi[0])
    return Cell(
        cv,
        lo_f if math.isfinite(lo_f) else None,
        hi_f if math.isfinite(hi_f) else None,
        published,
        f"CV %, Vangel 95 % CI, n={n}{extra}",
    )


def value_cell(value: float | None, published: Published | None, note: str = "") -> Cell:
    """A value without an interval (a count, an ANOVA figure, a fitted R2)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return Cell(None, paper=published, note=note or "not computable")
    return Cell(float(value), paper=published, note=note)


def img(uri: str, alt: str) -> str:
    """An inline image element for a data-URI SVG of :mod:`testbed_reports.svgplot`."""
    return f'<img alt="{escape(alt)}" src="{uri}">'


def line_plot(  # noqa: PLR0912 - one chart: axes, bands, lines, marks, legend
    series: dict[str, tuple[list[float], list[float]]],
    title: str,
    xlabel: str,
    ylabel: str,
    *,
    logx: bool = False,
    points_only: bool = False,
    bands: dict[str, tuple[list[float], list[float]]] | None = None,
    marks: dict[str, tuple[list[float], list[float]]] | None = None,
) -> str:
    """An inline SVG of y over x, one polyline (or point set) per series, optional shaded bands
    (low, high per x) and hollow marks (e.g. a paper's published points)."""
    w, h, left, right, top, bottom = 520, 300, 62, 130, 30, 42
    xs = [x for xv, _ in series.values() for x in xv] + [x for xv, _ in (marks or {}).values() for x in xv]
    ys = [y for _, yv in series.values() for y in yv] + [y for _, yv in (marks or {}).values() for y in yv]
    for lo, hi in (bands or {}).values():
        ys += [y for y in lo + hi if math.isfinite(y)]
    xs = [x for x in xs if math.isfinite(x) and (x > 0 or not logx)]
    ys = [y for y in ys if math.isfinite(y)]
    if not xs or not ys:
        return f"<p><em>{escape(title)}: no data</em></p>"
    fx = math.log10 if logx else float
    x0, x1 = fx(min(xs)), fx(max(xs))
    y0, y1 = min(0.0, *ys), max(ys) * 1.08 or 1.0
    x1 = x1 if x1 > x0 else x0 + 1
    y1 = y1 if y1 > y0 else y0 + 1

    def px(x: float) -> float:
        return left + (fx(x) - x0) / (x1 - x0) * (w - left - right)

    def py(y: float) -> float:
        return h - bottom - (y - y0) / (y1 - y0) * (h - top - bottom)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
        f'font-family="DejaVu Sans, Arial, sans-serif" font-size="10"><rect width="100%" height="100%" '
        f'fill="white"/><text x="{(w - right + left) / 2:.0f}" y="16" text-anchor="middle" '
        f'font-weight="bold" font-size="11">{escape(title)}</text>'
        f'<rect x="{left}" y="{top}" width="{w - left - right}" height="{h - top - bottom}" fill="none" '
        f'stroke="#444" stroke-width="0.8"/>'
    ]
    for t in np.linspace(y0, y1, 5):
        parts.append(
            f'<line x1="{left - 4}" y1="{py(t):.1f}" x2="{w - right}" y2="{py(t):.1f}" stroke="#eee"/>'
            f'<text x="{left - 6}" y="{py(t) + 3:.1f}" text-anchor="end">{_num(t)}</text>'
        )
    xt = sorted({x for x in xs})
    if len(xt) > 8:
        xt = [xt[int(i)] for i in np.linspace(0, len(xt) - 1, 8)]
    for t in xt:
        parts.append(f'<text x="{px(t):.1f}" y="{h - bottom + 14}" text-anchor="middle">{_num(t)}</text>')
    parts.append(
        f'<text x="{(w - right + left) / 2:.0f}" y="{h - 6}" text-anchor="middle">{escape(xlabel)}</text>'
    )
    parts.append(
        f'<text x="14" y="{(h - bottom + top) / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {(h - bottom + top) / 2:.0f})">{escape(ylabel)}</text>'
    )
    colours = palette([*series, *(marks or {})])
    for name, (lo, hi) in (bands or {}).items():
        xv = series.get(name, ([], []))[0]
        pts = [
            (x, a, b) for x, a, b in zip(xv, lo, hi, strict=False) if math.isfinite(a) and math.isfinite(b)
        ]
        if len(pts) > 1:
            up = " ".join(f"{px(x):.1f},{py(b):.1f}" for x, _, b in pts)
            down = " ".join(f"{px(x):.1f},{py(a):.1f}" for x, a, _ in reversed(pts))
            parts.append(
                f'<polygon points="{up} {down}" fill="{colours[name]}" fill-opacity="0.18" stroke="none"/>'
            )
    for name, (xv, yv) in series.items():
        pts = [(x, y) for x, y in zip(xv, yv, strict=True) if math.isfinite(x) and math.isfinite(y)]
        if not points_only and len(pts) > 1:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{colours[name]}" stroke-width="1.6"/>'
            )
        for x, y in pts:
            parts.append(
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="2.6" fill="{colours[name]}">'
                f"<title>{escape(name)}: {_num(x)}, {_num(y)}</title></circle>"
            )
    for name, (xv, yv) in (marks or {}).items():
        for x, y in zip(xv, yv, strict=True):
            parts.append(
                f'<rect x="{px(x) - 3.5:.1f}" y="{py(y) - 3.5:.1f}" width="7" height="7" fill="none" '
                f'stroke="{colours[name]}" stroke-width="1.4"><title>{escape(name)}: {_num(x)}, {_num(y)}'
                f"</title></rect>"
            )
    for i, name in enumerate([*series, *(marks or {})]):
        y = top + 12 + 14 * i
        parts.append(
            f'<rect x="{w - right + 8}" y="{y - 8}" width="10" height="10" fill="{colours[name]}"/>'
            f'<text x="{w - right + 22}" y="{y + 1}">{escape(name[:18])}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _num(v: float) -> str:
    a = abs(v)
    if v == 0:
        return "0"
    return f"{v:.3g}" if 1e-3 <= a < 1e5 else f"{v:.2e}"


def read_rows(path: Path) -> pd.DataFrame:
    """A CSV file as text columns (the thesis's and the paper's published observations)."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)
