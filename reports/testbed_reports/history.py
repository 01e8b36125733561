"""``testbed-report history``: has the overhead changed since the last run?

Over the runs in the results store (``store.py``) that measured both labels of a pair on one
metric, in time order:

- **Each run's overhead** of A against B with its interval: the report's own estimate and decision
  (``inference.sides`` -> ``inference.estimate`` -> ``inference.decide``, 95 %), machines as units
  where both labels have two machines or more in that run, else these machines' runs.
- **Estimand of a change**: the difference between runs of the log ratio a/b, shown as the change
  of the ratio in percent (after / before - 1; 5 % -> 10 % overhead is a change of +4.8 %).
  **Unit of replication: the run.** Repetitions inside a run share that run's machines,
  time and day: they are not independent draws of the run's overhead, so they never count as
  replicates of it (a run's own interval would make every day-to-day wobble a "change").
- **Over a window** (``--window K``, default every run): a change point. For each split into a
  before and an after segment of two runs or more, the t of the difference of their mean log
  ratios (runs as units, the sd pooled about the two means: the change-in-mean likelihood ratio);
  the largest |t| is the statistic, and its p is the share of permutations of the runs
  whose largest |t| reaches it (seeded, ``PERMUTATIONS``): exact under a stable history whatever
  the run-to-run spread, since the runs of a stable history are exchangeable. p < 0.05:
  ``changed`` at the split, with the step and its t interval (runs as units; the split was chosen
  by the data, so that interval is optimistic: the decision is the permutation test's).
- **Between two runs** (``--between R1:R2``): the difference of their log ratios against the
  run-to-run spread of the window's runs (half the mean squared successive difference, von
  Neumann's degrees of freedom; a slow drift hardly inflates it, a step of size d adds d^2 / (2(n - 1))
  to its variance, so a step makes the decision cautious, never bold), decided by
  ``inference.decide`` against ``--margin``: ``worse``, ``better``, ``unchanged`` (within the
  margin) or ``inconclusive``. With fewer than three runs in the window the spread is not known:
  both runs need two machines a label, and the machines are the units (each run's interval from its
  machine means, the two combined by Welch-Satterthwaite).
- **What changed** beside each run: the fingerprint of each label's hosts (kernel, CPU microcode,
  firmware/TCB version from the attestation evidence, VM size, CPU model), against the run before.

Error control: the change-point decision's false "changed" rate on stable histories is at most 5 %
(measured: ``reports/tests/test_history_calibration.py``, which also prints the power for a 3 %
step and what pooling a run's repetitions as independent would give).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from testbed_reports import svgplot
from testbed_reports.engine import connect
from testbed_reports.errors import ReportError
from testbed_reports.inference import (
    ALPHA,
    DEFAULT_MARGIN,
    Estimate,
    Side,
    decide,
    estimate,
    sides,
    to_overhead,
)
from testbed_reports.store import Store, encode
from testbed_shared.atomic import write_atomically
from testbed_shared.intervals import t_quantile

#: permutations of the change-point test (p resolution 1/(PERMUTATIONS + 1))
PERMUTATIONS = 1999
#: fewest runs a segment of a change point has
MIN_SEGMENT = 2
#: the fingerprint fields shown beside a change
FINGERPRINT = ("kernel", "microcode", "tcb", "vm_size", "cpu_model")


@dataclass
class RunPoint:
    """One run's overhead of A against B on the metric."""

    run: str
    started: str
    overhead: float  # percent, a slowdown of A positive
    lo: float
    hi: float
    log_ratio: float
    se: float
    df: float
    unit: str  # machine or run
    scope: str
    decision: str
    machines_a: int
    machines_b: int
    runs_a: int
    runs_b: int
    changes: list[str] = field(default_factory=list)


@dataclass
class ChangePoint:
    """The change-point decision over a window of runs."""

    decision: str  # changed / no change detected / too few runs
    p: float = float("nan")
    at: str = ""  # the first run after the split
    step: float = float("nan")  # change of the ratio a/b, percent (after / before - 1)
    lo: float = float("nan")
    hi: float = float("nan")
    runs: int = 0
    text: str = ""


