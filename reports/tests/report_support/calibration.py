"""Seeded simulations of known truth that calibrate the report's decision rules (issues 27 and 34).

Each setting draws data sets, runs them through the functions ``build`` uses (runs -> describe ->
diagnostics -> compare; ``timeofday``; ``anova.label_anova``; the agent's adaptive rule) and returns
rates with their Monte Carlo standard errors. The calibration tests (reports/tests/
test_calibration_*.py) run each setting at a size that takes seconds; ``bench/calibration.py`` runs
them large for the table in docs/report.md. Noise is lognormal: a machine's log level is its type's
plus a machine effect (sd = the machine spread), a run's log value its machine's plus run noise.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
from scipy import signal

from testbed_agent.adaptive import Adaptive
from testbed_agent.adaptive import decide as adaptive_decide
from testbed_reports.anova import label_anova
from testbed_reports.compare import Pair, compare, headline
from testbed_reports.diagnostics import STABLE_P, findings
from testbed_reports.inference import MachineSpread
from testbed_reports.load import CATEGORICAL, OBS_COLUMNS
from testbed_reports.stats import describe
from testbed_reports.timeofday import calibrated, thesis_anova
from testbed_shared.intervals import describe as one_sample

SIGMA = 0.03  # run-to-run spread (lognormal sd) of the simulated benchmarks
MARGIN = 2.0
PAIR = [Pair("A", "B", "explicit")]


@dataclass
class Rate:
    """A count out of a total, printed with its Monte Carlo standard error."""

    hits: int = 0
    total: int = 0

    def add(self, hit: bool | int, n: int = 1) -> None:
        self.hits += int(hit)
        self.total += n

    @property
    def value(self) -> float:
        return self.hits / self.total if self.total else float("nan")

    @property
    def se(self) -> float:
        p = self.value
        return math.sqrt(max(p * (1 - p), 0.25 / max(self.total, 1)) / max(self.total, 1))

    def __str__(self) -> str:
        return f"{100 * self.value:.1f}% +- {100 * self.se:.1f} (n={self.total})"


@dataclass
class Result:
    """Named rates (and plain means) of one setting."""

    name: str
    rates: dict[str, Rate] = field(default_factory=dict)
    means: dict[str, list[float]] = field(default_factory=dict)

    def rate(self, key: str) -> Rate:
        return self.rates.setdefault(key, Rate())

    def mean(self, key: str) -> float:
        v = self.means.get(key, [])
        return float(np.mean(v)) if v else float("nan")

    def __str__(self) -> str:
        parts = [f"{k} {v}" for k, v in self.rates.items()]
        parts += [f"{k} {self.mean(k):.1f}" for k in self.means]
        return self.name + ": " + "; ".join(parts)


# --- observation tables as load() gives them -------------------------------------------------------


def obs_table(rows: dict[str, list]) -> pd.DataFrame:
    """An observation table with load()'s columns and dtypes from column lists."""
    df = pd.DataFrame(rows)
    defaults = {"groups": "", "type": "synthetic", "unit": "s", "better": "lower", "index": 0,
                "cc_technology": "none", "run_id": "r1"}  # fmt: skip
    for c in OBS_COLUMNS:
        if c not in df:
            df[c] = defaults.get(c, "")
    if (df["started_at"] == "").all():
        df["started_at"] = [f"2026-01-01T00:{r // 60:02d}:{r % 60:02d}Z" for r in df["repetition"]]
    df = df[list(OBS_COLUMNS)]
    for c in CATEGORICAL:
        df[c] = df[c].astype(str).astype("category")
    return df


@dataclass
class Label:
    """One simulated label: machines, runs per machine, true log shift, and the noise model."""

    name: str
    machines: int
    runs: int
    shift: float = 0.0
    machine_sd: float = 0.0
    sigma: float = SIGMA
    walk: float = 0.0  # random-walk step (log) per run
    values_per_run: int = 1  # pyperf values inside one run
    run_sd: float = 0.0  # run-to-run effect shared by a run's values
    btype: str = "synthetic"


