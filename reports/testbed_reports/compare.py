"""Pairs of labels to compare, and per metric: log-scale overhead, interval, decision, scope and verdict.

Fields of each comparison row that others read (stats.json ``comparisons``, comparisons.csv):
``decision`` (slower/faster/equivalent/inconclusive), ``scope`` (``types``: machines as replicates
or a machine-spread prior; ``machines``: a side has one machine, the statement is about these
machines), ``primary`` (member of the error-controlled family), ``adjusted`` (its interval is
Bonferroni-adjusted; secondary metrics' are not), ``machines_needed`` (machines per label a
type-level decision needs at the machine spread seen or assumed; empty when unknown). The headline
counts only primary decisions, per scope (:func:`headline`); secondary ones are listed under their
benchmark (:func:`secondary`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from testbed_reports import display, wording
from testbed_reports.analysis import Cell, Outcome, analyse
from testbed_reports.diagnostics import Drift, findings, overlap_note
from testbed_reports.errors import ReportError
from testbed_reports.inference import (
    DEFAULT_MARGIN,
    SCOPES,
    Decision,
    Estimate,
    MachineSpread,
    estimate,
    machines_needed,
    primary_set,
    sides,
    units_needed,
)
from testbed_reports.runs import Runs
from testbed_shared.groups import PAIRS

CC_PAIRS = PAIRS  # each confidential group and its baseline (testbed_shared.groups)
COMPARE_COLUMNS = [
    "comparison",
    "kind",
    "a",
    "b",
    "benchmark",
    "metric",
    "unit",
    "better",
    "primary",
    "n_a",
    "n_b",
    "machines_a",
    "machines_b",
    "mean_a",
    "mean_b",
    "ratio",
    "overhead_percent",
    "overhead_ci_low",
    "overhead_ci_high",
    "ci_level",
    "p",
    "p_adjusted",
    "tost_p",
    "margin_percent",
    "test_unit",
    "scope",
    "adjusted",
    "machine_spread_percent",
    "run_spread_percent",
    "machines_needed",
    "pooling",
    "centre_a",
    "centre_b",
    "decision",
    "reason",
    "diagnostics",
    "verdict",
]


@dataclass(frozen=True)
class Pair:
    """``a`` is measured against the reference ``b``; ``kind`` says why they are compared."""

    a: str
    b: str
    kind: str

    @property
    def name(self) -> str:
        return f"{self.a} vs {self.b}"


def parse_pairs(specs: list[str], labels: list[str]) -> list[Pair]:
    """``A:B`` options into pairs; unknown labels are an error that lists the known ones."""
    pairs = []
    for spec in specs:
        if ":" not in spec:
            raise ReportError(
                f"--compare {spec!r}: expected A:B (two labels)", f"labels: {', '.join(labels)}"
            )
        a, b = (s.strip() for s in spec.split(":", 1))
        for x in (a, b):
            if x not in labels:
                raise ReportError(
                    f"--compare {spec!r}: no results with label {x!r}", f"labels: {', '.join(labels)}"
                )
        if a == b:
            raise ReportError(f"--compare {spec!r}: a label cannot be compared with itself")
        pairs.append(Pair(a, b, "explicit"))
    return pairs


def auto_pairs(factors: pd.DataFrame) -> list[Pair]:
    """Comparisons implied by the inventory groups (docs/design.md section 2)."""
    groups = {r.label: set(str(r.groups).split(",")) - {""} for r in factors.itertuples(index=False)}
    disk = dict(zip(factors["label"], factors["disk"], strict=False))

    def members(group: str) -> list[str]:
        return sorted(lab for lab, gs in groups.items() if group in gs)

    pairs: list[Pair] = []
    for cc, base in CC_PAIRS:
        bases = members(base)
        for a in members(cc):
            same_disk = [b for b in bases if disk.get(b) == disk.get(a)]
            for b in same_disk or bases:
                pairs.append(Pair(a, b, f"{cc} vs {base}"))
        inside = members(cc)
        for a in inside:
            for b in inside:
                if disk.get(a) == "encrypted" and disk.get(b) == "plain":
                    pairs.append(Pair(a, b, f"encrypted vs plain ({cc})"))
    for a in members("kvm"):
        for b in members("hyperv"):
            if a != b:
                pairs.append(Pair(a, b, "kvm vs hyperv"))
    for a, b in itertools.combinations(members("faas"), 2):
        pairs.append(Pair(a, b, "faas platform vs platform"))
    seen: set[tuple[str, str]] = set()
    unique = []
    for p in pairs:
        if (p.a, p.b) not in seen:
            seen.add((p.a, p.b))
            unique.append(p)
    return unique


def overhead(ratio: float | np.ndarray, better: str) -> float | np.ndarray:
    """Overhead in percent from a ratio a/b: a slowdown of ``a`` is always positive."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = ratio if better == "lower" else 1.0 / ratio
    return 100.0 * (cost - 1.0)