@dataclass
class Between:
    """Two runs compared: the change of the overhead from the first to the second."""

    first: str
    second: str
    decision: str  # worse / better / unchanged / inconclusive
    step: float = float("nan")
    lo: float = float("nan")
    hi: float = float("nan")
    unit: str = ""
    text: str = ""


# -- reading one run -----------------------------------------------------------------------------


def _runs(store: Store) -> list[tuple[str, str]]:
    """(run, first start time) of every stored run, oldest first."""
    out = []
    con = connect(store.root)
    try:
        for m in store.manifests():
            glob = str(store.root / "hosts" / f"run={encode(m.run)}" / "*.parquet")
            row = con.execute("SELECT min(first_started_at) FROM read_parquet(?)", [glob]).fetchone()
            out.append((m.run, str(row[0]) if row and row[0] is not None else ""))
    finally:
        con.close()
    return sorted(out, key=lambda x: (x[1], x[0]))


def _observations(
    con: Any, store: Store, run: str, bench: str, metric: str, labels: Sequence[str]
) -> pd.DataFrame:
    glob = str(store.root / "observations" / f"run={encode(run)}" / "*" / "*.parquet")
    sql = (
        "SELECT benchmark, metric, label, host, value, record, repetition, started_at, better "
        "FROM read_parquet(?, hive_partitioning = true, hive_types = {'run': VARCHAR, 'label': VARCHAR}) "
        "WHERE benchmark = ? AND metric = ? AND label IN (?, ?) ORDER BY seq"
    )
    return con.execute(sql, [glob, bench, metric, *labels]).fetch_df()


def _fingerprints(con: Any, store: Store, run: str, labels: Sequence[str]) -> dict[str, dict[str, str]]:
    """Per label: each fingerprint field's values over its hosts (sorted, joined)."""
    glob = str(store.root / "hosts" / f"run={encode(run)}" / "*.parquet")
    cols = ", ".join(FINGERPRINT)  # constant column names; values are parameters
    sql = f"SELECT label, {cols} FROM read_parquet(?) WHERE label IN (?, ?)"  # noqa: S608
    df = con.execute(sql, [glob, *labels]).fetch_df()
    out: dict[str, dict[str, str]] = {}
    for label, part in df.groupby("label", sort=True):
        out[str(label)] = {
            f: ", ".join(sorted({str(v) for v in part[f] if isinstance(v, str) and v})) or "unknown"
            for f in FINGERPRINT
        }
    return out


def _changes(before: dict[str, dict[str, str]], now: dict[str, dict[str, str]]) -> list[str]:
    out = []
    for label in sorted(now):
        for f in FINGERPRINT:
            old, new = before.get(label, {}).get(f), now[label][f]
            if old is not None and old != new:
                out.append(f"{label} {f}: {old} -> {new}")
    return out


def run_point(
    run: str, started: str, obs: pd.DataFrame, a: str, b: str, bench: str, metric: str, margin: float
) -> RunPoint | None:
    """One run's overhead of ``a`` against ``b`` (None when a label has no values there)."""
    sd = sides(obs)
    sa, sb = sd.get((bench, metric, a)), sd.get((bench, metric, b))
    if sa is None or sb is None:
        return None
    return point(run, started, sa, sb, str(obs["better"].iloc[0]), margin)


def point(run: str, started: str, sa: Side, sb: Side, better: str, margin: float) -> RunPoint:
    """A run's overhead from its two sides: ``inference.estimate`` and ``inference.decide``."""
    est = estimate(sa, sb)
    dec = decide(est, better, ALPHA, margin)
    return RunPoint(
        run,
        started,
        dec.overhead,
        dec.lo,
        dec.hi,
        est.diff,
        est.se,
        est.df,
        est.unit,
        est.scope,
        dec.decision,
        sa.machines,
        sb.machines,
        sa.runs,
        sb.runs,
    )


# -- decisions over runs -------------------------------------------------------------------------


