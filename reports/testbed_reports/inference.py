"""Overheads on the log scale with Welch-t intervals, and decisions read from those intervals.

Estimand: the ratio of geometric means a/b of a metric (exp of the difference of mean log values),
shown as an overhead in percent where a slowdown of ``a`` is positive whatever the metric's
direction.

Unit of replication and scope (docs/design.md section 6). Below the machine the unit is the run: a
record, its pyperf values first summarised to one value (``runs.py``).

- ``scope: types``: both labels have at least two machines. The mean log value of each machine is
  one observation; the statement is about the VM types the machines were drawn from.
- ``scope: machines``: a label has one machine. The runs are the unit and the estimand is the ratio
  for *these* machines over the runs measured (a side with several machines contributes the mean
  of its machines, each machine's runs with the pooled within-machine spread). Nothing is said
  about VM types: two machines of one type differ by a few percent (the machine spread) and one
  machine a side cannot measure it. The verdict says how many machines a side a type-level
  decision would need at the observed (or prior) machine spread.
- A machine-spread prior (:class:`MachineSpread`: a between-machine sd measured elsewhere, with its
  source) turns a one-machine side into a type-level estimate: its variance gains ``sd^2`` (with
  the prior's degrees of freedom in Welch-Satterthwaite), the scope becomes ``types`` and the
  verdict names the prior.

Interval: Welch t on those log values (``testbed_shared.intervals.welch``, the shared core).

Decision, from the printed interval: ``equivalent`` when it lies inside +-margin, ``slower`` when
it lies above 0, ``faster`` when below 0, ``inconclusive`` otherwise (with the runs or machines that
would resolve the margin at the observed spread). When a machine's runs drift (diagnostics:
Spearman trend or KPSS level stability) its runs do not replicate one level: in a run-level
comparison its mean gets the variance of a wandering level (``diagnostics.level_variance``, a
random-walk-plus-noise fit) and the decision is withheld (``compare.drift_withheld``): the
widened interval is printed, the verdict says why; ``build --drift-p`` sets the level check.
Machine-level comparisons need nothing more (a machine's drift is part of the machine-to-machine
spread their interval already has).

Error control: the primary metrics of all comparisons of a report form one family; their
intervals are Bonferroni-adjusted (level 1 - 0.05/m, ``adjusted: true``), so the chance of any false
slower/faster among them is at most 5 %. Other metrics get unadjusted 95 % intervals, are marked
secondary (``adjusted: false``) and never count in the headline (``headline``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats as sps

from testbed_reports.numerics import group_moments
from testbed_reports.runs import runs
from testbed_shared.intervals import t_cdf, t_quantile, t_sf, welch
from testbed_shared.records import legacy_primary

ALPHA = 0.05
DEFAULT_MARGIN = 2.0
#: fewer runs than this per machine are reported as a diagnostic beside the verdict
MIN_RUNS = 5
SCOPES = ("types", "machines")


@dataclass(frozen=True)
class MachineSpread:
    """A between-machine spread measured elsewhere: sd of machine effects on the log scale (0.03 =
    3 %), where it comes from, and its degrees of freedom (machines it was measured on - 1; inf when
    taken as known)."""

    sd: float
    source: str
    df: float = math.inf

    def describe(self) -> str:
        known = "" if math.isinf(self.df) else f", {self.df:g} df"
        return f"machine-spread prior {100 * self.sd:.1f}% ({self.source}{known})"


@dataclass
class Side:
    """One label's log-scale summary of one metric: per machine runs, mean and sd of log values."""

    n: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    nonpositive: int
    runs: int
    hosts: list[str] = field(default_factory=list)
    drift: list = field(default_factory=list)  # diagnostics.Drift of this side's drifting machines

    def with_drift(self, drift: list) -> Side:
        """This side with its drifting machines attached (their means get the level variance)."""
        return Side(self.n, self.mean, self.sd, self.nonpositive, self.runs, self.hosts, list(drift))

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

    def within(self) -> tuple[float, float]:
        """Pooled within-machine sd of the log values of one run, and its degrees of freedom."""
        df = float(np.maximum(self.n - 1, 0).sum())
        if df <= 0:
            return float("nan"), 0.0
        ss = float(np.nansum(np.maximum(self.n - 1, 0) * self.sd**2))
        return math.sqrt(ss / df), df

    def these_machines(self) -> tuple[float, float, float]:
        """Mean of the machine means (log), its variance for these machines, and the df.

        A drifting machine's mean adds the variance of a wandering level (``Drift.excess``).
        """
        sw, df = self.within()
        k = self.machines
        extra = sum(d.excess for d in self.drift)
        return float(self.mean.mean()), (sw * sw * float((1.0 / self.n).sum()) + extra) / (k * k), df


