"""Issue 27's "before" rates (docs/report.md, Calibration): the settings of bench/calibration.py run
against the report of commit f4ff09d, the round issue 27 reviewed, through its own functions
(describe -> diagnostics -> compare, timeofday.analyze, build._one_anova, adaptive.decide).

It imports that tree's packages, not the current ones:

    git archive f4ff09d reports agent | tar -x -C /tmp/before
    PYTHONPATH=/tmp/before/reports:/tmp/before/agent python bench/calibration_before.py [SETTING ...]

SETTING: tod, scope, scope95, pyperf, drift, anova, adaptive, headline (default all but scope95).
``--old-adaptive-rule`` instead runs the current calibration.adaptive_setting with the adaptive rule
of f4ff09d (stop on the classical sd), on the current tree.
"""

from __future__ import annotations

import math
import random
import sys
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd

from testbed_reports.compare import Pair, compare
from testbed_reports.diagnostics import diagnostics
from testbed_reports.load import CATEGORICAL, OBS_COLUMNS
from testbed_reports.stats import describe

SIGMA = 0.03


def obs_table(rows: dict[str, list]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    for c in OBS_COLUMNS:
        if c not in df:
            df[c] = {
                "groups": "",
                "type": "synthetic",
                "unit": "s",
                "better": "lower",
                "index": 0,
                "started_at": "2026-01-01T00:00:00Z",
                "cc_technology": "none",
                "record": -1,
            }.get(c, "")
    df = df[list(OBS_COLUMNS)]
    for c in CATEGORICAL:
        df[c] = df[c].astype(str).astype("category")
    return df


def machines_obs(
    rng,
    label,
    k,
    runs,
    metrics,
    machine_sd,
    shift=0.0,
    sigma=SIGMA,
    walk=0.0,
    btype="synthetic",
    values_per_run=1,
    run_sd=0.0,
    bench_per_metric=True,
):
    """Rows for one label: k machines x runs x metrics (each metric its own benchmark)."""
    out = {
        c: []
        for c in ("run_id", "host", "label", "benchmark", "type", "metric", "value", "repetition", "record")
    }
    for m in range(metrics):
        off = rng.normal(0, machine_sd, size=k) + shift
        for h in range(k):
            steps = np.cumsum(rng.normal(0, walk, size=runs)) if walk else np.zeros(runs)
            run_eff = rng.normal(0, run_sd, size=runs) if run_sd else np.zeros(runs)
            for r in range(runs):
                vals = np.exp(off[h] + steps[r] + run_eff[r] + rng.normal(0, sigma, size=values_per_run))
                for v in vals:
                    out["run_id"].append("r1")
                    out["host"].append(f"{label}-{h}")
                    out["label"].append(label)
                    out["benchmark"].append(f"b{m}" if bench_per_metric else "b0")
                    out["type"].append(btype)
                    out["metric"].append(f"m{m}")
                    out["value"].append(float(v))
                    out["repetition"].append(r)
                    out["record"].append(hash((label, h, m, r)) % 10**9)
    return out


def merge(*parts):
    return {k: [x for p in parts for x in p[k]] for k in parts[0]}


def run_compare(obs):
    desc = describe(obs)
    notes = diagnostics(obs)
    return compare(obs, desc, [Pair("A", "B", "explicit")], 2.0, {}, notes, {})


def rate(x, n):
    p = x / n
    return f"{100 * p:5.1f}% +- {100 * math.sqrt(max(p * (1 - p), 0.25 / n) / n):.1f}"


def scope_setting(ka, kb, machine_sd, sets=200, metrics=25, runs=10, seed=1, per=True):
    rng = np.random.default_rng(seed)
    cover = dec = anyfalse = total = 0
    for _ in range(sets):
        obs = obs_table(
            merge(
                machines_obs(rng, "A", ka, runs, metrics, machine_sd, bench_per_metric=per),
                machines_obs(rng, "B", kb, runs, metrics, machine_sd, bench_per_metric=per),
            )
        )
        cmp = run_compare(obs)
        lo, hi = cmp["overhead_ci_low"].to_numpy(), cmp["overhead_ci_high"].to_numpy()
        cover += int(((lo <= 0) & (hi >= 0)).sum())
        d = cmp["decision"].isin(["slower", "faster"]).to_numpy()
        dec += int(d.sum())
        anyfalse += bool(d.any())
        total += len(cmp)
    return cover, dec, anyfalse, total, sets


def pyperf_setting(runs, sets=200, metrics=20, seed=2):
    rng = np.random.default_rng(seed)
    dec = anyfalse = total = 0
    for _ in range(sets):
        parts = [
            machines_obs(
                rng,
                lab,
                1,
                runs,
                metrics,
                0.0,
                sigma=0.02,
                btype="pyperformance",
                values_per_run=60,
                run_sd=0.01,
                bench_per_metric=False,
            )
            for lab in "AB"
        ]
        cmp = run_compare(obs_table(merge(*parts)))
        d = cmp["decision"].isin(["slower", "faster"]).to_numpy()
        dec += int(d.sum())
        anyfalse += bool(d.any())
        total += len(cmp)
    return dec, anyfalse, total, sets


def drift_setting(sets=1000, runs=30, walk=0.005, seed=3):
    rng = np.random.default_rng(seed)
    cover = dec = 0
    for _ in range(sets):
        obs = obs_table(
            merge(
                machines_obs(rng, "A", 1, runs, 1, 0.0, walk=walk),
                machines_obs(rng, "B", 1, runs, 1, 0.0, walk=walk),
            )
        )
        cmp = run_compare(obs).iloc[0]
        cover += cmp.overhead_ci_low <= 0 <= cmp.overhead_ci_high
        dec += cmp.decision in ("slower", "faster")
    return cover, dec, sets


def headline_setting(sets=300, seed=4):
    from testbed_reports.build import _overview

    rng = np.random.default_rng(seed)
    shown = 0
    for _ in range(sets):
        parts = [
            machines_obs(rng, lab, 1, 10, 25, 0.0, btype="synthetic", bench_per_metric=False) for lab in "AB"
        ]
        cmp = run_compare(obs_table(merge(*parts)))
        cmp["evidence_mismatch"] = False
        ov = _overview(cmp)[0]
        shown += (ov["slower"] + ov["faster"]) > 0
    return shown, sets


def anova_setting(machines, sets=400, seed=5):
    from testbed_reports.build import _one_anova

    rng = np.random.default_rng(seed)
    code_a, code_b = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    hits = 0
    for _ in range(sets):
        lab, host, v = [], [], []
        h = 0
        for L, k in enumerate(machines):
            for _m in range(k):
                eff = rng.normal(0, 0.03)
                v.extend(np.exp(eff + rng.normal(0, SIGMA, 10)))
                lab.extend([L] * 10)
                host.extend([h] * 10)
                h += 1
        table, _, _ = _one_anova(
            np.array(v), np.array(lab), np.array(host), code_a, code_b, True, ("protection", "vendor")
        )
        hits += table[0]["F"] > table[0]["F_crit"]
    return hits, sets


def ar1(rng, n, phi, sd):
    e = rng.normal(0, sd * math.sqrt(1 - phi * phi), n)
    x = np.empty(n)
    x[0] = rng.normal(0, sd)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + e[i]
    return x


def tod_setting(phi, sets=200, seed=6, days=4, effect=0.0):
    from testbed_reports.timeofday import analyze

    rng = np.random.default_rng(seed)
    start = datetime(2023, 11, 11, tzinfo=UTC)  # a Saturday, like S1's campaign
    times = pd.Series(pd.to_datetime([start + timedelta(minutes=i) for i in range(days * 1440)], utc=True))
    business = ((times.dt.hour >= 9) & (times.dt.hour < 18)).to_numpy()
    hour = weekday = 0
    for _ in range(sets):
        x = ar1(rng, len(times), phi, 0.05) + effect * business
        table = pd.DataFrame({"time": times, "value": 0.02 * np.exp(x)})
        res = analyze(table)
        hour += bool(res["factors"]["hour"].get("effect"))
        weekday += bool(res["factors"]["weekday"].get("effect"))
    return hour, weekday, sets


def recs(values):
    return [{"status": "ok", "metrics": {"write_bw_bytes": {"value": v}}} for v in values]


def adaptive_run(rng: random.Random, draw, rule):
    from testbed_agent.adaptive import decide

    values = []
    while True:
        values.append(draw(rng))
        st = decide(rule, "fio", recs(values), len(values))
        if st["stop"]:
            return values


def noise(kind, sigma):
    def draw(rng):
        if kind == "normal":
            z = rng.gauss(0, sigma)
        elif kind == "t3":
            z = (
                sigma
                * rng.gauss(0, 1)
                / math.sqrt(sum(rng.gauss(0, 1) ** 2 for _ in range(3)) / 3)
                / math.sqrt(3)
            )
        elif kind == "outlier":
            z = rng.gauss(0, sigma) + (math.log(1.5) if rng.random() < 0.05 else 0.0)
        elif kind == "bimodal":
            z = rng.gauss(0, sigma) + (math.log(1.1) if rng.random() < 0.10 else 0.0)
        return 1000 * math.exp(z)

    truth = {"normal": 0.0, "t3": 0.0, "outlier": 0.05 * math.log(1.5), "bimodal": 0.1 * math.log(1.1)}[kind]
    return draw, truth


def adaptive_setting(kind, sigmas=(0.005, 0.01, 0.02), sets=300, seed=7):
    from testbed_agent.adaptive import Adaptive, half_width_percent
    from testbed_reports.inference import Side, estimate
    from testbed_reports.inference import decide as idecide

    rule = Adaptive(5, 30, 1.0)
    rng = random.Random(seed)
    cov1 = cov2 = false2 = n = 0
    for _ in range(sets):
        for s in sigmas:
            draw, truth = noise(kind, s)
            a, b = adaptive_run(rng, draw, rule), adaptive_run(rng, draw, rule)
            la = np.log(a)
            hw = math.log1p(half_width_percent(a) / 100)
            cov1 += abs(la.mean() - (math.log(1000) + truth)) <= hw
            lb = np.log(b)
            sa = Side(
                np.array([float(len(la))]), np.array([la.mean()]), np.array([la.std(ddof=1)]), 0, len(la)
            )
            sb = Side(
                np.array([float(len(lb))]), np.array([lb.mean()]), np.array([lb.std(ddof=1)]), 0, len(lb)
            )
            d = idecide(estimate(sa, sb), "lower", 0.05, 2.0)
            cov2 += d.lo <= 0 <= d.hi
            false2 += d.decision in ("slower", "faster")
            n += 1
    return cov1, cov2, false2, n


def old_adaptive_rule() -> None:
    """The current two-label adaptive harness with the stopping rule before issue 27."""
    import testbed_agent.adaptive as ad
    from testbed_reports import calibration as c

    ad.robust_half_width_percent = ad.half_width_percent  # the rule before: classical sd
    for i, kind in enumerate(c.NOISE):
        print("[before rule]", c.adaptive_setting(kind, 1000, 70 + i), flush=True)


def run_tod() -> None:
    for phi in (0.5, 0.9):
        h, w, n = tod_setting(phi, sets=100)
        print(f"timeofday AR(1) phi {phi}, 4 days x 1440 min, no effect: hour EFFECT {rate(h, n)}, "
              f"weekday EFFECT {rate(w, n)} ({n} sets)", flush=True)  # fmt: skip


def run_scope(per: bool = True) -> None:
    for ka, kb in ((1, 1), (2, 2), (3, 3), (5, 5), (1, 3), (1, 5)):
        for msd in (0.02, 0.05):
            c, d, a, t, s = scope_setting(ka, kb, msd, sets=100 if per else 40, per=per)
            what = "" if per else ", 95% intervals"
            print(f"scope{'' if per else '95'} {ka} vs {kb} machines, machine sd {msd:.0%}, 10 runs, "
                  f"type-level null{what}: coverage {rate(c, t)}, slower/faster {rate(d, t)}, "
                  f"reports with a false decision {rate(a, s)}", flush=True)  # fmt: skip


def run_pyperf() -> None:
    for runs in (1, 3):
        d, a, t, s = pyperf_setting(runs, sets=100)
        print(f"pyperformance {runs} run(s) x 60 values, 1% run effect, 20 benchmarks: slower/faster "
              f"{rate(d, t)}, reports with one {rate(a, s)}", flush=True)  # fmt: skip


def run_drift() -> None:
    c, d, n = drift_setting(sets=1000)
    print(
        f"drift 0.5%/run walk, 30 runs, 3% noise: coverage {rate(c, n)}, slower/faster {rate(d, n)}",
        flush=True,
    )


def run_anova() -> None:
    for ms in ((1, 2, 2, 2), (1, 1, 2, 2), (1, 1, 1, 1), (1, 3, 3, 3)):
        h, n = anova_setting(ms)
        print(f"label ANOVA machines {ms}, 3% spread, null: protection effect {rate(h, n)}", flush=True)


def run_adaptive() -> None:
    for kind in ("normal", "outlier", "t3", "bimodal"):
        c1, c2, f2, n = adaptive_setting(kind, sets=200)
        print(f"adaptive {kind}: coverage at stop (one label) {rate(c1, n)}, two stopped labels: "
              f"coverage {rate(c2, n)}, slower/faster {rate(f2, n)}", flush=True)  # fmt: skip


def run_headline() -> None:
    s, n = headline_setting(sets=300)
    print(
        f"headline, null 25-metric reports (1 primary): slower/faster in the headline {rate(s, n)}",
        flush=True,
    )


RUNS = {"tod": run_tod, "scope": run_scope, "scope95": lambda: run_scope(per=False), "pyperf": run_pyperf,
        "drift": run_drift, "anova": run_anova, "adaptive": run_adaptive,
        "headline": run_headline}  # fmt: skip


def main() -> None:
    if "--old-adaptive-rule" in sys.argv:
        old_adaptive_rule()
        return
    which = sys.argv[1:] or [k for k in RUNS if k != "scope95"]
    t0 = time.time()
    for name in which:
        RUNS[name]()
    print(f"({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
