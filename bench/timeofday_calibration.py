"""The time-of-day rows of docs/report.md's calibration table (issues 27 and 34) at full size: seeded
campaigns of known truth (reports/tests/report_support/timeofday_sim.py) through
``timeofday.calibrated``, printed as "setting: rate +- Monte Carlo error (n)"; then the cost of the
analysis on S1's minute campaign, measured beside the thesis's ANOVA on the same runs. The
calibration tests run the same settings small. About 1-2 hours of CPU at --scale 1.

    python bench/timeofday_calibration.py [--scale 0.2] [--only null,power,...]
    python bench/timeofday_calibration.py --before OLD_TIMEOFDAY.py   # the "before" column

``--before`` runs an older ``timeofday.py`` (e.g. ``git show fe28ca8:reports/testbed_reports/
timeofday.py > /tmp/old.py``) on the same seeded campaigns instead of the current one.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from testbed_reports.timeofday import analyze, calibrated, thesis_anova

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "reports" / "tests"))
from report_support.timeofday_sim import campaign, timeofday_setting


def settings(k: float) -> dict[str, list[dict[str, Any]]]:
    """Keyword arguments of ``timeofday_setting`` per group, data sets scaled by ``k``."""

    def n(x: int) -> int:
        return max(5, int(x * k))

    q = {"every_min": 15, "thesis": False}
    return {
        "null": [
            *({"phi": phi, "sets": n(1000), "seed": 1 + i, **q} for i, phi in enumerate((0.5, 0.9, 0.99))),
            *({"phi": phi, "sets": n(300), "seed": 11 + i} for i, phi in enumerate((0.5, 0.9, 0.99))),
        ],
        "shifts": [
            {"phi": 0.5, "sets": n(400), "seed": 21, "day_sd": 0.05, **q},
            {"phi": 0.5, "sets": n(400), "seed": 22, "shift": 0.0953, **q},  # +10 % at a random instant
            {"phi": 0.5, "sets": n(400), "seed": 23, "weekdays_only": True, **q},
        ],
        "power": [
            {"phi": 0.5, "sets": n(400), "seed": 31, "effect": 0.15, **q},
            {"phi": 0.9, "sets": n(400), "seed": 32, "effect": 0.15, **q},
            {"phi": 0.5, "sets": n(400), "seed": 33, "effect": 0.15, "sd": 0.3, **q},
            {"phi": 0.9, "sets": n(400), "seed": 34, "effect": 0.15, "sd": 0.3, **q},
            {"phi": 0.5, "sets": n(400), "seed": 35, "effect": 0.04, **q},
            {"phi": 0.5, "sets": n(400), "seed": 36, "effect": 0.15, "weekdays_only": True, **q},
            {"phi": 0.5, "sets": n(200), "seed": 37, "effect": 0.02, "thesis": False},
        ],
    }


def _older(path: Path) -> Callable[..., dict[str, dict[str, Any]]]:
    spec = importlib.util.spec_from_file_location("timeofday_before", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--before {path}: not a Python file")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def analysis(table: Any, **_: Any) -> dict[str, dict[str, Any]]:
        return mod.calibrated(table)

    return analysis


def cost(repeats: int) -> str:
    """Seconds per analysis of a four-day minute campaign (5,760 runs) and a 15-minute one (384),
    the calibrated tests beside the thesis's ANOVA (one OLS on the same runs), medians of
    ``repeats``."""
    rng = np.random.default_rng(90)
    parts = []
    for every in (1, 15):
        table = campaign(rng, 0.9, 0.1, every_min=every)
        times: dict[str, list[float]] = {"calibrated": [], "thesis ANOVA": [], "analyze (all)": []}
        for _ in range(repeats):
            for name, func in (
                ("calibrated", calibrated),
                ("thesis ANOVA", thesis_anova),
                ("analyze (all)", analyze),
            ):
                t0 = time.perf_counter()
                func(table)
                times[name].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        parts.append(
            f"{len(table)} runs: calibrated {med['calibrated']:.2f} s, thesis ANOVA "
            f"{med['thesis ANOVA']:.2f} s (ratio {med['calibrated'] / med['thesis ANOVA']:.1f}), "
            f"analyze {med['analyze (all)']:.2f} s"
        )
    load = os.getloadavg()[0]
    return f"cost, medians of {repeats} (load average {load:.1f}): " + "; ".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0, help="data sets x SCALE (default 1)")
    groups = settings(1)
    parser.add_argument("--only", default="", help="comma-separated groups: " + ", ".join([*groups, "cost"]))
    parser.add_argument("--before", type=Path, metavar="FILE", help="an older timeofday.py to run instead")
    args = parser.parse_args()
    groups = settings(args.scale)
    chosen = [g.strip() for g in args.only.split(",") if g.strip()] or [*groups, "cost"]
    unknown = [g for g in chosen if g not in groups and g != "cost"]
    if unknown:
        parser.error(f"--only: unknown group(s) {', '.join(unknown)}; groups: {', '.join([*groups, 'cost'])}")
    extra = {"analysis": _older(args.before)} if args.before else {}
    for group in chosen:
        if group == "cost":
            print(f"[cost] {cost(max(3, int(5 * args.scale)))}", flush=True)
            continue
        for kwargs in groups[group]:
            if args.before and kwargs.get("weekdays_only"):
                print(f"[{group}] skipped with --before (no business days there): {kwargs}", flush=True)
                continue
            t0 = time.process_time()
            res = timeofday_setting(**kwargs, **extra)
            print(f"[{group}] {res} ({time.process_time() - t0:.0f} s CPU)", flush=True)


if __name__ == "__main__":
    main()
