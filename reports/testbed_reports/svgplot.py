"""Per-benchmark charts drawn directly as SVG (bars with CI, ECDF, CV bars).

Matplotlib needs ~0.1 s of text layout per panel; a report with dozens of benchmarks would spend most
of its time there, so these simple charts are written as SVG (milliseconds each) and embedded as data
URIs. Tick positions still come from matplotlib's MaxNLocator.

Readable on a phone (issue 37): a panel is PANEL_W = 340 px wide, so it fits a 390 px screen at its
own size, and panels stack rather than widen a figure; text is 11 px (ticks) to 13 px (titles).
Numbers are written by ``display`` (plain digits, no exponent), values on the scale ``display``
picks for the unit (an axis in MB/s or ms, like the table beside it). :func:`hbars` is the report's
bar chart: horizontal bars with their 95 % interval, the name and the value written above each bar.
"""

from __future__ import annotations

import base64
from html import escape

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from testbed_reports import display

PANEL_W, PANEL_H = 340, 230
LEFT, RIGHT, TOP, BOTTOM = 62, 12, 42, 36
ECDF_POINTS = 120
#: font sizes (px): tick labels, other text, titles
TICK, TEXT, TITLE = 11, 12, 13


def _num(v: float) -> str:
    return display.number(float(v))


def _tick(v: float) -> str:
    """A tick label: ``display.short`` ("40", "0.5", "1,500")."""
    return display.short(float(v), 3)


def _fit(text: str, width: float, size: float) -> str:
    """``text`` cut (with an ellipsis) to about ``width`` px at ``size`` px."""
    most = max(int(width / (0.6 * size)), 4)
    return text if len(text) <= most else text[: most - 1] + "…"


def _wrap(text: str, width: float, size: float, most: int = 2) -> list[str]:
    """``text`` in at most ``most`` lines of about ``width`` px at ``size`` px (the last one cut)."""
    per = max(int(width / (0.6 * size)), 4)
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= per:
            lines[-1] += " " + word
        else:
            lines.append(word)
    if len(lines) > most:
        lines = [*lines[: most - 1], " ".join(lines[most - 1 :])]
    return [_fit(line, width, size) for line in lines] or [""]


def _ticks(lo: float, hi: float) -> list[float]:
    if not np.isfinite(lo) or not np.isfinite(hi):
        return []
    # ticks of values near the float limit without overflow: work on values scaled by a power of
    # ten (so the ticks stay round numbers), at most 10 in magnitude
    top = max(abs(lo), abs(hi))
    scale = 10.0 ** np.floor(np.log10(top)) if top > 0 else 1.0
    lo, hi = lo / scale, hi / scale
    if hi <= lo:
        hi = lo + (abs(lo) or 1.0)
    vals = MaxNLocator(4).tick_values(lo, hi)
    eps = (hi - lo) * 1e-9
    return [float(t) * scale for t in vals if lo - eps <= t <= hi + eps]


def _frac(v: np.ndarray | float, lim: tuple[float, float]) -> np.ndarray:
    """Position of ``v`` between ``lim`` as a fraction, computed on scaled values (no overflow)."""
    lo, hi = lim
    scale = max(abs(lo), abs(hi)) or 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        return (np.asarray(v, dtype=float) / scale - lo / scale) / (hi / scale - lo / scale)


class _Svg:
    def __init__(self, width: int, height: int) -> None:
        self.w, self.h = width, height
        self.parts: list[str] = []

    def add(self, s: str) -> None:
        self.parts.append(s)

    def text(
        self,
        x: float,
        y: float,
        s: str,
        size: int = 10,
        anchor: str = "middle",
        weight: str = "normal",
        rotate: float | None = None,
    ) -> None:
        rot = f' transform="rotate({rotate} {x:.1f} {y:.1f})"' if rotate is not None else ""
        self.add(
            f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" '
            f'font-weight="{weight}"{rot}>{escape(s)}</text>'
        )

    def document(self) -> str:
        body = "".join(self.parts)
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.w}" height="{self.h}" '
            f'viewBox="0 0 {self.w} {self.h}" font-family="DejaVu Sans, Arial, sans-serif">'
            f'<rect width="100%" height="100%" fill="white"/>{body}</svg>'
        )

    def uri(self) -> str:
        return "data:image/svg+xml;base64," + base64.b64encode(self.document().encode()).decode("ascii")


