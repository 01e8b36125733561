"""``testbed-report build``: results directories in, index.html + summary.md + CSV + stats.json out."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import matplotlib
import numpy as np
import pandas as pd
from jinja2 import Environment, PackageLoader, select_autoescape
from matplotlib.colors import to_hex

from testbed_reports import __version__, crypto_tables, display, figures, plots, svgplot, wording
from testbed_reports.anova import ANOVA_NOTE, label_anova
from testbed_reports.audit import attest_column
from testbed_reports.compare import Pair, auto_pairs, cell_order, cells, decide_cells, headline, parse_pairs
from testbed_reports.design import power_text, report_power
from testbed_reports.diagnostics import STABLE_P, findings, windows
from testbed_reports.engine import paths_parts
from testbed_reports.errors import ReportError
from testbed_reports.export import parameter_anova_of, parameter_runs
from testbed_reports.fingerprint import fingerprints, label_factors, mismatches
from testbed_reports.inference import DEFAULT_MARGIN, Decision, MachineSpread, primary_set
from testbed_reports.load import Dataset, text_objects
from testbed_reports.numerics import batch_rows, distinct_rows, group_batches, key_groups
from testbed_reports.parts import part_rows
from testbed_reports.runs import Runs, positions, stable_order
from testbed_reports.stats import MIN_N_CV_CI, describe
from testbed_shared.atomic import write_atomically
from testbed_shared.intervals import share_interval
from testbed_shared.safecsv import write_frame

DECISIONS = ("slower", "faster", "equivalent", "inconclusive")
#: label factors crossed in two-way ANOVAs: protection x CPU vendor, protection x disk encryption
FACTOR_PAIRS = (("protection", "vendor"), ("protection", "disk"))
MAX_CV_METRICS = 16
_METHOD = [  # {drift_p}: filled in by method_text
    (
        "n, mean, median, sd and CV are computed over the ok runs of each label (a run's pyperf values are "
        "first summarised by their mean: a run, not a value inside it, is the unit); failed, timed-out, "
        "skipped and interrupted runs are listed, never used as values; a duplicated record (same run, host, "
        "benchmark, index and repetition) counts once. Means and sds are two-pass on values scaled by "
        "their group's largest magnitude, so they are finite and exact at any scale."
    ),
    (
        "95% CI: for a positive quantity (times, rates, sizes) the t interval of the mean log value, "
        "transformed back (the geometric mean's interval, never below zero); otherwise of the mean. Student "
        "t over runs for a label measured on one machine; with several machines the machine is the unit of "
        f"replication: t over the machine means. CV CI: Vangel's modified McKay interval (none below "
        f"{MIN_N_CV_CI} runs)."
    ),
    (
        "Overhead estimand: the ratio of geometric means a/b (log scale), shown as (a/b - 1) x 100 for "
        "lower-is-better metrics and (b/a - 1) x 100 for higher-is-better ones, so a slowdown of a is "
        "positive. Ratios are refused, with the reason, when a label has zero or negative values."
    ),
    (
        "Interval and scope: t on log values: on the machine means when both labels have at least 2 "
        "machines (scope types: the statement is about the VM types), otherwise on runs (scope machines: "
        "the statement is about these machines over the runs measured, with the machines per label a "
        "type-level decision would need), on the blocks both labels share (a paired design, record field "
        "block), or on runs plus a stated machine-spread prior (scope types via the prior, named in the "
        "verdict). Run-to-run noise comes from successive differences, so a level that moves over the runs "
        "(drift) is part of the mean over the runs measured, not an error. Within a comparison each spread "
        "is pooled over the metrics of its family where their spreads are homogeneous (empirical Bayes, "
        "limma-style; the verdict says what was pooled). Coverage and error rates of every rule are "
        "measured by seeded simulations (reports/tests/test_calibration_*.py): see docs/report.md."
    ),
    (
        "Decision, read from the printed interval: equivalent when it lies within +-margin (default 2%, "
        "--margin, --margin-for BENCH=PCT, or the record field margin_percent), slower when it lies above 0, "
        "faster when below 0, inconclusive otherwise, with the runs or machines that would resolve the "
        "margin at the observed spread. Equivalence this way is two one-sided tests at 2.5% each (TOST p "
        "shown)."
    ),
    (
        "Error control: the primary metric of each benchmark (fio bandwidth, dd latency, notebook wall time, "
        "crypto throughput, each pyperformance benchmark's time, FaaS latency) over all comparisons of "
        "the report forms one family; its intervals are simultaneous at 95% (a max-T critical value over "
        "the family, using the correlation of metrics measured on the same machines; p adjusted likewise), "
        "so the chance of any false slower/faster among them is at most 5%. Other metrics are "
        "secondary: unadjusted 95% intervals, listed under their benchmark and never counted in the "
        "headline, whose counts are of primary metrics per scope."
    ),
    (
        "Diagnostics beside each verdict, per machine: drift with run order (Spearman, p < 0.01, 6+ runs; "
        "KPSS level stability, p < {drift_p}, 8+ runs), "
        "outliers beyond robust z 5 (8+ runs; flagged, never removed), bimodality coefficient of the log "
        "values > 0.555 (20+ runs), "
        "fewer than 5 runs, and whether the compared labels' time windows overlap."
    ),
    ANOVA_NOTE[0].upper() + ANOVA_NOTE[1:] + ".",
]


def method_text(drift_p: float = STABLE_P) -> list[str]:
    """The report's *Method* paragraphs, with the drift level of ``build --drift-p``."""
    return [m.replace("{drift_p}", f"{drift_p:g}") for m in _METHOD]


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
    warnings: list[str] = field(default_factory=list)
    param_anova: list[dict[str, Any]] = field(default_factory=list)
    crypto: dict[str, Any] | None = None  # the crypto tables' report section (crypto_tables.section)
    drift_p: float = STABLE_P  # build --drift-p
    power: list[dict[str, Any]] = field(default_factory=list)  # design.report_power
    parts: int = 1  # how many parts the observations were read in (parts.py)


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


