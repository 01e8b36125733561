"""``testbed-report timeofday``: days as blocks, "not testable" with the reason, the thesis's own
ANOVA against statsmodels, the CLI on a real campaign store. Calibration: test_calibration_timeofday.py."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from testbed_agent.results import Identity, ResultWriter, make_record
from report_support.calibration import campaign
from testbed_reports.cli import main
from testbed_reports.errors import ReportError
from testbed_reports.timeofday import analyze, calibrated, render, select, thesis_anova

START = datetime(2026, 3, 2, tzinfo=UTC)  # a Monday


def _times(days: int, per_hour: int) -> list[datetime]:
    step = timedelta(minutes=60 // per_hour)
    return [START + i * step for i in range(days * 24 * per_hour)]


def _daytime(t: datetime) -> bool:
    return 9 <= t.hour < 17


def _obs(times: list[datetime], values: np.ndarray, reps: int = 1) -> pd.DataFrame:
    rows = [
        {
            "run_id": f"tod-{k:06d}",
            "host": "h1",
            "label": "L",
            "benchmark": "dd_read",
            "metric": "read_seconds",
            "value": v * (1 + 0.01 * r),
            "started_at": (t + timedelta(seconds=r)).isoformat().replace("+00:00", "Z"),
        }
        for k, (t, v) in enumerate(zip(times, values, strict=True))
        for r in range(reps)
    ]
    return pd.DataFrame(rows)


def test_known_hour_effect_is_found_with_days_as_blocks() -> None:
    rng = np.random.default_rng(17)
    times = _times(days=3, per_hour=3)
    values = np.exp(rng.normal(np.log(0.02), 0.1, len(times))) * [1.25 if _daytime(t) else 1 for t in times]
    table = select(_obs(times, values, reps=2), None, None, None)
    assert len(table) == len(times)  # one row per run: repetitions summarised
    assert len(select(_obs(times, values, reps=2), None, None, None, unit="observation")) == 2 * len(times)
    res = analyze(table)
    hour, business = res["factors"]["hour"], res["factors"]["business_hours"]
    assert hour["effect"] and hour["p"] < 1e-6 and hour["blocks"] == 3 and hour["df"] == [23, 46]
    assert business["effect"] and business["blocks"] == 3 and business["df"] == 2
    lo, hi = business["ci_percent"]
    assert lo < business["effect_percent"] < hi and business["effect_percent"] > 10
    assert all(g["n"] == 9 for g in hour["groups"].values())
    wd = res["factors"]["weekday"]
    assert "confounded with the date" in wd["refused"] and wd["dates_per_weekday"] == {
        "Mon": 1,
        "Tue": 1,
        "Wed": 1,
    }
    text = render(res)
    assert "hour: EFFECT - randomized-block F(23,46)" in text and "times in UTC" in text
    assert "S1's analysis: not computed" in text  # Mon-Wed: no weekend level


def test_one_day_makes_the_hour_factor_not_testable_with_the_reason() -> None:
    times = _times(days=1, per_hour=4)
    values = np.exp(np.random.default_rng(1).normal(0, 0.1, len(times)))
    res = analyze(select(_obs(times, values), None, None, None))
    hour = res["factors"]["hour"]
    assert hour["refused"].startswith("1 complete block(s) with all 24 hours (of 1 seen): need at least 2")
    assert "cannot be told apart from drift" in hour["refused"]
    assert "need at least 2" in res["factors"]["business_hours"]["refused"]
    assert "hour: not testable" in render(res)
    with pytest.raises(ReportError, match="no log scale"):
        select(_obs(times, np.zeros(len(times))), None, None, None)
    with pytest.raises(ReportError, match="unknown time zone"):
        analyze(select(_obs(times, values), None, None, None), tz="Mars/Olympus")


def test_block_days_and_time_zone_move_the_unit() -> None:
    table = campaign(np.random.default_rng(3), 0.5, 0.05, days=4)
    two = calibrated(table, block_days=2)
    assert two["hour"]["blocks"] == 2 and two["business_hours"]["blocks"] == 2
    shifted = calibrated(table, tz="America/Sao_Paulo")  # UTC-3: the first and last local days are partial
    assert shifted["hour"]["blocks"] == 3 and shifted["hour"]["dropped_blocks"] == 2


def test_thesis_anova_is_the_sequential_raw_scale_two_way_anova() -> None:
    """S1 Tables 8-9: time of day + day of week, no interaction, each run an observation."""
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    table = campaign(np.random.default_rng(8), 0.5, 0.1, days=4, effect=0.02)
    th = thesis_anova(table)
    rows = {r["source"]: r for r in th["anova"]}
    assert [r["df"] for r in th["anova"]] == [1, 1, 5757, 5759]
    t = table["time"].dt
    sec = t.hour * 3600 + t.minute * 60 + t.second
    weekday = t.day_of_week < 5
    df = pd.DataFrame(
        {
            "y": table["value"],
            # the thesis's TimeOfDay.java: weekends always off-hours, business strictly 9:00-18:00
            "tod": np.where(weekday & (sec > 9 * 3600) & (sec < 18 * 3600), "business", "off"),
            "dow": np.where(weekday, "work", "weekend"),
        }
    )
    ref = anova_lm(ols("y ~ C(tod) + C(dow)", data=df).fit(), typ=1)
    assert rows["time of day"]["F"] == pytest.approx(ref.loc["C(tod)", "F"], rel=1e-9)
    assert rows["day of week"]["F"] == pytest.approx(ref.loc["C(dow)", "F"], rel=1e-9)
    assert rows["residual"]["ss"] == pytest.approx(ref.loc["Residual", "sum_sq"], rel=1e-9)
    assert rows["time of day"]["F_crit"] == pytest.approx(3.8433, abs=1e-3)  # the thesis's 3.84
    assert sum(r["ss_percent"] for r in th["anova"][:3]) == pytest.approx(100.0)
    med = th["medians"]["time of day"]
    diff = 100 * abs(med["business hours"] / med["off-hours"] - 1)
    assert th["median_difference_percent"]["time of day"] == pytest.approx(diff)


def test_cli_on_a_campaign_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(5)
    store = tmp_path / "tod"
    for k, t in enumerate(_times(days=2, per_hour=2)):
        ident = Identity(f"tod-{k:06d}", "h1", "L", (), "0" * 64, "campaign")
        stamp = t.isoformat().replace("+00:00", "Z")
        value = float(np.exp(rng.normal(np.log(0.01), 0.05))) * (1.5 if _daytime(t) else 1.0)
        metrics = {"read_seconds": {"value": value, "unit": "s", "better": "lower"}}
        rec = make_record(
            ident, benchmark="dd_read", btype="dd", index=0, repetition=0, params={}, started_at=stamp,
            ended_at=stamp, status="ok", metrics=metrics,
        )  # fmt: skip
        with ResultWriter(store / ident.run_id / "h1.jsonl") as w:
            w.append(rec)
    out = tmp_path / "tod.json"
    args = ["timeofday", str(store), "--json", str(out)]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "hour: EFFECT" in text and "business_hours: EFFECT" in text and "weekday: not testable" in text
    data = json.loads(out.read_text())
    assert data["timezone"] == "UTC" and data["runs"] == 96 and data["factors"]["hour"]["blocks"] == 2
    assert "day of week: 1" in data["thesis"]["refused"]  # two workdays: no weekend level
    assert "S1's analysis: not computed - two-way ANOVA needs at least two levels" in text
    assert main([*args, "--metric", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: no observations of metric 'nope'")
    assert main([*args, "--block-days", "0"]) == 2