class _Panel:
    """One plot area with linear scales, axes, ticks and a title."""

    def __init__(
        self,
        svg: _Svg,
        x0: float,
        y0: float,
        xlim: tuple[float, float],
        ylim: tuple[float, float],
        title: str,
        subtitle: str = "",
        width: float = PANEL_W,
    ) -> None:
        self.svg = svg
        self.px0, self.px1 = x0 + LEFT, x0 + width - RIGHT
        self.py0, self.py1 = y0 + PANEL_H - BOTTOM, y0 + TOP
        self.xlim, self.ylim = xlim, _nonzero(ylim)
        svg.text(x0 + width / 2, y0 + 15, _fit(title, width - 8, TITLE + 1), size=TITLE, weight="bold")
        if subtitle:
            svg.text(x0 + width / 2, y0 + 30, _fit(subtitle, width - 8, TICK), size=TICK)
        svg.add(
            f'<rect x="{self.px0:.1f}" y="{self.py1:.1f}" width="{self.px1 - self.px0:.1f}" '
            f'height="{self.py0 - self.py1:.1f}" fill="none" stroke="#444" stroke-width="0.8"/>'
        )

    def x(self, v: np.ndarray | float) -> np.ndarray | float:
        return self.px0 + _frac(v, self.xlim) * (self.px1 - self.px0)

    def y(self, v: np.ndarray | float) -> np.ndarray | float:
        return self.py0 - _frac(v, self.ylim) * (self.py0 - self.py1)

    def yticks(self, label: str = "") -> None:
        for t in _ticks(*self.ylim):
            yy = float(self.y(t))
            self.svg.add(
                f'<line x1="{self.px0 - 4:.1f}" y1="{yy:.1f}" x2="{self.px0:.1f}" y2="{yy:.1f}" '
                f'stroke="#444"/><line x1="{self.px0:.1f}" y1="{yy:.1f}" x2="{self.px1:.1f}" '
                f'y2="{yy:.1f}" stroke="#eee"/>'
            )
            self.svg.text(self.px0 - 6, yy + 4, _tick(t), size=TICK, anchor="end")
        if label:
            mid = (self.py0 + self.py1) / 2
            self.svg.text(self.px0 - 48, mid, label, size=TICK, rotate=-90)

    def xticks(self) -> None:
        for t in _ticks(*self.xlim):
            xx = float(self.x(t))
            self.svg.add(
                f'<line x1="{xx:.1f}" y1="{self.py0:.1f}" x2="{xx:.1f}" y2="{self.py0 + 4:.1f}" '
                f'stroke="#444"/>'
            )
            self.svg.text(xx, self.py0 + 16, _tick(t), size=TICK)


def _nonzero(lim: tuple[float, float]) -> tuple[float, float]:
    lo, hi = lim
    if not np.isfinite(lo) or not np.isfinite(hi):
        return (0.0, 1.0)
    if hi <= lo:
        pad = abs(lo) * 0.05 or 1.0
        return (lo - pad, hi + pad)
    return (lo, hi)


def _legend_rows(labels: list[str], width: float) -> list[list[tuple[str, float]]]:
    """Labels laid out in rows that fit ``width``: [[(label, x), ...], ...]."""
    rows: list[list[tuple[str, float]]] = [[]]
    x = 10.0
    for lab in labels:
        w = 26 + 0.62 * TEXT * len(lab)
        if rows[-1] and x + w > width:
            rows.append([])
            x = 10.0
        rows[-1].append((lab, x))
        x += w
    return rows


