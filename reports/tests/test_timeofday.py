"""``testbed-report timeofday``: a known hour-of-day effect is detected, no effect is flagged at the
nominal rate (seeded simulation), too little data is refused with the reason."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from testbed_agent.results import Identity, ResultWriter, make_record
from testbed_reports.cli import main
from testbed_reports.errors import ReportError
from testbed_reports.timeofday import analyze, analyze_factor, one_way, render, select

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


def test_known_hour_effect_is_detected() -> None:
    rng = np.random.default_rng(17)
    times = _times(days=2, per_hour=3)
    values = np.exp(rng.normal(np.log(0.02), 0.1, len(times))) * [1.25 if _daytime(t) else 1 for t in times]
    table = select(_obs(times, values, reps=2), None, None, None)
    assert len(table) == len(times)  # one row per run: repetitions summarised
    assert len(select(_obs(times, values, reps=2), None, None, None, unit="observation")) == 2 * len(times)
    res = analyze(table)
    hour = res["factors"]["hour"]
    assert hour["effect"] and hour["kruskal_p"] < 1e-6 and hour["anova_p"] < 1e-6
    assert hour["groups_tested"] == 24 and hour["runs"] == 144 and hour["eta_squared"] > 0.3
    assert all(g["n"] == 6 for g in hour["groups"].values())
    wd = res["factors"]["weekday"]
    assert set(wd["groups"]) == {"1-Mon", "2-Tue"} and wd["dates_per_group"] == {"1-Mon": 1, "2-Tue": 1}
    text = render(res)
    assert "hour: EFFECT at alpha 0.05" in text and "times in UTC" in text
    assert "weekday is confounded with the date" in text


@pytest.mark.slow
def test_no_effect_is_flagged_at_the_nominal_rate() -> None:
    rng = np.random.default_rng(2026)
    sims, hits_kw, hits_f = 300, 0, 0
    for _ in range(sims):  # 24 hours x 5 runs (Kruskal-Wallis is conservative with fewer)
        groups = {str(h): np.exp(rng.normal(0.0, 0.2, 5)) for h in range(24)}
        res = one_way(groups, alpha=0.05)
        hits_kw += res["effect"]
        hits_f += res["anova_p"] < 0.05
    # 300 draws at 5 %: sd 1.3 %; both tests stay within about 3 sd of the nominal rate
    assert 0.015 <= hits_kw / sims <= 0.085, hits_kw
    assert 0.015 <= hits_f / sims <= 0.085, hits_f


def test_too_little_data_is_refused_with_the_reason() -> None:
    times = [START + timedelta(minutes=5 * i) for i in range(6)]  # one hour, one day
    table = select(_obs(times, np.linspace(1, 2, 6)), "read_seconds", "dd_read", None)
    res = analyze(table)
    assert res["factors"]["hour"]["refused"].startswith("1 hour group(s) with >= 5 runs")
    assert "not tested" in render(res)
    two = [START + timedelta(hours=h, minutes=m) for h in (0, 1) for m in (0, 10)]
    fac = analyze_factor(select(_obs(two, np.array([1.0, 2.0, 1.0, 2.0])), None, None, None), "hour", 3, 0.05)
    assert fac["dropped"] == ["00", "01"] and "need at least 2" in fac["refused"]
    flat = analyze_factor(select(_obs(two, np.ones(4)), None, None, None), "hour", 2, 0.05)
    assert flat["refused"] == "no variation within the groups"
    with pytest.raises(ReportError, match="no log scale"):
        select(_obs(two, np.zeros(4)), None, None, None)
    with pytest.raises(ReportError, match="at least 2"):
        analyze(table, min_per_group=1)


def test_cli_on_a_campaign_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rng = np.random.default_rng(5)
    store = tmp_path / "tod"
    for k, t in enumerate(_times(days=1, per_hour=2)):
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
    assert "hour: not tested - 0 hour group(s) with >= 5 runs (of 24 seen, 48 runs)" in text
    assert main([*args, "--min-per-group", "2"]) == 0
    text = capsys.readouterr().out
    assert "hour: EFFECT" in text and "weekday: not tested - 1 weekday group(s)" in text
    data = json.loads(out.read_text())
    assert data["timezone"] == "UTC" and data["factors"]["hour"]["runs"] == 48
    assert main([*args, "--metric", "nope"]) == 2
    assert capsys.readouterr().err.startswith("error: no observations of metric 'nope'")
