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

from testbed_reports.diagnostics import Drift, findings, overlap_note
from testbed_reports.errors import ReportError
from testbed_reports.inference import (
    ALPHA,
    DEFAULT_MARGIN,
    SCOPES,
    Decision,
    Estimate,
    MachineSpread,
    Side,
    decide,
    estimate,
    family_alpha,
    machines_needed,
    primary_set,
    sides,
    signed,
)
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
    "machines_needed",
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
    pair: Pair, bench: str, metric: str, dec: Decision, scope: str, margin: float, hosts: tuple = ()
) -> str:
    """One readable line whose words are the decision read from the printed interval.

    With ``hosts`` (the two sides' hosts, scope machines) its subjects are the machines, so a line
    never reads as a statement about VM types.
    """
    a, b = (_subject(pair.a, hosts[0]), _subject(pair.b, hosts[1])) if hosts else (pair.a, pair.b)
    where = f"on {bench} {metric}"
    ci = f"[{signed(dec.lo)}, {signed(dec.hi)}]"
    if dec.decision in ("slower", "faster"):
        return f"{a} is {abs(dec.overhead):.1f}% {dec.decision} {ci} than {b} {where} ({scope})"
    if dec.decision == "equivalent":
        ovh = signed(dec.overhead)
        return f"{a} is equivalent to {b} within +-{margin:g}% {where}: {ovh}% {ci} ({scope})"
    return f"{a} vs {b} {where}: inconclusive, {dec.reason} ({scope})"


def _margin_for(bench: str, margin: float, margins: Mapping[str, float] | None) -> float:
    return float((margins or {}).get(bench, margin))


@dataclass
class _Cell:
    """One pair x metric before the family size is known."""

    pair: Pair
    bench: str
    metric: str
    ra: dict
    rb: dict
    side_a: Side
    side_b: Side
    est: Estimate
    primary: bool


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
) -> pd.DataFrame:
    """One row per pair and (benchmark, metric) measured on both labels, with its decision.

    ``prior`` is an optional machine-spread prior (one-machine sides become type-level); ``drift``
    the drifting machines per (benchmark, metric, label) (``diagnostics.findings``; computed from
    ``obs`` when not given): their means get the variance of a wandering level.
    """
    if not pairs or obs.empty:
        return pd.DataFrame(columns=COMPARE_COLUMNS)
    if drift is None:
        drift = findings(obs)[1]
    sd = sides(obs)
    primary = primary_set(obs)
    d = {(r["benchmark"], r["metric"], r["label"]): r for r in desc.to_dict(orient="records")}
    by_label: dict[str, set[tuple[str, str]]] = {}
    for bench, metric, label in d:
        by_label.setdefault(label, set()).add((bench, metric))
    cells = []
    for pair in pairs:
        for bench, metric in sorted(by_label.get(pair.a, set()) & by_label.get(pair.b, set())):
            sa, sb = sd[(bench, metric, pair.a)], sd[(bench, metric, pair.b)]
            da, db = drift.get((bench, metric, pair.a), []), drift.get((bench, metric, pair.b), [])
            sa, sb = sa.with_drift(da), sb.with_drift(db)
            est = estimate(sa, sb, prior)
            cells.append(
                _Cell(
                    pair,
                    bench,
                    metric,
                    d[(bench, metric, pair.a)],
                    d[(bench, metric, pair.b)],
                    sa,
                    sb,
                    est,
                    (bench, metric) in primary,
                )
            )
    m = sum(1 for c in cells if c.primary and c.est.ok)
    return pd.DataFrame(
        [_row(c, m, margin, margins, notes or {}, windows or {}) for c in cells], columns=COMPARE_COLUMNS
    )


def drift_withheld(hosts: Sequence[str]) -> str:
    """Why a run-level decision is withheld when a side's machine drifts ("" when none does).

    Runs of a wandering machine do not replicate one level, and 30 runs cannot measure how far it
    wanders (a fitted widening still covered 86 % under a 0.5 %/run walk): the widened interval is
    printed, the decision is not made (docs/report.md *Drift*).
    """
    if not hosts:
        return ""
    return (
        f"the runs of {', '.join(hosts)} drift, so they do not replicate one level; compare again with "
        "runs at other times (or more machines a label)"
    )


def _row(
    c: _Cell,
    family: int,
    margin: float,
    margins: Mapping[str, float] | None,
    notes: Mapping[tuple[str, str, str], list[str]],
    windows: Mapping[str, tuple],
) -> dict:
    pair, bench, metric, ra, rb, est = c.pair, c.bench, c.metric, c.ra, c.rb, c.est
    better = str(ra["better"])
    alpha = family_alpha(family) if c.primary else ALPHA
    mg = _margin_for(bench, margin, margins)
    moved = [d.host for d in (*c.side_a.drift, *c.side_b.drift)] if est.ok and est.unit != "machine" else []
    dec = decide(est, better, alpha, mg, withhold=drift_withheld(moved))
    ma, mb, na, nb = int(ra["machines"]), int(rb["machines"]), int(ra["n"]), int(rb["n"])
    need = machines_needed(est, alpha, mg)
    scope = scope_text(est, c.side_a.hosts, c.side_b.hosts, na, nb, need) if est.ok else f"scope {est.scope}"
    if moved:
        scope += f"; interval widened for the drift of {', '.join(moved)} (a wandering level, not replicates)"
    diag = [f"{pair.a} {x}" for x in notes.get((bench, metric, pair.a), [])]
    diag += [f"{pair.b} {x}" for x in notes.get((bench, metric, pair.b), [])]
    when = overlap_note(pair.a, pair.b, windows) if windows else ""
    if when:
        diag.append(when)
    p_adj = min(1.0, dec.p * family) if c.primary and math.isfinite(dec.p) else dec.p
    return {
        "comparison": pair.name,
        "kind": pair.kind,
        "a": pair.a,
        "b": pair.b,
        "benchmark": bench,
        "metric": metric,
        "unit": ra["unit"],
        "better": better,
        "primary": c.primary,
        "n_a": na,
        "n_b": nb,
        "machines_a": ma,
        "machines_b": mb,
        "mean_a": ra["mean"],
        "mean_b": rb["mean"],
        "ratio": math.exp(est.diff) if est.ok else float("nan"),
        "overhead_percent": dec.overhead,
        "overhead_ci_low": dec.lo,
        "overhead_ci_high": dec.hi,
        "ci_level": 100 * (1 - alpha),
        "p": dec.p,
        "p_adjusted": p_adj,
        "tost_p": dec.tost_p,
        "margin_percent": mg,
        "test_unit": est.unit,
        "scope": est.scope,
        "adjusted": bool(c.primary),
        "machines_needed": need,
        "decision": dec.decision,
        "reason": dec.reason,
        "diagnostics": "; ".join(diag),
        "verdict": verdict(
            pair,
            bench,
            metric,
            dec,
            scope + ("" if c.primary else SECONDARY),
            mg,
            (c.side_a.hosts, c.side_b.hosts) if est.scope == "machines" and est.ok else (),
        ),
    }


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
                    "machines_needed": _max_int(rows["machines_needed"]),
                    "mismatch": mismatch,
                }
            )
    return out


def _max_int(col: pd.Series) -> int | None:
    v = pd.to_numeric(col, errors="coerce").dropna()
    return int(v.max()) if len(v) else None


def secondary(cmp: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Secondary (unadjusted) comparisons per benchmark, for the benchmark's own section."""
    if cmp.empty:
        return {}
    sec = cmp[~cmp["primary"].astype(bool)]
    return {str(b): part for b, part in sec.groupby("benchmark", sort=True)}