def factorial(
    ds: Dataset, factors: pd.DataFrame, log: bool = True, shared: Runs | None = None
) -> list[dict[str, Any]]:
    """Two-way ANOVA per benchmark metric for each pair of fully crossed label factors.

    On the log scale by default (multiplicative effects; raw when a value is not positive or on
    request), over runs (runs.py; ``shared``: the runs of ``ds.obs`` when the caller has them).
    Wherever labels have machines as replicates the machine means are the observations
    (anova.label_anova), so the residual is machine-to-machine variation.
    """
    out: list[dict[str, Any]] = []
    if ds.obs.empty:
        return out
    obs = (shared or Runs.of(ds.obs)).frame
    labels = obs["label"].cat.categories
    label_codes = obs["label"].cat.codes.to_numpy()
    host_codes = obs["host"].cat.codes.to_numpy()
    values = obs["value"].to_numpy()
    groups = _row_groups(obs, ["benchmark", "metric"])
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
            entry = label_anova(
                values[rows], label_codes[rows], host_codes[rows], code_a, code_b, log, (fa, fb)
            )
            if entry is None:
                continue
            table, scale, unit, single = entry
            out.append(
                {
                    "benchmark": bench,
                    "metric": metric,
                    "factors": [fa, fb],
                    "scale": scale,
                    "unit_of_replication": unit,
                    "table": table,
                    "note": _anova_note(unit, [str(labels[k]) for k in single]),
                }
            )
    return out


def _row_groups(obs: pd.DataFrame, keys: list[str]) -> dict[Any, np.ndarray]:
    """``obs.groupby(keys, observed=True, sort=True).indices``: per key (a tuple), its rows in
    row order; from the group codes (``numerics.key_groups``: one array of n, not pandas' several),
    a batch of whole groups at a time (``numerics.group_batches``: the sort's working arrays of a
    batch, not of every row), as 32-bit positions where they fit (``runs.positions``)."""
    table, codes = key_groups(obs, keys, "n")
    names = list(table[keys].itertuples(index=False, name=None))
    counts = table["n"].to_numpy()
    out: dict[Any, np.ndarray] = {}
    for lo, hi in group_batches(codes) or ([(0, len(table))] if len(table) else []):
        rows = batch_rows(codes, lo, hi)
        order = positions(rows[stable_order(codes[rows])])
        out.update(zip(names[lo:hi], np.split(order, np.cumsum(counts[lo:hi])[:-1]), strict=True))
    return out


def _anova_note(unit: str, single: list[str]) -> str:
    """What a label ANOVA speaks about (anova.label_anova's unit and its one-machine labels)."""
    if unit != "machine mean":
        return (
            "every label has one machine: the runs are the observations, so the table speaks about these "
            "machines; label effects are not separable from machine effects (no statement about VM types)"
        )
    if single:
        return (
            f"machine means (machines nested in labels); {', '.join(single)} with one machine: not separable "
            "from its machine (its cell rests on one machine)"
        )
    return "machine means (machines nested in labels): the residual is the machine-to-machine variation"


def _one_anova(
    v: np.ndarray,
    lab: np.ndarray,
    host: np.ndarray,
    code_a: np.ndarray,
    code_b: np.ndarray,
    log: bool,
    names: tuple[str, str],
) -> tuple[list[dict], str, str] | None:
    """One metric's ANOVA table, its scale and its unit of replication (anova.label_anova)."""
    res = label_anova(v, lab, host, code_a, code_b, log, names)
    return None if res is None else res[:3]


def _family_size(cmp: pd.DataFrame) -> int:
    """Primary comparisons with an interval (the family the simultaneous level is over)."""
    if cmp.empty:
        return 0
    return int((cmp["primary"].astype(bool) & np.isfinite(cmp["overhead_ci_low"].astype(float))).sum())


def blocked(ds: Dataset) -> pd.DataFrame:
    """The observations with each record's ``block`` (records.BLOCK_FIELD) when any record has one:
    the comparison pairs runs of two labels that share a block (inference.paired)."""
    rec = ds.records
    if ds.obs.empty or "block" not in rec or not rec["block"].notna().any():
        return ds.obs
    pos = ds.obs["record"].to_numpy()
    block = text_objects(rec["block"]).to_numpy()  # the store's categorical as the loader's objects
    return ds.obs.assign(block=np.where(pos >= 0, block[np.maximum(pos, 0)], None))


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
        lines.append("| " + " | ".join(_md(_fmt(v)) for v in r) + " |")
    return "\n".join(lines)


