"""Overheads on the log scale with t intervals, and decisions read from those intervals.

Estimand: the ratio of geometric means a/b of a metric (exp of the difference of mean log values),
shown as an overhead in percent where a slowdown of ``a`` is positive whatever the metric's
direction.

Unit of replication and scope (docs/design.md section 6). Below the machine the unit is the run: a
record, its pyperf values first summarised to one value (``runs.py``).

- ``scope: types``: both labels have at least two machines. The mean log value of each machine is
  one observation; the statement is about the VM types the machines were drawn from.
- ``scope: machines``: a label has one machine. The runs are the unit and the estimand is the ratio
  for *these* machines over the runs measured (a side with several machines contributes the mean
  of its machines, each machine's runs with the pooled within-machine spread). A level that moves
  over the runs (drift) is part of what is estimated, so the run-to-run noise is taken from
  successive differences (half the mean squared difference of consecutive runs), which a slow
  walk or trend hardly inflates (``noise="successive"``, what ``compare`` uses). Nothing is said
  about VM types: two machines of one type differ by a few percent (the machine spread) and one
  machine a side cannot measure it. The verdict says how many machines a side a type-level
  decision would need at the observed (or prior) machine spread.
- ``paired`` (``unit: pair``): both labels have one machine and their runs carry the same blocks
  (record field ``block``: a pair of the quick run, a time block of interleaved runs). The unit is
  the block: the mean log ratio within each block, t over the blocks (what the two arms share in a
  block, its time and its drift, cancels).
- A machine-spread prior (:class:`MachineSpread`: a between-machine sd measured elsewhere, with its
  source) turns a one-machine side into a type-level estimate: its variance gains ``sd^2`` (with
  the prior's degrees of freedom in Welch-Satterthwaite), the scope becomes ``types`` and the
  verdict names the prior.

Interval: t on those log values. An estimate is a sum of variance parts (:class:`Part`: one per
side and unit, or the pairs), each ``coef x s2`` on its df, with Welch-Satterthwaite df over the
parts; ``compare`` first pools each part's spread over the metrics of the comparison
(``pooling.moderate``, empirical Bayes where the spreads are homogeneous).

Decision, from the printed interval: ``equivalent`` when it lies inside +-margin, ``slower`` when
it lies above 0, ``faster`` when below 0, ``inconclusive`` otherwise (with the runs or machines that
would resolve the margin at the observed spread).

Error control: the primary metrics of all comparisons of a report form one family; their
intervals are simultaneous at 95 % (a single-step max-T critical value, ``family``), so the chance
of any false slower/faster among them is at most 5 %. Other metrics get unadjusted 95 % intervals,
are marked secondary (``adjusted: false``) and never count in the headline (``headline``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from testbed_reports import dist
from testbed_reports.numerics import distinct_rows, group_moments, group_spans
from testbed_reports.runs import Runs, as_runs
from testbed_shared.intervals import t_quantile
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
    """One label's log-scale summary of one metric: per machine runs, mean and sd of log values;
    optionally per machine the successive-difference variance (``ssd2``: half the mean squared
    difference of consecutive runs, in run order) and, for a one-machine side, its block means."""

    n: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    nonpositive: int
    runs: int
    hosts: list[str] = field(default_factory=list)
    ssd2: np.ndarray | None = None
    blocks: dict[str, float] = field(default_factory=dict)

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

    def successive(self) -> tuple[float, float]:
        """Run-to-run variance from successive differences, pooled over machines, and its df.

        Half the mean squared difference of consecutive runs estimates the noise variance whether or
        not the level moves slowly (a walk of step d adds d^2 / 2); for independent runs its df are
        about 2(n - 1)^2 / (3n - 4) a machine (von Neumann), combined over machines by
        Satterthwaite. Without ``ssd2`` the ordinary within-machine variance is used.
        """
        if self.ssd2 is None:
            sw, df = self.within()
            return sw * sw, df
        m = np.maximum(self.n - 1, 0)
        ok = (m > 0) & np.isfinite(self.ssd2)
        if not ok.any():
            return float("nan"), 0.0
        w, q = m[ok], self.ssd2[ok]
        dfm = 2 * w * w / (3 * (w + 1) - 4)
        var = float((w * q).sum() / w.sum())
        den = float(((w * q) ** 2 / dfm).sum())
        return var, (float((w * q).sum()) ** 2 / den if den > 0 else float(dfm.sum()))

    def these_machines(self, noise: str = "sd") -> tuple[float, float, float, float]:
        """Mean of the machine means (log), the run variance, its df, and the coefficient that makes
        it the variance of that mean for these machines (``noise``: "sd" or "successive")."""
        if noise == "successive":
            var, df = self.successive()
        else:
            sw, df = self.within()
            var = sw * sw
        k = self.machines
        return float(self.mean.mean()), var, df, float((1.0 / self.n).sum()) / (k * k)


def _successive(logs: np.ndarray, codes: np.ndarray, idx: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per group: half the mean squared difference of consecutive values in run order (NaN below 2);
    ``idx``: the rows used, by group in run order (``runs.Runs.sequence``), a span of whole groups
    at a time (``numerics.group_spans``); ``counts``: how many of them each group has."""
    groups = len(counts)
    ends = np.cumsum(counts)  # the groups' ends in ``idx``
    ss = np.zeros(groups)
    for lo, hi in group_spans(ends):
        seg = idx[(int(ends[lo - 1]) if lo else 0) : int(ends[hi - 1])]
        ss[lo:hi] = _squared_steps(logs, codes, seg, groups)[lo:hi]
    pairs = np.maximum(counts - 1, 0).astype(float)  # a group's rows together: one pair fewer
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pairs > 0, ss / (2 * pairs), np.nan)


