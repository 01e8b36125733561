"""Seeded simulations of known truth that calibrate the report's decision rules (issues 27 and 34).

Each setting draws data sets, runs them through the functions ``build`` uses (runs -> describe ->
diagnostics -> compare; ``timeofday``; ``anova.label_anova``; the agent's adaptive rule) and returns
rates with their Monte Carlo standard errors. The calibration tests (reports/tests/
test_calibration_*.py) run each setting at a size that takes seconds; ``bench/calibration.py`` runs
them large for the table in docs/report.md. Noise is lognormal: a machine's log level is its type's
plus a machine effect (sd = the machine spread), a run's log value its machine's plus run noise.
"""

from __future__ import annotations

import functools
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
from testbed_reports import design, sequential
from testbed_reports.analysis import Cell, analyse
from testbed_reports.anova import label_anova
from testbed_reports.compare import Pair, compare, headline
from testbed_reports.diagnostics import STABLE_P, findings
from testbed_reports.inference import MachineSpread, decide, estimate, family_alpha
from testbed_reports.load import CATEGORICAL, OBS_COLUMNS
from testbed_reports.stats import TRIM, describe
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
    defaults = {
        "groups": "",
        "type": "synthetic",
        "unit": "s",
        "better": "lower",
        "index": 0,
        "cc_technology": "none",
        "run_id": "r1",
        "primary": False,
    }
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
    shift: float | np.ndarray = 0.0  # one value, or one per metric
    machine_sd: float = 0.0
    sigma: float = SIGMA
    machine_wide: float = 0.0  # share of the machine variance shared by all metrics of a machine
    walk: float = 0.0  # random-walk step (log) per run
    values_per_run: int = 1  # pyperf values inside one run
    run_sd: float = 0.0  # run-to-run effect shared by a run's values
    btype: str = "synthetic"


def label_rows(rng: np.random.Generator, lab: Label, metrics: int, start: int, bench: str | None) -> dict:
    """Column lists of one label's observations over ``metrics`` metrics (one benchmark each, or all
    in ``bench``); records numbered from ``start``. Returns the lists and the machine effects."""
    cols: dict[str, list] = {
        k: [] for k in ("host", "label", "benchmark", "type", "metric", "value", "repetition", "record")
    }
    own = rng.normal(0.0, lab.machine_sd, size=(metrics, lab.machines))
    wide = rng.normal(0.0, lab.machine_sd, size=(1, lab.machines))
    w = lab.machine_wide
    effects = (
        math.sqrt(w) * wide
        + math.sqrt(1 - w) * own
        + np.broadcast_to(np.asarray(lab.shift), (metrics,))[:, None]
    )
    r, v, h = lab.runs, lab.values_per_run, lab.machines
    walk = (
        np.cumsum(rng.normal(0.0, lab.walk, (metrics, h, r)), axis=2)
        if lab.walk
        else np.zeros((metrics, h, r))
    )
    run = rng.normal(0.0, lab.run_sd, (metrics, h, r)) if lab.run_sd else np.zeros((metrics, h, r))
    noise = rng.normal(0.0, lab.sigma, (metrics, h, r, v))
    vals = np.exp(effects[:, :, None, None] + walk[..., None] + run[..., None] + noise)
    total = metrics * h * r * v
    hosts = np.array([f"{lab.name.lower()}-{i}" for i in range(h)], dtype=object)
    cols["host"] = np.tile(np.repeat(hosts, r * v), metrics).tolist()
    cols["label"] = [lab.name] * total
    names = np.repeat(np.arange(metrics), h * r * v)
    cols["benchmark"] = [bench] * total if bench else [f"b{m:05d}" for m in names]
    cols["type"] = [lab.btype] * total
    cols["metric"] = [f"m{m:05d}" for m in names]
    cols["value"] = vals.ravel().tolist()
    cols["repetition"] = np.tile(np.repeat(np.arange(r), v), metrics * h).tolist()
    cols["record"] = (start + np.repeat(np.arange(metrics * h * r), v)).tolist()
    # each machine's level over the runs measured: its effect plus the mean of its walk
    cols["effects"] = effects + walk.mean(axis=2)  # type: ignore[assignment]
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