SECONDARY = "; secondary metric: unadjusted 95% interval, outside the error-controlled family"


def _hosts(hosts: list[str]) -> str:
    return ", ".join(hosts[:4]) + (f" and {len(hosts) - 4} more" if len(hosts) > 4 else "")


def scope_text(est: Estimate, ha: list[str], hb: list[str], na: int, nb: int, need: int | None) -> str:
    """What a verdict speaks about: VM types (machines as replicates, or a prior) or these machines."""
    ma, mb = len(ha), len(hb)
    if est.unit == "machine":
        return f"scope types: {ma} vs {mb} machines, machine is the unit"
    if est.scope == "types":
        return f"scope types via the {est.prior}: {ma} vs {mb} machines, n={na} vs {nb} runs"
    who = "these two machines" if ma == mb == 1 else f"these machines ({_hosts(ha)} vs {_hosts(hb)})"
    text = f"scope machines: n={na} vs {nb} runs; speaks about {who}, not about their VM types"
    if need is not None:
        return text + (
            f"; a type-level decision needs about {need} machines per label at the machine spread "
            f"{100 * est.machine_spread:.1f}% ({est.spread_from})"
        )
    return text + "; machine spread not measured: a type-level decision needs >= 2 machines per label"


def _subject(label: str, hosts: list[str]) -> str:
    """Who a scope-machines verdict is about: the machine(s), not the label's VM type."""
    return f"{label} machine {hosts[0]}" if len(hosts) == 1 else f"{label}'s {len(hosts)} machines"


def verdict(
    pair: Pair,
    bench: str,
    metric: str,
    dec: Decision,
    scope: str,
    margin: float,
    hosts: tuple = (),
    values: tuple[float | None, float | None, str] = (None, None, ""),
) -> str:
    """One readable line: the two values with their unit, which side is faster or slower and by how
    much, or that it cannot tell and what would tell (``wording``), then the scope.

    With ``hosts`` (the two sides' hosts, scope machines) its subjects are the machines, so a line
    never reads as a statement about VM types.
    """
    a, b = (_subject(pair.a, hosts[0]), _subject(pair.b, hosts[1])) if hosts else (pair.a, pair.b)
    what = f"{bench} {display.pretty_metric(metric)}"
    va, vb, unit = values
    line = wording.sentence(what, a, b, va, vb, unit, dec, margin)
    tell = wording.would_tell(dec)
    return f"{line}{'; ' + tell if tell else ''} ({scope})"


def _margin_for(bench: str, margin: float, margins: Mapping[str, float] | None) -> float:
    return float((margins or {}).get(bench, margin))


@dataclass
class _Cell:
    """One pair x metric: its analysis cell and the two labels' descriptive rows."""

    pair: Pair
    cell: Cell
    ra: dict
    rb: dict


def cells(
    obs: pd.DataFrame,
    desc: pd.DataFrame,
    pairs: list[Pair],
    margin: float = DEFAULT_MARGIN,
    margins: Mapping[str, float] | None = None,
    prior: MachineSpread | None = None,
    shared: Runs | None = None,
) -> list[_Cell]:
    """The analysis cells of every pair and (benchmark, metric) measured on both labels
    (``shared``: the runs of ``obs`` when the caller has them, ``runs.Runs``)."""
    sd = sides(obs, shared)
    primary = primary_set(obs)
    d = {(r["benchmark"], r["metric"], r["label"]): r for r in desc.to_dict(orient="records")}
    by_label: dict[str, set[tuple[str, str]]] = {}
    for bench, metric, label in d:
        by_label.setdefault(label, set()).add((bench, metric))
    out = []
    for pair in pairs:
        for bench, metric in sorted(by_label.get(pair.a, set()) & by_label.get(pair.b, set())):
            sa, sb = sd[(bench, metric, pair.a)], sd[(bench, metric, pair.b)]
            ra, rb = d[(bench, metric, pair.a)], d[(bench, metric, pair.b)]
            est = estimate(sa, sb, prior, noise="successive", pair=True)
            mg = _margin_for(bench, margin, margins)
            cell = Cell(
                pair.name, bench, metric, str(ra["better"]), (bench, metric) in primary, mg, sa, sb, est
            )
            out.append(_Cell(pair, cell, ra, rb))
    return out


