"""Two-way ANOVA with interaction (statsmodels, Type II sums of squares) and Tukey HSD."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
from scipy import stats as sps

from testbed_reports.errors import ReportError

ANOVA_TYPE = 2
ANOVA_NOTE = ("two-way ANOVA with interaction, statsmodels anova_lm Type II sums of squares (in a "
              "balanced design identical to the classic Type I/III partition); SS % is the share of the "
              "total corrected sum of squares; F critical at alpha = 0.05")


def two_way_anova(df: pd.DataFrame, value: str, a: str, b: str, alpha: float = 0.05) -> list[dict]:
    """Rows {source, df, ss, ss_percent, F, F_crit, p} for a, b, a:b and residual."""
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    data = pd.DataFrame({"y": pd.to_numeric(df[value], errors="coerce"),
                         "A": df[a].astype(str), "B": df[b].astype(str)}).dropna()
    levels_a, levels_b = sorted(data["A"].unique()), sorted(data["B"].unique())
    if len(levels_a) < 2 or len(levels_b) < 2:
        raise ReportError(f"two-way ANOVA needs at least two levels of each factor "
                          f"({a}: {len(levels_a)}, {b}: {len(levels_b)})")
    counts = data.groupby(["A", "B"]).size()
    for la, lb in itertools.product(levels_a, levels_b):
        if counts.get((la, lb), 0) == 0:
            raise ReportError(f"incomplete factorial design: no observations for {a}={la}, {b}={lb}",
                              "every combination of the two factors needs observations")
    if len(data) <= len(levels_a) * len(levels_b):
        raise ReportError("two-way ANOVA with interaction needs replicates (more than one observation "
                          "in some cell)")
    model = ols("y ~ C(A) * C(B)", data=data).fit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = anova_lm(model, typ=ANOVA_TYPE)
    sst = float(((data["y"] - data["y"].mean()) ** 2).sum())
    df_resid = float(table.loc["Residual", "df"])
    names = {"C(A)": a, "C(B)": b, "C(A):C(B)": f"{a}:{b}", "Residual": "residual"}
    rows = []
    for src, r in table.iterrows():
        is_resid = src == "Residual"
        f_val = None if is_resid or not np.isfinite(r["F"]) else float(r["F"])
        rows.append({
            "source": names.get(str(src), str(src)), "df": round(float(r["df"])), "ss": float(r["sum_sq"]),
            "ss_percent": 100.0 * float(r["sum_sq"]) / sst if sst > 0 else float("nan"),
            "F": f_val,
            "F_crit": None if is_resid else float(sps.f.ppf(1 - alpha, r["df"], df_resid)),
            "p": None if is_resid or not np.isfinite(r["PR(>F)"]) else float(r["PR(>F)"]),
        })
    return rows


def tukey(df: pd.DataFrame, value: str, factor: str, alpha: float = 0.05) -> list[dict]:
    """Tukey HSD of all pairs of levels of one factor."""
    from statsmodels.stats.multicomp import pairwise_tukeyhsd

    data = pd.DataFrame({"y": pd.to_numeric(df[value], errors="coerce"),
                         "g": df[factor].astype(str)}).dropna()
    if data["g"].nunique() < 2:
        raise ReportError(f"Tukey HSD needs at least two levels of {factor}")
    res = pairwise_tukeyhsd(data["y"].to_numpy(), data["g"].to_numpy(), alpha=alpha)
    out = []
    for k, (g1, g2) in enumerate(itertools.combinations(res.groupsunique, 2)):
        out.append({"factor": factor, "group1": str(g1), "group2": str(g2),
                    "meandiff": float(res.meandiffs[k]), "p_adj": float(res.pvalues[k]),
                    "lower": float(res.confint[k][0]), "upper": float(res.confint[k][1]),
                    "reject": bool(res.reject[k])})
    return out