def _squared_steps(logs: np.ndarray, codes: np.ndarray, idx: np.ndarray, groups: int) -> np.ndarray:
    """Per group: the sum of the squared differences of its consecutive rows ``idx``."""
    c, y = codes[idx], logs[idx]
    same = c[1:] == c[:-1]
    d2 = np.diff(y)
    del y
    d2 = np.multiply(d2, d2, out=d2)  # in place: the squared differences, 0 across groups
    d2[~same] = 0.0
    return np.bincount(c[1:], weights=d2, minlength=groups)


def _blocks(
    r: pd.DataFrame, logs: np.ndarray, codes: np.ndarray, keep: np.ndarray
) -> dict[int, dict[str, float]]:
    """Per machine group: the mean log value of its runs in each block (record field ``block``)."""
    if "block" not in r:
        return {}
    block = r["block"].to_numpy(dtype=object)
    has = keep & pd.notna(block)
    if not has.any():
        return {}
    frame = pd.DataFrame({"g": codes[has], "block": block[has].astype(str), "y": logs[has]})
    means = frame.groupby(["g", "block"], sort=False)["y"].mean()
    out: dict[int, dict[str, float]] = {}
    for (g, b), y in means.items():
        out.setdefault(int(g), {})[str(b)] = float(y)
    return out


def sides(obs: pd.DataFrame, shared: Runs | None = None) -> dict[tuple[str, str, str], Side]:
    """Per (benchmark, metric, label): the per-machine log moments of the runs (vectorised), the
    successive-difference variance of each machine's runs in run order, and the block means of a
    one-machine label whose runs carry blocks (``shared``: the runs of ``obs`` when the caller has
    them, ``runs.Runs``)."""
    if obs.empty:
        return {}
    rs = as_runs(obs, shared)
    r = rs.frame
    keys = ["benchmark", "metric", "label", "host"]
    machines, codes = rs.machines()
    table = machines.rename(columns={"n": "n_all"})  # a new frame: the shared one stays as it is
    values = r["value"].to_numpy(dtype=float)
    positive = values > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(positive, values, 1.0)
        logs = np.log(logs, out=logs)  # in place: one array of n
    every = bool(positive.all())  # then the rows themselves, not copies of them
    mom = (
        group_moments(logs, codes, len(table))
        if every
        else group_moments(logs[positive], codes[positive], len(table))
    )
    table["n"], table["mean"], table["sd"] = mom.n, mom.mean, mom.sd
    sequence = rs.sequence()
    used = sequence if every else sequence[positive[sequence]]
    table["ssd2"] = _successive(logs, codes, used, mom.n.astype(np.int64))  # n: the positive rows
    blocks = _blocks(r, logs, codes, positive)
    table["nonpositive"] = np.bincount(codes[~positive], minlength=len(table))
    parent = table.groupby(keys[:3], observed=True, sort=True).ngroup().to_numpy()
    order = np.argsort(parent, kind="stable")
    bounds = np.flatnonzero(np.diff(parent[order])) + 1
    cols = {
        c: table[c].to_numpy() for c in ("benchmark", "metric", "label", "host", "n", "mean", "sd", "ssd2")
    }
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
            cols["ssd2"][keep],
            blocks.get(int(keep[0]), {}) if len(keep) == 1 else {},
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
    pairs = distinct_rows(obs, ["benchmark", "type", "metric", *(["primary"] if flagged else [])])
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
class Part:
    """One variance part of an estimate: the variance of its mean is ``coef x s2``, ``s2`` being the
    variance of one unit on ``df`` degrees of freedom (inf: taken as known, a prior). ``pool`` names
    the group of metrics its spread may be pooled with ("": never, e.g. a prior); ``unit`` what one
    unit is (machine, run, pair)."""

    s2: float
    df: float
    coef: float
    pool: str = ""
    unit: str = "run"

    @property
    def var(self) -> float:
        return self.coef * self.s2