def compare(
    obs: pd.DataFrame,
    desc: pd.DataFrame,
    pairs: list[Pair],
    margin: float = DEFAULT_MARGIN,
    margins: Mapping[str, float] | None = None,
    notes: Mapping[tuple[str, str, str], list[str]] | None = None,
    windows: Mapping[str, tuple] | None = None,
    prior: MachineSpread | None = None,
    drift: Mapping[tuple[str, str, str], list[Drift]] | None = None,
    shared: Runs | None = None,
) -> pd.DataFrame:
    """One row per pair and (benchmark, metric) measured on both labels, with its decision.

    ``prior`` is an optional machine-spread prior (one-machine sides become type-level); ``drift``
    the drifting machines per (benchmark, metric, label) (``diagnostics.findings``; computed from
    ``obs`` when not given): a run-level verdict says that their level moved and that the
    statement is about the mean over the runs measured; ``shared`` the runs of ``obs`` when the
    caller has them (``runs.Runs``: computed once for describe, findings and compare).
    """
    if not pairs or obs.empty:
        return pd.DataFrame(columns=COMPARE_COLUMNS)
    if drift is None:
        drift = findings(obs, shared=shared)[1]
    return decide_cells(cells(obs, desc, pairs, margin, margins, prior, shared), notes, windows, drift)


def cell_order(todo: Sequence[_Cell], pairs: Sequence[Pair]) -> list[_Cell]:
    """Cells gathered a part (a set of benchmarks) at a time in :func:`cells`' order: pair by
    pair, then by (benchmark, metric)."""
    rank = {id(p): k for k, p in enumerate(pairs)}
    return sorted(todo, key=lambda c: (rank[id(c.pair)], c.cell.bench, c.cell.metric))


def decide_cells(
    todo: Sequence[_Cell],
    notes: Mapping[tuple[str, str, str], list[str]] | None = None,
    windows: Mapping[str, tuple] | None = None,
    drift: Mapping[tuple[str, str, str], list[Drift]] | None = None,
) -> pd.DataFrame:
    """The family's decisions over every cell (``analysis.analyse``: pooled spreads, the max-T
    critical value), one row per cell in the order given."""
    outcomes = analyse([c.cell for c in todo])
    return pd.DataFrame(
        [_row(c, o, notes or {}, windows or {}, drift or {}) for c, o in zip(todo, outcomes, strict=True)],
        columns=COMPARE_COLUMNS,
    )


def drift_note(hosts: Sequence[str]) -> str:
    """What a run-level verdict says when a side's machine drifts ("" when none does).

    The estimand of a run-level comparison is the mean over the runs measured: a level that moves
    is part of it, and the run noise comes from successive differences, which a slow walk hardly
    inflates (docs/report.md *Drift*).
    """
    if not hosts:
        return ""
    return (
        f"the level of {', '.join(hosts)} moved over the runs (drift): the statement is about the mean "
        "over the runs measured, not a long-run level"
    )


def _row(
    c: _Cell,
    o: Outcome,
    notes: Mapping[tuple[str, str, str], list[str]],
    windows: Mapping[str, tuple],
    drift: Mapping[tuple[str, str, str], list[Drift]],
) -> dict:
    pair, ra, rb, cell = c.pair, c.ra, c.rb, c.cell
    bench, metric, est, dec = cell.bench, cell.metric, o.est, o.dec
    mg = cell.margin
    ma, mb, na, nb = int(ra["machines"]), int(rb["machines"]), int(ra["n"]), int(rb["n"])
    need = machines_needed(est, o.alpha, mg)
    scope = (
        scope_text(est, cell.side_a.hosts, cell.side_b.hosts, na, nb, need)
        if est.ok
        else f"scope {est.scope}"
    )
    if est.ok and est.unit != "machine":
        moved = [
            x.host for x in (*drift.get((bench, metric, pair.a), []), *drift.get((bench, metric, pair.b), []))
        ]
        if moved:
            scope += "; " + drift_note(moved)
    if est.ok and est.pooled:
        scope += f"; {est.pooled}"
    diag = [f"{pair.a} {x}" for x in notes.get((bench, metric, pair.a), [])]
    diag += [f"{pair.b} {x}" for x in notes.get((bench, metric, pair.b), [])]
    when = overlap_note(pair.a, pair.b, windows) if windows else ""
    if when:
        diag.append(when)
    return {
        "comparison": pair.name,
        "kind": pair.kind,
        "a": pair.a,
        "b": pair.b,
        "benchmark": bench,
        "metric": metric,
        "unit": ra["unit"],
        "better": cell.better,
        "primary": cell.primary,
        "n_a": na,
        "n_b": nb,
        "machines_a": ma,
        "machines_b": mb,
        "mean_a": ra["mean"],
        "mean_b": rb["mean"],
        "centre_a": _centre(ra),
        "centre_b": _centre(rb),
        "ratio": math.exp(est.diff) if est.ok else float("nan"),
        "overhead_percent": dec.overhead,
        "overhead_ci_low": dec.lo,
        "overhead_ci_high": dec.hi,
        "ci_level": o.level,
        "p": dec.p,
        "p_adjusted": o.p_adjusted,
        "tost_p": dec.tost_p,
        "margin_percent": mg,
        "test_unit": est.unit,
        "scope": est.scope,
        "adjusted": bool(cell.primary),
        "machine_spread_percent": 100 * est.machine_spread if est.ok else float("nan"),
        "run_spread_percent": 100 * _run_spread(cell),
        "machines_needed": need,
        "pooling": est.pooled,
        "decision": dec.decision,
        "reason": dec.reason,
        "diagnostics": "; ".join(diag),
        "verdict": verdict(
            pair,
            bench,
            metric,
            dec,
            scope + ("" if cell.primary else SECONDARY),
            mg,
            (cell.side_a.hosts, cell.side_b.hosts) if est.scope == "machines" and est.ok else (),
            (_centre(ra), _centre(rb), str(ra["unit"])),
        ),
    }


