"""Issue 27's calibration table at full size: every setting of reports/testbed_reports/calibration.py
with many seeded data sets, printed as "setting | rate | Monte Carlo error" (the numbers in
docs/report.md). The calibration tests run the same settings small; this takes about 30-60 minutes
of CPU.

    python bench/calibration.py [--scale 0.2] [--only timeofday,scope,...]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from testbed_reports.inference import MachineSpread

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "reports" / "tests"))
from report_support import calibration as c

#: (machines per label, machine spread) of the report-level runs and of the coverage runs
SCOPE_FAMILY = [((1, 1), 0.02), ((1, 1), 0.05), ((2, 2), 0.05), ((3, 3), 0.03), ((5, 5), 0.03)]
SCOPE_FAMILY += [((1, 3), 0.03), ((1, 5), 0.03)]
SCOPE_COVERAGE = [((1, 1), 0.03), ((2, 2), 0.02), ((2, 2), 0.05), ((3, 3), 0.03), ((5, 5), 0.05)]
SCOPE_COVERAGE += [((1, 3), 0.03), ((1, 5), 0.05)]
ANOVA = [(1, 2, 2, 2), (1, 1, 2, 2), (1, 3, 3, 3), (2, 2, 2, 2)]


def settings(k: float) -> dict[str, list[tuple[Callable[..., c.Result], tuple, dict]]]:
    """The settings of issue 27 (and the review's minimum), data sets scaled by ``k``: per group a
    list of (function, arguments, keyword arguments)."""

    def n(x: int) -> int:
        return max(5, int(x * k))

    prior3 = MachineSpread(0.03, "simulation")
    return {
        "timeofday": [
            (c.timeofday_setting, (0.5, n(1000), 1), {}),
            (c.timeofday_setting, (0.9, n(1000), 2), {}),
            (c.timeofday_setting, (0.99, n(400), 3), {}),
            (c.timeofday_setting, (0.5, n(400), 4), {"effect": 0.10}),
            (c.timeofday_setting, (0.5, n(400), 5), {"effect": 0.10, "sd": 0.30}),
            (c.timeofday_setting, (0.5, n(400), 6), {"effect": 0.02}),
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
        "drift": [
            (c.drift_setting, (0.005, n(4000), 50), {}),
            (c.drift_setting, (0.0, n(4000), 51), {}),
            (c.drift_setting, (0.0, n(2000), 52), {"shift": 0.03}),
            (c.drift_setting, (0.005, n(4000), 53), {"drift_p": 0.3}),
            (c.drift_setting, (0.0, n(4000), 54), {"drift_p": 0.3}),
            (c.drift_setting, (0.0, n(2000), 55), {"shift": 0.03, "drift_p": 0.3}),
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
    for group in chosen:
        for func, args_, kwargs in groups[group]:
            t0 = time.process_time()
            res = func(*args_, **kwargs)
            print(f"[{group}] {res} ({time.process_time() - t0:.0f} s CPU)", flush=True)


if __name__ == "__main__":
    main()
