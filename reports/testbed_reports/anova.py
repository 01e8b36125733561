"""Two-way ANOVA with interaction (statsmodels, Type II sums of squares) and Tukey HSD."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy import stats as sps

from testbed_reports.errors import ReportError

ANOVA_TYPE = 2
ANOVA_NOTE = (
    "two-way ANOVA with interaction, statsmodels anova_lm Type II sums of squares (in a "
    "balanced design identical to the classic Type I/III partition); SS % is the share of the "
    "total corrected sum of squares; F critical at alpha = 0.05. In unbalanced designs (unequal "
    "runs or machines per cell) Type II tests each main effect adjusted for the other, assuming no "
    "interaction; Type I would depend on factor order and Type III on the coding, so read main effects "
    "with care where the interaction is large. In the build report the ANOVA runs on log values "
    "(multiplicative effects; raw with --anova-scale raw or when a value is not positive), and with "
    "several machines per label on machine means, so machines are nested in labels and the residual "
    "is machine-to-machine variation"
)


def _dummies(codes: np.ndarray, levels: int) -> np.ndarray:
    """Treatment coding: one 0/1 column per level except the first."""
    return (codes[:, None] == np.arange(1, levels)[None, :]).astype(float)


def _codes(
    df: pd.DataFrame, value: str, a: str, b: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str], list[str]]:
    data = pd.DataFrame(
        {"y": pd.to_numeric(df[value], errors="coerce"), "A": df[a].astype(str), "B": df[b].astype(str)}
    ).dropna()
    levels_a, levels_b = sorted(data["A"].unique()), sorted(data["B"].unique())
    if len(levels_a) < 2 or len(levels_b) < 2:
        raise ReportError(
            f"two-way ANOVA needs at least two levels of each factor "
            f"({a}: {len(levels_a)}, {b}: {len(levels_b)})"
        )
    ca = pd.Categorical(data["A"], categories=levels_a).codes.astype(np.int64)
    cb = pd.Categorical(data["B"], categories=levels_b).codes.astype(np.int64)
    counts = np.bincount(ca * len(levels_b) + cb, minlength=len(levels_a) * len(levels_b))
    for k in np.flatnonzero(counts == 0):
        missing = f"{a}={levels_a[k // len(levels_b)]}, {b}={levels_b[k % len(levels_b)]}"
        raise ReportError(
            f"incomplete factorial design: no observations for {missing}",
            "every combination of the two factors needs observations",
        )
    if len(data) <= len(levels_a) * len(levels_b):
        raise ReportError(
            "two-way ANOVA with interaction needs replicates (more than one observation in some cell)"
        )
    return data["y"].to_numpy(dtype=float), ca, cb, levels_a, levels_b


def _rows(
    parts: list[tuple[str, float, float]], rss: float, df_res: float, sst: float, alpha: float
) -> list[dict]:
    mse = rss / df_res
    rows = []
    for source, raw_ss, dof in parts:
        ss = max(raw_ss, 0.0)
        f_val = (ss / dof) / mse if mse > 0 else float("inf")
        rows.append(
            {
                "source": source,
                "df": round(dof),
                "ss": ss,
                "ss_percent": 100.0 * ss / sst if sst > 0 else float("nan"),
                "F": f_val if np.isfinite(f_val) else None,
                "F_crit": float(sps.f.ppf(1 - alpha, dof, df_res)),
                "p": float(sps.f.sf(f_val, dof, df_res)) if np.isfinite(f_val) else 0.0,
            }
        )
    rows.append(
        {
            "source": "residual",
            "df": round(df_res),
            "ss": rss,
            "ss_percent": 100.0 * rss / sst if sst > 0 else float("nan"),
            "F": None,
            "F_crit": None,
            "p": None,
        }
    )
    return rows


def two_way_anova(df: pd.DataFrame, value: str, a: str, b: str, alpha: float = 0.05) -> list[dict]:
    """Rows {source, df, ss, ss_percent, F, F_crit, p} for a, b, a:b and residual.

    statsmodels: ``anova_lm(ols("y ~ C(a) * C(b)").fit(), typ=2)``; SS % is SS / total corrected SS.
    """
    from statsmodels.formula.api import ols  # noqa: PLC0415 - statsmodels loads in ~1 s: only when an ANOVA is asked for
    from statsmodels.stats.anova import anova_lm  # noqa: PLC0415 - statsmodels loads in ~1 s: only when an ANOVA is asked for

    y, ca, cb, _, _ = _codes(df, value, a, b)
    data = pd.DataFrame({"y": y, "A": ca, "B": cb})
    table = anova_lm(ols("y ~ C(A) * C(B)", data=data).fit(), typ=ANOVA_TYPE)
    sst = float(((y - y.mean()) ** 2).sum())
    parts = [
        (a, float(table.loc["C(A)", "sum_sq"]), float(table.loc["C(A)", "df"])),
        (b, float(table.loc["C(B)", "sum_sq"]), float(table.loc["C(B)", "df"])),
        (f"{a}:{b}", float(table.loc["C(A):C(B)", "sum_sq"]), float(table.loc["C(A):C(B)", "df"])),
    ]
    resid = table.loc["Residual"]
    return _rows(parts, float(resid["sum_sq"]), float(resid["df"]), sst, alpha)


def two_way_anova_fast(df: pd.DataFrame, value: str, a: str, b: str, alpha: float = 0.05) -> list[dict]:
    """The same Type II table as :func:`two_way_anova`, from cell statistics (for many tables)."""
    y, ca, cb, levels_a, levels_b = _codes(df, value, a, b)
    return anova_codes(y, ca, cb, len(levels_a), len(levels_b), a, b, alpha)


def anova_codes(
    y: np.ndarray, ca: np.ndarray, cb: np.ndarray, la: int, lb: int, a: str, b: str, alpha: float = 0.05
) -> list[dict]:
    """Type II two-way ANOVA with interaction from integer level codes (all cells populated).

    Only cell counts and means enter the fits: RSS(model) = SS within cells + the weighted residual
    of the cell means, so SS(a) = RSS(b) - RSS(a + b), SS(b) = RSS(a) - RSS(a + b) and
    SS(a:b) = RSS(a + b) - SS within. The tests check it against statsmodels' ``anova_lm``.
    """
    cell = ca * lb + cb
    n_cells = la * lb
    cnt = np.bincount(cell, minlength=n_cells).astype(float)
    if (cnt == 0).any():
        raise ReportError("incomplete factorial design: some combination of the factors has no observations")
    n = len(y)
    if n <= n_cells:
        raise ReportError(
            "two-way ANOVA with interaction needs replicates (more than one observation in some cell)"
        )
    means = np.bincount(cell, weights=y, minlength=n_cells) / cnt
    resid = y - means[cell]
    ssw = float(resid @ resid)
    dev = y - y.mean()
    sst = float(dev @ dev)
    cells_a, cells_b = np.repeat(np.arange(la), lb), np.tile(np.arange(lb), la)
    xa, xb = _dummies(cells_a, la), _dummies(cells_b, lb)
    w = np.sqrt(cnt)

    def rss(*blocks: np.ndarray) -> float:
        x = np.hstack([np.ones((n_cells, 1)), *blocks])
        beta, *_ = np.linalg.lstsq(x * w[:, None], means * w, rcond=None)
        r = means - x @ beta
        return ssw + float((cnt * r * r).sum())

    rss_a, rss_b, rss_ab = rss(xa), rss(xb), rss(xa, xb)
    parts = [
        (a, rss_b - rss_ab, la - 1),
        (b, rss_a - rss_ab, lb - 1),
        (f"{a}:{b}", rss_ab - ssw, (la - 1) * (lb - 1)),
    ]
    return _rows(parts, ssw, n - n_cells, sst, alpha)


def tukey(df: pd.DataFrame, value: str, factor: str, alpha: float = 0.05) -> list[dict]:
    """Tukey HSD of all pairs of levels of one factor."""
    from statsmodels.stats.multicomp import pairwise_tukeyhsd  # noqa: PLC0415 - statsmodels loads in ~1 s: only when an ANOVA is asked for

    data = pd.DataFrame(
        {"y": pd.to_numeric(df[value], errors="coerce"), "g": df[factor].astype(str)}
    ).dropna()
    if data["g"].nunique() < 2:
        raise ReportError(f"Tukey HSD needs at least two levels of {factor}")
    res = pairwise_tukeyhsd(data["y"].to_numpy(), data["g"].to_numpy(), alpha=alpha)
    out = []
    for k, (g1, g2) in enumerate(itertools.combinations(res.groupsunique, 2)):
        out.append(
            {
                "factor": factor,
                "group1": str(g1),
                "group2": str(g2),
                "meandiff": float(res.meandiffs[k]),
                "p_adj": float(res.pvalues[k]),
                "lower": float(res.confint[k][0]),
                "upper": float(res.confint[k][1]),
                "reject": bool(res.reject[k]),
            }
        )
    return out
