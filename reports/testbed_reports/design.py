"""Plan before measuring: the cheapest design that reaches a power, with that power simulated
through the report's own analysis (``testbed-report design``); and the power a finished report had.

A design is machines per label (at once) x rotations (each machine redeployed onto another host:
a new machine for the statistics) x runs per placement. For one comparison of two VM types on
``metrics`` primary metrics, with a machine spread (sd of a machine's level on a metric, log scale;
a share of it machine-wide, i.e. common to all metrics of a machine) and run noise, and a true
``effect`` on the ``affected`` metrics:

1. **search**: for each number of runs, the fewest placements per label whose power per affected
   metric reaches the target by the normal-theory approximation (:func:`approximate_power`: the
   variance of a machine mean sigma_m^2 + sigma_r^2 / runs, t on the pooled df, the family's Sidak
   critical value); the cheapest of these (machine-hours and runs; ties: the shortest);
2. **simulation**: that design's data sets drawn from the same model and run through
   ``analysis.analyse`` (pooling, the family's max-T, the decisions ``build`` makes): power per
   affected metric (decided ``slower``) and family-wise error (any null metric decided slower or
   faster), with Monte Carlo errors. Where the simulated power falls short of the target the next
   placement count is simulated, so the stated power is the simulated one.

Cost: 2 labels x placements x (set-up + runs x run duration) machine-hours x the hourly price,
plus 2 x placements x runs x the price of a run. Duration: rotations x (set-up + runs x run
duration), machines of a label running at the same time.

:func:`report_power` gives a finished report's power for its margin at the spread it saw, and what
more machines would buy (stats.json ``power``, summary.md, the HTML headline).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from testbed_reports import dist, family, pooling
from testbed_reports.analysis import Cell, analyse
from testbed_reports.errors import ReportError
from testbed_reports.inference import Side, estimate

TARGET_POWER = 0.8
#: runs per placement the search tries
RUNS = (2, 3, 5, 10, 20, 30)
MAX_PLACEMENTS = 400
#: the defaults when no earlier run is given: issue 34's auditor design, an assumption, not a measurement
ASSUMED = "assumed (issue 34's auditor design: 2% machine spread, 1% run noise), not measured"


@dataclass(frozen=True)
class Spreads:
    """The prior spreads (sd on the log scale): a machine's level on a metric, a run, the share of
    the machine variance common to all metrics of a machine; per-metric machine spreads (if known)
    override ``machine``; ``source`` says where they come from."""

    machine: float
    run: float
    machine_wide: float = 0.0
    per_metric: tuple[float, ...] = ()
    source: str = ASSUMED

    def machine_sds(self, metrics: int) -> np.ndarray:
        if self.per_metric:
            return np.resize(np.asarray(self.per_metric, dtype=float), metrics)
        return np.full(metrics, self.machine)


@dataclass(frozen=True)
class Costs:
    """Prices and times of a design: a machine-hour, a run (of the plan, on one machine), a run's
    duration and a machine's set-up (creating or rotating it), in seconds; machines per label at
    once (a quota: more placements come from rotations)."""

    machine_hour: float = 1.0
    run: float = 0.0
    run_s: float = 600.0
    setup_s: float = 600.0
    at_once: int = 12


@dataclass
class Design:
    """Machines per label at once x rotations x runs, its cost and duration, and its power."""

    machines: int
    rotations: int
    runs: int
    cost: float
    hours: float
    power: float = float("nan")
    power_se: float = float("nan")
    fwer: float = float("nan")
    fwer_se: float = float("nan")
    sets: int = 0
    approximate: float = float("nan")  # the search's normal-theory power
    tried: list[dict] = field(default_factory=list)  # designs simulated before this one

    @property
    def placements(self) -> int:
        """Machines per label for the statistics: each rotation lands on another host."""
        return self.machines * self.rotations

    def as_dict(self) -> dict:
        return {
            "machines_per_label": self.machines,
            "rotations": self.rotations,
            "placements_per_label": self.placements,
            "runs_per_placement": self.runs,
            "cost": self.cost,
            "hours": self.hours,
            "power": self.power,
            "power_mc_error": self.power_se,
            "family_wise_error": self.fwer,
            "family_wise_error_mc_error": self.fwer_se,
            "simulated_data_sets": self.sets,
            "approximate_power": self.approximate,
            "simulated_before": self.tried,
        }


def approximate_power(placements: int, machine_var: float, metrics: int, effect: float) -> float:
    """Normal-theory power per affected metric: t on the df pooling gives, at the family's Sidak
    critical value, for a log effect ``effect`` and the variance ``machine_var`` of a machine mean."""
    k = placements
    if k < 2 or machine_var <= 0:
        return float("nan") if machine_var <= 0 else 0.0
    se = math.sqrt(2 * machine_var / k)
    side_df = (k - 1) * (1 + pooling.PRIOR_WEIGHT) if metrics >= pooling.MIN_METRICS else k - 1.0
    crit = float(family.t_critical(family.sidak_z(metrics), 2 * side_df))
    shift = abs(effect) / se
    return float(dist.t.sf(crit - shift, 2 * side_df) + dist.t.cdf(-crit - shift, 2 * side_df))


def cost(placements: int, runs: int, costs: Costs) -> tuple[int, int, float, float]:
    """(machines at once, rotations, cost, hours) of ``placements`` per label with ``runs`` each."""
    rotations = math.ceil(placements / max(costs.at_once, 1))
    machines = math.ceil(placements / rotations)
    hours_each = (costs.setup_s + runs * costs.run_s) / 3600
    money = 2 * machines * rotations * (hours_each * costs.machine_hour + runs * costs.run)
    return machines, rotations, money, rotations * hours_each


def search(
    spreads: Spreads, metrics: int, effect: float, costs: Costs, target: float = TARGET_POWER
) -> list[Design]:
    """Per runs count, the fewest placements reaching ``target`` (approximately), cheapest first."""
    var_m = float(np.mean(spreads.machine_sds(metrics) ** 2))
    out = []
    for runs in RUNS:
        var = var_m + spreads.run**2 / runs
        for k in range(2, MAX_PLACEMENTS + 1):
            p = approximate_power(k, var, metrics, effect)
            if p >= target:
                machines, rotations, money, hours = cost(k, runs, costs)
                out.append(Design(machines, rotations, runs, money, hours, approximate=p))
                break
    out.sort(key=lambda d: (d.cost, d.hours, d.placements))
    return out


def simulate(
    design: Design,
    spreads: Spreads,
    metrics: int,
    affected: int,
    effect: float,
    margin: float,
    sets: int,
    seed: int,
) -> tuple[float, float, float, float]:
    """Power per affected metric and family-wise error of ``design`` through ``analysis.analyse``,
    each with its Monte Carlo standard error."""
    rng = np.random.default_rng(seed)
    k, r = design.placements, design.runs
    sds = spreads.machine_sds(metrics)
    shift = np.zeros(metrics)
    shift[:affected] = effect
    hits = wrong = 0
    w = spreads.machine_wide
    for _ in range(sets):
        sides = []
        for lab_shift in (shift, np.zeros(metrics)):
            wide = rng.normal(0, 1, (k, 1))
            level = (
                sds * (math.sqrt(w) * wide + math.sqrt(1 - w) * rng.normal(0, 1, (k, metrics))) + lab_shift
            )
            logs = level[:, :, None] + rng.normal(0, spreads.run, (k, metrics, r))
            sides.append(_sides(logs))
        cells = []
        for g in range(metrics):
            sa, sb = sides[0][g], sides[1][g]
            cells.append(Cell("A vs B", f"b{g}", f"m{g}", "lower", True, margin, sa, sb, estimate(sa, sb)))
        dec = np.array([o.dec.decision for o in analyse(cells)])
        hits += int((dec[:affected] == "slower").sum())
        wrong += bool(np.isin(dec[affected:], ["slower", "faster"]).any())
    n_pow = max(sets * affected, 1)
    p, f = hits / n_pow, wrong / sets
    return p, _se(p, n_pow), f, _se(f, sets)


def _se(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 0.25 / n) / n)


def _sides(logs: np.ndarray) -> list[Side]:
    """Per metric the Side of machines x runs of log values (machines, metrics, runs)."""
    k, m, r = logs.shape
    mean = logs.mean(axis=2)
    sd = logs.std(axis=2, ddof=1) if r > 1 else np.full((k, m), np.nan)
    ssd2 = (np.diff(logs, axis=2) ** 2).mean(axis=2) / 2 if r > 1 else np.full((k, m), np.nan)
    n = np.full(k, float(r))
    hosts = [f"h{i}" for i in range(k)]
    return [Side(n, mean[:, g], sd[:, g], 0, k * r, hosts, ssd2[:, g]) for g in range(m)]


def plan(
    spreads: Spreads,
    metrics: int,
    effect_percent: float,
    costs: Costs,
    margin: float,
    target: float = TARGET_POWER,
    affected: int | None = None,
    sets: int = 400,
    seed: int = 1,
) -> Design:
    """The cheapest design whose simulated power reaches ``target`` (see the module docstring)."""
    if metrics < 1:
        raise ReportError(f"--metrics {metrics}: expected at least 1 primary metric")
    effect = math.log1p(effect_percent / 100)
    affected = max(1, metrics // 5) if affected is None else affected
    if not 1 <= affected <= metrics:
        raise ReportError(f"--affected {affected}: expected 1 to {metrics} (the metrics with the effect)")
    candidates = search(spreads, metrics, effect, costs, target)
    if not candidates:
        raise ReportError(
            f"no design of up to {MAX_PLACEMENTS} machines per label reaches {100 * target:g}% power "
            f"for a {effect_percent:g}% effect at these spreads",
            "a larger effect, a lower target power, or spreads measured on the machines to use",
        )
    best = candidates[0]
    tried: list[dict] = []
    for step in range(8):
        p, pse, f, fse = simulate(best, spreads, metrics, affected, effect, margin, sets, seed + step)
        best.power, best.power_se, best.fwer, best.fwer_se, best.sets = p, pse, f, fse, sets
        if p >= target or best.placements >= MAX_PLACEMENTS:
            break
        tried.append(best.as_dict() | {"simulated_before": []})
        machines, rotations, money, hours = cost(best.placements + 1, best.runs, costs)
        var = float(np.mean(spreads.machine_sds(metrics) ** 2)) + spreads.run**2 / best.runs
        approx = approximate_power(best.placements + 1, var, metrics, effect)
        best = Design(machines, rotations, best.runs, money, hours, approximate=approx)
    best.tried = tried
    return best


def spreads_from_stats(path: Path, machine_wide: float = 0.0) -> Spreads:
    """The spreads an earlier report measured (its stats.json): per primary metric the machine spread
    (sd of machine means less the run noise's share) and the pooled run noise."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = pd.DataFrame(data["comparisons"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ReportError(f"--from {path}: not a report's stats.json ({exc})") from None
    if rows.empty or "run_spread_percent" not in rows:
        raise ReportError(f"--from {path}: no comparisons with measured spreads (a report of this version)")
    prim = rows[rows["primary"].astype(bool)]
    run = pd.to_numeric(prim["run_spread_percent"], errors="coerce").dropna() / 100
    mm = pd.to_numeric(prim.loc[prim["test_unit"] == "machine", "machine_spread_percent"], errors="coerce")
    if run.empty:
        raise ReportError(f"--from {path}: no primary metric with a measured run noise")
    run_sd = float(np.sqrt(np.mean(run**2)))
    runs = pd.to_numeric(prim["n_a"], errors="coerce") / pd.to_numeric(prim["machines_a"], errors="coerce")
    per_run = float(np.nanmedian(runs)) if len(runs) else 1.0
    machine = [math.sqrt(max(v * v / 1e4 - run_sd**2 / per_run, 0.0)) for v in mm.dropna()]
    if not machine:
        raise ReportError(
            f"--from {path}: no machine spread measured (every comparison had one machine a side)",
            "give --machine-spread PCT with its source, or a report of two or more machines per label",
        )
    return Spreads(
        float(np.sqrt(np.mean(np.square(machine)))),
        run_sd,
        machine_wide,
        tuple(machine),
        f"measured in {path} ({len(machine)} primary metrics)",
    )


def report_power(cmp: pd.DataFrame, family_size: int, more: Sequence[int] = (2, 4)) -> list[dict]:
    """Per comparison whose primary metrics were compared machine by machine (scope types): the
    power it had to find a difference of its margin on one primary metric, at the pooled spread of
    its machine means and the family's critical value, what ``more`` times the machines would give,
    and the machines per label that reach 80 % (normal theory, :func:`approximate_power`)."""
    out: list[dict] = []
    if cmp.empty:
        return out
    prim = cmp[cmp["primary"].astype(bool) & (cmp["test_unit"] == "machine")]
    for name, part in prim.groupby("comparison", sort=False):
        sd = pd.to_numeric(part["machine_spread_percent"], errors="coerce").dropna() / 100
        if sd.empty:
            continue
        var = float(np.mean(sd**2))
        k = int(min(part["machines_a"].min(), part["machines_b"].min()))
        margin = float(part["margin_percent"].median())
        effect = math.log1p(margin / 100)
        need = next(
            (
                n
                for n in range(2, MAX_PLACEMENTS + 1)
                if approximate_power(n, var, family_size, effect) >= 0.8
            ),
            None,
        )
        out.append(
            {
                "comparison": str(name),
                "machines_per_label": k,
                "effect_percent": margin,
                "machine_spread_percent": 100 * math.sqrt(var),
                "family": family_size,
                "power": approximate_power(k, var, family_size, effect),
                "more": [
                    {"machines_per_label": k * f, "power": approximate_power(k * f, var, family_size, effect)}
                    for f in more
                ],
                "machines_for_80_percent": need,
            }
        )
    return out


def power_text(p: dict) -> str:
    """One sentence of :func:`report_power`'s entry for a person."""
    more = "; ".join(
        f"{m['machines_per_label']} machines per label: {100 * m['power']:.0f}%" for m in p["more"]
    )
    need = (
        f"about {p['machines_for_80_percent']} machines per label would give 80%"
        if p["machines_for_80_percent"]
        else f"no design of up to {MAX_PLACEMENTS} machines per label gives 80%"
    )
    return (
        f"{p['comparison']}: with {p['machines_per_label']} machines per label this report had "
        f"{100 * p['power']:.0f}% power to find a {p['effect_percent']:g}% difference on a primary metric "
        f"(machine spread {p['machine_spread_percent']:.1f}%, {p['family']} primary comparisons); "
        f"{more}; {need}"
    )
