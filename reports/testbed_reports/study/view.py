"""What a study view holds (tables of cells, figures) and how it is written (HTML, Markdown, CSV).

A :class:`Cell` is one rebuilt number: the rerun's estimate with its interval and the estimand it
estimates (arithmetic or geometric mean, median ...), the paper's published value (from the
manifest, with its line) and whether the interval contains it - the range the paper's value stands
for: its printed digits (7.85 is [7.845, 7.855]), a stated range ([25, 30]) or, for a value the
paper gives roughly, [value / F, value x F] (manifest ``approx``). A number without an interval (an
ANOVA's F, a count) says instead whether it rounds to the printed value (``matches``, printed
"equal"). No verdict at all where the manifest says the paper's value is not comparable with a
rerun, where the rerun's inputs were fitted to it (printed "fitted", never "inside"), or where the
view withholds it (``withheld``, e.g. a sample statistic such as an F of a rerun). "paper" is
printed only beside a number the paper prints; a number the view derives from the paper's printed
ones is printed "derived", with its formula. Tables keep the paper's layout: rows and columns as
the paper printed them, units as the paper used.
"""

from __future__ import annotations

import csv
import html
import io
import math
import re
from dataclasses import dataclass, field
from typing import Any

from testbed_shared.safecsv import neutralise as _safe_csv
from testbed_shared.studies import Manifest, Published


@dataclass
class Cell:
    """One rebuilt value beside the paper's: estimate, interval, published value, containment."""

    rerun: float | None
    low: float | None = None
    high: float | None = None
    paper: Published | None = None
    #: a note on how the rerun value was computed (n, method), shown in a tooltip and the JSON
    note: str = ""
    #: what the rerun value estimates ("mean", "geometric mean", "median", "CV" ...), printed beside it
    estimand: str = ""
    #: why the view gives no verdict for this pair although both values are there ("" = it does)
    withheld: str = ""

    def _paper_range(self) -> tuple[float, float] | None:
        """The range the paper's value stands for: its printed digits (7.85 -> [7.845, 7.855]), a
        stated range ([25, 30]) or, with ``approx: F``, [value / F, value x F]."""
        if self.paper is None or isinstance(self.paper.value, bool):
            return None
        value = self.paper.value
        if isinstance(value, list) and len(value) == 2:
            try:
                return float(value[0]), float(value[1])
            except (TypeError, ValueError):
                return None
        try:
            v = float(value)
        except (TypeError, ValueError):
            return None
        if not math.isfinite(v):
            return None
        span = self.paper.extra.get("range")
        if isinstance(span, list) and len(span) == 2:
            return float(span[0]), float(span[1])
        approx = self.paper.extra.get("approx")
        if isinstance(approx, (int, float)) and not isinstance(approx, bool) and approx > 1:
            return tuple(sorted((v / approx, v * approx)))  # type: ignore[return-value]
        half = printed_half_unit(value)
        return v - half, v + half

    @property
    def no_verdict(self) -> str:
        """Why there is no verdict for this pair: not comparable, fitted, withheld ("" otherwise)."""
        if self.paper is None:
            return ""
        if self.paper.not_comparable:
            return "not comparable: " + self.paper.not_comparable
        if self.paper.fitted:
            return "fitted: " + self.paper.fitted
        return "not compared: " + self.withheld if self.withheld else ""

    @property
    def contains(self) -> bool | None:
        """True/False when there is a paper value and an interval (the interval meets the range the
        paper's value stands for); None otherwise, and None where :attr:`no_verdict` says why."""
        rng = self._paper_range()
        if rng is None or self.low is None or self.high is None or self.no_verdict:
            return None
        if not (math.isfinite(self.low) and math.isfinite(self.high)):
            return None
        return self.low <= rng[1] and rng[0] <= self.high

    @property
    def matches(self) -> bool | None:
        """Without an interval: whether the rebuilt value rounds to the paper's printed value (a
        table recomputed from the paper's own data); None where there is an interval or no pair."""
        if self.low is not None and self.high is not None:
            return None
        if self.no_verdict:
            return None
        if self.paper is not None and isinstance(self.paper.value, bool) and self.rerun is not None:
            return bool(self.rerun) == self.paper.value
        rng = self._paper_range()
        if rng is None or self.rerun is None or not math.isfinite(self.rerun):
            return None
        return rng[0] - 1e-12 <= self.rerun <= rng[1] + 1e-12

    @property
    def verdict(self) -> str:
        """The word printed beside the paper's value: inside, outside, equal, differs, no interval,
        or why there is none (not comparable, fitted, not compared); "" without a paper value."""
        if self.paper is None:
            return ""
        if self.no_verdict:
            return self.no_verdict
        if self.contains is not None:
            return "inside" if self.contains else "outside"
        if self.matches is not None:
            return "equal" if self.matches else "differs"
        return "no interval"

    @property
    def paper_label(self) -> str:
        """ "paper 7.85", or "derived 7.85 = FORMULA" for a value derived from the paper's numbers."""
        if self.paper is None:
            return ""
        shown = fmt_value(self.paper.value)
        if not self.paper.derived:
            return f"paper {shown}"
        span = self.paper.extra.get("range")
        if isinstance(span, list) and len(span) == 2:
            shown += f" [{fmt(span[0])}, {fmt(span[1])}]"
        return f"derived {shown} = {self.paper.derived}"

    def as_json(self) -> dict[str, Any]:
        return {
            "rerun": self.rerun,
            "low": self.low,
            "high": self.high,
            "estimand": self.estimand,
            "paper": None if self.paper is None else self.paper.value,
            "paper_source": None if self.paper is None else self.paper.source,
            "paper_kind": None if self.paper is None else ("derived" if self.paper.derived else "printed"),
            "derived_formula": None if self.paper is None else (self.paper.derived or None),
            "contains": self.contains,
            "matches": self.matches,
            "verdict": self.verdict,
            "note": self.note,
        }