@dataclass
class Estimate:
    """Log ratio a/b with its standard error and degrees of freedom, or why there is none."""

    diff: float = float("nan")
    se: float = float("nan")
    df: float = float("nan")
    unit: str = "run"
    spread: float = float("nan")  # sd of one unit (run, machine or pair) on the log scale, sides pooled
    per_side: int = 0  # units per side (the smaller)
    reason: str = ""
    scope: str = "machines"
    machine_spread: float = float("nan")  # sd of machine means (log) seen or assumed; NaN if unknown
    spread_from: str = ""  # where machine_spread comes from
    prior: str = ""  # the prior's description when it made the scope "types"
    parts: list[Part] = field(default_factory=list)
    pooled: str = ""  # what pooling across metrics did (compare.analyse)

    @property
    def ok(self) -> bool:
        return not self.reason

    def with_parts(self, parts: list[Part], pooled: str = "") -> Estimate:
        """This estimate with its parts replaced (pooled spreads): se, df and spreads follow."""
        out = Estimate(**{**self.__dict__, "parts": parts, "pooled": pooled})
        out.se, out.df = combine(parts)
        unit_parts = [q for q in parts if q.pool]
        if unit_parts:
            out.spread = math.sqrt(sum(q.s2 for q in unit_parts) / len(unit_parts))
        machine = [q for q in parts if q.unit == "machine" and q.pool]
        if machine:
            out.machine_spread = math.sqrt(sum(q.s2 for q in machine) / len(machine))
        return out


def combine(parts: list[Part]) -> tuple[float, float]:
    """Standard error and Welch-Satterthwaite df of a sum of variance parts (inf df adds none)."""
    total = sum(q.var for q in parts)
    den = sum(q.var**2 / q.df for q in parts if q.df > 0 and math.isfinite(q.df))
    return math.sqrt(total), (total * total / den if den > 0 else math.inf)


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


#: fewest blocks shared by two one-machine sides for a paired analysis
MIN_BLOCKS = 2


def paired(a: Side, b: Side) -> tuple[np.ndarray, int] | None:
    """Per shared block the log ratio a/b, and how many runs' blocks had no partner; None when the
    sides are not blocked alike (each one machine, >= MIN_BLOCKS shared blocks)."""
    if a.machines != 1 or b.machines != 1 or not a.blocks or not b.blocks:
        return None
    shared = sorted(set(a.blocks) & set(b.blocks))
    if len(shared) < MIN_BLOCKS:
        return None
    d = np.array([a.blocks[k] - b.blocks[k] for k in shared])
    return d, len(set(a.blocks) ^ set(b.blocks))


