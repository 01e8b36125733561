"""Overheads on the log scale with Welch-t intervals, and decisions read from those intervals.

Estimand: the ratio of geometric means a/b of a metric (exp of the difference of mean log values),
shown as an overhead in percent where a slowdown of ``a`` is positive whatever the metric's
direction. Unit of replication: the machine when both labels have at least two machines (the mean
log value of each machine is one observation), otherwise the run (the verdict then speaks about
these machines only, not about their VM types). Interval: Welch t on those log values.

Decision, from the printed interval: ``equivalent`` when it lies inside +-margin, ``slower`` when
it lies above 0, ``faster`` when below 0, ``inconclusive`` otherwise (with the runs or machines that
would resolve the margin at the observed spread). Error control: the primary metrics of all
comparisons of a report form one family; their intervals are Bonferroni-adjusted (level
1 - 0.05/m), so the chance of any false slower/faster among them is at most 5 %. Other metrics get
unadjusted 95 % intervals and are marked secondary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from testbed_agent.workloads import primary_metrics
from testbed_reports.numerics import group_moments

ALPHA = 0.05
DEFAULT_MARGIN = 2.0
#: fewer runs than this per machine are reported as a diagnostic beside the verdict
MIN_RUNS = 5


@dataclass
class Side:
    """One label's log-scale summary of one metric: per machine n, mean and sd of log values."""

    n: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    nonpositive: int
    runs: int

    @property
    def machines(self) -> int:
        return len(self.n)

    def pooled(self) -> tuple[float, float, int]:
        """Mean and sd of the log values of all runs (machines pooled), and their count."""
        n = float(self.n.sum())
        mean = float((self.n * self.mean).sum() / n)
        ss = float(
            (np.nan_to_num((self.n - 1) * self.sd**2)).sum() + (self.n * (self.mean - mean) ** 2).sum()
        )
        return mean, math.sqrt(ss / (n - 1)) if n > 1 else float("nan"), int(n)

    def machine_level(self) -> tuple[float, float, int]:
        """Mean and sd of the per-machine mean log values, and the number of machines."""
        k = len(self.mean)
        return float(self.mean.mean()), float(self.mean.std(ddof=1)) if k > 1 else float("nan"), k


def sides(obs: pd.DataFrame) -> dict[tuple[str, str, str], Side]:
    """Per (benchmark, metric, label): the per-machine log moments (vectorised over all rows)."""
    if obs.empty:
        return {}
    keys = ["benchmark", "metric", "label", "host"]
    grouped = obs.groupby(keys, observed=True, sort=True)
    codes = grouped.ngroup().to_numpy()
    table = grouped.size().reset_index(name="n_all")
    values = obs["value"].to_numpy(dtype=float)
    positive = values > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(np.where(positive, values, 1.0))
    mom = group_moments(logs[positive], codes[positive], len(table))
    table["n"], table["mean"], table["sd"] = mom.n, mom.mean, mom.sd
    table["nonpositive"] = np.bincount(codes[~positive], minlength=len(table))
    out: dict[tuple[str, str, str], Side] = {}
    for key, rows in table.groupby(keys[:3], observed=True, sort=True).indices.items():
        part = table.iloc[rows]
        n = part["n"].to_numpy()
        keep = n > 0
        out[(str(key[0]), str(key[1]), str(key[2]))] = Side(
            n[keep],
            part["mean"].to_numpy()[keep],
            part["sd"].to_numpy()[keep],
            int(part["nonpositive"].sum()),
            int(part["n_all"].sum()),
        )
    return out


def primary_set(obs: pd.DataFrame) -> set[tuple[str, str]]:
    """(benchmark, metric) pairs that are primary (by workload type: workloads.primary_metrics).

    A benchmark whose type declares no primary metric (CSV inputs, synthetic data) has its first
    metric (by name) as primary, so every benchmark contributes one member to the family.
    """
    if obs.empty:
        return set()
    pairs = obs[["benchmark", "type", "metric"]].drop_duplicates().astype(str)
    out: set[tuple[str, str]] = set()
    for (bench, btype), part in pairs.groupby(["benchmark", "type"], sort=True):
        names = sorted(part["metric"])
        prim = primary_metrics(btype, names) or names[:1]
        out.update((bench, m) for m in prim)
    return out


@dataclass
class Estimate:
    """Log ratio a/b with its standard error and degrees of freedom, or why there is none."""

    diff: float = float("nan")
    se: float = float("nan")
    df: float = float("nan")
    unit: str = "run"
    spread: float = float("nan")  # sd of one unit (run or machine) on the log scale, both sides pooled
    per_side: int = 0  # units per side (the smaller)
    reason: str = ""

    @property
    def ok(self) -> bool:
        return not self.reason


