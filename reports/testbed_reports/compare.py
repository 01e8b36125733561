"""Pairs of labels to compare, and per metric: overhead with bootstrap CI, tests, Holm, verdict."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from testbed_reports.errors import ReportError
from testbed_reports.stats import KEY, Draws

ALPHA = 0.05
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
    "mw_p",
    "welch_p",
    "mw_p_holm",
    "welch_p_holm",
    "test_unit",
    "significant",
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
    """Comparisons implied by the inventory groups (DESIGN.md section 2)."""
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
    """Overhead in percent from the ratio of means a/b: a slowdown of ``a`` is always positive."""
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = ratio if better == "lower" else 1.0 / ratio
    return 100.0 * (cost - 1.0)


def _tests(va: np.ndarray, vb: np.ndarray) -> tuple[float, float]:
    """Two-sided Mann-Whitney U and Welch t p-values (NaN with fewer than two values a side)."""
    if len(va) < 2 or len(vb) < 2:
        return float("nan"), float("nan")
    if np.ptp(np.concatenate([va, vb])) == 0:
        return 1.0, 1.0
    mw = float(sps.mannwhitneyu(va, vb, alternative="two-sided").pvalue)
    sa, sb = float(va.std(ddof=1)), float(vb.std(ddof=1))
    if sa == 0 and sb == 0:
        welch = 0.0 if va.mean() != vb.mean() else 1.0
    else:
        welch = float(
            sps.ttest_ind_from_stats(va.mean(), sa, len(va), vb.mean(), sb, len(vb), equal_var=False).pvalue
        )
    return mw, welch


def _host_means(values: np.ndarray, hosts: np.ndarray) -> np.ndarray:
    _, inv = np.unique(hosts, return_inverse=True)
    return np.bincount(inv, weights=values) / np.bincount(inv)


def _fmt(x: float) -> str:
    return f"{x:.1f}" if math.isfinite(x) else "n/a"


def verdict(
    pair: Pair,
    benchmark: str,
    metric: str,
    ovh: float,
    lo: float,
    hi: float,
    p_holm: float,
    n_a: int,
    n_b: int,
) -> tuple[bool | None, str]:
    """(significant, one readable line)."""
    where = f"on {benchmark} {metric}"
    if n_a < 2 or n_b < 2 or not math.isfinite(p_holm):
        return None, f"{pair.a} vs {pair.b} {where}: too few observations to test (n={n_a} vs {n_b})"
    sig = p_holm < ALPHA
    if not math.isfinite(ovh):
        return sig, f"{pair.a} vs {pair.b} {where}: overhead undefined (zero mean), " + (
            "significant" if sig else "not significant"
        ) + f" (Holm p={p_holm:.2g})"
    word = "slower" if ovh > 0 else "faster" if ovh < 0 else "as fast as"
    size = "" if ovh == 0 else f"{abs(ovh):.1f}% "
    text = (
        f"{pair.a} is {size}{word} [{_fmt(lo)}, {_fmt(hi)}] than {pair.b} {where}, "
        f"{'significant' if sig else 'not significant'} (Holm p={p_holm:.2g})"
    )
    return sig, text


def compare(
    obs: pd.DataFrame, desc: pd.DataFrame, draws: dict[tuple[str, str, str], Draws | None], pairs: list[Pair]
) -> pd.DataFrame:
    """One row per pair and (benchmark, metric) measured on both labels."""
    if not pairs:
        return pd.DataFrame(columns=COMPARE_COLUMNS)
    indices = obs.groupby(KEY, observed=True, sort=True).indices
    values = obs["value"].to_numpy()
    hosts = obs["host"].to_numpy()
    d = {(r["benchmark"], r["metric"], r["label"]): r for r in desc.to_dict(orient="records")}
    by_label: dict[str, set[tuple[str, str]]] = {}
    for bench, metric, label in d:
        by_label.setdefault(label, set()).add((bench, metric))
    rows = []
    for pair in pairs:
        part = []
        for bench, metric in sorted(by_label.get(pair.a, set()) & by_label.get(pair.b, set())):
            ra, rb = d[(bench, metric, pair.a)], d[(bench, metric, pair.b)]
            better = str(ra["better"])
            ratio = ra["mean"] / rb["mean"] if rb["mean"] != 0 else float("nan")
            ovh = float(overhead(ratio, better))
            lo = hi = float("nan")
            da, db = draws.get((bench, metric, pair.a)), draws.get((bench, metric, pair.b))
            if da is not None and db is not None:
                o = overhead(da.means / db.means, better)
                o = o[np.isfinite(o)]
                if len(o):
                    lo, hi = (float(x) for x in np.percentile(o, [2.5, 97.5]))
            ia, ib = indices[(bench, metric, pair.a)], indices[(bench, metric, pair.b)]
            va, vb = values[ia], values[ib]
            unit = "observation"
            if ra["machines"] >= 3 and rb["machines"] >= 3:
                va, vb = _host_means(va, hosts[ia]), _host_means(vb, hosts[ib])
                unit = "machine mean"
            mw, welch = _tests(va, vb)
            part.append(
                {
                    "comparison": pair.name,
                    "kind": pair.kind,
                    "a": pair.a,
                    "b": pair.b,
                    "benchmark": bench,
                    "metric": metric,
                    "unit": ra["unit"],
                    "better": better,
                    "n_a": int(ra["n"]),
                    "n_b": int(rb["n"]),
                    "machines_a": int(ra["machines"]),
                    "machines_b": int(rb["machines"]),
                    "mean_a": ra["mean"],
                    "mean_b": rb["mean"],
                    "ratio": ratio,
                    "overhead_percent": ovh,
                    "overhead_ci_low": lo,
                    "overhead_ci_high": hi,
                    "mw_p": mw,
                    "welch_p": welch,
                    "test_unit": unit,
                }
            )
        _holm(part, "mw_p")
        _holm(part, "welch_p")
        for r in part:
            r["significant"], r["verdict"] = verdict(
                pair,
                r["benchmark"],
                r["metric"],
                r["overhead_percent"],
                r["overhead_ci_low"],
                r["overhead_ci_high"],
                r["mw_p_holm"],
                r["n_a"],
                r["n_b"],
            )
        rows.extend(part)
    return pd.DataFrame(rows, columns=COMPARE_COLUMNS)


def _holm(rows: list[dict], key: str) -> None:
    """Holm-adjusted p-values across the metrics of one comparison (NaN stays NaN)."""
    p = np.array([r[key] for r in rows], dtype=float)
    adj = np.full(len(p), np.nan)
    ok = np.isfinite(p)
    if ok.any():
        adj[ok] = multipletests(p[ok], alpha=ALPHA, method="holm")[1]
    for r, a in zip(rows, adj, strict=False):
        r[f"{key}_holm"] = float(a)