def sides(obs: pd.DataFrame) -> dict[tuple[str, str, str], Side]:
    """Per (benchmark, metric, label): the per-machine log moments of the runs (vectorised)."""
    if obs.empty:
        return {}
    r = runs(obs)
    keys = ["benchmark", "metric", "label", "host"]
    grouped = r.groupby(keys, observed=True, sort=True)
    codes = grouped.ngroup().to_numpy()
    table = grouped.size().reset_index(name="n_all")
    values = r["value"].to_numpy(dtype=float)
    positive = values > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(np.where(positive, values, 1.0))
    mom = group_moments(logs[positive], codes[positive], len(table))
    table["n"], table["mean"], table["sd"] = mom.n, mom.mean, mom.sd
    table["nonpositive"] = np.bincount(codes[~positive], minlength=len(table))
    parent = table.groupby(keys[:3], observed=True, sort=True).ngroup().to_numpy()
    order = np.argsort(parent, kind="stable")
    bounds = np.flatnonzero(np.diff(parent[order])) + 1
    cols = {c: table[c].to_numpy() for c in ("benchmark", "metric", "label", "host", "n", "mean", "sd")}
    nonpos, n_all = table["nonpositive"].to_numpy(), table["n_all"].to_numpy()
    out: dict[tuple[str, str, str], Side] = {}
    for rows in np.split(order, bounds):
        n = cols["n"][rows]
        keep = rows[n > 0]
        first = rows[0]
        key = (str(cols["benchmark"][first]), str(cols["metric"][first]), str(cols["label"][first]))
        out[key] = Side(
            cols["n"][keep],
            cols["mean"][keep],
            cols["sd"][keep],
            int(nonpos[rows].sum()),
            int(n_all[rows].sum()),
            [str(h) for h in cols["host"][keep]],
        )
    return out


def primary_set(obs: pd.DataFrame) -> set[tuple[str, str]]:
    """(benchmark, metric) pairs that are primary: those the records name (the loader's ``primary``
    column, ``testbed_shared.records.primary_metrics``); in a table without that column (built by
    hand), those the frozen rule of each type gives (``records.LEGACY_PRIMARY``).

    A benchmark with no primary metric (sysinfo, CSV inputs, synthetic data) has its first metric
    (by name) as primary, so every benchmark contributes one member to the family.
    """
    if obs.empty:
        return set()
    flagged = "primary" in obs
    pairs = obs[["benchmark", "type", "metric", *(["primary"] if flagged else [])]].drop_duplicates()
    pairs = pairs.astype({"benchmark": str, "type": str, "metric": str})
    out: set[tuple[str, str]] = set()
    for (bench, btype), part in pairs.groupby(["benchmark", "type"], sort=True):
        names = sorted(set(part["metric"]))
        if flagged:
            prim = sorted(set(part["metric"][part["primary"].isin([True])]))
        else:
            prim = list(legacy_primary(btype, tuple(names)))
        out.update((bench, m) for m in prim or names[:1])
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
    scope: str = "machines"
    machine_spread: float = float("nan")  # sd of machine means (log) seen or assumed; NaN if unknown
    spread_from: str = ""  # where machine_spread comes from
    prior: str = ""  # the prior's description when it made the scope "types"

    @property
    def ok(self) -> bool:
        return not self.reason


def _refused(a: Side, b: Side) -> str:
    for name, s in (("a", a), ("b", b)):
        if s.nonpositive:
            return (
                f"ratio refused: {s.nonpositive} of {s.runs} values of {name} are zero or negative "
                "(a ratio of means is undefined or meaningless there; the log scale needs positive values)"
            )
    return ""


def _observed_machine_spread(a: Side, b: Side) -> tuple[float, str]:
    """Pooled sd of machine means over the sides that have >= 2 machines (NaN when none has)."""
    ss = df = 0.0
    names = []
    for s, name in ((a, "a"), (b, "b")):
        if s.machines >= 2:
            _, sd, k = s.machine_level()
            ss += (k - 1) * sd * sd
            df += k - 1
            names.append(f"{name}'s {k} machines")
    if df == 0:
        return float("nan"), ""
    return math.sqrt(ss / df), "observed over " + " and ".join(names)


def estimate(a: Side, b: Side, prior: MachineSpread | None = None) -> Estimate:
    """Welch t on log values: machine means when both sides have >= 2 machines (scope types), else
    these machines' runs (scope machines), or the runs plus a machine-spread prior (scope types)."""
    why = _refused(a, b)
    if why:
        types = (a.machines >= 2 and b.machines >= 2) or prior is not None
        return Estimate(reason=why, scope="types" if types else "machines")
    seen, seen_from = _observed_machine_spread(a, b)
    if a.machines >= 2 and b.machines >= 2:
        (ma, sa, na), (mb, sb, nb) = a.machine_level(), b.machine_level()
        diff, se, df = welch(ma, sa, na, mb, sb, nb)
        spread = math.sqrt((sa * sa + sb * sb) / 2)
        return Estimate(diff, se, df, "machine", spread, min(na, nb), "", "types", seen, seen_from)
    parts = [_side_variance(s, prior) for s in (a, b)]
    if any(p is None for p in parts):
        return Estimate(
            unit="run",
            reason=f"too few runs to test (n={a.runs} vs {b.runs} runs): a side needs 2 runs on a machine, "
            "or both sides 2 machines (a run's pyperf values are not replicates)",
        )
    (ma, va, dfa), (mb, vb, dfb) = parts  # type: ignore[misc]
    se = math.sqrt(va + vb)
    df = _satterthwaite([(va, dfa), (vb, dfb)]) if se > 0 else float(a.runs + b.runs - 2)
    swa, swb = a.within()[0], b.within()[0]
    spread = math.sqrt((swa * swa + swb * swb) / 2)
    per_side = int(min(np.min(a.n), np.min(b.n)))
    if prior is not None:
        what = prior.describe()
        return Estimate(ma - mb, se, df, "run+prior", spread, per_side, "", "types", prior.sd, what, what)
    return Estimate(ma - mb, se, df, "run", spread, per_side, "", "machines", seen, seen_from)