def auditor_setting(
    machines: int,
    sets: int,
    seed: int,
    sigma: float = 0.01,
    machine_sd: float = 0.02,
    metrics: int = 25,
    true: int = 5,
    effect: float = 0.03,
    runs: int = 10,
    machine_wide: float = 0.0,
    spreads: np.ndarray | None = None,
) -> Result:
    """Issue 34's auditor design: ``machines`` vs ``machines``, ``metrics`` primary metrics (one
    benchmark each), ``runs`` runs, a true ``effect`` overhead (0.03 = 3 % slower) on the first
    ``true`` metrics, none on the rest. Per true metric: decided slower (power); per report: any
    false slower/faster among the null metrics (family-wise error) and any interval of the family
    missing its truth (simultaneous coverage). ``spreads``: a machine spread per metric instead of
    ``machine_sd`` (heterogeneous metrics); ``machine_wide``: the share of machine variance all
    metrics of a machine share."""
    rng = np.random.default_rng(seed)
    what = f"{machines} vs {machines} machines, {metrics} primary metrics, {runs} runs"
    what += f", run noise {100 * sigma:g}%"
    res = Result(what + (f", machine-wide share {machine_wide:g}" if machine_wide else ""))
    shift = np.zeros(metrics)
    shift[:true] = math.log1p(effect)
    truth = _ovh(shift)
    for _ in range(sets):
        if spreads is None:
            obs, _, _ = simulate(
                rng,
                Label("A", machines, runs, shift, machine_sd, sigma, machine_wide=machine_wide),
                Label("B", machines, runs, 0.0, machine_sd, sigma, machine_wide=machine_wide),
                metrics,
            )
        else:
            obs = _heterogeneous(rng, machines, runs, shift, spreads, sigma)
        cmp = report(obs).sort_values("metric", kind="stable")
        dec = cmp["decision"].to_numpy()
        if true:
            res.rate("power per true metric").add(int((dec[:true] == "slower").sum()), true)
        null = dec[true:]
        res.rate("family-wise error").add(bool(np.isin(null, ["slower", "faster"]).any()))
        res.rate("simultaneous coverage").add(bool(_covers(cmp, truth).all()))
        res.means.setdefault("interval width (points)", []).append(
            float((cmp["overhead_ci_high"] - cmp["overhead_ci_low"]).mean())
        )
    return res


def auditor_fast(
    machines: int,
    sets: int,
    seed: int,
    sigma: float = 0.01,
    machine_sd: float = 0.02,
    metrics: int = 25,
    true: int = 5,
    effect: float = 0.03,
    runs: int = 10,
    machine_wide: float = 0.0,
    spreads: np.ndarray | None = None,
) -> Result:
    """:func:`auditor_setting` drawn at the machine level and run through ``analysis.analyse`` (what
    ``compare`` runs on a report's observations; test_calibration_family checks that both give the
    same decisions and intervals), about ten times faster: power per true metric, family-wise error,
    simultaneous coverage."""
    rng = np.random.default_rng(seed)
    what = f"{machines} vs {machines} machines, {metrics} primary metrics, {runs} runs"
    what += f", run noise {100 * sigma:g}%" + (
        f", machine-wide share {machine_wide:g}" if machine_wide else ""
    )
    res = Result(what + (", heterogeneous spreads" if spreads is not None else "") + " (analysis path)")
    shift = np.zeros(metrics)
    shift[:true] = math.log1p(effect)
    truth = _ovh(shift)
    sds = np.full(metrics, machine_sd) if spreads is None else np.asarray(spreads, dtype=float)
    w = machine_wide
    for _ in range(sets):
        sides = []
        for lab in (shift, np.zeros(metrics)):
            own = rng.normal(0, 1, (machines, metrics))
            level = sds * (math.sqrt(w) * rng.normal(0, 1, (machines, 1)) + math.sqrt(1 - w) * own) + lab
            sides.append(design._sides(level[:, :, None] + rng.normal(0, sigma, (machines, metrics, runs))))
        cells = [
            Cell(
                "A vs B",
                f"b{g}",
                f"m{g}",
                "lower",
                True,
                MARGIN,
                sides[0][g],
                sides[1][g],
                estimate(sides[0][g], sides[1][g]),
            )
            for g in range(metrics)
        ]
        out = analyse(cells)
        dec = np.array([o.dec.decision for o in out])
        lo, hi = np.array([o.dec.lo for o in out]), np.array([o.dec.hi for o in out])
        # the rule before issue 34 on the same data sets: Welch per metric, Bonferroni over the family
        old = np.array([decide(c.est, "lower", family_alpha(metrics), MARGIN).decision for c in cells])
        if true:
            res.rate("power per true metric").add(int((dec[:true] == "slower").sum()), true)
            res.rate("before: power").add(int((old[:true] == "slower").sum()), true)
        res.rate("family-wise error").add(bool(np.isin(dec[true:], ["slower", "faster"]).any()))
        res.rate("before: family-wise error").add(bool(np.isin(old[true:], ["slower", "faster"]).any()))
        res.rate("simultaneous coverage").add(bool(((lo <= truth) & (truth <= hi)).all()))
    return res