def _max_t(y: np.ndarray, min_seg: int = MIN_SEGMENT) -> tuple[np.ndarray, np.ndarray]:
    """Per row of ``y`` (histories, runs in order): the largest |t| between the mean of the runs
    before a split and of those after it (pooled sd about the two means, n - 2 df: the change-in-
    mean likelihood ratio), over the splits with ``min_seg`` runs a side, and that split.
    Vectorised over rows (the permutations of the test)."""
    y = np.atleast_2d(np.asarray(y, dtype=float))
    y = y - y.mean(axis=1, keepdims=True)  # centred: the running sums below lose nothing
    n = y.shape[1]
    k = np.arange(min_seg, n - min_seg + 1)
    c1, c2 = np.cumsum(y, axis=1), np.cumsum(y * y, axis=1)
    s1_u = c1[:, k - 1]
    s1_v = c1[:, -1:] - s1_u
    m = n - k
    mean_u, mean_v = s1_u / k, s1_v / m
    ss = np.maximum(c2[:, -1:] - k * mean_u**2 - m * mean_v**2, 0.0)  # within the two segments
    se = np.sqrt(ss / (n - 2) * (1 / k + 1 / m))
    d = np.abs(mean_v - mean_u)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, d / se, np.where(d > 0, np.inf, 0.0))
    best = t.argmax(axis=1)
    return t[np.arange(len(t)), best], k[best]