def _legend(svg: _Svg, rows: list[list[tuple[str, float]]], palette: dict[str, str]) -> None:
    for r, row in enumerate(rows):
        y = 15 + 18 * r
        for lab, x in row:
            svg.add(f'<rect x="{x:.1f}" y="{y - 10:.1f}" width="12" height="11" fill="{palette[lab]}"/>')
            svg.text(x + 16, y, lab, size=TEXT, anchor="start")


def _frame(width: float, labels: list[str], palette: dict[str, str], extra: float = 0) -> tuple[_Svg, float]:
    """An SVG with the label legend on top; returns it and the height the legend takes."""
    rows = _legend_rows(labels, width)
    top = 6 + 18 * len(rows)
    svg = _Svg(int(width), int(PANEL_H + top + extra))
    _legend(svg, rows, palette)
    return svg, top


def _bar(
    svg: _Svg, p: _Panel, span: tuple[float, float], value: float, fill: str, tip: str
) -> tuple[float, float]:
    """A bar from 0 to ``value`` over the data-x ``span`` of panel ``p``; returns its pixel x range."""
    x0, x1 = float(p.x(span[0])), float(p.x(span[1]))
    y0, y1 = float(p.y(0.0)), float(p.y(value))
    svg.add(
        f'<rect x="{x0:.1f}" y="{min(y0, y1):.1f}" width="{x1 - x0:.1f}" height="{abs(y0 - y1):.1f}" '
        f'fill="{fill}"><title>{tip}</title></rect>'
    )
    return x0, x1


def centres(part: pd.DataFrame) -> np.ndarray:
    """The value each descriptive row's interval is about: for a log-scale interval (positive
    quantities) its ``typical`` value where the table has one (a one-machine label's typical run),
    else the geometric mean; otherwise the mean."""
    mean = part["mean"].to_numpy(float)
    if "geomean" not in part:
        return mean
    geo = part["geomean"].to_numpy(float)
    if "typical" in part:
        typ = part["typical"].to_numpy(float)
        geo = np.where(np.isfinite(typ), typ, geo)
    log = (part["ci_scale"] == "log").to_numpy() if "ci_scale" in part else np.isfinite(geo)
    return np.where(log & np.isfinite(geo), geo, mean)


def bars(desc: pd.DataFrame, metrics: list[str], palette: dict[str, str]) -> list[str]:
    """One figure per metric: each label's value (:func:`centres`) with its 95% CI, on the scale the
    table shows the metric in (``display.common_scale``)."""
    out = []
    for m in metrics:
        part = desc[desc["metric"] == m]
        if part.empty:
            continue
        unit, better = str(part["unit"].iloc[0]), str(part["better"].iloc[0])
        mid = centres(part)
        f, scaled = display.common_scale(mid, unit)
        rows = [
            (m, str(lab), float(c) / f, float(lo) / f, float(hi) / f)
            for lab, c, lo, hi in zip(
                part["label"].astype(str),
                mid,
                part["ci95_low"].to_numpy(float),
                part["ci95_high"].to_numpy(float),
                strict=True,
            )
        ]
        unit_text = f" [{scaled}]" if scaled else ""
        out.append(hbars(rows, palette, m, f"95% CI{unit_text}, {better} is better"))
    return out