def label_rows(rng: np.random.Generator, lab: Label, metrics: int, start: int, bench: str | None) -> dict:
    """Column lists of one label's observations over ``metrics`` metrics (one benchmark each, or all
    in ``bench``); records numbered from ``start``. Returns the lists and the machine effects."""
    cols: dict[str, list] = {k: [] for k in ("host", "label", "benchmark", "type", "metric", "value",
                                              "repetition", "record")}  # fmt: skip
    effects = rng.normal(0.0, lab.machine_sd, size=(metrics, lab.machines)) + lab.shift
    rec = start
    for m in range(metrics):
        for h in range(lab.machines):
            walk = np.cumsum(rng.normal(0.0, lab.walk, lab.runs)) if lab.walk else np.zeros(lab.runs)
            run = rng.normal(0.0, lab.run_sd, lab.runs) if lab.run_sd else np.zeros(lab.runs)
            noise = rng.normal(0.0, lab.sigma, (lab.runs, lab.values_per_run))
            vals = np.exp(effects[m, h] + walk[:, None] + run[:, None] + noise)
            k = lab.runs * lab.values_per_run
            cols["host"] += [f"{lab.name.lower()}-{h}"] * k
            cols["label"] += [lab.name] * k
            cols["benchmark"] += [bench or f"b{m:05d}"] * k
            cols["type"] += [lab.btype] * k
            cols["metric"] += [f"m{m:05d}"] * k
            cols["value"] += vals.ravel().tolist()
            cols["repetition"] += np.repeat(np.arange(lab.runs), lab.values_per_run).tolist()
            cols["record"] += np.repeat(np.arange(rec, rec + lab.runs), lab.values_per_run).tolist()
            rec += lab.runs
    cols["effects"] = effects  # type: ignore[assignment]
    return cols