def _fmt(v: Any) -> str:
    """A cell of a table: a number in plain digits (``display.short``: 4 significant digits, no
    trailing zeros), never an exponent; anything else as text."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    if isinstance(v, (float, np.floating)):
        return display.short(float(v), 4)
    return str(v)


_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_{}[]#|~>"} | {"<": "&lt;", "&": "&amp;"})


def _md(text: Any) -> str:
    """Text safe inside a Markdown line or table cell: no markup, no HTML, no line breaks."""
    flat = " ".join(str(text).split())
    return flat.translate(_MD_SPECIAL)


def _verdict_md(c: Any, prefix: str = "") -> str:
    return f"- {prefix}{_md(c.verdict)}" + (f" [{_md(c.diagnostics)}]" if c.diagnostics else "")


def _decisions_md(cmp: pd.DataFrame) -> list[str]:
    """Primary decisions per scope (with their counts), then secondary ones under their benchmark."""
    parts: list[str] = []
    prim = cmp[cmp["primary"].astype(bool)]
    for scope, title in (("types", "VM types (machines as replicates)"), ("machines", "these machines")):
        part = prim[prim["scope"] == scope]
        if part.empty:
            continue
        counts = part["decision"].value_counts()
        tally = ", ".join(f"{int(counts.get(d, 0))} {d}" for d in DECISIONS)
        parts += [f"### Primary metrics, scope {scope}: {title} ({len(part)}: {tally})", ""]
        parts += [_verdict_md(c, f"**{c.decision}**: ") for c in part.itertuples(index=False)] + [""]
    sec = cmp[~cmp["primary"].astype(bool)]
    for bench, part in sec.groupby("benchmark", sort=True):
        parts += [f"### {_md(bench)}: secondary metrics (unadjusted, not counted above)", ""]
        parts += [_verdict_md(c, f"{c.decision} (unadjusted): ") for c in part.itertuples(index=False)] + [""]
    return parts


def _summary_md(name: str, rep: Report, labels: list[str]) -> str:
    parts = [f"# Benchmark report: {_md(name)}", "", f"Labels: {', '.join(_md(x) for x in labels)}", ""]
    if rep.problems:
        parts += ["## EVIDENCE MISMATCH", "", *[f"- **{_md(p)}**" for p in rep.problems], ""]
    if rep.warnings:
        parts += ["## Input warnings", "", *[f"- {_md(w)}" for w in rep.warnings], ""]
    parts += ["## Comparisons", ""]
    if rep.comparisons.empty:
        parts += ["No comparison pairs (add inventory groups or use --compare A:B).", ""]
    else:
        cmp = rep.comparisons.sort_values("primary", ascending=False, kind="stable")
        parts += _decisions_md(cmp)
        parts += [
            _md_table(
                cmp,
                [
                    "comparison",
                    "benchmark",
                    "metric",
                    "primary",
                    "scope",
                    "overhead_percent",
                    "overhead_ci_low",
                    "overhead_ci_high",
                    "ci_level",
                    "p",
                    "p_adjusted",
                    "tost_p",
                    "decision",
                    "diagnostics",
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
                "diagnostics",
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
    if rep.power:
        parts += ["## Power", "", *[f"- {_md(power_text(p))}" for p in rep.power], ""]
    parts += _section_md(rep.crypto)
    parts += ["## Method", "", *[f"- {m}" for m in method_text(rep.drift_p)], ""]
    return "\n".join(parts)


def _section_md(sec: dict[str, Any] | None) -> list[str]:
    """An extra report section (title, note, tables with their notes) as summary.md lines."""
    if not sec:
        return []
    parts = [f"## {_md(sec['title'])}", "", _md(sec["note"]), ""]
    for t in sec["tables"]:
        parts += [f"### {_md(t['caption'])}", "", _md(t.get("note", "")), ""]
        parts += [_md_table(pd.DataFrame(t["rows"], columns=t["columns"]), t["columns"]), ""]
    return parts


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
    env.filters["p"] = lambda v: display.p_value(_float(v))
    env.filters["exact"] = lambda v: display.exact(_float(v))
    env.filters["human"] = lambda v, unit, sc=None: display.human(_float(v), str(unit), sc)
    env.filters["cell"] = _cell
    env.filters["interval"] = lambda lo, hi, unit, sc=None: display.interval(
        _float(lo), _float(hi), str(unit), sc
    )
    return env


#: column-name suffixes of the extra sections' tables -> the unit their values are in
_COLUMN_UNITS = (
    ("_bytes_per_s", "B/s"),
    ("_ops_per_s", "op/s"),
    ("_Bps", "B/s"),
    ("_bytes", "B"),
    ("_s", "s"),
)


def _cell(v: Any, column: str) -> str:
    """A table cell of an extra section: a number in a column named for its unit, scaled for
    reading (``throughput_Bps`` 2.414e9 -> "2.41 GB/s"); anything else as ``num`` shows it."""
    for suffix, unit in _COLUMN_UNITS:
        if str(column).endswith(suffix) and isinstance(v, (int, float)) and not isinstance(v, bool):
            return display.human(float(v), unit)
    return _fmt(v)


def _float(v: Any) -> float | None:
    try:
        return None if v is None else float(v)
    except (TypeError, ValueError):
        return None


def build(
    paths: Sequence[Path],
    out: Path,
    name: str | None = None,
    compare_specs: Sequence[str] = (),
    csv_mapping: Mapping[str, str] | None = None,
    csv_defaults: Mapping[str, str] | None = None,
    margin: float = DEFAULT_MARGIN,
    margins: Mapping[str, float] | None = None,
    anova_log: bool = True,
    prior: MachineSpread | None = None,
    drift_p: float = STABLE_P,
    store: Path | None = None,
) -> Report:
    """Build the report of docs/design.md section 6 into ``out``.

    ``margin`` is the equivalence margin in percent; ``margins`` overrides it per benchmark (and
    wins over a record's own ``margin_percent``); ``prior`` is an optional machine-spread prior
    (inference.MachineSpread) that makes one-machine labels type-level; ``drift_p`` the KPSS
    level-stability p below which a machine's runs count as drifting (its run-level decisions are
    withheld; docs/report.md *Drift*); ``store`` the results store the results directories are read
    through (default ``<results>/_store`` beside them: ``store.default_store``).
    """
    if not (math.isfinite(margin) and 0 < margin < 100):
        raise ReportError(f"--margin {margin!r}: expected a percentage between 0 and 100")
    if not (math.isfinite(drift_p) and 0 < drift_p < 1):
        raise ReportError(f"--drift-p {drift_p!r}: expected a probability between 0 and 1")
    parts = paths_parts(paths, csv_mapping, csv_defaults, store, part_rows())  # issue 36
    ds = parts.ds  # everything but the observations, which come a part at a time (parts.py)
    name = name or out.name
    fp = fingerprints(ds.records, ds.sysinfo)
    if len(parts.csv):  # rows of a CSV: no record, no fingerprint
        extra = parts.csv[["label", "run_id", "host", "groups"]].drop_duplicates()
        extra = extra[~extra["host"].astype(str).isin(fp["host"])]
        if len(extra):
            fp = pd.concat([fp, fingerprints(extra.astype(str), {})], ignore_index=True)
    flagged = mismatches(fp)
    fp, unverified = attest_column(paths, fp)  # audited attestation column + banner (issue 14)
    flagged += unverified
    problems = [p for _, p in flagged]
    factors = label_factors(fp)
    labels = sorted(parts.labels | {str(x) for x in ds.records["label"].unique()})
    pairs = parse_pairs(list(compare_specs), labels) if compare_specs else auto_pairs(factors)
    per_bench = {**ds.margins, **(margins or {})}
    palette = plots.colors(labels)
    seen = Observed(labels)
    for part in parts:
        seen.parts.append(
            _part_statistics(part, pairs, margin, per_bench, prior, drift_p, factors, anova_log, palette)
        )
        del part  # this part's observations are freed before the next part is read
    desc = seen.descriptives()
    cmp = decide_cells(cell_order(seen.cells, pairs), seen.notes, windows(ds.records), seen.drift)
    suspect = {lab for lab, _ in flagged}
    if len(cmp):
        bad_rows = cmp["a"].isin(suspect) | cmp["b"].isin(suspect)
        cmp["evidence_mismatch"] = bad_rows
        cmp.loc[bad_rows, "verdict"] = "EVIDENCE MISMATCH: " + cmp.loc[bad_rows, "verdict"]
    else:
        cmp["evidence_mismatch"] = pd.Series(dtype=bool)
    counts, bad = _status(ds)
    rep = Report(
        out,
        desc,
        cmp,
        fp,
        problems,
        seen.anova(),
        counts,
        list(ds.warnings),
        parameter_anova_of(seen.param_runs, anova_log),
        drift_p=drift_p,
        power=report_power(cmp, _family_size(cmp)),
        parts=len(parts.groups),
    )
    out.mkdir(parents=True, exist_ok=True)
    _write_tables(out, rep, bad, ds)
    rep.crypto = crypto_tables.section(*crypto_tables.write(crypto_tables.cells_of(ds.crypto), out))
    _write_json(out, name, rep, bad, ds, labels, pairs, seen.count)
    write_atomically(out / "summary.md", _summary_md(name, rep, labels), what="report")
    html = _render(name, rep, bad, ds, labels, seen)
    write_atomically(out / "index.html", html, what="report")
    return rep


@dataclass
class Observed:
    """What the report keeps of its observations once each part's statistics are computed: every
    part's tables, analysis cells (decided together at the end) and what the HTML shows of its
    observations (ECDF panels, facts, types), merged over the parts on first use."""

    labels: list[str] = field(default_factory=list)  # every label of the report (the colours' order)
    parts: list[PartStats] = field(default_factory=list)

    @functools.cached_property
    def cells(self) -> list[Any]:
        return [c for p in self.parts for c in p.cells]

    @functools.cached_property
    def notes(self) -> dict[tuple[str, str, str], list[str]]:
        return {k: v for p in self.parts for k, v in p.notes.items()}

    @functools.cached_property
    def drift(self) -> dict[tuple[str, str, str], list[Any]]:
        return {k: v for p in self.parts for k, v in p.drift.items()}

    @functools.cached_property
    def primary(self) -> set[tuple[str, str]]:
        return {x for p in self.parts for x in p.primary}

    @functools.cached_property
    def types(self) -> dict[str, str]:
        return {k: v for p in self.parts for k, v in p.types.items()}

    @functools.cached_property
    def figure_types(self) -> dict[str, str]:
        return {k: v for p in self.parts for k, v in p.figure_types.items()}

    @functools.cached_property
    def facts(self) -> dict[str, list[str]]:
        return {k: v for p in self.parts for k, v in p.facts.items()}

    @functools.cached_property
    def ecdf(self) -> dict[str, list[Any]]:
        return {k: v for p in self.parts for k, v in p.ecdf.items()}

    @property
    def param_runs(self) -> list[pd.DataFrame | None]:
        return [p.param_runs for p in self.parts]

    @property
    def count(self) -> int:
        return sum(p.count for p in self.parts)

    def descriptives(self) -> pd.DataFrame:
        """Every part's descriptive rows, in the order of one frame's (parts of sorted benchmarks)."""
        if len(self.parts) == 1:
            return self.parts[0].desc
        return pd.concat([p.desc for p in self.parts], ignore_index=True)

    def anova(self) -> list[dict[str, Any]]:
        """Every part's ANOVA tables, factor pair by factor pair as ``factorial`` orders them."""
        rows = [a for p in self.parts for a in p.anova]
        return sorted(rows, key=lambda a: FACTOR_PAIRS.index(tuple(a["factors"])))