def _run_spread(cell: Cell) -> float:
    """The run-to-run sd (log) of a comparison's machines, from successive differences, both sides
    pooled (NaN when no machine has two runs): a planner's prior (``design``)."""
    parts = [s.successive() for s in (cell.side_a, cell.side_b)]
    ok = [(v, d) for v, d in parts if d > 0 and math.isfinite(v)]
    if not ok:
        return float("nan")
    return math.sqrt(sum(v * d for v, d in ok) / sum(d for _, d in ok))


def _centre(row: Mapping) -> float:
    """A label's typical value of a metric as the report shows it: the geometric mean for a
    positive quantity, else the mean (the descriptive row)."""
    geo = row.get("geomean")
    if geo is not None and isinstance(geo, float) and math.isfinite(geo):
        return geo
    return float(row["mean"])


def headline(cmp: pd.DataFrame) -> list[dict]:
    """The headline: per comparison and scope (types first), the counts of *primary* decisions.

    Secondary metrics never count here; ``secondary`` is how many of them the comparison has (they
    are listed, unadjusted, under their benchmark: :func:`secondary`).
    """
    out: list[dict] = []
    if cmp.empty:
        return out
    for name, part in cmp.groupby("comparison", sort=False):
        prim = part[part["primary"].astype(bool)]
        mismatch = bool(part["evidence_mismatch"].any()) if "evidence_mismatch" in part else False
        for scope in SCOPES:
            rows = prim[prim["scope"] == scope]
            if rows.empty:
                continue
            ovh = rows["overhead_percent"].to_numpy(float)
            ovh = ovh[np.isfinite(ovh)]
            dec = rows["decision"].value_counts()
            out.append(
                {
                    "comparison": name,
                    "kind": part["kind"].iloc[0],
                    "scope": scope,
                    "metrics": len(rows),
                    **{k: int(dec.get(k, 0)) for k in ("slower", "faster", "equivalent", "inconclusive")},
                    "median": float(np.median(ovh)) if len(ovh) else None,
                    "min": float(ovh.min()) if len(ovh) else None,
                    "max": float(ovh.max()) if len(ovh) else None,
                    "secondary": int((~part["primary"].astype(bool)).sum()),
                    "machines_needed": pooled_machines_needed(rows),
                    "mismatch": mismatch,
                }
            )
    return out


def pooled_machines_needed(rows: pd.DataFrame) -> int | None:
    """Machines per label a type-level decision of these primary comparisons needs: at their pooled
    machine spread (the root mean square of the metrics' pooled machine spreads), the family's level
    and the median margin (``inference.units_needed``); None when no machine spread is known.

    The largest of the metrics' own figures (what the headline showed before) is the largest of 25
    noisy estimates: 2.7 times the truth in the median at 3 vs 3 machines (docs/report.md)."""
    sd = pd.to_numeric(rows["machine_spread_percent"], errors="coerce").dropna() / 100
    if sd.empty or not (sd > 0).any():
        return None
    alpha = 1 - float(pd.to_numeric(rows["ci_level"], errors="coerce").median()) / 100
    margin = float(pd.to_numeric(rows["margin_percent"], errors="coerce").median())
    return units_needed(float(np.sqrt(np.mean(sd**2))), alpha, margin)


def secondary(cmp: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Secondary (unadjusted) comparisons per benchmark, for the benchmark's own section."""
    if cmp.empty:
        return {}
    sec = cmp[~cmp["primary"].astype(bool)]
    return {str(b): part for b, part in sec.groupby("benchmark", sort=True)}