def _heterogeneous(
    rng: np.random.Generator, machines: int, runs: int, shift: np.ndarray, spreads: np.ndarray, sigma: float
) -> pd.DataFrame:
    """Two labels whose metrics have machine spreads of their own (``spreads``, one per metric)."""
    parts = []
    for m, spread in enumerate(spreads):
        a, b = (
            Label("A", machines, runs, shift[m], float(spread), sigma),
            Label("B", machines, runs, 0.0, float(spread), sigma),
        )
        obs, _, _ = simulate(rng, a, b, 1)
        obs = obs.astype({"benchmark": str, "metric": str})
        obs["benchmark"], obs["metric"] = f"b{m:05d}", f"m{m:05d}"
        obs["record"] = obs["record"] + 10**8 * m
        parts.append(obs)
    out = pd.concat(parts, ignore_index=True)
    for c in CATEGORICAL:
        out[c] = out[c].astype(str).astype("category")
    return out


def sequential_setting(
    looks: tuple[int, ...],
    sets: int,
    seed: int,
    metrics: int = 25,
    true: int = 5,
    effect: float = 0.03,
    sigma: float = 0.01,
    machine_sd: float = 0.02,
    runs: int = 10,
    margin: float = MARGIN,
) -> Result:
    """Machines added in batches (``looks``: machines per label at each look, the last the cap) and
    stopped by ``sequential.decide_look`` as soon as every primary metric is decided: family-wise
    error, simultaneous coverage of the repeated intervals at the stop, power per true metric,
    machines per label used. Drawn at machine level (``design``'s model), analysed by
    ``analysis.analyse`` at each look's boundary."""
    rng = np.random.default_rng(seed)
    res = Result(
        f"sequential looks {looks}, {metrics} primary metrics, {runs} runs, run noise {100 * sigma:g}%"
    )
    shift = np.zeros(metrics)
    shift[:true] = math.log1p(effect)
    truth = _ovh(shift)
    k_max = looks[-1]
    for _ in range(sets):
        logs = [
            machine_sd * rng.normal(0, 1, (k_max, metrics))[:, :, None]
            + lab[None, :, None]
            + rng.normal(0, sigma, (k_max, metrics, runs))
            for lab in (shift, np.zeros(metrics))
        ]
        for j in range(len(looks)):
            k = looks[j]
            sa, sb = (design._sides(x[:k]) for x in logs)
            cells = [
                Cell("A vs B", f"b{g}", f"m{g}", "lower", True, margin, sa[g], sb[g], estimate(sa[g], sb[g]))
                for g in range(metrics)
            ]
            look = sequential.decide_look(cells, looks[: j + 1], k_max)
            if look.action == "stop":
                break
        dec = np.array([r["decision"] for r in look.rows])
        lo = np.array([r["rci_low"] for r in look.rows])
        hi = np.array([r["rci_high"] for r in look.rows])
        if true:
            res.rate("power per true metric").add(int((dec[:true] == "slower").sum()), true)
        res.rate("family-wise error").add(bool(np.isin(dec[true:], ["slower", "faster"]).any()))
        res.rate("simultaneous coverage").add(bool(((lo <= truth) & (truth <= hi)).all()))
        res.means.setdefault("machines per label at the stop", []).append(float(look.machines))
    return res


def pyperf_setting(runs: int, machines: int, sets: int, seed: int, benchmarks: int = 20) -> Result:
    """pyperformance: ~60 pyperf values a run, 1 % run-to-run effect, null between labels."""
    rng = np.random.default_rng(seed)
    res = Result(f"pyperformance, {machines} machine(s) x {runs} run(s) x 60 values, 1% run effect")
    for _ in range(sets):
        lab = {
            "machines": machines,
            "runs": runs,
            "sigma": 0.02,
            "values_per_run": 60,
            "run_sd": 0.01,
            "btype": "pyperformance",
        }
        obs, _, _ = simulate(rng, Label("A", **lab), Label("B", **lab), benchmarks, bench="default")
        cmp = report(obs)
        decided = cmp["decision"].isin(["slower", "faster"]).to_numpy()
        primary = cmp["primary"].to_numpy(dtype=bool)
        res.rate("slower/faster").add(int(decided.sum()), len(cmp))
        res.rate("secondary slower/faster (unadjusted)").add(
            int(decided[~primary].sum()), int((~primary).sum())
        )
        res.rate("reports with a primary one").add(bool(decided[primary].any()))
        res.rate("inconclusive: too few runs").add(
            int(cmp["reason"].str.startswith("too few").sum()), len(cmp)
        )
    return res