@dataclass
class PartStats:
    """One part's statistics (``_part_statistics``)."""

    desc: pd.DataFrame
    notes: dict[tuple[str, str, str], list[str]]
    drift: dict[tuple[str, str, str], list[Any]]
    cells: list[Any]
    anova: list[dict[str, Any]]
    primary: set[tuple[str, str]]
    types: dict[str, str]
    figure_types: dict[str, str]
    facts: dict[str, list[str]]
    ecdf: dict[str, list[Any]]
    param_runs: pd.DataFrame | None
    count: int


def _part_statistics(
    ds: Dataset,
    pairs: list[Pair],
    margin: float,
    per_bench: Mapping[str, float],
    prior: MachineSpread | None,
    drift_p: float,
    factors: pd.DataFrame,
    anova_log: bool,
    palette: dict[str, str],
) -> PartStats:
    """The statistics of a part's benchmarks: descriptives with their diagnostics, the analysis
    cells of every pair (decided later, over every part's cells), the ANOVAs, and what the HTML
    shows of the observations themselves."""
    obs = ds.obs
    shared = Runs.of(obs)  # the runs and their groups, once for every statistic below
    desc = describe(obs, shared)
    notes, drift = findings(obs, drift_p, shared)
    keys = zip(desc["benchmark"], desc["metric"], desc["label"], strict=True)
    desc["diagnostics"] = ["; ".join(notes.get(k, [])) for k in keys]
    measured = _measured(blocked(ds))
    compared = desc[desc["benchmark"].astype(str).isin(_text_set(measured["benchmark"]))]  # no facts
    same = shared if measured is obs else None  # no fact and no block column: the same runs
    todo = cells(measured, compared, pairs, margin, per_bench, prior, same) if pairs and len(measured) else []
    anova = factorial(ds, factors, anova_log, shared)
    del shared, same, measured  # the runs' frame and groupings: what follows does without them
    primary = primary_set(obs)
    types = _types(ds)
    figure_types = {}
    if not obs.empty:
        kinds = distinct_rows(obs, ["benchmark", "type"]).astype(str)
        figure_types = dict(zip(kinds["benchmark"], kinds["type"], strict=True))
    facts, ecdf = {}, {}
    values = obs["value"].to_numpy()
    for bench in sorted(set(desc["benchmark"].astype(str))):
        if types.get(bench) in display.FACT_TYPES:
            facts[bench] = _facts(ds, bench)
            continue
        shown = _shown(bench, desc[desc["benchmark"] == bench], primary)
        rows = np.flatnonzero(_text_in(obs["benchmark"], {bench}))  # one benchmark's rows at a time
        series = {
            (str(m), str(lab)): values[rows][pos]
            for (m, lab), pos in _positions(obs[["metric", "label"]].iloc[rows], shown.plotted).items()
        }
        ecdf[bench] = svgplot.ecdf_panels(series, shown.plotted, shown.units, palette) if series else []
    return PartStats(
        desc,
        notes,
        drift,
        todo,
        anova,
        primary,
        types,
        figure_types,
        facts,
        ecdf,
        parameter_runs(ds),
        len(obs),
    )


