"""Pairs of labels to compare, and per metric: log-scale overhead, interval, decision and verdict."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from testbed_reports.diagnostics import overlap_note
from testbed_reports.errors import ReportError
from testbed_reports.inference import (
    ALPHA,
    DEFAULT_MARGIN,
    Decision,
    Estimate,
    decide,
    estimate,
    family_alpha,
    primary_set,
    sides,
    signed,
)

CC_PAIRS = (("sev", "amd_baseline"), ("tdx", "intel_baseline"))
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


def _scope(est: Estimate, ma: int, mb: int, na: int, nb: int) -> str:
    if est.unit == "machine":
        return f"{ma} vs {mb} machines, machine is the unit"
    if ma == 1 and mb == 1:
        return f"n={na} vs {nb} runs; speaks about these two machines, not about their VM types"
    return f"n={na} vs {nb} runs pooled (a label with one machine: machine spread not estimable)"


def verdict(pair: Pair, bench: str, metric: str, dec: Decision, scope: str, margin: float) -> str:
    """One readable line whose words are the decision read from the printed interval."""
    where = f"on {bench} {metric}"
    ci = f"[{signed(dec.lo)}, {signed(dec.hi)}]"
    if dec.decision in ("slower", "faster"):
        return f"{pair.a} is {abs(dec.overhead):.1f}% {dec.decision} {ci} than {pair.b} {where} ({scope})"
    if dec.decision == "equivalent":
        return (
            f"{pair.a} is equivalent to {pair.b} within +-{margin:g}% {where}: "
            f"{signed(dec.overhead)}% {ci} ({scope})"
        )
    return f"{pair.a} vs {pair.b} {where}: inconclusive, {dec.reason} ({scope})"


def _margin_for(bench: str, margin: float, margins: Mapping[str, float] | None) -> float:
    return float((margins or {}).get(bench, margin))


def compare(
    obs: pd.DataFrame,
    desc: pd.DataFrame,
    pairs: list[Pair],
    margin: float = DEFAULT_MARGIN,
    margins: Mapping[str, float] | None = None,
    notes: Mapping[tuple[str, str, str], list[str]] | None = None,
    windows: Mapping[str, tuple] | None = None,
) -> pd.DataFrame:
    """One row per pair and (benchmark, metric) measured on both labels, with its decision."""
    if not pairs or obs.empty:
        return pd.DataFrame(columns=COMPARE_COLUMNS)
    sd = sides(obs)
    primary = primary_set(obs)
    d = {(r["benchmark"], r["metric"], r["label"]): r for r in desc.to_dict(orient="records")}
    by_label: dict[str, set[tuple[str, str]]] = {}
    for bench, metric, label in d:
        by_label.setdefault(label, set()).add((bench, metric))
    rows = []
    for pair in pairs:
        for bench, metric in sorted(by_label.get(pair.a, set()) & by_label.get(pair.b, set())):
            ra, rb = d[(bench, metric, pair.a)], d[(bench, metric, pair.b)]
            est = estimate(sd[(bench, metric, pair.a)], sd[(bench, metric, pair.b)])
            rows.append((pair, bench, metric, ra, rb, est, (bench, metric) in primary))
    m = sum(1 for r in rows if r[6] and r[5].ok)
    return pd.DataFrame(
        [_row(*r, m, margin, margins, notes or {}, windows or {}) for r in rows], columns=COMPARE_COLUMNS
    )


def _row(
    pair: Pair,
    bench: str,
    metric: str,
    ra: dict,
    rb: dict,
    est: Estimate,
    is_primary: bool,
    family: int,
    margin: float,
    margins: Mapping[str, float] | None,
    notes: Mapping[tuple[str, str, str], list[str]],
    windows: Mapping[str, tuple],
) -> dict:
    better = str(ra["better"])
    alpha = family_alpha(family) if is_primary else ALPHA
    mg = _margin_for(bench, margin, margins)
    dec = decide(est, better, alpha, mg)
    ma, mb, na, nb = int(ra["machines"]), int(rb["machines"]), int(ra["n"]), int(rb["n"])
    diag = [f"{pair.a} {x}" for x in notes.get((bench, metric, pair.a), [])]
    diag += [f"{pair.b} {x}" for x in notes.get((bench, metric, pair.b), [])]
    when = overlap_note(pair.a, pair.b, windows) if windows else ""
    if when:
        diag.append(when)
    p_adj = min(1.0, dec.p * family) if is_primary and math.isfinite(dec.p) else dec.p
    return {
        "comparison": pair.name,
        "kind": pair.kind,
        "a": pair.a,
        "b": pair.b,
        "benchmark": bench,
        "metric": metric,
        "unit": ra["unit"],
        "better": better,
        "primary": is_primary,
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
        "decision": dec.decision,
        "reason": dec.reason,
        "diagnostics": "; ".join(diag),
        "verdict": verdict(
            pair, bench, metric, dec, _scope(est, ma, mb, na, nb) + ("" if is_primary else SECONDARY), mg
        ),
    }