def simulate(
    rng: np.random.Generator, a: Label, b: Label, metrics: int, bench: str | None = None
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """Observations of two labels, and each label's machine effects (metrics x machines)."""
    ra = label_rows(rng, a, metrics, 0, bench)
    rb = label_rows(rng, b, metrics, 10**7, bench)
    ea, eb = ra.pop("effects"), rb.pop("effects")
    rows = {k: ra[k] + rb[k] for k in ra}
    return obs_table(rows), ea, eb  # type: ignore[return-value]


def report(obs: pd.DataFrame, prior: MachineSpread | None = None, drift_p: float = STABLE_P) -> pd.DataFrame:
    """What ``build`` computes for the pair A vs B: describe -> diagnostics -> compare."""
    desc = describe(obs)
    notes, drift = findings(obs, drift_p)
    return compare(obs, desc, PAIR, MARGIN, {}, notes, {}, prior, drift)


def _ovh(log_ratio: np.ndarray | float) -> np.ndarray:
    return 100.0 * np.expm1(np.asarray(log_ratio, dtype=float))


def _covers(cmp: pd.DataFrame, truth: np.ndarray) -> np.ndarray:
    lo, hi = cmp["overhead_ci_low"].to_numpy(float), cmp["overhead_ci_high"].to_numpy(float)
    return (lo <= truth) & (truth <= hi)


# --- settings --------------------------------------------------------------------------------------


def scope_setting(
    machines: tuple[int, int],
    machine_sd: float,
    sets: int,
    seed: int,
    metrics: int = 25,
    runs: int = 10,
    prior: MachineSpread | None = None,
    shift: float = 0.0,
    family: bool = True,
) -> Result:
    """Type-level null (or a true ``shift``), ``machines`` per label, a machine spread.

    ``family``: each metric its own benchmark, all primary (the headline's Bonferroni family): rates
    of slower/faster per scope and of reports with a false type-level decision. Otherwise one
    benchmark holds all metrics, so every interval is a 95 % one: coverage of the type-level truth
    by type-scope intervals, and of these machines' truth by machine-scope intervals.
    """
    rng = np.random.default_rng(seed)
    name = f"{machines[0]} vs {machines[1]} machines, machine spread {100 * machine_sd:g}%, {runs} runs"
    res = Result(name + (f", {metrics} primary metrics" if family else ", 95% intervals"))
    la = Label("A", machines[0], runs, shift, machine_sd)
    lb = Label("B", machines[1], runs, 0.0, machine_sd)
    if not family:  # independent metrics of one benchmark: one report holds every data set
        metrics, sets = metrics * sets, 1
    for _ in range(sets):
        obs, ea, eb = simulate(rng, la, lb, metrics, None if family else "b")
        cmp = report(obs, prior)
        decided = cmp["decision"].isin(["slower", "faster"]).to_numpy()
        types = (cmp["scope"] == "types").to_numpy()
        if family:
            wrong = decided & types & ~_covers(cmp, np.full(len(cmp), _ovh(shift)))
            res.rate("type-level slower/faster").add(int((decided & types).sum()), len(cmp))
            res.rate("machine-level slower/faster").add(int((decided & ~types).sum()), len(cmp))
            res.rate("reports with a false type-level decision").add(bool(wrong.any()))
            continue
        cov_t = _covers(cmp, np.full(len(cmp), _ovh(shift)))
        cov_m = _covers(cmp, _ovh(ea.mean(axis=1) - eb.mean(axis=1)))  # these machines' truth
        if types.any():
            res.rate("coverage of the type truth (scope types)").add(
                int(cov_t[types].sum()), int(types.sum())
            )
        if (~types).any():
            res.rate("coverage of these machines' truth (scope machines)").add(
                int(cov_m[~types].sum()), int((~types).sum())
            )
    return res


def pyperf_setting(runs: int, machines: int, sets: int, seed: int, benchmarks: int = 20) -> Result:
    """pyperformance: ~60 pyperf values a run, 1 % run-to-run effect, null between labels."""
    rng = np.random.default_rng(seed)
    res = Result(f"pyperformance, {machines} machine(s) x {runs} run(s) x 60 values, 1% run effect")
    for _ in range(sets):
        lab = {"machines": machines, "runs": runs, "sigma": 0.02, "values_per_run": 60, "run_sd": 0.01,
               "btype": "pyperformance"}  # fmt: skip
        obs, _, _ = simulate(rng, Label("A", **lab), Label("B", **lab), benchmarks, bench="default")
        cmp = report(obs)
        decided = cmp["decision"].isin(["slower", "faster"]).to_numpy()
        res.rate("slower/faster").add(int(decided.sum()), len(cmp))
        res.rate("reports with one").add(bool(decided.any()))
        res.rate("inconclusive: too few runs").add(
            int(cmp["reason"].str.startswith("too few").sum()), len(cmp)
        )
    return res


def drift_setting(
    walk: float, sets: int, seed: int, runs: int = 30, shift: float = 0.0, drift_p: float = STABLE_P
) -> Result:
    """A random-walk level on each machine (one per label): coverage of the process level, the
    share where the interval covers it or the decision is withheld for drift, false slower/faster
    (null) or power (``shift``). The data sets are the metrics of one benchmark (independent; every
    interval a 95 % one), so one report computes them all. ``drift_p`` as ``build --drift-p``."""
    rng = np.random.default_rng(seed)
    res = Result(
        f"random walk {100 * walk:g}%/run, {runs} runs, 3% noise, 1 machine a label, drift p {drift_p:g}"
    )
    a, b = Label("A", 1, runs, shift, walk=walk), Label("B", 1, runs, walk=walk)
    obs, _, _ = simulate(rng, a, b, sets, bench="b")
    cmp = report(obs, drift_p=drift_p)
    truth = float(_ovh(shift))
    covered = _covers(cmp, np.full(len(cmp), truth))
    withheld = cmp["reason"].str.contains("decision withheld").to_numpy()
    res.rate("coverage").add(int(covered.sum()), len(cmp))
    res.rate("covered or withheld").add(int((covered | withheld).sum()), len(cmp))
    res.rate("withheld").add(int(withheld.sum()), len(cmp))
    decided = cmp["decision"].isin(["slower", "faster"])
    if shift:
        res.rate("decided slower").add(int((cmp["decision"] == "slower").sum()), len(cmp))
    else:
        res.rate("slower/faster").add(int(decided.sum()), len(cmp))
    res.rate("drift flagged").add(int(cmp["diagnostics"].str.contains("drift").sum()), len(cmp))
    return res


def headline_setting(sets: int, seed: int, metrics: int = 25) -> Result:
    """Null reports with one benchmark of 25 metrics (1 primary): slower/faster in the headline."""
    rng = np.random.default_rng(seed)
    res = Result(f"headline, null {metrics}-metric reports, 1 machine a label x 10 runs")
    for _ in range(sets):
        obs, _, _ = simulate(rng, Label("A", 1, 10), Label("B", 1, 10), metrics, bench="b")
        cmp = report(obs)
        shown = sum(o["slower"] + o["faster"] for o in headline(cmp))
        res.rate("reports with slower/faster in the headline").add(shown > 0)
        sec = cmp[~cmp["primary"]]
        res.rate("secondary slower/faster (listed, unadjusted)").add(
            int(sec["decision"].isin(["slower", "faster"]).sum()), len(sec)
        )
    return res


def anova_setting(machines: tuple[int, int, int, int], sets: int, seed: int, runs: int = 10) -> Result:
    """Label ANOVA protection x vendor on null data with a 3 % machine spread: 'protection' effects
    claimed about VM types (unit machine mean) and tables that speak about machines only."""
    rng = np.random.default_rng(seed)
    code_a, code_b = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    lab = np.repeat(np.arange(4), np.array(machines) * runs)
    host = np.repeat(np.arange(sum(machines)), runs)
    res = Result(f"label ANOVA, machines per label {machines}, 3% spread, null")
    for _ in range(sets):
        v = np.exp(rng.normal(0, 0.03, sum(machines))[host] + rng.normal(0, SIGMA, len(host)))
        out = label_anova(v, lab, host, code_a, code_b, True, ("protection", "vendor"))
        if out is None:
            raise RuntimeError("the label ANOVA refused a balanced simulated design")
        table, _, unit, _ = out
        hit = bool(table[0]["F"] is not None and table[0]["F"] > table[0]["F_crit"])
        res.rate("type-level protection effect").add(hit and unit == "machine mean")
        res.rate("tables on runs (these machines only)").add(unit != "machine mean")
    return res


# --- time of day -----------------------------------------------------------------------------------

START = datetime(2023, 11, 11, tzinfo=UTC)  # a Saturday 00:00, like S1's campaign (S1 L717)


def campaign(
    rng: np.random.Generator, phi: float, sd: float, days: int = 4, effect: float = 0.0
) -> pd.DataFrame:
    """A minute campaign over ``days``: AR(1) log noise of marginal sd ``sd``, times a business-hours
    (9-18 h) effect of ``effect`` (0.10 = 10 % slower)."""
    n = days * 1440
    e = rng.normal(0.0, sd * math.sqrt(1 - phi * phi), n)
    e[0] = rng.normal(0.0, sd)
    x = signal.lfilter([1.0], [1.0, -phi], e)
    times = pd.Series(pd.date_range(START, periods=n, freq="min"))
    hour = times.dt.hour.to_numpy()
    business = (hour >= 9) & (hour < 18)
    table = pd.DataFrame({"time": times, "value": 0.75 * np.exp(x + math.log1p(effect) * business)})
    table.attrs.update(metric="latency_s", benchmark="dd", label="", unit="run")
    return table


def timeofday_setting(
    phi: float, sets: int, seed: int, effect: float = 0.0, sd: float = 0.10, days: int = 4
) -> Result:
    """Calibrated tests and the thesis's ANOVA on simulated campaigns: rate of 'effect' per test."""
    rng = np.random.default_rng(seed)
    what = f"business-hours effect {100 * effect:g}%" if effect else "no effect"
    res = Result(f"time of day, AR(1) phi {phi}, {days} days x 1440 min, {100 * sd:g}% noise, {what}")
    for _ in range(sets):
        table = campaign(rng, phi, sd, days, effect)
        tests = calibrated(table)
        for name, t in tests.items():
            res.rate(f"{name} effect" if "refused" not in t else f"{name} not testable").add(
                bool(t.get("effect", True))
            )
        th = thesis_anova(table)["anova"]
        res.rate("thesis ANOVA time of day F > F crit").add(th[0]["F"] > th[0]["F_crit"])
        res.rate("thesis ANOVA day of week F > F crit").add(th[1]["F"] > th[1]["F_crit"])
    return res


# --- adaptive repetitions --------------------------------------------------------------------------

NOISE = ("normal", "t3", "outlier", "bimodal")
TRUE_SHIFT = {"normal": 0.0, "t3": 0.0, "outlier": 0.05 * math.log(1.5), "bimodal": 0.10 * math.log(1.1)}


def draw(kind: str, sigma: float) -> Callable[[random.Random], float]:
    """A run's value: lognormal around 1000 with log-sd ``sigma``; t3 tails (scaled to sd sigma);
    1 run in 20 50 % slower; or 10 % of runs in a second mode 10 % slower."""

    def one(rng: random.Random) -> float:
        if kind == "t3":
            chi = sum(rng.gauss(0, 1) ** 2 for _ in range(3))
            z = sigma * rng.gauss(0, 1) / math.sqrt(chi / 3) / math.sqrt(3)
        else:
            z = rng.gauss(0.0, sigma)
        if kind == "outlier" and rng.random() < 0.05:
            z += math.log(1.5)
        if kind == "bimodal" and rng.random() < 0.10:
            z += math.log(1.1)
        return 1000.0 * math.exp(z)

    return one


def stop_adaptively(rng: random.Random, one: Callable[[random.Random], float], rule: Any) -> list[float]:
    """Runs the agent's rule (testbed_agent.adaptive.decide) takes, one run at a time."""
    values: list[float] = []
    while True:
        values.append(one(rng))
        recs = [{"status": "ok", "metrics": {"write_bw_bytes": {"value": v}}} for v in values]
        if adaptive_decide(rule, "fio", recs, len(values))["stop"]:
            return values


def adaptive_setting(
    kind: str,
    sets: int,
    seed: int,
    sigmas: tuple[float, ...] = (0.003, 0.005, 0.01, 0.02),
    effect: float = 0.0,
) -> Result:
    """Two labels stopped adaptively (Adaptive(5, 30, 1 %)), compared by the report: coverage of the
    true overhead, false slower/faster; and the one-label interval's coverage at stop. Each pair is
    a metric of one benchmark (every interval a 95 % one), so one report compares them all."""
    rule = Adaptive(5, 30, 1.0)
    rng = random.Random(seed)  # a seeded simulation, not a secret
    res = Result(f"adaptive {rule.min}-{rule.max} runs, target 1%, {kind} noise")
    truth = math.exp(math.log(1000.0) + TRUE_SHIFT[kind])
    cols: dict[str, list] = {k: [] for k in ("host", "label", "benchmark", "metric", "value", "repetition")}
    k = 0
    for _ in range(sets):
        for s in sigmas:
            one = draw(kind, s)
            a = [v * (1 + effect) for v in stop_adaptively(rng, one, rule)]
            b = stop_adaptively(rng, one, rule)
            d = one_sample(b)
            res.rate("one label: coverage at stop").add(d["ci_low"] <= truth <= d["ci_high"])
            res.means.setdefault("mean runs a label", []).extend([len(a), len(b)])
            for lab, vals in (("A", a), ("B", b)):
                n = len(vals)
                cols["host"] += [lab.lower()] * n
                cols["label"] += [lab] * n
                cols["benchmark"] += ["b"] * n
                cols["metric"] += [f"m{k:05d}"] * n
                cols["value"] += vals
                cols["repetition"] += list(range(n))
            k += 1
    cols["record"] = list(range(len(cols["value"])))
    cmp = report(obs_table(cols))
    ovh = 100 * effect
    res.rate("two stopped labels: coverage").add(int(_covers(cmp, np.full(len(cmp), ovh)).sum()), len(cmp))
    if effect:
        res.rate("decided slower").add(int((cmp["decision"] == "slower").sum()), len(cmp))
    else:
        res.rate("two stopped labels: slower/faster").add(
            int(cmp["decision"].isin(["slower", "faster"]).sum()), len(cmp)
        )
    return res


def prior_setting(true_sd: float, prior_sd: float, sets: int, seed: int, metrics: int = 25) -> Result:
    """One machine a label with a machine-spread prior: coverage of the type-level truth and false
    type-level decisions, when the prior is right and when it is wrong."""
    prior = MachineSpread(prior_sd, "simulation")
    res = scope_setting((1, 1), true_sd, sets, seed, metrics, prior=prior)
    res.name = f"prior {100 * prior_sd:g}% on a true machine spread {100 * true_sd:g}%, 1 vs 1 machine"
    return res