class Shown(NamedTuple):
    """A benchmark's descriptive rows as its section shows them (``_shown``)."""

    counters: pd.DataFrame  # internal counters and flags: shown as facts
    cpu: pd.DataFrame  # CPU use: its own table
    rows: pd.DataFrame  # the statistics, the primary metric first
    metrics: list[Any]  # the metrics of ``rows``
    units: dict[str, str]
    plotted: list[Any]  # the metrics the plots show


def _shown(bench: str, d: pd.DataFrame, primary: set[tuple[str, str]]) -> Shown:
    """A benchmark's descriptive rows split as its section shows them: counters, CPU use, and the
    statistics (the primary metric first), with the metrics the plots show."""
    counter = np.array(
        [display.is_counter(str(m), str(u)) for m, u in zip(d["metric"], d["unit"], strict=True)], dtype=bool
    )
    counters, d = d[counter], d[~counter]
    cpu = np.array([display.is_cpu_use(str(m)) for m in d["metric"]], dtype=bool)
    cpu_use, d = d[cpu], d[~cpu]
    first = d["metric"].map(lambda m, b=bench: (b, m) not in primary).to_numpy()
    d = d.iloc[np.argsort(first, kind="stable")]  # the primary metric first (table and plots)
    metrics = list(dict.fromkeys(d["metric"]))
    units = dict(zip(d["metric"].astype(str), d["unit"].astype(str), strict=True))
    plotted = figures.plot_metrics(metrics, units, [m for m in metrics if (bench, m) in primary])
    return Shown(counters, cpu_use, d, metrics, units, plotted)


def _write_tables(out: Path, rep: Report, bad: pd.DataFrame, ds: Dataset) -> None:
    write_frame(rep.descriptives, out / "descriptives.csv")  # safe CSV cells (issue 26)
    write_frame(rep.comparisons, out / "comparisons.csv")
    write_frame(rep.fingerprints, out / "fingerprints.csv")
    write_frame(rep.status, out / "status.csv")
    write_frame(bad, out / "failed_runs.csv")
    rows = [
        {"benchmark": a["benchmark"], "metric": a["metric"], "factors": "x".join(a["factors"]), **r}
        for a in rep.anova
        for r in a["table"]
    ]
    cols = ["benchmark", "metric", "factors", "source", "df", "ss", "ss_percent", "F", "F_crit", "p"]
    write_frame(pd.DataFrame(rows, columns=cols), out / "anova.csv")
    write_frame(_pct_table(ds), out / "percentiles.csv")
    rows = [
        {
            "type": a["type"],
            "metric": a["metric"],
            "factors": "x".join(a["factors"]),
            "scale": a["scale"],
            **r,
        }
        for a in rep.param_anova
        for r in a["table"]
    ]
    write_frame(pd.DataFrame(rows), out / "parameter_anova.csv")


def _pct_table(ds: Dataset) -> pd.DataFrame:
    if ds.percentiles.empty:
        return pd.DataFrame(columns=["benchmark", "label", "series", "percentile", "median_value", "runs"])
    return (
        ds.percentiles.groupby(["benchmark", "label", "series", "percentile"], observed=True)["value"]
        .agg(median_value="median", runs="count")
        .reset_index()
    )


def _write_json(
    out: Path,
    name: str,
    rep: Report,
    bad: pd.DataFrame,
    ds: Dataset,
    labels: list[str],
    pairs: list,
    observations: int,
) -> None:
    data = {
        "name": name,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "generator": f"testbed-report {__version__}",
        "sources": ds.sources,
        "labels": labels,
        "observations": observations,
        "problems": rep.problems,
        "pairs": [{"a": p.a, "b": p.b, "kind": p.kind} for p in pairs],
        "descriptives": _records(rep.descriptives),
        "comparisons": _records(rep.comparisons),
        "anova": _clean(rep.anova),
        "parameter_anova": _clean(
            [{k: v for k, v in a.items() if k != "histogram"} for a in rep.param_anova]
        ),
        "warnings": rep.warnings,
        "fingerprints": _records(rep.fingerprints),
        "status": _records(rep.status),
        "failed_runs": _records(bad),
        "method": method_text(rep.drift_p),
        "power": _clean(rep.power),
    }
    write_atomically(out / "stats.json", json.dumps(data, indent=1) + "\n", what="report")


def _overview(cmp: pd.DataFrame) -> list[dict[str, Any]]:
    """The headline: per comparison and scope, the primary metrics decided slower, faster,
    equivalent, inconclusive (compare.headline; secondary metrics never count here)."""
    return headline(cmp)


