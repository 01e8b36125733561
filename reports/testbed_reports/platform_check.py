"""``testbed-report platform-check RESULTS... --out DIR``: does an emulator profile model its platform?

The same plan run on a real platform (records with ``resolved_real: true``, from a real FaaS
target) and on the emulator profile that models it (``resolved_real: false``; the profile's
platform in ``resolved_models``) is compared benchmark by benchmark and metric by metric.

Which side a record is on, the record says: ``resolved_real`` (true on a real platform), and on
the emulator ``resolved_models``, the platform its profile models. Records written before the
drivers named the target carry neither: for them the profile's name decides, by the frozen table
:data:`LEGACY_MODELS` (the rule of that time).

Estimand: the ratio platform/emulator of the geometric means of a metric (exp of the difference of
mean log values). Unit of replication: the execution (one record: a metric is a mean over its
calls), or the machine when both sides have two or more (``inference.estimate``). Interval: Welch
t on the log values at level 1 - alpha/m, Bonferroni over the m comparisons of the report, so the
chance that any printed interval misses its ratio is at most alpha (5 %). Decision: the report's
one decision core (``inference.decide``) against the stated tolerance t (default 25 %, the band
[1 - t, 1 + t] on the ratio): ``holds`` when it finds the sides equivalent (the interval inside
the band), ``does not hold`` when the interval lies wholly outside the band, ``inconclusive``
otherwise (with the executions that would resolve it at the observed spread). Calibrated by a
seeded simulation with known ratios (reports/tests/test_platform_check_calibration.py): a model
off by the tolerance or more is called ``holds`` in at most alpha of the simulated reports, a
model inside it ``does not hold`` in at most alpha.

The point ratio is also the factor that re-fits the profile: a handler time on the platform 1.3x
the emulator's means the profile's CPU share for that memory size is 1/1.3 of what it should be.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from testbed_reports import inference
from testbed_reports.errors import ReportError
from testbed_reports.inference import ALPHA, Estimate, estimate, sides
from testbed_reports.load import load
from testbed_shared.atomic import write_atomically
from testbed_shared.safecsv import write_frame

DEFAULT_TOLERANCE = 25.0
#: the profile's model of a platform: the metrics a profile is fitted to (others are compared too)
MODELLED = (
    "handler_s",
    "init_s",
    "cold_start_s",
    "calcs_per_s",
    "latency_s",
    "write_bytes_per_s",
    "read_bytes_per_s",
    "memory_peak_bytes",
    "gb_seconds",
    "price_per_call",
)
SIDES = ("platform", "emulator")
#: records written before the drivers (no ``resolved_real``): the profile's name prefix -> the
#: platform it models, as the emulator's profiles were named then (frozen: new records say it)
LEGACY_MODELS = {
    "aws-lambda": "aws-lambda",
    "gcf-gen2": "gcf-gen2",
    "azure-consumption": "azure-functions",
    "azure-functions": "azure-functions",
}


@dataclass
class Check:
    """One (platform, benchmark, metric): the ratio platform/emulator, its interval and verdict."""

    platform: str
    benchmark: str
    metric: str
    unit: str
    modelled: bool
    n_platform: int
    n_emulator: int
    ratio: float
    lo: float
    hi: float
    verdict: str
    reason: str


def side_of(params: dict[str, Any] | None) -> tuple[str, str] | None:
    """(side, platform) of a faas record's parameters, None if it is neither."""
    p = params or {}
    real = p.get("resolved_real")
    if real is True:
        return "platform", str(p.get("resolved_platform", ""))
    if real is False:
        modelled = p.get("resolved_models")
        return ("emulator", str(modelled)) if modelled else None
    profile = str(p.get("resolved_platform") or p.get("profile") or "")
    legacy = next((v for k, v in LEGACY_MODELS.items() if profile == k or profile.startswith(k + "-")), None)
    return ("emulator", legacy) if legacy else None


def decide(est: Estimate, alpha: float, tolerance: float) -> tuple[float, float, float, str, str]:
    """(ratio, lo, hi, verdict, reason) of one estimate at level 1 - alpha, tolerance in percent,
    from the report's decision core (``inference.decide``: overheads of the ratio in percent)."""
    nan = float("nan")
    if not est.ok:
        return nan, nan, nan, "inconclusive", est.reason
    d = inference.decide(est, "lower", alpha, tolerance)
    ratio, lo, hi = 1 + d.overhead / 100, 1 + d.lo / 100, 1 + d.hi / 100
    ci = f"[{lo:.3f}, {hi:.3f}]"
    if d.decision == "equivalent":
        band = f"{1 - tolerance / 100:.3f}..{1 + tolerance / 100:.3f}"
        return ratio, lo, hi, "holds", f"{ci} lies within {band}"
    if d.lo > tolerance or d.hi < -tolerance:
        return ratio, lo, hi, "does not hold", f"{ci} lies outside +-{tolerance:g}%"
    why = inference.needed(est, alpha, tolerance)
    return ratio, lo, hi, "inconclusive", f"{ci} spans the band's edge; {why}"


