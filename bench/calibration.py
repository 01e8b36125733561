"""The calibration table at full size (docs/report.md *Calibration*): every setting of
reports/tests/report_support/calibration.py with many seeded data sets, printed as "setting: rate
+- Monte Carlo error (n=...)". The calibration tests run the same settings small; this takes hours
of CPU at --scale 1 (groups: --only).

Issue 34's figures of merit are the groups ``auditor`` (12 vs 12, 6 vs 6, 3 vs 3 machines through
the report's analysis, drawn at the machine level (``auditor_fast``, large) and through the whole
path from observations (``auditor_setting``, smaller), beside the power of a z test with the spread
known: ``oracle``),
``sequential``, ``design`` (the planner's recommendation, then its design simulated again through
the report's full path with another seed), ``needed`` (the headline's machines per label against
the value at the true spread) and ``drift``.

    python bench/calibration.py [--scale 0.2] [--only auditor,design,...]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from scipy import stats as sps

from testbed_reports import design, family
from testbed_reports.inference import MachineSpread, units_needed

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "reports" / "tests"))
from report_support import calibration as c

#: (machines per label, machine spread) of the report-level runs and of the coverage runs
SCOPE_FAMILY = [((1, 1), 0.02), ((1, 1), 0.05), ((2, 2), 0.05), ((3, 3), 0.03), ((5, 5), 0.03)]
SCOPE_FAMILY += [((1, 3), 0.03), ((1, 5), 0.03)]
SCOPE_COVERAGE = [((1, 1), 0.03), ((2, 2), 0.02), ((2, 2), 0.05), ((3, 3), 0.03), ((5, 5), 0.05)]
SCOPE_COVERAGE += [((1, 3), 0.03), ((1, 5), 0.05)]
ANOVA = [(1, 2, 2, 2), (1, 1, 2, 2), (1, 3, 3, 3), (2, 2, 2, 2)]
#: the auditor design (issue 34): 25 primary metrics, 10 runs, 2 % machine spread, 3 % on 5 metrics
AUDITOR = {"metrics": 25, "true": 5, "effect": 0.03, "machine_sd": 0.02, "runs": 10}


def oracle(machines: int, sigma: float, metrics: int = 25, effect: float = 0.03, sd: float = 0.02) -> str:
    """Power per true metric of the best test with the spread known in advance: z on the difference
    of machine means at the family's Sidak level (no df lost to estimating the spread)."""
    se = math.sqrt(2 * (sd**2 + sigma**2 / AUDITOR["runs"]) / machines)
    z = family.sidak_z(metrics)
    shift = math.log1p(effect) / se
    power = float(sps.norm.sf(z - shift) + sps.norm.cdf(-z - shift))
    bonf = float(sps.norm.isf(0.05 / metrics / 2))
    p_bonf = float(sps.norm.sf(bonf - shift) + sps.norm.cdf(-bonf - shift))
    return (
        f"oracle {machines} vs {machines}, run noise {100 * sigma:g}%: power per true metric "
        f"{100 * power:.1f}% (Sidak z {z:.3f}); Bonferroni z test {100 * p_bonf:.1f}%"
    )


def needed_setting(sets: int, seed: int, machines: int = 3, sigma: float = 0.03) -> str:
    """The headline's machines per label (pooled spread) in null auditor reports against the value
    at the true spread of a machine mean."""
    rng = np.random.default_rng(seed)
    got = []
    for _ in range(sets):
        obs, _, _ = c.simulate(
            rng,
            c.Label("A", machines, 10, 0.0, 0.02, sigma),
            c.Label("B", machines, 10, 0.0, 0.02, sigma),
            AUDITOR["metrics"],
        )
        (h,) = c.headline(c.report(obs))
        got.append(h["machines_needed"])
    true_sd = math.sqrt(0.02**2 + sigma**2 / 10)
    alpha = 1 - family.level(family.sidak_z(AUDITOR["metrics"])) / 100
    truth = units_needed(true_sd, alpha, c.MARGIN)
    q = np.percentile(got, [25, 50, 75])
    return (
        f"machines needed, {machines} vs {machines}, run noise {100 * sigma:g}% (n={sets} reports): median "
        f"{q[1]:.0f} (quartiles {q[0]:.0f}-{q[2]:.0f}) against {truth} at the true spread "
        f"({100 * (q[1] / truth - 1):+.0f}%)"
    )


def design_setting(machine_sd: float, sets: int, seed: int, verify: int) -> str:
    """The planner's recommendation for the auditor design, then that design simulated again through
    the report's whole path (describe, diagnostics, compare) with another seed."""
    spreads = design.Spreads(machine_sd, 0.01, source="assumed for the calibration")
    costs = design.Costs(machine_hour=1.0, run=0.0, run_s=600, setup_s=600, at_once=12)
    best = design.plan(
        spreads,
        AUDITOR["metrics"],
        100 * AUDITOR["effect"],
        costs,
        c.MARGIN,
        0.8,
        AUDITOR["true"],
        sets,
        seed,
    )
    again = c.auditor_setting(best.placements, verify, seed + 1000, 0.01, machine_sd, runs=best.runs)
    p2 = again.rates["power per true metric"]
    diff = (p2.value - best.power) / math.hypot(p2.se, best.power_se)
    return (
        f"planner, machine spread {100 * machine_sd:g}%, run noise 1%, 3% on 5 of 25: {best.placements} "
        f"machines per label ({best.machines} at once x {best.rotations}) x {best.runs} runs, cost "
        f"{best.cost:.0f} machine-hours, {best.hours:.1f} h; stated power {100 * best.power:.1f}% +- "
        f"{100 * best.power_se:.1f} (FWER {100 * best.fwer:.1f}% +- {100 * best.fwer_se:.1f}, "
        f"{best.sets} sets); "
        f"through build's path: {again} ({diff:+.1f} Monte Carlo errors)"
    )