def ecdf(
    values: dict[tuple[str, str], np.ndarray],
    metrics: list[str],
    units: dict[str, str],
    palette: dict[str, str],
) -> str:
    """ECDF of the per-run values of each label (at most ECDF_POINTS quantiles per line), one panel
    per metric stacked in one column, each x axis on the scale ``display`` picks for its unit."""
    labels = sorted({lab for (_, lab) in values})
    shown = [m for m in metrics if any(met == m for met, _ in values)]
    svg, top = _frame(PANEL_W, labels, palette, extra=PANEL_H * (max(len(shown), 1) - 1))
    for i, m in enumerate(shown):
        series = {lab: v for (met, lab), v in values.items() if met == m}
        f, scaled = display.common_scale(
            np.concatenate([np.asarray(v, float).ravel() for v in series.values()]), units.get(m, "")
        )
        with np.errstate(over="ignore"):  # a value past the float range on this scale is not drawn
            series = {lab: np.asarray(v, dtype=float) / f for lab, v in series.items()}
        series = {lab: v[np.isfinite(v)] for lab, v in series.items() if np.isfinite(v).any()}
        if not series:
            continue
        lo = min(float(v.min()) for v in series.values())
        hi = max(float(v.max()) for v in series.values())
        sub = f"[{scaled}]" if scaled else ""
        p = _Panel(svg, 0, top + i * PANEL_H, _nonzero((lo, hi)), (0.0, 1.0), m, sub)
        p.yticks("fraction of runs")
        p.xticks()
        for lab, raw in sorted(series.items()):
            v = np.sort(raw)
            if len(v) > ECDF_POINTS:
                q = np.linspace(0, 1, ECDF_POINTS)
                v = np.quantile(v, q)
            else:
                q = np.arange(1, len(v) + 1) / len(v)
            xs, ys = p.x(v), p.y(q)
            prev = np.concatenate([[float(p.y(0.0))], ys[:-1]])
            pts = np.column_stack([xs, prev, xs, ys]).ravel()
            path = "M" + " L".join(f"{pts[k]:.1f} {pts[k + 1]:.1f}" for k in range(0, len(pts), 2))
            svg.add(f'<path d="{path}" stroke="{palette[lab]}" stroke-width="1.5" fill="none"/>')
    return svg.uri()


def ecdf_panels(
    values: dict[tuple[str, str], np.ndarray],
    metrics: list[str],
    units: dict[str, str],
    palette: dict[str, str],
) -> list[str]:
    """:func:`ecdf` as one figure per metric (the report lays them out side by side where there is room)."""
    return [ecdf({k: v for k, v in values.items() if k[0] == m}, [m], units, palette) for m in metrics]


def cv_bars(desc: pd.DataFrame, metrics: list[str], palette: dict[str, str]) -> str:
    """Coefficient of variation (%) of each metric and label with its 95% CI (Vangel)."""
    table = desc.set_index(["metric", "label"])
    labels = list(dict.fromkeys(desc["label"].astype(str)))
    rows = []
    for m in metrics:
        for lab in labels:
            if (m, lab) not in table.index:
                continue
            r = table.loc[(m, lab)]
            rows.append((m, lab, float(r["cv_percent"]), float(r["cv_ci_low"]), float(r["cv_ci_high"])))
    return hbars(rows, palette, "Coefficient of variation", "CV % with 95% CI (Vangel)")


#: histogram panels per figure (cells beyond it are in the tables only) and bins per panel
MAX_HIST_PANELS = 8
HIST_BINS = 20