def drift_setting(
    walk: float,
    sets: int,
    seed: int,
    runs: int = 30,
    shift: float = 0.0,
    drift_p: float = STABLE_P,
    metrics: int = 25,
) -> Result:
    """A random-walk level on each machine (one per label), reports of ``metrics`` metrics of one
    benchmark (one primary, the rest secondary: every interval a 95 % one): coverage of the
    estimand, the ratio of the two machines' levels over the runs measured (the walk's mean
    included), and of the long-run level (the walk's start), with the share withheld (none since
    issue 34: a drifting machine's runs are judged over the runs measured); false slower/faster
    about the runs measured (null) or power (``shift``). ``drift_p`` as ``build --drift-p``."""
    rng = np.random.default_rng(seed)
    res = Result(
        f"random walk {100 * walk:g}%/run, {runs} runs, 3% noise, 1 machine a label, drift p {drift_p:g}"
    )
    a, b = Label("A", 1, runs, shift, walk=walk), Label("B", 1, runs, walk=walk)
    for _ in range(max(1, sets // metrics)):
        obs, ea, eb = simulate(rng, a, b, metrics, bench="b")
        cmp = report(obs, drift_p=drift_p).sort_values("metric", kind="stable")
        truth = _ovh(ea[:, 0] - eb[:, 0])  # the levels over the runs measured
        covered = _covers(cmp, truth)
        withheld = cmp["reason"].str.contains("decision withheld").to_numpy()
        n = len(cmp)
        res.rate("coverage of the level over the runs measured").add(int(covered.sum()), n)
        res.rate("covered or withheld").add(int((covered | withheld).sum()), n)
        res.rate("withheld").add(int(withheld.sum()), n)
        res.rate("coverage of the long-run level").add(
            int(_covers(cmp, np.full(n, float(_ovh(shift)))).sum()), n
        )
        dec = cmp["decision"].to_numpy()
        if shift:
            res.rate("decided slower").add(int((dec == "slower").sum()), n)
        else:
            wrong = np.isin(dec, ["slower", "faster"]) & ~covered
            res.rate("false slower/faster (about the runs measured)").add(int(wrong.sum()), n)
            res.rate("slower/faster").add(int(np.isin(dec, ["slower", "faster"]).sum()), n)
        res.rate("drift flagged").add(int(cmp["diagnostics"].str.contains("drift").sum()), n)
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


@functools.lru_cache(maxsize=64)
def typical_run(kind: str, sigma: float, draws: int = 200_000) -> float:
    """The population's typical run of a noise model: the 20 % trimmed geometric mean (stats.TRIM)."""
    rng = random.Random(12345)  # a seeded simulation, not a secret
    one = draw(kind, sigma)
    y = np.sort(np.log([one(rng) for _ in range(draws)]))
    g = int(TRIM * draws)
    return float(np.exp(y[g : draws - g].mean()))


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
    true overhead, false slower/faster; and one label's own interval at stop: the report's (its
    typical run, ``stats.describe``) against the population's 20 % trimmed geometric mean, and the
    plain geometric mean's interval against the population's geometric mean (what it was before).
    Each pair is a metric of one benchmark (every interval a 95 % one), so one report compares them
    all."""
    rule = Adaptive(5, 30, 1.0)
    rng = random.Random(seed)  # a seeded simulation, not a secret
    res = Result(f"adaptive {rule.min}-{rule.max} runs, target 1%, {kind} noise")
    truth = math.exp(math.log(1000.0) + TRUE_SHIFT[kind])
    cols: dict[str, list] = {k: [] for k in ("host", "label", "benchmark", "metric", "value", "repetition")}
    k = 0
    typical: dict[str, float] = {}
    for _ in range(sets):
        for s in sigmas:
            one = draw(kind, s)
            a = [v * (1 + effect) for v in stop_adaptively(rng, one, rule)]
            b = stop_adaptively(rng, one, rule)
            d = one_sample(b)
            res.rate("one label, geometric mean's interval: coverage at stop").add(
                d["ci_low"] <= truth <= d["ci_high"]
            )
            typical[f"m{k:05d}"] = typical_run(kind, s)
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
    obs = obs_table(cols)
    desc = describe(obs)
    own = desc[desc["label"] == "B"]
    truth_b = own["metric"].astype(str).map(typical).to_numpy(float)
    inside = (own["ci95_low"].to_numpy(float) <= truth_b) & (truth_b <= own["ci95_high"].to_numpy(float))
    res.rate("one label, the report's interval (typical run): coverage at stop").add(
        int(inside.sum()), len(own)
    )
    cmp = report(obs)
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