@dataclass
class StudyTable:
    """A table in the paper's layout; row values are text, numbers or :class:`Cell`."""

    id: str
    title: str
    columns: list[str]
    rows: list[dict[str, Any]]
    source: str = ""
    note: str = ""

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.id.lower()).strip("-") or "table"

    def cells(self) -> list[Cell]:
        return [v for row in self.rows for v in row.values() if isinstance(v, Cell)]

    def csv(self) -> str:
        """One row per table row; a Cell becomes seven columns (rerun, low, high, paper, contains, matches,
        verdict)."""
        buf = io.StringIO()
        header: list[str] = []
        for c in self.columns:
            if any(isinstance(r.get(c), Cell) for r in self.rows):
                header += [
                    c,
                    f"{c} low",
                    f"{c} high",
                    f"{c} paper",
                    f"{c} contains",
                    f"{c} matches",
                    f"{c} verdict",
                ]
            else:
                header.append(c)
        w = csv.writer(buf, lineterminator="\r\n")  # RFC 4180: a cell with CR or LF is quoted
        w.writerow([_safe_csv(h) for h in header])
        for r in self.rows:
            line: list[Any] = []
            for c in self.columns:
                v = r.get(c)
                if any(isinstance(x.get(c), Cell) for x in self.rows):
                    cell = v if isinstance(v, Cell) else Cell(None)
                    paper = None if cell.paper is None else cell.paper.value
                    if isinstance(paper, list):
                        paper = "-".join(map(str, paper))
                    line += [
                        cell.rerun,
                        cell.low,
                        cell.high,
                        paper,
                        cell.contains,
                        cell.matches,
                        cell.verdict,
                    ]
                else:
                    line.append(_safe_csv(v))
            w.writerow(["" if x is None else x for x in line])
        return buf.getvalue()

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "source": self.source,
            "note": self.note,
            "columns": self.columns,
            "rows": [{k: v.as_json() if isinstance(v, Cell) else v for k, v in r.items()} for r in self.rows],
        }


@dataclass
class StudyFigure:
    """A figure of the paper, rebuilt as inline SVG."""

    id: str
    title: str
    svg: str
    source: str = ""
    note: str = ""


@dataclass
class StudyView:
    """Everything ``testbed-report study`` writes for one study."""

    manifest: Manifest
    tables: list[StudyTable] = field(default_factory=list)
    figures: list[StudyFigure] = field(default_factory=list)
    #: what the rerun's data were (store paths, run ids, reduced or full)
    provenance: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def cells(self) -> list[Cell]:
        return [c for t in self.tables for c in t.cells()]

    def as_json(self) -> dict[str, Any]:
        return {
            "study": self.manifest.id,
            "title": self.manifest.title,
            "fidelity": self.manifest.counts(),
            "published": self.manifest.published_counts(),
            "provenance": self.provenance,
            "notes": self.notes,
            "tables": [t.as_json() for t in self.tables],
            "figures": [{"id": f.id, "title": f.title, "source": f.source} for f in self.figures],
        }


def printed_half_unit(value: Any) -> float:
    """Half a unit of the last digit a published number was printed with (0.005 for 7.85, 0.5 for
    2619, 5e-10 for 6.57e-07); 0 for values given exactly (booleans, text)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    text = repr(value) if isinstance(value, float) else str(value)
    mantissa, _, exp = text.lower().partition("e")
    decimals = len(mantissa.partition(".")[2]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (-decimals + (int(exp) if exp else 0))


def fmt(x: Any, digits: int = 4) -> str:
    """A number with ``digits`` significant digits; text as it is; empty for None/NaN."""
    if x is None:
        return ""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, (int, float)):
        if isinstance(x, float) and not math.isfinite(x):
            return ""
        return f"{x:.{digits}g}"
    return str(x)


def fmt_value(x: Any) -> str:
    """A published value as printed: a number, or a stated range "25-30"."""
    if isinstance(x, list) and len(x) == 2:
        return f"{fmt(x[0])}-{fmt(x[1])}"
    return fmt(x)


def _cell_text(c: Cell) -> str:
    text = fmt(c.rerun)
    if c.low is not None and c.high is not None:
        text += f" [{fmt(c.low)}, {fmt(c.high)}]"
    if c.estimand and c.rerun is not None:
        text += f" {c.estimand}"
    if c.paper is not None:
        text += f" | {c.paper_label} ({c.verdict})"
    return text


def fidelity_line(m: Manifest) -> str:
    """Element counts per status and the published values' counts, in one sentence."""
    counts, pub = m.counts(), m.published_counts()
    return (
        f"{counts['exact']} exact, {counts['adapted']} adapted, {counts['not here']} not here; "
        f"{pub['published']} published values, {pub['not comparable']} of them not comparable with a "
        f"rerun, {pub['fitted']} fitted"
    )