def histograms(samples: dict[str, np.ndarray], unit: str) -> str:
    """A histogram of the values of each cell (same bins for all), one panel per cell in one column,
    the x axis on the scale ``display`` picks for ``unit``."""
    names = list(samples)[:MAX_HIST_PANELS]
    vals = [np.asarray(samples[n], dtype=float) for n in names]
    f, scaled = display.common_scale(np.concatenate([v.ravel() for v in vals]) if vals else np.zeros(0), unit)
    vals = [v / f for v in vals]
    lo = min((float(v.min()) for v in vals if len(v)), default=0.0)
    hi = max((float(v.max()) for v in vals if len(v)), default=1.0)
    lim = _nonzero((lo, hi))
    scale = max(abs(lim[0]), abs(lim[1])) or 1.0
    edges = np.linspace(lim[0] / scale, lim[1] / scale, HIST_BINS + 1)
    counts = [np.histogram(v / scale, bins=edges)[0] for v in vals]
    top = max((int(c.max()) for c in counts), default=1) or 1
    svg = _Svg(PANEL_W, PANEL_H * max(len(names), 1))
    for k, (name, cnt) in enumerate(zip(names, counts, strict=True)):
        p = _Panel(svg, 0, k * PANEL_H, lim, (0.0, top * 1.08), name, f"[{scaled}]" if scaled else "")
        p.yticks("runs")
        p.xticks()
        for j, c in enumerate(cnt):
            if not c:
                continue
            x0, x1 = float(p.x(edges[j] * scale)), float(p.x(edges[j + 1] * scale))
            y0, y1 = float(p.y(0.0)), float(p.y(float(c)))
            svg.add(
                f'<rect x="{x0:.1f}" y="{y1:.1f}" width="{max(x1 - x0 - 0.5, 0.5):.1f}" '
                f'height="{y0 - y1:.1f}" fill="#4c72b0"><title>{int(c)} runs</title></rect>'
            )
    return svg.uri()


#: height below a grouped bar chart for its rotated group names
GROUP_LABEL_SPACE = 110


def _whisker(svg: _Svg, p: _Panel, xc: float, lo: float, hi: float) -> None:
    if np.isfinite(lo) and np.isfinite(hi):
        ya, yb = float(p.y(lo)), float(p.y(hi))
        svg.add(
            f'<path d="M{xc:.1f} {ya:.1f}V{yb:.1f}M{xc - 3:.1f} {ya:.1f}h6M{xc - 3:.1f} {yb:.1f}h6" '
            f'stroke="black" stroke-width="1" fill="none"/>'
        )


def grouped_bars(
    values: dict[tuple[str, str], tuple[float, float, float]],
    palette: dict[str, str],
    title: str,
    subtitle: str,
    ref: float | None = None,
) -> str:
    """One group of bars per group name, one bar per label: {(group, label): (mean, ci_low, ci_high)}.

    Groups and labels keep the order of ``values``; CI whiskers where finite; a dashed line at ``ref``.
    """
    groups = list(dict.fromkeys(g for g, _ in values))
    labels = list(dict.fromkeys(lab for _, lab in values))
    group = max(10 * len(labels) + 8, 16)
    width = max(PANEL_W, LEFT + RIGHT + group * len(groups))
    svg, top = _frame(width, labels, palette, extra=GROUP_LABEL_SPACE)
    nums = np.array([x for v in values.values() for x in v] + [0.0, ref or 0.0], dtype=float)
    hi_all = float(np.nanmax(np.where(np.isfinite(nums), nums, np.nan))) or 1.0
    p = _Panel(svg, 0, top, (0, len(groups)), (0.0, hi_all * 1.08), title, subtitle, width)
    p.yticks()
    bw = 0.8 / max(len(labels), 1)
    for i, g in enumerate(groups):
        for j, lab in enumerate(labels):
            mean, lo, hi = values.get((g, lab), (float("nan"),) * 3)
            if not np.isfinite(mean):
                continue
            tip = f"{escape(lab)} {escape(g)}: {_num(mean)}"
            x0, x1 = _bar(svg, p, (i + 0.1 + j * bw, i + 0.1 + (j + 1) * bw), mean, palette[lab], tip)
            _whisker(svg, p, (x0 + x1) / 2, lo, hi)
        xg = float(p.x(i + 0.5))
        svg.text(xg, p.py0 + 12, _fit(g, GROUP_LABEL_SPACE * 1.3, TICK), size=TICK, anchor="end", rotate=-45)
    if ref is not None:
        yr = float(p.y(ref))
        svg.add(f'<path d="M{p.px0:.1f} {yr:.1f}H{p.px1:.1f}" stroke="#333" stroke-dasharray="4 3"/>')
    return svg.uri()