def _certain(lo: float, hi: float) -> float:
    """The end of an overhead interval nearest zero when the interval excludes zero (the smallest
    overhead the data support, with its sign), else 0: what the heat map colours."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo <= 0 <= hi:
        return 0.0
    return lo if lo > 0 else hi


def _heat(cmp: pd.DataFrame) -> dict[str, Any]:
    """Overhead heat map as a coloured table: rows benchmark metric, columns comparison.

    The colour carries certainty, not the point estimate: a cell is coloured by the end of its
    interval nearest zero (:func:`_certain`), so only an interval that excludes zero is coloured,
    and a noisy estimate (p99 -25.7 % [-61, +42]) stays white however large it is; an equivalent
    comparison is pale blue. The cell's text is the estimate with its interval.
    """
    cols = list(dict.fromkeys(cmp["comparison"]))
    spans = zip(cmp["overhead_ci_low"], cmp["overhead_ci_high"], strict=True)
    ends = np.array([_certain(float(lo), float(hi)) for lo, hi in spans])
    ends = np.abs(ends[np.isfinite(ends) & (ends != 0)])
    lim = max(float(np.percentile(ends, 95)) if len(ends) else 1.0, 1.0)
    cmap = matplotlib.colormaps["RdYlGn_r"]
    cells = {(r.benchmark, r.metric, r.comparison): r for r in cmp.itertuples(index=False)}
    rows = []
    for bench, metric in dict.fromkeys(zip(cmp["benchmark"], cmp["metric"], strict=True)):
        row = []
        for c in cols:
            r = cells.get((bench, metric, c))
            v = float(r.overhead_percent) if r is not None else float("nan")
            if not math.isfinite(v):
                row.append({"text": "", "color": "#fff", "title": "", "col": c})
                continue
            decided = r.decision in ("slower", "faster") and bool(r.primary)
            star = ("*" if r.scope == "types" else "†") if decided else ""
            lo, hi = float(r.overhead_ci_low), float(r.overhead_ci_high)
            sure = _certain(lo, hi)
            shade = (
                to_hex(cmap(0.5 + 0.5 * max(-1.0, min(1.0, sure / lim))))
                if sure
                else "#e1ecf8"
                if r.decision == "equivalent"
                else "#fff"
            )
            span = f" [{lo:+.1f}, {hi:+.1f}]" if math.isfinite(lo) and math.isfinite(hi) else ""
            row.append({"text": f"{v:+.1f}{star}{span}", "color": shade, "title": r.verdict, "col": c})
        first = next((cells[(bench, metric, c)] for c in cols if (bench, metric, c) in cells), None)
        tag = "" if first is None or bool(first.primary) else " (secondary, unadjusted)"
        rows.append({"name": f"{bench} · {metric}{tag}", "cells": row})
    return {"cols": cols, "rows": rows, "lim": lim}


def _positions(obs: pd.DataFrame, metrics: list[str]) -> dict[tuple[str, str], np.ndarray]:
    """Row positions (within ``obs``) of each (metric, label) of the shown metrics."""
    idx = obs.groupby(["metric", "label"], observed=True).indices
    return {k: v for k, v in idx.items() if k[0] in metrics}


#: telemetry columns of the records: (column, what it is, its upper bound: a share of the machine
#: cannot exceed 100 %, a process's CPU can exceed one core)
TELEMETRY = (
    ("cpu_percent", "machine CPU % (all cores, every process)", 100.0),
    ("process_cpu_percent", "benchmark processes' CPU (% of one core)", math.inf),
    ("steal_percent", "steal %", 100.0),
)


def _telemetry(ds: Dataset) -> dict[str, list[dict[str, Any]]]:
    """Per benchmark and label, from the ok records' telemetry: machine CPU % (all cores, every
    process), the benchmark processes' CPU (% of one core) and steal %, each the mean over the
    records with the t interval of the mean within its bounds (``intervals.share_interval``)."""
    rec = ds.records
    if rec.empty or "cpu_percent" not in rec:
        return {}
    ok = rec[(rec["status"] == "ok") & (rec["cpu_percent"].notna() | rec["steal_percent"].notna())]
    if ok.empty:
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for (bench, label), part in ok.groupby(["benchmark", "label"], sort=True, observed=True):
        row: dict[str, Any] = {"label": str(label), "records": len(part)}
        for col, _, bound in TELEMETRY:
            vals = pd.to_numeric(part.get(col, pd.Series(dtype=float)), errors="coerce").dropna()
            mean, lo, hi, _ = share_interval(vals.tolist(), bound) if len(vals) else (None, None, None, "")
            row[col] = display.human(_float(mean), "%") + (
                " " + display.interval(lo, hi, "%") if len(vals) > 1 else ""
            )
        out.setdefault(str(bench), []).append(row)
    return out


#: extra report sections: each builder returns {"id", "title", "note", "tables": [{"caption",
#: "columns", "rows"}]} or None; the one place where sections beyond the per-benchmark ones join
SECTION_BUILDERS: list[Any] = []


def _extra_sections(rep: Report, ds: Dataset, seen: Observed) -> list[dict[str, Any]]:
    out = []
    for builder in [_figures_section, _crypto_section, _param_section, *SECTION_BUILDERS]:
        sec = builder(rep, ds, seen)
        if sec:
            out.append(sec)
    return out


def _figures_section(rep: Report, ds: Dataset, seen: Observed) -> dict[str, Any] | None:
    if not seen.count:
        return None
    palette = plots.colors(seen.labels)
    return figures.section(rep.descriptives, seen.figure_types, label_factors(rep.fingerprints), palette)


def _crypto_section(rep: Report, ds: Dataset, seen: Observed) -> dict[str, Any] | None:
    return rep.crypto


def _param_section(rep: Report, ds: Dataset, seen: Observed) -> dict[str, Any] | None:
    if not rep.param_anova:
        return None
    tables = []
    for a in rep.param_anova:
        what = f"{a['type']} {a['metric']} by {' x '.join(a['factors'])} ({a['scale']} scale)"
        tables.append(
            {
                "caption": f"ANOVA: {what}",
                "columns": ["source", "df", "ss_percent", "F", "F_crit", "p"],
                "rows": _clean(a["table"]),
            }
        )
        # the interval sits beside the quantity it is about (geomean on the log scale)
        cols = [*a["factors"], "n", "mean", "sd", "cv_percent"]
        cols += ["geomean", "ci95_low", "ci95_high", "ci_scale"]
        tables.append(
            {
                "caption": f"cells: {what}",
                "columns": cols,
                "rows": _clean(a["cells"]),
                "image": a.get("histogram"),
            }
        )
        if a.get("tukey"):
            tcols = ["group1", "group2", "meandiff", "lower", "upper", "p_adj", "reject"]
            tables.append(
                {"caption": f"Tukey HSD between cells: {what}", "columns": tcols, "rows": _clean(a["tukey"])}
            )
    note = (
        "Plan parameters (and the label) as factors of each primary metric: " + ANOVA_NOTE.split(";")[0] + "."
    )
    return {"id": "parameters", "title": "Analysis over plan parameters", "note": note, "tables": tables}


#: what to type to compare real machines (shown when the report compares no inventory groups)
NEXT_COMMANDS = (
    (
        "ansible-playbook run.yml -l sev,tdx",
        "AMD SEV-SNP and Intel TDX confidential VMs on Azure against their non-confidential twins "
        "(README: Running on Azure)",
    ),
    (
        "ansible-playbook run.yml -l kvm,hyperv",
        "the same Debian guest on KVM and on Hyper-V (put your lab's hosts in inventory/lab.yml)",
    ),
    (
        "testbed-report build results/RUN_A results/RUN_B --compare A:B --out reports/out/a-vs-b",
        "any two labels already in the results store",
    ),
)
#: groups per headline figure (a benchmark with more primary metrics shows the first ones)
MAX_HEADLINE_GROUPS = 12
_ORDER = {"slower": 0, "faster": 1, "equivalent": 2, "inconclusive": 3}


def _headline(rep: Report, seen: Observed, palette: dict[str, str]) -> dict[str, Any]:
    """The report's first screen: the decisions on primary metrics and one figure per benchmark."""
    cmp = rep.comparisons
    prim = cmp[cmp["primary"].astype(bool)] if len(cmp) else cmp
    decisions = []
    for r in _records(prim):
        scope = r.get("scope") or (
            "machines" if int(r.get("machines_a") or 1) < 2 or int(r.get("machines_b") or 1) < 2 else "types"
        )
        what = f"{r['benchmark']} · {display.pretty_metric(str(r['metric']))}"
        dec = _decision_of(r)
        decisions.append(
            r
            | {
                "what": what,
                "sentence": wording.sentence(
                    what,
                    str(r["a"]),
                    str(r["b"]),
                    _float(r.get("centre_a")),
                    _float(r.get("centre_b")),
                    str(r.get("unit") or ""),
                    dec,
                    float(r.get("margin_percent") or DEFAULT_MARGIN),
                ),
                "tell": wording.would_tell(dec),
                "scope_text": (
                    f"{r['n_a']} vs {r['n_b']} {r['test_unit']}s; about these machines"
                    if scope == "machines"
                    else f"{r['machines_a']} vs {r['machines_b']} machines; about their types"
                ),
            }
        )
    decisions.sort(key=lambda d: (_ORDER.get(str(d["decision"]), 9), str(d["comparison"])))
    counts = {d: sum(int(h.get(d, 0)) for h in headline(cmp)) for d in DECISIONS}  # primary only
    kinds = set(cmp["kind"].astype(str)) if len(cmp) else set()
    return {
        "decisions": decisions,
        "counts": counts,
        "total": len(decisions),
        "secondary": int(len(cmp) - len(prim)),
        "figures": _primary_figures(rep.descriptives, seen.types, palette, seen.primary),
        "power": [power_text(p) for p in rep.power],
        "next": NEXT_COMMANDS if not (kinds - {"explicit"}) else (),
    }