def change_point(
    y: Sequence[float], better: str, alpha: float = ALPHA, seed: int = 1, permutations: int = PERMUTATIONS
) -> tuple[str, float, int, float, float, float]:
    """(decision, p, split, step %, lo %, hi %) of the log ratios ``y`` of consecutive runs."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    if n < 2 * MIN_SEGMENT:
        return "too few runs", math.nan, -1, math.nan, math.nan, math.nan
    stats, ats = _max_t(y)
    stat, at = float(stats[0]), int(ats[0])
    rng = np.random.default_rng(seed)
    perms = rng.permuted(np.tile(y, (permutations, 1)), axis=1)
    hits = int((_max_t(perms)[0] >= stat * (1 - 1e-9)).sum())
    p = (hits + 1) / (permutations + 1)
    u, v = y[:at], y[at:]
    d = float(v.mean() - u.mean())
    ss = float(((u - u.mean()) ** 2).sum() + ((v - v.mean()) ** 2).sum())
    se = math.sqrt(ss / (n - 2) * (1 / len(u) + 1 / len(v)))
    half = float(t_quantile(1 - alpha / 2, n - 2)) * se
    ends = sorted(float(to_overhead(x, better)) for x in (d - half, d + half))
    step = float(to_overhead(d, better))
    return ("changed" if p < alpha else "no change detected"), p, at, step, ends[0], ends[1]


def successive_spread(y: Sequence[float]) -> tuple[float, float]:
    """Run-to-run variance of the log ratios from successive differences, and its df (von Neumann)."""
    y = np.asarray(y, dtype=float)
    n = len(y)
    if n < 3:
        return math.nan, 0.0
    var = float(np.mean(np.diff(y) ** 2) / 2)
    return var, 2 * (n - 1) ** 2 / (3 * n - 4)


def between(
    first: RunPoint, second: RunPoint, window: Sequence[float], better: str, margin: float
) -> Between:
    """The change of the overhead from ``first`` to ``second`` (runs as units, or machines)."""
    var, df = successive_spread(window)
    if df > 0 and math.isfinite(var):
        est = Estimate(second.log_ratio - first.log_ratio, math.sqrt(2 * var), df, unit="run", scope="types")
        unit = f"runs as units: run-to-run sd {100 * math.sqrt(var):.2f}% over {len(window)} runs"
    elif (
        min(first.machines_a, first.machines_b, second.machines_a, second.machines_b) >= 2
        and first.unit == second.unit == "machine"
    ):
        se = math.hypot(first.se, second.se)
        df = se**4 / (first.se**4 / first.df + second.se**4 / second.df)
        est = Estimate(second.log_ratio - first.log_ratio, se, df, unit="machine", scope="types")
        unit = "machines as units (each run's machine means)"
    else:
        return Between(
            first.run,
            second.run,
            "inconclusive",
            unit="",
            text="the run-to-run spread is unknown: it needs 3 runs in the window, or 2 machines a label in "
            "both runs",
        )
    dec = decide(est, better, ALPHA, margin)
    word = {"slower": "worse", "faster": "better", "equivalent": "unchanged"}.get(
        dec.decision, "inconclusive"
    )
    ci = f"[{dec.lo:+.2f}, {dec.hi:+.2f}]%"
    text = {
        "worse": f"{ci} lies above 0",
        "better": f"{ci} lies below 0",
        "unchanged": f"{ci} lies within +-{margin:g}%",
    }.get(word, f"{ci} spans 0 and +-{margin:g}%: more runs would tell")
    return Between(first.run, second.run, word, dec.overhead, dec.lo, dec.hi, unit, text)


# -- the command -----------------------------------------------------------------------------------


@dataclass
class History:
    """What ``history`` found."""

    a: str
    b: str
    benchmark: str
    metric: str
    better: str
    points: list[RunPoint]
    window: ChangePoint
    between: Between | None = None
    skipped: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return _clean(asdict(self))


def _clean(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clean(v) for v in x]
    return x


def history(
    store: Path,
    pair: str,
    metric: str,
    benchmark: str | None = None,
    window: int | None = None,
    between_runs: str | None = None,
    margin: float = DEFAULT_MARGIN,
    seed: int = 1,
) -> History:
    """The overhead of each stored run, the change-point decision and what changed."""
    st = Store(store)
    if st.version() is None:
        raise ReportError(
            f"{store}: no results store here", "collect runs first (testbed-report store add RESULTS_DIR)"
        )
    st.check()
    if ":" not in pair:
        raise ReportError(f"--compare {pair!r}: expected A:B (two labels)")
    a, b = (s.strip() for s in pair.split(":", 1))
    if not 0 < margin < 100:
        raise ReportError(f"--margin {margin!r}: expected a percentage between 0 and 100")
    bench, name = _metric(st, benchmark, metric, (a, b))
    con = connect(st.root)
    points: list[RunPoint] = []
    skipped: list[str] = []
    prev: dict[str, dict[str, str]] = {}
    try:
        for run, started in _runs(st):
            obs = _observations(con, st, run, bench, name, (a, b))
            pt = run_point(run, started, obs, a, b, bench, name, margin) if len(obs) else None
            if pt is None:
                skipped.append(run)
                continue
            fps = _fingerprints(con, st, run, (a, b))
            pt.changes = _changes(prev, fps) if points else []
            prev = fps
            points.append(pt)
    finally:
        con.close()
    if not points:
        raise ReportError(
            f"no stored run measured both {a} and {b} on {bench} {name}",
            f"runs in {store}: {', '.join(m.run for m in st.manifests()) or 'none'}",
        )
    better = _better(st, bench, name)
    ok = [p for p in points if math.isfinite(p.log_ratio)]
    shown = ok[-window:] if window else ok
    y = [p.log_ratio for p in shown]
    decision, p, at, step, lo, hi = change_point(y, better, seed=seed)
    cp = ChangePoint(decision, p, shown[at].run if at >= 0 else "", step, lo, hi, len(shown))
    cp.text = _cp_text(cp)
    out = History(a, b, bench, name, better, points, cp, skipped=skipped)
    if between_runs:
        out.between = _between(between_runs, ok, y, better, margin)
    return out


def _between(spec: str, ok: list[RunPoint], y: list[float], better: str, margin: float) -> Between:
    if ":" not in spec:
        raise ReportError(f"--between {spec!r}: expected RUN1:RUN2")
    r1, r2 = (s.strip() for s in spec.split(":", 1))
    by = {p.run: p for p in ok}
    for r in (r1, r2):
        if r not in by:
            raise ReportError(f"--between {spec!r}: no overhead for run {r!r}", f"runs: {', '.join(by)}")
    return between(by[r1], by[r2], y, better, margin)


def _metric(st: Store, benchmark: str | None, metric: str, labels: Sequence[str]) -> tuple[str, str]:
    """(benchmark, metric) named by ``--metric [BENCH.]METRIC`` and ``--benchmark``."""
    con = connect(st.root)
    try:
        glob = str(st.root / "observations" / "*" / "*" / "*.parquet")
        pairs = con.execute(
            "SELECT DISTINCT benchmark, metric FROM read_parquet(?, hive_partitioning = true, "
            "hive_types = {'run': VARCHAR, 'label': VARCHAR}) WHERE label IN (?, ?)",
            [glob, *labels],
        ).fetchall()
    finally:
        con.close()
    cands = [
        (bn, m)
        for bn, m in pairs
        if (benchmark is None and metric in (m, f"{bn}.{m}")) or (bn == benchmark and m == metric)
    ]
    if len(cands) == 1:
        return cands[0]
    known = ", ".join(sorted(f"{bn}.{m}" for bn, m in pairs)[:12])
    if not cands:
        raise ReportError(
            f"--metric {metric!r}: not measured on {' and '.join(labels)}", f"metrics: {known or 'none'}"
        )
    raise ReportError(
        f"--metric {metric!r}: on several benchmarks", "name one with --benchmark or BENCH.METRIC"
    )


def _better(st: Store, bench: str, metric: str) -> str:
    con = connect(st.root)
    try:
        glob = str(st.root / "observations" / "*" / "*" / "*.parquet")
        row = con.execute(
            "SELECT first(better) FROM read_parquet(?, hive_partitioning = true, "
            "hive_types = {'run': VARCHAR, 'label': VARCHAR}) WHERE benchmark = ? AND metric = ?",
            [glob, bench, metric],
        ).fetchone()
    finally:
        con.close()
    return str(row[0]) if row and row[0] else "lower"


def _cp_text(cp: ChangePoint) -> str:
    if cp.decision == "too few runs":
        return f"{cp.runs} runs: a change point needs {2 * MIN_SEGMENT} runs or more"
    step = f"step {cp.step:+.2f}% [{cp.lo:+.2f}, {cp.hi:+.2f}] (change of the ratio; t, runs as units)"
    if cp.decision == "changed":
        return f"changed at run {cp.at}: {step}; permutation p = {cp.p:.3g} over {cp.runs} runs"
    return (
        f"no change detected over {cp.runs} runs (permutation p = {cp.p:.3g}); largest {step} at run {cp.at}"
    )


def table(h: History) -> str:
    """The history as text: one line per run, then the decisions."""
    head = (
        f"{h.a} vs {h.b} on {h.benchmark} {h.metric} (overhead %, 95% interval; a slowdown of {h.a} positive)"
    )
    lines = [head]
    for p in h.points:
        unit = "machines" if p.unit == "machine" else "runs"
        line = (
            f"  {p.run:<24} {p.started[:19]:<19} {p.overhead:+7.2f} [{p.lo:+.2f}, {p.hi:+.2f}] "
            f"{p.decision:<12} {p.machines_a}v{p.machines_b} machines, {p.runs_a}v{p.runs_b} runs "
            f"({unit} as units)"
        )
        lines.append(line)
        lines += [f"      changed: {c}" for c in p.changes]
    lines.append(f"window: {h.window.text}")
    if h.between:
        bt = h.between
        rng = f"{bt.step:+.2f}% [{bt.lo:+.2f}, {bt.hi:+.2f}]" if math.isfinite(bt.step) else ""
        lines.append(f"{bt.first} -> {bt.second}: {bt.decision} {rng} ({bt.unit}; {bt.text})")
    if h.skipped:
        lines.append(f"runs without both labels on this metric: {', '.join(h.skipped)}")
    return "\n".join(lines)


def write(h: History, out: Path) -> list[Path]:
    """history.json, history.csv, history.svg and history.md into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    rows = pd.DataFrame(
        [
            {k: v for k, v in asdict(p).items() if k != "changes"} | {"changes": "; ".join(p.changes)}
            for p in h.points
        ]
    )
    files = [out / "history.json", out / "history.csv", out / "history.svg", out / "history.md"]
    write_atomically(files[0], json.dumps(h.as_dict(), indent=1) + "\n", what="history")
    write_atomically(files[1], rows.to_csv(index=False), what="history")
    write_atomically(files[2], plot(h), what="history")
    write_atomically(files[3], "```\n" + table(h) + "\n```\n", what="history")
    return files


def plot(h: History) -> str:
    """The overhead of each run with its interval, the change point's split marked (SVG text)."""
    pts = [(p.run, p.overhead, p.lo, p.hi) for p in h.points]
    split = h.window.at if h.window.decision == "changed" else ""
    return svgplot.series(
        pts, f"{h.a} vs {h.b}", f"{h.benchmark} {h.metric}: overhead % per run, 95% CI", split
    )