#: the report's bar chart (:func:`hbars`): width, the height of a text line and of a bar
HB_WIDTH, HB_LINE, HB_BAR = PANEL_W, 17, 13


def hbars(
    rows: list[tuple[str, str, float, float, float]],
    palette: dict[str, str],
    title: str,
    subtitle: str,
    ref: float | None = None,
) -> str:
    """Horizontal bars, one per (name, label, value, ci_low, ci_high), with CI whiskers: the report's
    headline figure of a benchmark's primary metric, its per-metric bars, CV bars and the figures
    across benchmarks. Above each bar, its name (or label) and its value with the interval, written
    as the tables write them; rows of several names and labels are grouped by name, the labels told
    apart by colour (legend on top). A dashed line at ``ref``. Fits a phone at its own size."""
    labels = list(dict.fromkeys(lab for _, lab, *_ in rows))
    names = list(dict.fromkeys(name for name, *_ in rows))
    grouped = len(names) > 1 and len(labels) > 1
    legend = _legend_rows(labels, HB_WIDTH) if grouped else []
    subs = _wrap(subtitle, HB_WIDTH - 8, TICK) if subtitle else []
    head = 24 + 14 * len(subs)
    top = head + 18 * len(legend) + 4
    texts = [_row_text(row, names, labels, grouped) for row in rows]
    lines = sum(len(t) for t in texts) + (len(names) if grouped else 0)
    bottom = top + HB_LINE * lines + (HB_BAR + 5) * len(rows)
    svg = _Svg(HB_WIDTH, int(bottom + 26))
    svg.text(HB_WIDTH / 2, 16, _fit(title, HB_WIDTH - 8, TITLE + 1), size=TITLE, weight="bold")
    for k, line in enumerate(subs):
        svg.text(HB_WIDTH / 2, 32 + 14 * k, line, size=TICK)
    for r, row in enumerate(legend):
        y = head + 14 + 18 * r
        for lab, x in row:
            fill = palette.get(lab, "#4c72b0")
            svg.add(f'<rect x="{x:.1f}" y="{y - 10:.1f}" width="12" height="11" fill="{fill}"/>')
            svg.text(x + 16, y, lab, size=TEXT, anchor="start")
    nums = np.array([v for _, _, *vals in rows for v in vals] + [0.0, ref or 0.0], dtype=float)
    nums = nums[np.isfinite(nums)]
    lim = (min(0.0, float(nums.min())), (float(nums.max()) or 1.0) * 1.04)
    x0, x1 = 10.0, float(HB_WIDTH - 12)

    def px(v: float) -> float:
        return x0 + float(_frac(v, lim)) * (x1 - x0)

    for t in _ticks(*lim):
        xx = px(t)
        svg.add(f'<line x1="{xx:.1f}" y1="{top:.1f}" x2="{xx:.1f}" y2="{bottom:.1f}" stroke="#eee"/>')
        svg.text(xx, bottom + 15, _tick(t), size=TICK, anchor="start" if t == lim[0] else "middle")
    svg.add(f'<path d="M{px(0.0):.1f} {top:.1f}V{bottom:.1f}" stroke="#444" stroke-width="0.8"/>')
    y = float(top)
    for k, (name, lab, mean, lo, hi) in enumerate(rows):
        if grouped and (k == 0 or rows[k - 1][0] != name):
            svg.text(x0, y + 13, _fit(name, x1 - x0, TEXT + 0.5), size=TEXT, anchor="start", weight="bold")
            y += HB_LINE
        value = texts[k][-1][1]
        for what, val in texts[k]:
            svg.text(x0, y + 13, _fit(what, x1 - x0, TEXT), size=TEXT, anchor="start")
            svg.text(x1, y + 13, val, size=TEXT, anchor="end")
            y += HB_LINE
        tip = escape(f"{lab} {name}: {value}")
        if np.isfinite(mean):
            a, b = sorted((px(0.0), px(mean)))
            svg.add(
                f'<rect x="{a:.1f}" y="{y:.1f}" width="{max(b - a, 0.5):.1f}" height="{HB_BAR}" '
                f'fill="{palette.get(lab, "#4c72b0")}"><title>{tip}</title></rect>'
            )
        if np.isfinite(lo) and np.isfinite(hi):
            ya, yb, ym = y + 1, y + HB_BAR - 1, y + HB_BAR / 2
            a, b = px(max(lo, lim[0])), px(min(hi, lim[1]))
            svg.add(
                f'<path d="M{a:.1f} {ym:.1f}H{b:.1f}M{a:.1f} {ya:.1f}V{yb:.1f}M{b:.1f} {ya:.1f}V{yb:.1f}" '
                f'stroke="black" stroke-width="1.2" fill="none"/>'
            )
        y += HB_BAR + 5
    if ref is not None:
        xr = px(ref)
        svg.add(f'<path d="M{xr:.1f} {top:.1f}V{bottom:.1f}" stroke="#333" stroke-dasharray="4 3"/>')
    return svg.uri()


