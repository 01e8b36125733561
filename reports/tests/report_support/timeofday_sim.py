"""Seeded campaigns of known truth for ``testbed-report timeofday`` (issues 27 and 34): S1's
preliminary experiment (a run every minute for four days from a Saturday, S1 L711-717) or any
schedule, with AR(1) noise per run and optional day-level and intra-day level shifts, run through
the same ``timeofday.calibrated`` and ``thesis_anova`` the command prints.
``reports/tests/test_calibration_timeofday.py`` runs the settings small; ``bench/calibration.py``
(group ``timeofday``) runs them large for docs/report.md."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
from scipy import signal

from report_support.calibration import Result
from testbed_reports.timeofday import calibrated, thesis_anova

START = datetime(2023, 11, 11, tzinfo=UTC)  # a Saturday 00:00, like S1's campaign (S1 L717)
BUSINESS = (9, 18)


def campaign(
    rng: np.random.Generator,
    phi: float,
    sd: float,
    days: int = 4,
    effect: float = 0.0,
    every_min: int = 1,
    day_sd: float = 0.0,
    shift: float = 0.0,
    weekdays_only: bool = False,
) -> pd.DataFrame:
    """A campaign over ``days`` with a run every ``every_min`` minutes: AR(1) log noise with ``phi``
    per run and marginal sd ``sd``; a business-hours (9-18 h; with ``weekdays_only`` Mon-Fri only)
    effect of ``effect`` (0.15 = 15 % slower); a day-level random walk (each local day's level the
    previous one's plus N(0, ``day_sd``)); a level step of ``shift`` (log) at a uniformly drawn
    instant of the campaign."""
    n = days * 1440 // every_min
    e = rng.normal(0.0, sd * math.sqrt(1 - phi * phi), n)
    e[0] = rng.normal(0.0, sd)
    x = signal.lfilter([1.0], [1.0, -phi], e)
    times = pd.Series(pd.date_range(START, periods=n, freq=f"{every_min}min"))
    hour = times.dt.hour.to_numpy()
    business = (hour >= BUSINESS[0]) & (hour < BUSINESS[1])
    if weekdays_only:
        business &= times.dt.day_of_week.to_numpy() < 5
    day = (times - times.iloc[0]).dt.days.to_numpy()
    if day_sd:
        x = x + np.cumsum(rng.normal(0.0, day_sd, days))[day]
    if shift:
        x = x + shift * (np.arange(n) >= rng.integers(1, n))
    table = pd.DataFrame({"time": times, "value": 0.75 * np.exp(x + math.log1p(effect) * business)})
    table.attrs.update(metric="latency_s", benchmark="dd", label="", unit="run")
    return table


def timeofday_setting(
    phi: float,
    sets: int,
    seed: int,
    effect: float = 0.0,
    sd: float = 0.10,
    days: int = 4,
    every_min: int = 1,
    day_sd: float = 0.0,
    shift: float = 0.0,
    weekdays_only: bool = False,
    thesis: bool = True,
    power_effect: float = 0.15,
    analysis: Callable[..., dict[str, dict[str, Any]]] = calibrated,
) -> Result:
    """Calibrated tests (and the thesis's ANOVA) on simulated campaigns: rate of 'effect' per test,
    of the model check's warning, and the means of the fitted phi and of the business-hours test's
    own power figure (for a ``power_effect`` effect). With ``weekdays_only`` the effect and
    ``business_days`` are Mon-Fri.
    ``analysis`` is the function under test (an older ``calibrated`` for the "before" column)."""
    rng = np.random.default_rng(seed)
    what = f"business-hours effect {100 * effect:g}%" if effect else "no effect"
    extra = "".join(
        [
            f", day-level walk sd {day_sd:g}" if day_sd else "",
            f", a {100 * math.expm1(shift):+.0f}% step at a random instant" if shift else "",
            ", business hours Mon-Fri only" if weekdays_only else "",
        ]
    )
    res = Result(
        f"time of day, AR(1) phi {phi} per run, {days} days x a run every {every_min} min, "
        f"{100 * sd:g}% noise, {what}{extra}"
    )
    for _ in range(sets):
        table = campaign(rng, phi, sd, days, effect, every_min, day_sd, shift, weekdays_only)
        kw: dict[str, Any] = {"business_days": range(5)} if weekdays_only else {}
        if power_effect != 0.15:
            kw["power_effect"] = power_effect
        tests = analysis(table, **kw)
        for name, t in tests.items():
            res.rate(f"{name} effect" if "refused" not in t else f"{name} not testable").add(
                bool(t.get("effect", True))
            )
        hour = tests["hour"]
        if "model_check" in hour:
            res.rate("model check warns").add(not hour["model_check"]["ok"])
            res.means.setdefault("fitted phi x100", []).append(100 * hour["phi"])
        bus = tests["business_hours"]
        if "power" in bus:
            res.means.setdefault("business_hours power figure %", []).append(100 * bus["power"]["power"])
        if thesis:
            th = thesis_anova(table)["anova"]
            res.rate("thesis ANOVA time of day F > F crit").add(th[0]["F"] > th[0]["F_crit"])
            res.rate("thesis ANOVA day of week F > F crit").add(th[1]["F"] > th[1]["F_crit"])
    return res