def compare(obs: pd.DataFrame, alpha: float = ALPHA, tolerance: float = DEFAULT_TOLERANCE) -> list[Check]:
    """Checks of every (platform, benchmark, metric) seen on both sides.

    ``obs`` has the report's observation columns plus ``side`` (platform|emulator) and
    ``platform`` (the real platform, or the one the emulator's profile models).
    """
    if obs.empty:
        return []
    both = obs.groupby(["platform", "benchmark", "metric"], observed=True)["side"].nunique()
    keys = [k for k, n in both.items() if n == 2]
    m = max(len(keys), 1)
    out: list[Check] = []
    for platform, part in obs.groupby("platform", observed=True):
        frame = part.assign(label=part["side"])
        cols = ["benchmark", "metric", "label", "host", "value", *(["record"] if "record" in frame else [])]
        moments = sides(frame[cols])
        units = frame.drop_duplicates("metric").set_index("metric")["unit"].to_dict()
        for plat, bench, metric in keys:
            if plat != platform:
                continue
            a, b = moments.get((bench, metric, "platform")), moments.get((bench, metric, "emulator"))
            if a is None or b is None:
                continue
            ratio, lo, hi, verdict, reason = decide(estimate(a, b), alpha / m, tolerance)
            out.append(
                Check(
                    str(platform),
                    str(bench),
                    str(metric),
                    str(units.get(metric, "")),
                    metric in MODELLED,
                    a.runs,
                    b.runs,
                    ratio,
                    lo,
                    hi,
                    verdict,
                    reason,
                )
            )
    return out


def observations(ds: Any) -> pd.DataFrame:
    """The faas observations of a Dataset with their side and platform (others dropped)."""
    marks = [side_of(p) for p in ds.params]
    side = pd.Series([s[0] if s else None for s in marks])
    platform = pd.Series([s[1] if s else None for s in marks])
    obs = ds.obs[ds.obs["type"].astype(str) == "faas"].copy()
    if obs.empty:
        return obs
    rec = obs["record"].to_numpy()
    obs["side"] = side.to_numpy()[rec]
    obs["platform"] = platform.to_numpy()[rec]
    return obs[obs["side"].notna()]


def render_md(checks: list[Check], tolerance: float) -> str:
    lines = [
        "# Emulator vs platform",
        "",
        f"Ratio platform/emulator of each metric's geometric mean, with its interval (Bonferroni over "
        f"{len(checks)} comparisons, family level 95 %), and whether the emulator's model holds within "
        f"+-{tolerance:g}%. Modelled metrics are marked *.",
        "",
        "| platform | benchmark | metric | n platform | n emulator | ratio | interval | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in checks:
        star = "*" if c.modelled else ""
        interval = f"[{c.lo:.3f}, {c.hi:.3f}]" if math.isfinite(c.lo) else "-"
        ratio = f"{c.ratio:.3f}" if math.isfinite(c.ratio) else "-"
        cells = (c.platform, c.benchmark, c.metric + star, c.n_platform, c.n_emulator, ratio, interval)
        lines.append("| " + " | ".join(map(str, cells)) + f" | {c.verdict}: {c.reason} |")
    counts = {
        v: sum(c.verdict == v for c in checks if c.modelled)
        for v in ("holds", "does not hold", "inconclusive")
    }
    lines += ["", "Modelled metrics: " + ", ".join(f"{n} {v}" for v, n in counts.items()), ""]
    return "\n".join(lines)


def run(results: list[Path], out: Path, tolerance: float = DEFAULT_TOLERANCE) -> list[Check]:
    """Load the results, compare, write platform-check.{md,json,csv} under ``out``."""
    ds = load(results)
    obs = observations(ds)
    have = set(obs["side"]) if not obs.empty else set()
    if have != set(SIDES):
        missing = ", ".join(sorted(set(SIDES) - have))
        raise ReportError(
            f"platform-check needs faas records of a real platform and of the emulator; missing: {missing}",
            hint="give the result directories of both runs (a real target's and an emulated one's)",
        )
    checks = compare(obs, ALPHA, tolerance)
    if not checks:
        raise ReportError("no benchmark ran on both a platform and the emulator profile that models it")
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(out / "platform-check.md", render_md(checks, tolerance))
    payload = {"tolerance_percent": tolerance, "alpha": ALPHA, "checks": [asdict(c) for c in checks]}
    write_atomically(out / "platform-check.json", json.dumps(payload, indent=1, allow_nan=True) + "\n")
    write_frame(pd.DataFrame([asdict(c) for c in checks]), out / "platform-check.csv")
    return checks


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "platform-check",
        help="compare a plan on a real FaaS platform with the emulator profile that models it",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("results", type=Path, nargs="+", help="result directories of both runs")
    p.add_argument("--out", type=Path, required=True, help="output directory")
    p.add_argument(
        "--tolerance",
        type=float,
        default=DEFAULT_TOLERANCE,
        help=f"percent the ratio may be off 1 for the model to hold (default {DEFAULT_TOLERANCE:g})",
    )
    p.set_defaults(func=_cli)


def _cli(args: argparse.Namespace) -> int:
    if not 0 < args.tolerance < 1000:
        raise ReportError(f"--tolerance {args.tolerance}: a percentage in (0, 1000)")
    checks = run(args.results, args.out, args.tolerance)
    print(render_md(checks, args.tolerance))
    print(f"written: {args.out}/platform-check.md, .json, .csv")
    return 0