def _row_text(
    row: tuple[str, str, float, float, float], names: list[str], labels: list[str], grouped: bool
) -> list[tuple[str, str]]:
    """The text lines above one bar of :func:`hbars`: (what, value) pairs; the name and the value on
    one line when both fit, else the name on a line of its own."""
    name, lab, mean, lo, hi = row
    value = _num(mean) + (f" [{_num(lo)}, {_num(hi)}]" if np.isfinite(lo) and np.isfinite(hi) else "")
    what = "" if grouped else (lab if len(names) == 1 and len(labels) > 1 else name)
    room = (HB_WIDTH - 22) / (0.6 * TEXT) - 2
    if len(what) + len(value) <= room:
        return [(what, value)]
    return [(what, ""), ("", value)]


def series(points: list[tuple[str, float, float, float]], title: str, subtitle: str, split: str = "") -> str:
    """One value per run in time order with its 95% interval (``history``): (run, value, lo, hi);
    ``split`` names the first run after a change point (a dashed line before it). An SVG document."""
    n = max(len(points), 1)
    width = max(PANEL_W * 2, LEFT + RIGHT + 28 * n)
    svg = _Svg(int(width), PANEL_H + 60)
    vals = np.array([v for _, *vs in points for v in vs] + [0.0], dtype=float)
    vals = vals[np.isfinite(vals)]
    lo, hi = float(vals.min()), float(vals.max())
    pad = (hi - lo) * 0.08 or 1.0
    p = _Panel(svg, 0, 0, (-0.5, n - 0.5), (lo - pad, hi + pad), title, subtitle, width)
    p.yticks("overhead (%)")
    y0 = float(p.y(0.0))
    svg.add(f'<line x1="{p.px0:.1f}" y1="{y0:.1f}" x2="{p.px1:.1f}" y2="{y0:.1f}" stroke="#888"/>')
    for i, (run, v, a, b) in enumerate(points):
        xc = float(p.x(i))
        if run == split:
            xs = float(p.x(i - 0.5))
            svg.add(
                f'<line x1="{xs:.1f}" y1="{p.py1:.1f}" x2="{xs:.1f}" y2="{p.py0:.1f}" stroke="#c44" '
                'stroke-dasharray="4 3"/>'
            )
        _whisker(svg, p, xc, a, b)
        if np.isfinite(v):
            svg.add(
                f'<circle cx="{xc:.1f}" cy="{float(p.y(v)):.1f}" r="3" fill="#4c72b0">'
                f"<title>{escape(run)}: {_num(v)}% [{_num(a)}, {_num(b)}]</title></circle>"
            )
        svg.text(xc, p.py0 + 12, run[-10:], size=8, anchor="end", rotate=-45)
    return svg.document()