def render_md(view: StudyView) -> str:
    m = view.manifest
    out = [
        f"# {m.id}: {m.title}",
        "",
        f"Fidelity: {fidelity_line(m)} (workloads/studies/{m.path.parent.name}/manifest.yml).",
        "",
    ]
    out += [f"- {p}" for p in view.provenance] + ([""] if view.provenance else [])
    out += [f"> {n}" for n in view.notes] + ([""] if view.notes else [])
    for t in view.tables:
        out += [f"## {t.id}: {t.title}", ""]
        if t.source or t.note:
            out += [" ".join(x for x in (f"Paper: {t.source}." if t.source else "", t.note) if x), ""]
        out.append("| " + " | ".join(t.columns) + " |")
        out.append("|" + "---|" * len(t.columns))
        for r in t.rows:
            vals = [_cell_text(v) if isinstance(v, Cell) else fmt(v) for v in (r.get(c) for c in t.columns)]
            out.append("| " + " | ".join(v.replace("|", "\\|") for v in vals) + " |")
        out.append("")
    for f in view.figures:
        out += [f"## {f.id}: {f.title}", "", f"(figure in study.html){' ' + f.note if f.note else ''}", ""]
    return "\n".join(out)


def render_html(view: StudyView) -> str:
    m = view.manifest
    e = html.escape
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{e(m.id)}: {e(m.title)}</title>",
        "<style>body{font-family:system-ui,sans-serif;margin:1rem;max-width:80rem}"
        "table{border-collapse:collapse;margin:.5rem 0;display:block;overflow-x:auto}"
        "td,th{border:1px solid #ccc;padding:.2rem .4rem;text-align:right}"
        "td:first-child,th:first-child{text-align:left}.in{background:#e6f4e6}.out{background:#fbe3e3}"
        ".paper{color:#555;font-size:.85em}svg{max-width:100%;height:auto}</style></head><body>",
        f"<h1>{e(m.id)}: {e(m.title)}</h1>",
        f"<p>Fidelity manifest: {e(fidelity_line(m))}.</p>",
    ]
    if view.provenance:
        parts.append("<ul>" + "".join(f"<li>{e(p)}</li>" for p in view.provenance) + "</ul>")
    for n in view.notes:
        parts.append(f"<p><em>{e(n)}</em></p>")
    for t in view.tables:
        parts.append(f"<h2>{e(t.id)}: {e(t.title)}</h2>")
        if t.source or t.note:
            parts.append(f"<p>{e('Paper: ' + t.source + '. ' if t.source else '')}{e(t.note)}</p>")
        parts.append("<table><tr>" + "".join(f"<th>{e(c)}</th>" for c in t.columns) + "</tr>")
        for r in t.rows:
            tds = []
            for c in t.columns:
                v = r.get(c)
                if isinstance(v, Cell):
                    verdict = v.contains if v.contains is not None else v.matches
                    cls = {True: "in", False: "out", None: ""}[verdict]
                    ci = f" [{e(fmt(v.low))}, {e(fmt(v.high))}]" if v.low is not None else ""
                    what = f" <small>{e(v.estimand)}</small>" if v.estimand and v.rerun is not None else ""
                    paper = (
                        f"<br><span class='paper'>{e(v.paper_label)} ({e(v.paper.source)}): "
                        f"{e(v.verdict)}</span>"
                        if v.paper is not None
                        else ""
                    )
                    tds.append(
                        f"<td class='{cls}' title='{e(v.note)}'>{e(fmt(v.rerun))}{ci}{what}{paper}</td>"
                    )
                else:
                    tds.append(f"<td>{e(fmt(v))}</td>")
            parts.append("<tr>" + "".join(tds) + "</tr>")
        parts.append("</table>")
    for f in view.figures:
        parts.append(f"<h2>{e(f.id)}: {e(f.title)}</h2>")
        if f.source or f.note:
            parts.append(f"<p>{e('Paper: ' + f.source + '. ' if f.source else '')}{e(f.note)}</p>")
        parts.append(f.svg)
    dev = m.deviations()
    if dev:
        parts.append(
            "<h2>Deviations from the paper</h2><table><tr><th>element</th><th>status</th>"
            "<th>source</th><th>reason</th></tr>"
        )
        for d in dev:
            parts.append(
                f"<tr><td>{e(d.what)}</td><td>{e(d.status)}</td><td>{e(d.source)}</td><td>{e(d.reason)}</td></tr>"
            )
        parts.append("</table>")
    parts.append("</body></html>")
    return "\n".join(parts)