def estimate(a: Side, b: Side) -> Estimate:
    """Welch t on log values: machine means when both sides have >= 2 machines, else runs."""
    for name, s in (("a", a), ("b", b)):
        if s.nonpositive:
            return Estimate(
                reason=f"ratio refused: {s.nonpositive} of {s.runs} values of {name} are zero or negative "
                "(a ratio of means is undefined or meaningless there; the log scale needs positive values)"
            )
    if a.machines >= 2 and b.machines >= 2:
        (ma, sa, na), (mb, sb, nb), unit = a.machine_level(), b.machine_level(), "machine"
    else:
        (ma, sa, na), (mb, sb, nb), unit = a.pooled(), b.pooled(), "run"
    if na < 2 or nb < 2:
        what = "machines" if unit == "machine" else "runs"
        return Estimate(unit=unit, reason=f"too few {what} to test (n={na} vs {nb}; needs at least 2 a side)")
    va, vb = sa * sa / na, sb * sb / nb
    se = math.sqrt(va + vb)
    df = float(na + nb - 2) if se == 0 else (va + vb) ** 2 / (va * va / (na - 1) + vb * vb / (nb - 1))
    spread = math.sqrt((sa * sa + sb * sb) / 2)
    return Estimate(ma - mb, se, df, unit, spread, min(na, nb))


def to_overhead(log_ratio: float | np.ndarray, better: str) -> float | np.ndarray:
    """Overhead in percent of a log ratio a/b: a slowdown of ``a`` is positive."""
    sign = 1.0 if better == "lower" else -1.0
    with np.errstate(over="ignore"):
        return 100.0 * np.expm1(sign * np.asarray(log_ratio, dtype=float))


@dataclass
class Decision:
    """What the printed interval says, and why."""

    overhead: float
    lo: float
    hi: float
    p: float
    tost_p: float
    decision: str
    reason: str


def decide(est: Estimate, better: str, alpha: float, margin: float) -> Decision:
    """Interval at level 1 - alpha, two-sided p, TOST p against +-margin %, and the decision."""
    nan = float("nan")
    if not est.ok:
        return Decision(nan, nan, nan, nan, nan, "inconclusive", est.reason)
    tcrit = float(sps.t.ppf(1 - alpha / 2, est.df))
    ends = sorted(float(to_overhead(est.diff + s * tcrit * est.se, better)) for s in (-1, 1))
    ovh = float(to_overhead(est.diff, better))
    p, tost = _pvalues(est, better, margin)
    lo, hi = ends
    ci = f"[{signed(lo)}, {signed(hi)}]%"
    if -margin <= lo and hi <= margin:
        return Decision(ovh, lo, hi, p, tost, "equivalent", f"{ci} lies within +-{margin:g}%")
    if lo > 0:
        return Decision(ovh, lo, hi, p, tost, "slower", f"{ci} lies above 0")
    if hi < 0:
        return Decision(ovh, lo, hi, p, tost, "faster", f"{ci} lies below 0")
    return Decision(
        ovh, lo, hi, p, tost, "inconclusive", f"{ci} spans 0 and +-{margin:g}%; " + needed(est, alpha, margin)
    )


def signed(x: float) -> str:
    """``x`` with its sign and one decimal, never "-0.0"."""
    return f"{round(x, 1) + 0.0:+.1f}"


def _pvalues(est: Estimate, better: str, margin: float) -> tuple[float, float]:
    """Two-sided Welch p of no difference, and the TOST p of a difference beyond +-margin %."""
    sign = 1.0 if better == "lower" else -1.0
    d = sign * est.diff  # log of the cost ratio: positive is a slowdown
    lo_b, hi_b = math.log1p(-min(margin, 99.0) / 100), math.log1p(margin / 100)
    if est.se == 0:
        p = 0.0 if d != 0 else 1.0
        return p, 0.0 if lo_b < d < hi_b else 1.0
    p = float(2 * sps.t.sf(abs(d) / est.se, est.df))
    tost = max(float(sps.t.sf((d - lo_b) / est.se, est.df)), float(sps.t.cdf((d - hi_b) / est.se, est.df)))
    return p, tost


def units_needed(spread: float, alpha: float, margin: float) -> int:
    """Smallest units per side for which a true ``margin`` % difference is found with 80 % power.

    Two-sample t with 2n - 2 degrees of freedom (so 2 machines are not promised what a normal
    approximation would), at the family's alpha; the search starts at the normal approximation,
    which never exceeds the answer.
    """
    ratio = 2 * (spread / math.log1p(margin / 100)) ** 2
    z = float(sps.norm.ppf(1 - alpha / 2) + sps.norm.ppf(0.8))
    n = max(2, math.ceil(ratio * z * z))
    while n < 10**8:
        df = 2 * n - 2
        t = float(sps.t.ppf(1 - alpha / 2, df) + sps.t.ppf(0.8, df))
        need = math.ceil(ratio * t * t)
        if need <= n:
            return n
        n = max(n + 1, need)
    return n


def needed(est: Estimate, alpha: float, margin: float) -> str:
    """What would resolve ``margin`` % at the observed spread (80 % power)."""
    if est.spread == 0 or not math.isfinite(est.spread):
        return "more runs would not narrow a zero spread"
    n = units_needed(est.spread, alpha, margin)
    spread = f"sd {100 * est.spread:.1f}% per {est.unit}"
    if est.unit == "machine":
        return f"needs about {n} machines per label to resolve {margin:g}% at this spread ({spread})"
    return (
        f"needs about {n} runs per machine (or more machines per label) to resolve {margin:g}% "
        f"at this spread ({spread})"
    )


def family_alpha(primary_ok: int) -> float:
    """Per-interval alpha of the primary family (Bonferroni over its m testable comparisons)."""
    return ALPHA / max(primary_ok, 1)