def _decision_of(r: Mapping[str, Any]) -> Decision:
    """A comparison row's decision and interval (None, from JSON-clean rows, as NaN)."""

    def num(key: str) -> float:
        v = _float(r.get(key))
        return float("nan") if v is None else v

    return Decision(
        num("overhead_percent"),
        num("overhead_ci_low"),
        num("overhead_ci_high"),
        num("p"),
        num("tost_p"),
        str(r.get("decision")),
        str(r.get("reason") or ""),
    )


def _primary_figures(
    desc: pd.DataFrame, types: Mapping[str, str], palette: dict[str, str], primary: set[tuple[str, str]]
) -> list[dict[str, Any]]:
    """One figure per benchmark: its primary metrics' means per label with their intervals (the
    machine fingerprint, type sysinfo, is a fact, not a benchmark: no figure; ``types``: each
    benchmark's workload type, ``primary``: the primary (benchmark, metric) pairs)."""
    out = []
    for bench in sorted(set(desc["benchmark"].astype(str))):
        if types.get(bench) == "sysinfo":
            continue
        d = desc[(desc["benchmark"].astype(str) == bench)]
        d = d[[(bench, str(m)) in primary for m in d["metric"]]]
        if d.empty:
            continue
        metrics = list(dict.fromkeys(d["metric"].astype(str)))
        shown = metrics[:MAX_HEADLINE_GROUPS]
        unit, better = str(d["unit"].iloc[0]), str(d["better"].iloc[0])
        d = d[d["metric"].astype(str).isin(shown) & (d["unit"].astype(str) == unit)]
        centre = _centre(d)
        f, scaled = display.common_scale(centre, unit)
        rows = [
            (
                display.pretty_metric(str(r.metric)),
                str(r.label),
                float(c) / f,
                float(r.ci95_low) / f,
                float(r.ci95_high) / f,
            )
            for r, c in zip(d.itertuples(index=False), centre, strict=True)
        ]
        log = (d.get("ci_scale", pd.Series(dtype=str)) == "log").all()
        one = (pd.to_numeric(d.get("machines", pd.Series(dtype=float)), errors="coerce") == 1).any()
        what = ("typical run (trimmed geometric mean)" if one else "geometric mean") if log else "mean"
        sub = f"{what}, 95% CI [{scaled}], {better} is better"
        note = "" if len(metrics) == len(shown) else f"first {len(shown)} of {len(metrics)} primary metrics"
        out.append(
            {
                "benchmark": bench,
                "image": svgplot.hbars(rows, palette, bench, sub),
                "alt": f"{bench}: {', '.join(display.pretty_metric(m) for m in shown[:3])}",
                "note": note,
            }
        )
    return out


def _centre(d: pd.DataFrame) -> np.ndarray:
    """The value each descriptive row's 95% CI is about: for a positive quantity the typical run of a
    one-machine label (stats.describe) or the geometric mean, else the mean."""
    mean = d["mean"].to_numpy(float)
    if "geomean" not in d or "ci_scale" not in d:
        return mean
    geo = d["typical"].to_numpy(float) if "typical" in d else d["geomean"].to_numpy(float)
    return np.where((d["ci_scale"] == "log").to_numpy() & np.isfinite(geo), geo, mean)


def _metric_scales(d: pd.DataFrame) -> dict[str, tuple[float, str]]:
    """One scale per metric for all its labels, from the values its plots show (``_centre``): the
    table and the plot beside it write a metric in the same unit."""
    centre = svgplot.centres(d)
    out = {}
    for m in dict.fromkeys(d["metric"].astype(str)):
        pick = (d["metric"].astype(str) == m).to_numpy()
        out[m] = display.common_scale(centre[pick], str(d["unit"].iloc[int(np.flatnonzero(pick)[0])]))
    return out