def estimate(
    a: Side, b: Side, prior: MachineSpread | None = None, noise: str = "sd", pair: bool = False
) -> Estimate:
    """The log ratio a/b and its variance parts: machine means when both sides have >= 2 machines
    (scope types), else these machines' runs (scope machines; ``noise`` "successive" takes the run
    noise from successive differences), or the runs plus a machine-spread prior (scope types). With
    ``pair`` and two one-machine sides blocked alike, the blocks' log ratios (unit pair)."""
    why = _refused(a, b)
    if why:
        types = (a.machines >= 2 and b.machines >= 2) or prior is not None
        return Estimate(reason=why, scope="types" if types else "machines")
    seen, seen_from = _observed_machine_spread(a, b)
    if a.machines >= 2 and b.machines >= 2:
        (ma, sa, na), (mb, sb, nb) = a.machine_level(), b.machine_level()
        parts = [
            Part(sa * sa, na - 1.0, 1.0 / na, "a", "machine"),
            Part(sb * sb, nb - 1.0, 1.0 / nb, "b", "machine"),
        ]
        est = Estimate(
            ma - mb,
            unit="machine",
            per_side=min(na, nb),
            scope="types",
            machine_spread=seen,
            spread_from=seen_from,
        )
        return est.with_parts(parts)
    blocks = paired(a, b) if pair and prior is None else None
    if blocks is not None:
        d, _ = blocks
        n = len(d)
        est = Estimate(float(d.mean()), unit="pair", per_side=n, scope="machines")
        return est.with_parts([Part(float(d.var(ddof=1)), n - 1.0, 1.0 / n, "pair", "pair")])
    sa_, sb_ = (_side_parts(s, name, prior, noise) for s, name in ((a, "a"), (b, "b")))
    if sa_ is None or sb_ is None:
        return Estimate(
            unit="run",
            reason=f"too few runs to test (n={a.runs} vs {b.runs} runs): a side needs 2 runs on a machine, "
            "or both sides 2 machines (a run's pyperf values are not replicates)",
        )
    (ma, pa), (mb, pb) = sa_, sb_
    per_side = int(min(np.min(a.n), np.min(b.n)))
    if prior is not None:
        what = prior.describe()
        est = Estimate(
            ma - mb,
            unit="run+prior",
            per_side=per_side,
            scope="types",
            machine_spread=prior.sd,
            spread_from=what,
            prior=what,
        )
        return est.with_parts(pa + pb)
    est = Estimate(
        ma - mb, unit="run", per_side=per_side, scope="machines", machine_spread=seen, spread_from=seen_from
    )
    return est.with_parts(pa + pb)


def _side_parts(
    s: Side, name: str, prior: MachineSpread | None, noise: str
) -> tuple[float, list[Part]] | None:
    """(mean, variance parts) of one side; None when no run-to-run spread is measured."""
    if s.machines >= 2 and prior is not None:
        m, sd, k = s.machine_level()
        return m, [Part(sd * sd, k - 1.0, 1.0 / k, name, "machine")]
    mean, var, df, coef = s.these_machines(noise)
    if df <= 0 or not math.isfinite(var):
        return None
    parts = [Part(var, df, coef, name, "run")]
    if prior is not None:
        parts.append(Part(prior.sd**2, prior.df, 1.0 / s.machines, "", "machine"))
    return mean, parts


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


def decide(
    est: Estimate, better: str, alpha: float, margin: float, withhold: str = "", crit: float | None = None
) -> Decision:
    """Interval at level 1 - alpha (or at the t critical value ``crit``, a family's simultaneous
    one), two-sided p, TOST p against +-margin %, and the decision.

    ``withhold`` (a reason) keeps the interval but makes the decision ``inconclusive``.
    """
    nan = float("nan")
    if not est.ok:
        return Decision(nan, nan, nan, nan, nan, "inconclusive", est.reason)
    tcrit = float(t_quantile(1 - alpha / 2, est.df)) if crit is None else float(crit)
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
    tails = [dist.t.sf(x / est.se, est.df) for x in (abs(d), d - lo_b, hi_b - d)]
    return float(2 * tails[0]), float(max(tails[1], tails[2]))


def units_needed(spread: float, alpha: float, margin: float) -> int:
    """Smallest units per side for which a true ``margin`` % difference is found with 80 % power.

    Two-sample t with 2n - 2 degrees of freedom (so 2 machines are not promised what a normal
    approximation would), at the family's alpha; the search starts at the normal approximation,
    which never exceeds the answer.
    """
    ratio = 2 * (spread / math.log1p(margin / 100)) ** 2
    z = float(dist.norm.ppf(1 - alpha / 2) + dist.norm.ppf(0.8))
    n = max(2, math.ceil(ratio * z * z))
    while n < 10**8:
        df = 2 * n - 2
        t = float(dist.t.ppf(1 - alpha / 2, df) + dist.t.ppf(0.8, df))
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
    # a pair's spread is of a difference already: units_needed counts two sides' variances
    n = units_needed(est.spread / (math.sqrt(2) if est.unit == "pair" else 1.0), alpha, margin)
    spread = f"sd {100 * est.spread:.1f}% per {est.unit.split('+')[0]}"
    if est.unit == "machine":
        return f"about {n} machines per label would tell (resolve ±{margin:g}% at the spread seen, {spread})"
    if est.unit == "pair":
        return f"about {n} pairs would tell (resolve ±{margin:g}% on these machines, {spread})"
    return f"about {n} runs per machine would tell (resolve ±{margin:g}% on these machines, {spread})"


def family_alpha(primary_ok: int) -> float:
    """Bonferroni's per-interval alpha over ``primary_ok`` comparisons (what the family's max-T
    critical value replaced; kept for the benches that state their own Bonferroni level)."""
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