def _side_variance(s: Side, prior: MachineSpread | None) -> tuple[float, float, float] | None:
    """(mean, variance of the mean, df) of one side; None when no run-to-run spread is measured."""
    if s.machines >= 2 and prior is not None:
        m, sd, k = s.machine_level()
        return m, sd * sd / k, float(k - 1)
    mean, var, df = s.these_machines()
    if df <= 0:
        return None
    if prior is None:
        return mean, var, df
    k = s.machines
    return mean, var + prior.sd**2 / k, _satterthwaite([(var, df), (prior.sd**2 / k, prior.df)])


def _satterthwaite(parts: list[tuple[float, float]]) -> float:
    """Welch-Satterthwaite df of a sum of variance components (variance, df); inf df adds none."""
    total = sum(v for v, _ in parts)
    den = sum(v * v / d for v, d in parts if d > 0 and math.isfinite(d))
    return total * total / den if den > 0 else math.inf


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


def decide(est: Estimate, better: str, alpha: float, margin: float, withhold: str = "") -> Decision:
    """Interval at level 1 - alpha, two-sided p, TOST p against +-margin %, and the decision.

    ``withhold`` (a reason) keeps the interval but makes the decision ``inconclusive``.
    """
    nan = float("nan")
    if not est.ok:
        return Decision(nan, nan, nan, nan, nan, "inconclusive", est.reason)
    tcrit = float(t_quantile(1 - alpha / 2, est.df))
    ends = sorted(float(to_overhead(est.diff + s * tcrit * est.se, better)) for s in (-1, 1))
    ovh = float(to_overhead(est.diff, better))
    p, tost = _pvalues(est, better, margin)
    lo, hi = ends
    ci = f"[{signed(lo)}, {signed(hi)}]%"
    if withhold:
        return Decision(ovh, lo, hi, p, tost, "inconclusive", f"{ci}; decision withheld: {withhold}")
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
    p = float(2 * t_sf(abs(d) / est.se, est.df))
    tost = max(float(t_sf((d - lo_b) / est.se, est.df)), float(t_cdf((d - hi_b) / est.se, est.df)))
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
        t = float(t_quantile(1 - alpha / 2, df) + t_quantile(0.8, df))
        need = math.ceil(ratio * t * t)
        if need <= n:
            return n
        n = max(n + 1, need)
    return n


def machines_needed(est: Estimate, alpha: float, margin: float) -> int | None:
    """Machines per label a type-level decision needs at the machine spread seen (or assumed)."""
    if not math.isfinite(est.machine_spread) or est.machine_spread <= 0:
        return None
    return units_needed(est.machine_spread, alpha, margin)


def needed(est: Estimate, alpha: float, margin: float) -> str:
    """What would resolve ``margin`` % at the observed spread (80 % power)."""
    if est.spread == 0 or not math.isfinite(est.spread):
        return "more runs would not narrow a zero spread"
    n = units_needed(est.spread, alpha, margin)
    spread = f"sd {100 * est.spread:.1f}% per {est.unit.split('+')[0]}"
    if est.unit == "machine":
        return f"needs about {n} machines per label to resolve {margin:g}% at this spread ({spread})"
    return f"needs about {n} runs per machine to resolve {margin:g}% on these machines ({spread})"


def family_alpha(primary_ok: int) -> float:
    """Per-interval alpha of the primary family (Bonferroni over its m testable comparisons)."""
    return ALPHA / max(primary_ok, 1)


def compare_samples(
    a: list[float] | np.ndarray,
    b: list[float] | np.ndarray,
    better: str = "lower",
    margin: float = DEFAULT_MARGIN,
    alpha: float = ALPHA,
) -> Decision:
    """The report's comparison of two samples of runs of one machine each (benches, study views):
    ratio of geometric means a/b, Welch interval, decision; scope machines."""
    va, vb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    sa, sb = (_one_machine(v) for v in (va, vb))
    return decide(estimate(sa, sb), better, alpha, margin)


def _one_machine(v: np.ndarray) -> Side:
    pos = v[v > 0]
    logs = np.log(pos) if len(pos) else np.array([])
    sd = float(logs.std(ddof=1)) if len(logs) > 1 else float("nan")
    mean = float(logs.mean()) if len(logs) else float("nan")
    n = np.array([float(len(logs))]) if len(logs) else np.array([])
    return Side(n, np.array([mean])[: len(n)], np.array([sd])[: len(n)], int((v <= 0).sum()), len(v))
