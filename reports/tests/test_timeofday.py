"""``testbed-report timeofday``: the AR(1) GLS (``ar1``) against statsmodels and a dense REML, hours
within blocks, "not testable" with the reason, business days, the model check, the thesis's own ANOVA
against statsmodels, the CLI on a real campaign store. Calibration: test_calibration_timeofday.py."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from report_support.timeofday_sim import campaign
from scipy import optimize, signal

from testbed_agent.results import Identity, ResultWriter, make_record
from testbed_reports import ar1
from testbed_reports.cli import main
from testbed_reports.errors import ReportError
from testbed_reports.timeofday import analyze, calibrated, parse_days, render, select, thesis_anova

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
    assert hour["effect"] and hour["p"] < 1e-6 and hour["blocks"] == 3 and hour["complete_blocks"] == 3
    assert hour["df"][0] == 23 and 10 < hour["df"][1] <= 216 - 26 - 1  # runs - (3 blocks + 23 hours) - rho
    assert hour["runs"] == 216 and hour["phi"] < 0.3  # independent noise: phi near 0
    # hours 9-16 are 25 % slower: business hours (9-18) 8 of 9 hours, off-hours none
    truth = 100 * (math.exp(math.log(1.25) * (8 / 9)) - 1)
    assert business["effect"] and business["blocks"] == 3
    lo, hi = business["ci_percent"]
    assert lo < truth < hi and lo < business["effect_percent"] < hi
    assert hour["highest_hour"] in {f"{h:02d}" for h in range(9, 17)}
    assert business["power"]["power"] > 0.99 and business["power"]["effect_percent"] == 15
    assert all(g["n"] == 9 for g in hour["groups"].values())
    wd = res["factors"]["weekday"]
    assert "confounded with the date" in wd["refused"] and wd["dates_per_weekday"] == {
        "Mon": 1,
        "Tue": 1,
        "Wed": 1,
    }
    text = render(res)
    assert "hour: EFFECT - F(23," in text and "times in UTC" in text and "power of this design" in text
    assert "S1's analysis: not computed" in text  # Mon-Wed: no weekend level


def test_one_day_makes_the_hour_factor_not_testable_with_the_reason() -> None:
    times = _times(days=1, per_hour=4)
    values = np.exp(np.random.default_rng(1).normal(0, 0.1, len(times)))
    res = analyze(select(_obs(times, values), None, None, None))
    hour = res["factors"]["hour"]
    assert hour["refused"].startswith("1 complete block(s) with all 24 hours (of 1 seen); hour(s) 00, 01")
    assert "need every hour in at least 2 blocks" in hour["refused"]
    assert "cannot be told apart from drift" in hour["refused"]
    assert "need every hour in at least 2 blocks" in res["factors"]["business_hours"]["refused"]
    assert "hour: not testable" in render(res)
    with pytest.raises(ReportError, match="no log scale"):
        select(_obs(times, np.zeros(len(times))), None, None, None)
    with pytest.raises(ReportError, match="unknown time zone"):
        analyze(select(_obs(times, values), None, None, None), tz="Mars/Olympus")


def test_block_days_and_time_zone_move_the_unit() -> None:
    table = campaign(np.random.default_rng(3), 0.5, 0.05, days=4, every_min=5)
    two = calibrated(table, block_days=2)
    assert two["hour"]["blocks"] == 2 and two["business_hours"]["blocks"] == 2
    shifted = calibrated(table, tz="America/Sao_Paulo")  # UTC-3: the first and last local days are partial
    hour = shifted["hour"]
    assert hour["blocks"] == 5 and hour["complete_blocks"] == 3 and hour["runs"] == len(table)
    assert "workday" in shifted and shifted["workday"]["workdays"] + shifted["workday"]["weekend_days"] == 3


def _ou(t: np.ndarray, rho: float, step: float) -> np.ndarray:
    """The dense correlation matrix of AR(1) errors in continuous time."""
    return rho ** (np.abs(np.subtract.outer(t, t)) / step)


def test_ar1_gls_is_exact_gls_and_reml_with_gaps() -> None:
    """Against statsmodels' GLS with the dense covariance and a dense REML, on a schedule with jitter,
    missed runs and a pause."""
    import statsmodels.api as sm

    rng = np.random.default_rng(4)
    t = np.cumsum(rng.choice([60.0, 60.0, 60.0, 120.0, 61.5], 300))
    t[150:] += 3600.0
    step = float(np.median(np.diff(t)))
    x = np.column_stack([np.ones(300), (np.arange(300) % 50) < 20, rng.normal(size=300)])
    y = x @ [1.0, 0.05, 0.02] + 0.1 * np.linalg.cholesky(_ou(t, 0.8, step)) @ rng.normal(size=300)
    fit = ar1.fit(t, y, x)

    def reml(rho: float) -> float:
        v = _ou(t, rho, step)
        vi = np.linalg.inv(v)
        xvx = x.T @ vi @ x
        r = y - x @ np.linalg.solve(xvx, x.T @ vi @ y)
        return 297 * math.log(r @ vi @ r / 297) + np.linalg.slogdet(v)[1] + np.linalg.slogdet(xvx)[1]

    ref = optimize.minimize_scalar(reml, bounds=(0.0, 0.999), method="bounded", options={"xatol": 1e-8})
    assert fit.rho == pytest.approx(ref.x, abs=2e-4) and 0.6 < fit.rho < 0.95
    gls = sm.GLS(y, x, sigma=_ou(t, fit.rho, step)).fit()
    assert fit.beta == pytest.approx(gls.params, rel=1e-6)
    assert np.sqrt(np.diag(fit.cov_unscaled) * fit.sigma2) == pytest.approx(gls.bse, rel=1e-6)
    for i in range(3):  # the tests' standard errors add what the estimated rho costs
        _, se, df = fit.contrast(np.eye(3)[i])
        assert gls.bse[i] < se < 1.2 * gls.bse[i] and 1 < df <= 296
    known = ar1.fit(t, y, x, rho=0.8)  # a given rho is treated as known: n - p - 1 df
    assert known.beta == pytest.approx(sm.GLS(y, x, sigma=_ou(t, 0.8, step)).fit().params, rel=1e-6)
    assert known.contrast(np.eye(3)[1])[2] == 296 and known.wald(np.eye(3)[1:])[2] == pytest.approx(296)
    with pytest.raises(ValueError, match="rank-deficient"):
        ar1.fit(t, y, np.column_stack([x, x[:, 1]]))
    with pytest.raises(ValueError, match="strictly increasing"):
        ar1.fit(np.r_[t[:1], t[:-1]], y, x)


def test_satterthwaite_df_is_the_spread_of_the_estimated_variance() -> None:
    """The denominator df carries the uncertainty of the estimated rho: over simulated AR(1) series the
    variance of log(se^2) is 2 / df, far from the 2 / (n - p) of a known rho."""
    rng = np.random.default_rng(6)
    n, phi = 240, 0.7
    t = np.arange(n) * 60.0
    x = np.column_stack([np.ones(n), (np.arange(n) % 48) < 18])
    log_v, dfs = [], []
    for _ in range(200):
        e = signal.lfilter(
            [1.0], [1.0, -phi], np.r_[rng.normal(), rng.normal(0, math.sqrt(1 - phi**2), n - 1)]
        )
        _, se, df = ar1.fit(t, e, x).contrast(np.array([0.0, 1.0]))
        log_v.append(2 * math.log(se))
        dfs.append(df)
    assert np.var(log_v, ddof=1) == pytest.approx(2 / np.mean(dfs), rel=0.3)
    assert np.median(dfs) < (n - 3) / 2


def test_kenward_roger_term_is_the_variance_rho_adds_to_beta() -> None:
    """Kackar and Harville: at the true rho, E[(d c'beta / du)^2] = sigma^2 c'C(Q - PCP)Cc, the term
    the adjusted covariance adds per unit of var(u) (half of it: Kenward and Roger double it)."""
    rng = np.random.default_rng(14)
    n, phi, h = 240, 0.8, 1e-4
    t = np.arange(n) * 60.0
    x = np.column_stack([np.ones(n), (np.arange(n) % 48) < 18])
    gaps, u = np.ones(n - 1), math.log(1 - phi)
    c = np.array([0.0, 1.0])
    squares = []
    for _ in range(2000):
        e = signal.lfilter(
            [1.0], [1.0, -phi], np.r_[rng.normal(), rng.normal(0, math.sqrt(1 - phi**2), n - 1)]
        )
        up, down = (ar1._state(gaps, np.column_stack([x, e]), 1 - math.exp(u + d)) for d in (h, -h))
        squares.append((c @ (up.beta - down.beta) / (2 * h)) ** 2)
    fit = ar1.fit(t, np.zeros(n) + rng.normal(size=n), x, rho=phi)
    st = [ar1._state(gaps, np.column_stack([x, np.zeros(n)]), 1 - math.exp(u + d)) for d in (-h, 0.0, h)]
    w = ar1._bidiagonal(gaps, phi)
    diag, sub = zip(*(ar1._bidiagonal(gaps, 1 - math.exp(u + d)) for d in (-h, h)), strict=True)
    w_u = ((diag[1] - diag[0]) / (2 * h), (sub[1] - sub[0]) / (2 * h))
    xw_u = (st[2].xw - st[0].xw) / (2 * h)
    term = (ar1._kenward_roger(st[1], w, w_u, xw_u, 0.5) - st[1].cov)[1, 1]  # C(Q - PCP)C, unit sigma2
    assert np.mean(squares) == pytest.approx(term, rel=0.1)
    p_u = xw_u.T @ st[1].xw + st[1].xw.T @ xw_u  # and P is -dC/du through C
    assert -st[1].cov @ p_u @ st[1].cov == pytest.approx((st[2].cov - st[0].cov) / (2 * h), rel=1e-4)
    assert fit.cov_adjusted == pytest.approx(fit.cov_unscaled)  # a given rho: nothing to add


def test_business_days_read_the_contrast_on_those_days() -> None:
    """A 15 % business-hours effect on Mon-Fri only, a week from a Saturday: with business_days Mon-Fri
    the interval holds 15 %; with every day a business day the effect is diluted by the weekend."""
    table = campaign(
        np.random.default_rng(10), 0.5, 0.05, days=7, effect=0.15, every_min=15, weekdays_only=True
    )
    week = calibrated(table, business_days=parse_days("Mon-Fri"))["business_hours"]
    lo, hi = week["ci_percent"]
    assert week["days"] == "Mon-Fri" and week["effect"] and lo < 15 < hi
    every = calibrated(table)["business_hours"]
    assert every["days"] == "all" and every["ci_percent"][1] < 15
    weekend = calibrated(table, business_days=parse_days("sat,sun"))["business_hours"]
    assert weekend["days"] == "Sat,Sun" and not weekend["effect"]
    assert parse_days("Fri-Mon") == (0, 4, 5, 6) and parse_days("all") is None
    for bad in ("Mon-Fry", "Mon-Tue-Wed", "", "Mon,"):
        with pytest.raises(ReportError, match="is not a weekday"):
            parse_days(bad)
    short = calibrated(table.iloc[: 4 * 96], business_days=range(5))["business_hours"]  # Sat-Tue
    assert "need every hour in at least 2 blocks" not in short.get("refused", "")  # Mon and Tue: 2 blocks
    three = calibrated(table.iloc[: 3 * 96], business_days=range(5))["business_hours"]  # Sat-Mon
    assert "on Mon-Fri (of 3 seen)" in three["refused"]


def test_runs_at_one_instant_are_averaged_and_the_model_check_warns_off_ar1() -> None:
    rng = np.random.default_rng(12)
    times = _times(days=2, per_hour=4)
    values = np.exp(rng.normal(0, 0.05, len(times)))
    obs = _obs(times, values, reps=1)
    twice = pd.concat([obs, obs.assign(value=obs["value"] * 1.01)], ignore_index=True)  # same instants
    table = select(twice, None, None, None, unit="observation")
    hour = calibrated(table)["hour"]
    assert hour["runs"] == len(times) and hour["ties_averaged"] == len(times)
    # AR(1) plus as much independent noise (ARMA(1,1)): whitened residuals stay autocorrelated
    ar = campaign(rng, 0.95, 0.05, days=4, every_min=5)
    noisy = ar.assign(value=ar["value"] * np.exp(rng.normal(0, 0.05, len(ar))))
    res = analyze(noisy)
    assert not res["factors"]["hour"]["model_check"]["ok"] and "model check: whitened residuals" in render(
        res
    )
    plain = calibrated(campaign(rng, 0.95, 0.05, days=4, every_min=5))["hour"]
    assert plain["model_check"]["ok"] and plain["phi"] == pytest.approx(0.95, abs=0.03)


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
    assert main([*args, "--business-days", "Mon-Fri", "--power-effect", "10"]) == 0
    text = capsys.readouterr().out
    assert "business hours (09-18 h on Mon-Fri)" in text and "for a 10% effect" in text
    assert json.loads(out.read_text())["factors"]["business_hours"]["days"] == "Mon-Fri"
    assert main([*args, "--business-days", "weekdays"]) == 2
    assert "--business-days 'weekdays'" in capsys.readouterr().err
