"""Helpers the serverless study views (``s0.py``, ``s1.py``, ``s3.py``) share: records of a plan's
benchmarks with their parameters and per-call samples, intervals of one sample, published values
by id, and small SVG charts (line and scatter plots; bars, ECDFs and histograms come from
:mod:`testbed_reports.svgplot`).

Intervals are of one cell's observations taken as independent. The papers print arithmetic means,
so a mean is the sample's arithmetic mean with the interval of the population's from the one
interval core (:func:`testbed_shared.intervals.arithmetic_mean_interval`: for positive values the
hull of the modified Cox lognormal-mean interval and the t interval, which never crosses zero and
covers 93 % at n = 5 for lognormal data with log-sd 1, where the t interval alone covered 82 %);
the median has the order-statistic (binomial) interval, the CV Vangel's. Each cell names its
estimand. A mixture of cold starts and warm calls has no reliable interval of its mean at small n
(a 1-in-10 tenfold cold start: 40 % at n = 5): the views split cold from warm where the calls say
which, and name the mixture where the paper's statistic is the mixture's mean
(reports/tests/test_study_intervals.py measures both). Where a paper's observations are a
campaign over time, independence is the paper's own assumption; the views say so.
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

from testbed_reports.numerics import cv_ci
from testbed_reports.study.view import Cell
from testbed_shared.intervals import arithmetic_mean_interval, quantile_interval
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


def mean_cell(
    values: np.ndarray,
    published: Published | None,
    scale: float = 1.0,
    note: str = "",
    withheld: str = "",
) -> Cell:
    """Arithmetic mean (values times ``scale``) with the 95 % interval of
    :func:`testbed_shared.intervals.arithmetic_mean_interval` (none from one value)."""
    v = np.asarray(values, dtype=float) * scale
    n = len(v)
    extra = f", {note}" if note else ""
    if n == 0:
        return Cell(None, paper=published, note="no observations", estimand="mean", withheld=withheld)
    mean, lo, hi, method = arithmetic_mean_interval(v.tolist())
    if n < 2 or not (math.isfinite(lo) and math.isfinite(hi)):
        return Cell(mean, paper=published, note=f"n={n}{extra}", estimand="mean", withheld=withheld)
    return Cell(
        mean, lo, hi, published, f"mean, 95 % CI: {method}, n={n}{extra}", estimand="mean", withheld=withheld
    )


def median_cell(values: np.ndarray, published: Published | None, scale: float = 1.0, note: str = "") -> Cell:
    """Median with its order-statistic 95 % interval."""
    v = np.asarray(values, dtype=float) * scale
    if len(v) == 0:
        return Cell(None, paper=published, note="no observations")
    _, lo, hi = quantile_interval(v.tolist(), 0.5)  # NaN ends when n < 6
    ok = math.isfinite(lo)
    extra = f", {note}" if note else ""
    return Cell(
        float(np.median(v)),
        lo if ok else None,
        hi if ok else None,
        published,
        f"median, order-statistic 95 % CI, n={len(v)}{extra}",
        estimand="median",
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
        estimand="CV",
    )


def value_cell(value: float | None, published: Published | None, note: str = "", withheld: str = "") -> Cell:
    """A value without an interval (a count, an ANOVA figure, a fitted R2)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return Cell(None, paper=published, note=note or "not computable", withheld=withheld)
    return Cell(float(value), paper=published, note=note, withheld=withheld)


def img(uri: str, alt: str) -> str:
    """An inline image element for a data-URI SVG of :mod:`testbed_reports.svgplot`."""
    return f'<img alt="{escape(alt)}" src="{uri}">'