def settings(k: float) -> dict[str, list[tuple[Callable[..., object], tuple, dict]]]:
    """The settings, data sets scaled by ``k``: per group a list of (function, arguments, keyword
    arguments)."""

    def n(x: int) -> int:
        return max(5, int(x * k))

    prior3 = MachineSpread(0.03, "simulation")
    odd = np.array([0.02] * 24 + [0.06])
    two = np.array([0.01] * 12 + [0.04] * 13)
    return {
        "auditor": [
            *((c.auditor_fast, (m, n(1000), 100 + m), {}) for m in (12, 6, 3)),
            (c.auditor_fast, (12, n(1000), 113), {"sigma": 0.03}),
            (c.auditor_fast, (12, n(600), 114), {"machine_wide": 0.5}),
            (c.auditor_fast, (3, n(600), 115), {"machine_wide": 0.5}),
            (c.auditor_fast, (3, n(1000), 116), {"true": 0, "spreads": odd}),
            (c.auditor_fast, (3, n(1000), 117), {"true": 0, "spreads": two}),
            (c.auditor_fast, (6, n(1000), 118), {"true": 0, "spreads": odd}),
            (c.auditor_fast, (12, n(1000), 119), {"true": 0}),
            # the same designs through the report's whole path (observations -> describe -> compare)
            *((c.auditor_setting, (m, n(150), 200 + m), {}) for m in (12, 3)),
        ],
        "oracle": [(oracle, (m, s), {}) for m, s in ((12, 0.01), (6, 0.01), (3, 0.01), (12, 0.03))],
        "sequential": [
            (c.sequential_setting, ((3, 6, 9, 12), n(400), 120), {}),
            (c.sequential_setting, ((3, 6, 9, 12), n(400), 121), {"true": 0}),
            (c.sequential_setting, ((3, 6, 9, 12), n(200), 122), {"true": 0, "effect": 0.0, "metrics": 5}),
        ],
        "design": [(design_setting, (sd, n(400), 130, n(300)), {}) for sd in (0.02, 0.05)],
        "needed": [(needed_setting, (n(200), 140), {})],
        "drift": [
            *((c.drift_setting, (w, n(2000), 50 + i), {}) for i, w in enumerate((0.0025, 0.005, 0.01, 0.0))),
            (c.drift_setting, (0.0, n(2000), 55), {"shift": 0.03}),
        ],
        "scope": [
            *((c.scope_setting, (m, s, n(200), 10 + i), {}) for i, (m, s) in enumerate(SCOPE_FAMILY)),
            *(
                (c.scope_setting, (m, s, n(200), 20 + i), {"family": False})
                for i, (m, s) in enumerate(SCOPE_COVERAGE)
            ),
            (c.scope_setting, ((1, 1), 0.03, n(200), 30), {"prior": prior3, "family": False}),
            (c.scope_setting, ((1, 3), 0.03, n(200), 31), {"prior": prior3, "family": False}),
            (c.scope_setting, ((1, 1), 0.03, n(200), 32), {"prior": prior3}),
            (c.prior_setting, (0.05, 0.03, n(200), 33), {}),
        ],
        "pyperf": [
            (c.pyperf_setting, (1, 1, n(200), 40), {}),
            (c.pyperf_setting, (3, 1, n(200), 41), {}),
            (c.pyperf_setting, (1, 3, n(200), 42), {}),
        ],
        "anova": [
            *((c.anova_setting, (m, n(4000), 60 + i), {}) for i, m in enumerate(ANOVA)),
            (c.anova_setting, ((1, 1, 1, 1), n(1000), 64), {}),
        ],
        "adaptive": [
            *((c.adaptive_setting, (kind, n(1000), 70 + i), {}) for i, kind in enumerate(c.NOISE)),
            (c.adaptive_setting, ("normal", n(500), 75), {"effect": 0.05}),
        ],
        "headline": [(c.headline_setting, (n(1000), 80), {})],
        "timeofday": [
            (c.timeofday_setting, (0.5, n(1000), 1), {}),
            (c.timeofday_setting, (0.9, n(1000), 2), {}),
            (c.timeofday_setting, (0.99, n(400), 3), {}),
            (c.timeofday_setting, (0.5, n(400), 4), {"effect": 0.10}),
            (c.timeofday_setting, (0.5, n(400), 5), {"effect": 0.10, "sd": 0.30}),
            (c.timeofday_setting, (0.5, n(400), 6), {"effect": 0.02}),
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0, help="data sets x SCALE (default 1)")
    parser.add_argument("--only", default="", help="comma-separated groups: " + ", ".join(settings(1)))
    args = parser.parse_args()
    groups = settings(args.scale)
    chosen = [g.strip() for g in args.only.split(",") if g.strip()] or list(groups)
    unknown = [g for g in chosen if g not in groups]
    if unknown:
        parser.error(f"--only: unknown group(s) {', '.join(unknown)}; groups: {', '.join(groups)}")
    for group in chosen:
        for func, args_, kwargs in groups[group]:
            t0 = time.process_time()
            res = func(*args_, **kwargs)
            print(f"[{group}] {res} ({time.process_time() - t0:.0f} s CPU)", flush=True)


if __name__ == "__main__":
    main()