def _human_rows(
    d: pd.DataFrame, scales: Mapping[str, tuple[float, str]] | None = None
) -> list[dict[str, Any]]:
    """Descriptive rows with their values scaled for reading (one scale per metric: ``scales``)."""
    rows = []
    for r in _records(d):
        unit = str(r.get("unit") or "")
        sc = (scales or {}).get(str(r.get("metric"))) or display.scale_for(_float(r.get("mean")) or 0.0, unit)
        rows.append(
            r
            | {
                "mean_h": display.human(_float(r.get("mean")), unit, sc),
                "median_h": display.human(_float(r.get("median")), unit, sc),
                "sd_h": display.human(_float(r.get("sd")), unit, sc),
                "ci_h": (
                    (
                        display.human(_float(r.get("typical") or r.get("geomean")), unit, sc)
                        + (
                            " (typical run) "
                            if r.get("typical") != r.get("geomean")
                            else " (geometric mean) "
                        )
                        if r.get("ci_scale") == "log"
                        else ""
                    )
                    + display.interval(_float(r.get("ci95_low")), _float(r.get("ci95_high")), unit, sc)
                ),
                "about": display.describe(str(r.get("metric"))),
            }
        )
    return rows


def _measured(obs: pd.DataFrame) -> pd.DataFrame:
    """The observations that are measurements: a fact of the machine (``display.FACT_TYPES``: its
    CPU count, its memory) is shown as a fact, never compared."""
    if "type" not in obs:
        return obs
    fact = _text_in(obs["type"], display.FACT_TYPES)
    return obs[~fact] if fact.any() else obs  # no copy of the observations when none is a fact


def _text_in(col: pd.Series, values: Any) -> np.ndarray:
    """``col.astype(str).isin(values)`` as a numpy mask; a categorical through its categories (one
    test per category, not one string per row)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        hit = np.asarray([str(c) in values for c in col.cat.categories] + [False], dtype=bool)  # missing
        codes = col.cat.codes.to_numpy()
        return hit[np.where(codes < 0, len(hit) - 1, codes)]
    return col.astype(str).isin(values).to_numpy()


def _text_set(col: pd.Series) -> set[Any]:
    """``set(col.astype(str))``; a categorical through the categories that occur."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = col.cat.codes.to_numpy()
        cats = col.cat.categories
        out = {str(cats[k]) for k in np.unique(codes[codes >= 0])}
        return out | ({np.nan} if (codes < 0).any() else set())  # a missing value, as astype(str) keeps it
    return set(col.astype(str))


def _types(ds: Dataset) -> dict[str, str]:
    """Each benchmark's workload type."""
    kinds = ds.obs[["benchmark", "type"]].drop_duplicates(subset="benchmark", keep="last")
    return dict(zip(kinds["benchmark"].astype(str), kinds["type"].astype(str), strict=True))


def _facts(ds: Dataset, bench: str) -> list[str]:
    """The values of a fact benchmark (the machine fingerprint: logical CPUs, memory) per label, as
    facts: "Local: logical cpus 2, memory total 25.3 GB" (a range where runs differ)."""
    part = ds.obs[_text_in(ds.obs["benchmark"], {bench})]
    out = []
    for label, rows in part.groupby("label", observed=True, sort=True):
        items = []
        for metric, vals in rows.groupby("metric", observed=True, sort=True):
            unit = str(vals["unit"].iloc[0]) if "unit" in vals else ""
            lo, hi = float(vals["value"].min()), float(vals["value"].max())
            text = display.human(lo, unit)
            if lo != hi:
                text += f" to {display.human(hi, unit)}"
            items.append(f"{display.fact_name(str(metric))} {text}")
        out.append(f"{label}: {', '.join(items)}")
    return out


def _counters(d: pd.DataFrame) -> list[str]:
    """Internal counters and flags of a benchmark, as facts ("steady in 3 of 3 runs"), not statistics."""
    out = []
    for r in d.itertuples(index=False):
        if str(r.unit) == "bool":
            k = round(float(r.mean) * int(r.n)) if math.isfinite(float(r.mean)) else 0
            out.append(f"{r.label}: {r.metric} true in {k} of {int(r.n)} runs")
        else:
            out.append(
                f"{r.label}: {r.metric} {display.human(float(r.median), str(r.unit))} (median of {int(r.n)})"
            )
    return out


def _render(name: str, rep: Report, bad: pd.DataFrame, ds: Dataset, labels: list[str], seen: Observed) -> str:
    palette = plots.colors(labels)
    sections = []
    desc = rep.descriptives
    pct = _pct_table(ds)
    primary = seen.primary
    telemetry = _telemetry(ds)
    for bench in sorted(set(desc["benchmark"].astype(str))):
        d = desc[desc["benchmark"] == bench]
        if seen.types.get(bench) in display.FACT_TYPES:  # the machine's facts: no statistics, no plots
            sections.append({"name": bench, "facts": seen.facts[bench], "fact_type": True, "metrics": len(d)})
            continue
        parts = _shown(bench, d, primary)
        facts = _counters(parts.counters) if len(parts.counters) else []
        cpu_rows = _human_rows(parts.cpu, _metric_scales(parts.cpu)) if len(parts.cpu) else []
        d, metrics, shown = parts.rows, parts.metrics, parts.plotted
        sec = {
            "name": bench,
            "rows": _human_rows(d, _metric_scales(d)),
            "cpu_rows": cpu_rows,
            "facts": facts,
            "metrics": len(metrics),
            "panels_capped": len(metrics) > len(shown),
            "shown": shown,
            "bars": svgplot.bars(d, shown, palette) if len(d) else [],
            "ecdf": seen.ecdf.get(bench, []),
            "cv": svgplot.cv_bars(d, metrics[:MAX_CV_METRICS], palette) if len(d) else None,
            "comparisons": _records(rep.comparisons[rep.comparisons["benchmark"] == bench]),
            "anova": [a for a in rep.anova if a["benchmark"] == bench],
            "primary": [m for m in metrics if (bench, m) in primary],
            "telemetry": telemetry.get(bench, []),
        }
        bp = ds.percentiles[ds.percentiles["benchmark"] == bench]
        if len(bp):
            sec["pct_plot"] = plots.percentiles(bp, palette)
            sec["pct_rows"] = [
                r
                | {
                    "value_h": display.human(
                        float(r["median_value"]) * plots.to_seconds(str(r["series"])), "s"
                    )
                }
                for r in _records(pct[pct["benchmark"] == bench])
            ]
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
            headline=_headline(rep, seen, palette),
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
            method=method_text(rep.drift_p),
            extra_sections=_extra_sections(rep, ds, seen),
            warnings=rep.warnings,
            sources=ds.sources,
            observations=seen.count,
            records=len(ds.records),
        )
    )
