"""``testbed-report build``: results directories in, index.html + summary.md + CSV + stats.json out."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape
from matplotlib.colors import to_hex

from testbed_reports import __version__, crypto_tables, plots, svgplot
from testbed_reports.anova import ANOVA_NOTE, anova_codes
from testbed_reports.compare import auto_pairs, compare, parse_pairs
from testbed_reports.errors import ReportError
from testbed_reports.fingerprint import fingerprints, label_factors, mismatches
from testbed_reports.load import Dataset, load
from testbed_reports.stats import BOOT_MAX_N, MIN_N_CV_CI, B, describe

#: label factors crossed in two-way ANOVAs: protection x CPU vendor, protection x disk encryption
FACTOR_PAIRS = (("protection", "vendor"), ("protection", "disk"))
MAX_PANELS = 4  # per-metric panels of the bar and ECDF charts (tables hold every metric)
MAX_CV_METRICS = 16
METHOD = [
    (
        "n, mean, median, sd and CV are computed over the ok runs of each label; failed, timed-out, skipped "
        "and interrupted runs are listed, never used as values."
    ),
    (
        "95% CI of the mean: Student t for a label measured on one machine; with several machines per label "
        "the repetitions are nested in machines and the label is resampled at the machine level (cluster "
        "bootstrap)."
    ),
    (
        f"CV and overhead CIs: percentile bootstrap, {B} seeded resamples (machine level when a label has "
        f"several machines; with only 2 machines that interval rests on 2 values and is coarse); one "
        f"machine with more than {BOOT_MAX_N} runs uses the bootstrap's large-sample limit (normal draws "
        f"of the mean, delta-method CV interval); one machine with fewer than {MIN_N_CV_CI} runs gets no "
        "CV interval."
    ),
    (
        "Overhead = (a/b - 1) x 100 for lower-is-better metrics and (b/a - 1) x 100 for higher-is-better "
        "ones, so a slowdown of a is always positive."
    ),
    (
        "Tests: two-sided Mann-Whitney U (verdict) and Welch t, on runs, or on machine means when both "
        "labels have at least 3 machines; p-values Holm-corrected across the metrics of each comparison; "
        "significant when the Holm-corrected Mann-Whitney p < 0.05."
    ),
    ANOVA_NOTE[0].upper() + ANOVA_NOTE[1:] + ".",
]


@dataclass
class Report:
    """What build computed (also returned to callers and tests)."""

    out: Path
    descriptives: pd.DataFrame
    comparisons: pd.DataFrame
    fingerprints: pd.DataFrame
    problems: list[str]
    anova: list[dict[str, Any]]
    status: pd.DataFrame


def _clean(x: Any) -> Any:
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, np.generic):
        return _clean(x.item())
    if isinstance(x, dict):
        return {str(k): _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    if x is pd.NA or x is pd.NaT:
        return None
    return x


def _records(df: pd.DataFrame) -> list[dict[str, Any]]:
    return [_clean(r) for r in df.astype(object).to_dict(orient="records")]


def factorial(ds: Dataset, factors: pd.DataFrame) -> list[dict[str, Any]]:
    """Two-way ANOVA per benchmark metric for each pair of fully crossed label factors."""
    out: list[dict[str, Any]] = []
    if ds.obs.empty:
        return out
    labels = ds.obs["label"].cat.categories
    label_codes = ds.obs["label"].cat.codes.to_numpy()
    values = ds.obs["value"].to_numpy()
    groups = ds.obs.groupby(["benchmark", "metric"], observed=True, sort=True).indices
    for fa, fb in FACTOR_PAIRS:
        f = factors.dropna(subset=[fa, fb])
        levels_a, levels_b = sorted(set(f[fa])), sorted(set(f[fb]))
        if len(levels_a) < 2 or len(levels_b) < 2:
            continue
        if len(set(zip(f[fa], f[fb], strict=True))) < len(levels_a) * len(levels_b):
            continue
        code_a = np.full(len(labels), -1)
        code_b = np.full(len(labels), -1)
        for lab, va, vb in zip(f["label"], f[fa], f[fb], strict=True):
            if lab in labels:
                k = labels.get_loc(lab)
                code_a[k], code_b[k] = levels_a.index(va), levels_b.index(vb)
        for (bench, metric), rows in groups.items():
            ca, cb = code_a[label_codes[rows]], code_b[label_codes[rows]]
            keep = (ca >= 0) & (cb >= 0)
            try:
                table = anova_codes(
                    values[rows][keep], ca[keep], cb[keep], len(levels_a), len(levels_b), fa, fb
                )
            except ReportError:
                continue
            out.append({"benchmark": bench, "metric": metric, "factors": [fa, fb], "table": table})
    return out


def _status(ds: Dataset) -> tuple[pd.DataFrame, pd.DataFrame]:
    rec = ds.records
    counts = rec.groupby(["label", "benchmark", "status"], observed=True).size().unstack(fill_value=0)
    counts = counts.reset_index()
    bad = rec[rec["status"] != "ok"][
        ["label", "host", "run_id", "benchmark", "repetition", "status", "error", "source", "line"]
    ]
    return counts, bad


def _md_table(df: pd.DataFrame, cols: Sequence[str]) -> str:
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in df[list(cols)].itertuples(index=False):
        lines.append("| " + " | ".join(_fmt(v) for v in r) + " |")
    return "\n".join(lines)


def _fmt(v: Any) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    if isinstance(v, (float, np.floating)):
        return f"{v:.4g}"
    return str(v).replace("|", "/")


def _summary_md(name: str, rep: Report, labels: list[str]) -> str:
    parts = [f"# Benchmark report: {name}", "", f"Labels: {', '.join(labels)}", ""]
    if rep.problems:
        parts += ["## EVIDENCE MISMATCH", "", *[f"- **{p}**" for p in rep.problems], ""]
    parts += ["## Comparisons", ""]
    if rep.comparisons.empty:
        parts += ["No comparison pairs (add inventory groups or use --compare A:B).", ""]
    else:
        parts += [f"- {v}" for v in rep.comparisons["verdict"]] + [""]
        parts += [
            _md_table(
                rep.comparisons,
                [
                    "comparison",
                    "benchmark",
                    "metric",
                    "overhead_percent",
                    "overhead_ci_low",
                    "overhead_ci_high",
                    "mw_p_holm",
                    "welch_p_holm",
                    "significant",
                ],
            ),
            "",
        ]
    parts += [
        "## Per label",
        "",
        _md_table(
            rep.descriptives,
            [
                "benchmark",
                "metric",
                "label",
                "unit",
                "n",
                "mean",
                "median",
                "sd",
                "cv_percent",
                "ci95_low",
                "ci95_high",
            ],
        ),
        "",
    ]
    parts += [
        "## Machines",
        "",
        _md_table(
            rep.fingerprints, ["label", "host", "cpu_model", "kernel", "cc_technology", "disk_encryption"]
        ),
        "",
    ]
    parts += ["## Method", "", *[f"- {m}" for m in METHOD], ""]
    return "\n".join(parts)


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("testbed_reports", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _fmt
    env.filters["pct"] = lambda v: (
        "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:+.1f}%"
    )
    env.filters["p"] = lambda v: (
        "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.2g}"
    )
    return env


def build(
    paths: Sequence[Path],
    out: Path,
    name: str | None = None,
    compare_specs: Sequence[str] = (),
    csv_mapping: Mapping[str, str] | None = None,
    csv_defaults: Mapping[str, str] | None = None,
) -> Report:
    """Build the report of DESIGN.md section 6 into ``out``."""
    ds = load(paths, csv_mapping, csv_defaults)
    name = name or out.name
    fp = fingerprints(ds.records, ds.sysinfo)
    if not ds.obs.empty:
        extra = ds.obs[["label", "run_id", "host", "groups"]].drop_duplicates()
        extra = extra[~extra["host"].astype(str).isin(fp["host"])]
        if len(extra):
            fp = pd.concat([fp, fingerprints(extra.astype(str), {})], ignore_index=True)
    flagged = mismatches(fp)
    problems = [p for _, p in flagged]
    factors = label_factors(fp)
    labels = sorted(set(ds.obs["label"].astype(str)) | set(ds.records["label"].astype(str)))
    desc, draws = describe(ds.obs)
    pairs = parse_pairs(list(compare_specs), labels) if compare_specs else auto_pairs(factors)
    cmp = compare(ds.obs, desc, draws, pairs)
    suspect = {lab for lab, _ in flagged}
    if len(cmp):
        bad_rows = cmp["a"].isin(suspect) | cmp["b"].isin(suspect)
        cmp["evidence_mismatch"] = bad_rows
        cmp.loc[bad_rows, "verdict"] = "EVIDENCE MISMATCH: " + cmp.loc[bad_rows, "verdict"]
    else:
        cmp["evidence_mismatch"] = pd.Series(dtype=bool)
    anova = factorial(ds, factors)
    counts, bad = _status(ds)
    rep = Report(out, desc, cmp, fp, problems, anova, counts)
    out.mkdir(parents=True, exist_ok=True)
    _write_tables(out, rep, bad, ds)
    crypto_tables.write([Path(p) for p in paths], out)  # seed-004 crypto tables (crypto_*.csv)
    _write_json(out, name, rep, bad, ds, labels, pairs)
    (out / "summary.md").write_text(_summary_md(name, rep, labels), encoding="utf-8")
    html = _render(name, rep, bad, ds, labels)
    (out / "index.html").write_text(html, encoding="utf-8")
    return rep


def _write_tables(out: Path, rep: Report, bad: pd.DataFrame, ds: Dataset) -> None:
    rep.descriptives.to_csv(out / "descriptives.csv", index=False)
    rep.comparisons.to_csv(out / "comparisons.csv", index=False)
    rep.fingerprints.to_csv(out / "fingerprints.csv", index=False)
    rep.status.to_csv(out / "status.csv", index=False)
    bad.to_csv(out / "failed_runs.csv", index=False)
    rows = [
        {"benchmark": a["benchmark"], "metric": a["metric"], "factors": "x".join(a["factors"]), **r}
        for a in rep.anova
        for r in a["table"]
    ]
    pd.DataFrame(
        rows,
        columns=["benchmark", "metric", "factors", "source", "df", "ss", "ss_percent", "F", "F_crit", "p"],
    ).to_csv(out / "anova.csv", index=False)
    _pct_table(ds).to_csv(out / "percentiles.csv", index=False)


def _pct_table(ds: Dataset) -> pd.DataFrame:
    if ds.percentiles.empty:
        return pd.DataFrame(columns=["benchmark", "label", "series", "percentile", "median_value", "runs"])
    return (
        ds.percentiles.groupby(["benchmark", "label", "series", "percentile"], observed=True)["value"]
        .agg(median_value="median", runs="count")
        .reset_index()
    )


def _write_json(
    out: Path, name: str, rep: Report, bad: pd.DataFrame, ds: Dataset, labels: list[str], pairs: list
) -> None:
    data = {
        "name": name,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "generator": f"testbed-report {__version__}",
        "sources": ds.sources,
        "labels": labels,
        "observations": len(ds.obs),
        "problems": rep.problems,
        "pairs": [{"a": p.a, "b": p.b, "kind": p.kind} for p in pairs],
        "descriptives": _records(rep.descriptives),
        "comparisons": _records(rep.comparisons),
        "anova": _clean(rep.anova),
        "fingerprints": _records(rep.fingerprints),
        "status": _records(rep.status),
        "failed_runs": _records(bad),
        "method": METHOD,
    }
    (out / "stats.json").write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def _overview(cmp: pd.DataFrame) -> list[dict[str, Any]]:
    """One line per comparison: how many metrics are significantly slower, faster or not different."""
    out = []
    for name, part in cmp.groupby("comparison", sort=False):
        sig = part["significant"].map(lambda s: s is True)
        ovh = part["overhead_percent"].to_numpy(float)
        ovh = ovh[np.isfinite(ovh)]
        out.append(
            {
                "comparison": name,
                "kind": part["kind"].iloc[0],
                "metrics": len(part),
                "slower": int((sig & (part["overhead_percent"] > 0)).sum()),
                "faster": int((sig & (part["overhead_percent"] < 0)).sum()),
                "not_significant": int((part["significant"].map(lambda s: s is False)).sum()),
                "median": float(np.median(ovh)) if len(ovh) else None,
                "min": float(ovh.min()) if len(ovh) else None,
                "max": float(ovh.max()) if len(ovh) else None,
                "mismatch": bool(part["evidence_mismatch"].any()),
            }
        )
    return out


def _heat(cmp: pd.DataFrame) -> dict[str, Any]:
    """Overhead heat map as a coloured table: rows benchmark metric, columns comparison."""
    cols = list(dict.fromkeys(cmp["comparison"]))
    finite = np.abs(cmp["overhead_percent"].to_numpy(float))
    finite = finite[np.isfinite(finite)]
    lim = max(float(np.percentile(finite, 95)) if len(finite) else 1.0, 1.0)
    cmap = matplotlib.colormaps["RdYlGn_r"]
    cells = {(r.benchmark, r.metric, r.comparison): r for r in cmp.itertuples(index=False)}
    rows = []
    for bench, metric in dict.fromkeys(zip(cmp["benchmark"], cmp["metric"], strict=True)):
        row = []
        for c in cols:
            r = cells.get((bench, metric, c))
            v = float(r.overhead_percent) if r is not None else float("nan")
            if not math.isfinite(v):
                row.append({"text": "", "color": "#fff", "title": ""})
                continue
            star = "*" if r.significant is True else ""
            shade = to_hex(cmap(0.5 + 0.5 * max(-1.0, min(1.0, v / lim))))
            row.append({"text": f"{v:+.1f}{star}", "color": shade, "title": r.verdict})
        rows.append({"name": f"{bench} · {metric}", "cells": row})
    return {"cols": cols, "rows": rows, "lim": lim}


def _positions(obs: pd.DataFrame, metrics: list[str]) -> dict[tuple[str, str], np.ndarray]:
    """Row positions (within ``obs``) of each (metric, label) of the shown metrics."""
    idx = obs.groupby(["metric", "label"], observed=True).indices
    return {k: v for k, v in idx.items() if k[0] in metrics}


def _render(name: str, rep: Report, bad: pd.DataFrame, ds: Dataset, labels: list[str]) -> str:
    palette = plots.colors(labels)
    sections = []
    desc = rep.descriptives
    pct = _pct_table(ds)
    obs_groups = ds.obs.groupby("benchmark", observed=True, sort=True).indices if not ds.obs.empty else {}
    values = ds.obs["value"].to_numpy()
    for bench in sorted(set(desc["benchmark"].astype(str))):
        d = desc[desc["benchmark"] == bench]
        metrics = list(dict.fromkeys(d["metric"]))
        shown = metrics[:MAX_PANELS]
        rows = obs_groups[bench]
        series = {
            (str(m), str(lab)): values[rows][pos]
            for (m, lab), pos in _positions(ds.obs.iloc[rows], shown).items()
        }
        units = dict(zip(d["metric"].astype(str), d["unit"].astype(str), strict=True))
        sec = {
            "name": bench,
            "rows": _records(d),
            "metrics": len(metrics),
            "panels_capped": len(metrics) > MAX_PANELS,
            "max_panels": MAX_PANELS,
            "bars": svgplot.bars(d, shown, palette),
            "ecdf": svgplot.ecdf(series, shown, units, palette),
            "cv": svgplot.cv_bars(d, metrics[:MAX_CV_METRICS], palette),
            "comparisons": _records(rep.comparisons[rep.comparisons["benchmark"] == bench]),
            "anova": [a for a in rep.anova if a["benchmark"] == bench],
        }
        bp = ds.percentiles[ds.percentiles["benchmark"] == bench]
        if len(bp):
            sec["pct_plot"] = plots.percentiles(bp, palette)
            sec["pct_rows"] = _records(pct[pct["benchmark"] == bench])
        sections.append(sec)
    heat = _heat(rep.comparisons) if not rep.comparisons.empty else None
    overview = _overview(rep.comparisons)
    failed = bad.head(500)
    return (
        _env()
        .get_template("report.html.j2")
        .render(
            name=name,
            generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            version=__version__,
            problems=rep.problems,
            overview=overview,
            labels=labels,
            comparisons=_records(rep.comparisons),
            heatmap=heat,
            sections=sections,
            fingerprints=_records(rep.fingerprints),
            status=_records(rep.status),
            status_cols=[c for c in rep.status.columns if c not in ("label", "benchmark")],
            failed=_records(failed),
            failed_total=len(bad),
            method=METHOD,
            sources=ds.sources,
            observations=len(ds.obs),
            records=len(ds.records),
        )
    )