def line_plot(
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
    frame = _Frame.fit(series, marks or {}, bands or {}, logx)
    if frame is None:
        return f"<p><em>{escape(title)}: no data</em></p>"
    parts = frame.axes(title, xlabel, ylabel)
    colours = palette([*series, *(marks or {})])
    for name, (lo, hi) in (bands or {}).items():
        parts.append(frame.band(series.get(name, ([], []))[0], lo, hi, colours[name]))
    for name, (xv, yv) in series.items():
        parts.append(frame.series(name, xv, yv, colours[name], points_only))
    for name, (xv, yv) in (marks or {}).items():
        parts.append(frame.marks(name, xv, yv, colours[name]))
    parts.append(frame.legend([*series, *(marks or {})], colours))
    parts.append("</svg>")
    return "".join(parts)


@dataclass(frozen=True)
class _Frame:
    """The plotting area of :func:`line_plot`: its data limits and pixel mapping."""

    x0: float
    x1: float
    y0: float
    y1: float
    logx: bool
    xs: tuple[float, ...]
    w: int = 520
    h: int = 300
    left: int = 62
    right: int = 130
    top: int = 30
    bottom: int = 42

    @classmethod
    def fit(
        cls,
        series: dict[str, tuple[list[float], list[float]]],
        marks: dict[str, tuple[list[float], list[float]]],
        bands: dict[str, tuple[list[float], list[float]]],
        logx: bool,
    ) -> _Frame | None:
        pairs = [*series.values(), *marks.values()]
        xs = [x for xv, _ in pairs for x in xv if math.isfinite(x) and (x > 0 or not logx)]
        ys = [y for _, yv in pairs for y in yv if math.isfinite(y)]
        ys += [y for lo, hi in bands.values() for y in lo + hi if math.isfinite(y)]
        if not xs or not ys:
            return None
        fx = math.log10 if logx else float
        x0, x1 = fx(min(xs)), fx(max(xs))
        y0, y1 = min(0.0, *ys), max(ys) * 1.08 or 1.0
        return cls(x0, x1 if x1 > x0 else x0 + 1, y0, y1 if y1 > y0 else y0 + 1, logx, tuple(sorted(set(xs))))

    def px(self, x: float) -> float:
        fx = math.log10(x) if self.logx else x
        return self.left + (fx - self.x0) / (self.x1 - self.x0) * (self.w - self.left - self.right)

    def py(self, y: float) -> float:
        return self.h - self.bottom - (y - self.y0) / (self.y1 - self.y0) * (self.h - self.top - self.bottom)

    def axes(self, title: str, xlabel: str, ylabel: str) -> list[str]:
        w, h, left, right, top, bottom = self.w, self.h, self.left, self.right, self.top, self.bottom
        mid_x, mid_y = (w - right + left) / 2, (h - bottom + top) / 2
        parts = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" '
            f'font-family="DejaVu Sans, Arial, sans-serif" font-size="10"><rect width="100%" height="100%" '
            f'fill="white"/><text x="{mid_x:.0f}" y="16" text-anchor="middle" font-weight="bold" '
            f'font-size="11">{escape(title)}</text><rect x="{left}" y="{top}" width="{w - left - right}" '
            f'height="{h - top - bottom}" fill="none" stroke="#444" stroke-width="0.8"/>'
        ]
        for t in np.linspace(self.y0, self.y1, 5):
            parts.append(
                f'<line x1="{left - 4}" y1="{self.py(t):.1f}" x2="{w - right}" y2="{self.py(t):.1f}" '
                f'stroke="#eee"/><text x="{left - 6}" y="{self.py(t) + 3:.1f}" text-anchor="end">'
                f"{_num(t)}</text>"
            )
        ticks = list(self.xs)
        if len(ticks) > 8:
            ticks = [ticks[int(i)] for i in np.linspace(0, len(ticks) - 1, 8)]
        for t in ticks:
            parts.append(
                f'<text x="{self.px(t):.1f}" y="{h - bottom + 14}" text-anchor="middle">{_num(t)}</text>'
            )
        parts.append(f'<text x="{mid_x:.0f}" y="{h - 6}" text-anchor="middle">{escape(xlabel)}</text>')
        parts.append(
            f'<text x="14" y="{mid_y:.0f}" text-anchor="middle" transform="rotate(-90 14 {mid_y:.0f})">'
            f"{escape(ylabel)}</text>"
        )
        return parts

    def band(self, xv: list[float], lo: list[float], hi: list[float], colour: str) -> str:
        pts = [
            (x, a, b) for x, a, b in zip(xv, lo, hi, strict=False) if math.isfinite(a) and math.isfinite(b)
        ]
        if len(pts) < 2:
            return ""
        up = " ".join(f"{self.px(x):.1f},{self.py(b):.1f}" for x, _, b in pts)
        down = " ".join(f"{self.px(x):.1f},{self.py(a):.1f}" for x, a, _ in reversed(pts))
        return f'<polygon points="{up} {down}" fill="{colour}" fill-opacity="0.18" stroke="none"/>'

    def series(self, name: str, xv: list[float], yv: list[float], colour: str, points_only: bool) -> str:
        pts = [(x, y) for x, y in zip(xv, yv, strict=True) if math.isfinite(x) and math.isfinite(y)]
        out = []
        if not points_only and len(pts) > 1:
            path = " ".join(f"{self.px(x):.1f},{self.py(y):.1f}" for x, y in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.6"/>')
        out += [
            f'<circle cx="{self.px(x):.1f}" cy="{self.py(y):.1f}" r="2.6" fill="{colour}">'
            f"<title>{escape(name)}: {_num(x)}, {_num(y)}</title></circle>"
            for x, y in pts
        ]
        return "".join(out)

    def marks(self, name: str, xv: list[float], yv: list[float], colour: str) -> str:
        return "".join(
            f'<rect x="{self.px(x) - 3.5:.1f}" y="{self.py(y) - 3.5:.1f}" width="7" height="7" fill="none" '
            f'stroke="{colour}" stroke-width="1.4"><title>{escape(name)}: {_num(x)}, {_num(y)}</title></rect>'
            for x, y in zip(xv, yv, strict=True)
        )

    def legend(self, names: list[str], colours: dict[str, str]) -> str:
        out = []
        for i, name in enumerate(names):
            y = self.top + 12 + 14 * i
            out.append(
                f'<rect x="{self.w - self.right + 8}" y="{y - 8}" width="10" height="10" '
                f'fill="{colours[name]}"/>'
                f'<text x="{self.w - self.right + 22}" y="{y + 1}">{escape(name[:18])}</text>'
            )
        return "".join(out)


def _num(v: float) -> str:
    a = abs(v)
    if v == 0:
        return "0"
    return f"{v:.3g}" if 1e-3 <= a < 1e5 else f"{v:.2e}"


def read_rows(path: Path) -> pd.DataFrame:
    """A CSV file as text columns (the thesis's and the paper's published observations)."""
    return pd.read_csv(path, dtype=str, keep_default_na=False)
