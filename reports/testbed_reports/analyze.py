"""``testbed-report analyze``: statistics of any CSV with one observation a row (docs/design.md section 8)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from testbed_reports.anova import ANOVA_NOTE, ANOVA_TYPE, tukey, two_way_anova
from testbed_reports.errors import ReportError
from testbed_reports.stats import group_table
from testbed_shared.atomic import write_atomically
from testbed_shared.safecsv import write_frame


def _json_safe(x: Any) -> Any:
    if isinstance(x, float) and not np.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_json_safe(v) for v in x]
    if isinstance(x, np.generic):
        return _json_safe(x.item())
    return x


def _load(csv: Path, metric: str, by: list[str], where: dict[str, str], extra: list[str]) -> pd.DataFrame:
    """The CSV's rows after ``where``, with ``metric`` numeric; errors name the file and line."""
    try:
        df = pd.read_csv(csv)
    except FileNotFoundError:
        raise ReportError(f"{csv}: no such file") from None
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise ReportError(f"{csv}: cannot read CSV ({exc})") from None
    cols = list(map(str, df.columns))
    for c in [metric, *by, *where, *extra]:
        if c not in df.columns:
            raise ReportError(f"{csv}: no column {c!r}", f"columns: {', '.join(cols)}")
    if not 1 <= len(by) <= 2:
        raise ReportError("--by takes one or two columns (COL or COL,COL)")
    for col, val in where.items():
        df = df[df[col].astype(str) == val]
    if df.empty:
        raise ReportError(f"{csv}: no rows left after --where filters")
    values = pd.to_numeric(df[metric], errors="coerce")
    bad = values.isna() & df[metric].notna()
    if bad.any():
        line = int(df.index[np.flatnonzero(bad.to_numpy())[0]]) + 2
        raise ReportError(f"{csv}:{line}: {metric} value {df.loc[bad].iloc[0][metric]!r} is not a number")
    return df.assign(**{metric: values}).dropna(subset=[metric, *by])


def analyze(
    csv: Path,
    metric: str,
    by: list[str],
    where: dict[str, str],
    out: Path,
    tukey_factors: list[str] | None = None,
) -> dict[str, Any]:
    """Compute and write ``out/stats.json`` (+ groups.csv, anova.csv); returns the stats."""
    df = _load(csv, metric, by, where, tukey_factors or [])
    groups = group_table(df, by, metric)
    result: dict[str, Any] = {
        "csv": str(csv),
        "metric": metric,
        "by": by,
        "where": where,
        "n_rows": len(df),
        "groups": groups,
    }
    if len(by) == 2:
        result["anova"] = [
            {k: r[k] for k in ("source", "df", "ss_percent", "F", "F_crit", "ss", "p")}
            for r in two_way_anova(df, metric, by[0], by[1])
        ]
        result["anova_type"] = ANOVA_TYPE
        result["anova_method"] = ANOVA_NOTE
    if tukey_factors:
        result["tukey"] = [row for f in tukey_factors for row in tukey(df, metric, f)]
    result = _json_safe(result)
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(out / "stats.json", json.dumps(result, indent=2) + "\n", what="stats")
    flat = pd.DataFrame([{**g["group"], **{k: v for k, v in g.items() if k != "group"}} for g in groups])
    write_frame(flat, out / "groups.csv")
    if "anova" in result:
        write_frame(pd.DataFrame(result["anova"]), out / "anova.csv")
    if "tukey" in result:
        write_frame(pd.DataFrame(result["tukey"]), out / "tukey.csv")
    return result
