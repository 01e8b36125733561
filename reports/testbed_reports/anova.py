"""Two-way ANOVA (Type II with interaction; sequential, raw scale, as published studies did), the
label ANOVA of the report (machine means where labels have machines as replicates), Tukey HSD.

Interfaces others rely on:

- :func:`sequential_anova` (``df, value, a, b, interaction=True``): the raw-scale two-way ANOVA of
  the published studies (S1 Tables 8-9 without interaction, Tables 13-19 with it): sequential
  (Type I) sums of squares in factor order, SS % of the total corrected sum of squares, F, F crit at
  0.95 and p, plus residual and total rows. In a balanced design Type I = II = III.
- :func:`two_way_anova` / :func:`anova_codes`: Type II with interaction (``analyze``, parameters).
- :func:`label_anova`: the report's protection x vendor / protection x disk tables.
"""

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


def _cell_fit(
    y: np.ndarray, ca: np.ndarray, cb: np.ndarray, la: int, lb: int
) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Cell counts, cell means, the within-cell SS and the total corrected SS."""
    cell = ca * lb + cb
    cnt = np.bincount(cell, minlength=la * lb).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        means = np.bincount(cell, weights=y, minlength=la * lb) / cnt
    means = np.where(cnt > 0, means, 0.0)
    resid = y - means[cell]
    dev = y - y.mean()
    return cnt, means, float(resid @ resid), float(dev @ dev)


def _rss(cnt: np.ndarray, means: np.ndarray, ssw: float, blocks: list[np.ndarray]) -> float:
    """Residual SS of a linear model on the cells (intercept + blocks), populated cells weighted."""
    keep = cnt > 0
    x = np.hstack([np.ones((len(cnt), 1)), *blocks])[keep]
    w = np.sqrt(cnt[keep])
    beta, *_ = np.linalg.lstsq(x * w[:, None], means[keep] * w, rcond=None)
    r = means[keep] - x @ beta
    return ssw + float((cnt[keep] * r * r).sum())


def sequential_anova(
    df: pd.DataFrame, value: str, a: str, b: str, interaction: bool = True, alpha: float = 0.05
) -> list[dict]:
    """Raw-scale two-way ANOVA with sequential (Type I) SS: ``a``, then ``b`` given ``a``, then the
    interaction (when asked for); rows {source, df, ss, ss_percent, F, F_crit, p} for ``a``, ``b``,
    ``a:b``, ``residual`` and ``total`` (F against the residual mean square)."""
    data = pd.DataFrame(
        {"y": pd.to_numeric(df[value], errors="coerce"), "A": df[a].astype(str), "B": df[b].astype(str)}
    ).dropna()
    levels_a, levels_b = sorted(data["A"].unique()), sorted(data["B"].unique())
    if len(levels_a) < 2 or len(levels_b) < 2:
        raise ReportError(
            "two-way ANOVA needs at least two levels of each factor "
            f"({a}: {len(levels_a)}, {b}: {len(levels_b)})"
        )
    la, lb = len(levels_a), len(levels_b)
    y = data["y"].to_numpy(dtype=float)
    ca = pd.Categorical(data["A"], categories=levels_a).codes.astype(np.int64)
    cb = pd.Categorical(data["B"], categories=levels_b).codes.astype(np.int64)
    cnt, means, ssw, sst = _cell_fit(y, ca, cb, la, lb)
    if interaction and (cnt == 0).any():
        raise ReportError("incomplete factorial design: some combination of the factors has no observations")
    cells_a, cells_b = np.repeat(np.arange(la), lb), np.tile(np.arange(lb), la)
    xa, xb = _dummies(cells_a, la), _dummies(cells_b, lb)
    rss0 = sst
    rss_a = _rss(cnt, means, ssw, [xa])
    rss_ab = _rss(cnt, means, ssw, [xa, xb])
    parts = [(a, rss0 - rss_a, la - 1), (b, rss_a - rss_ab, lb - 1)]
    n = len(y)
    if interaction:
        parts.append((f"{a}:{b}", rss_ab - ssw, (la - 1) * (lb - 1)))
        rss, df_res = ssw, n - la * lb
    else:
        rss, df_res = rss_ab, n - la - lb + 1
    if df_res < 1:
        raise ReportError(
            "two-way ANOVA needs more observations than model terms (no residual degrees of freedom)"
        )
    rows = _rows(parts, rss, df_res, sst, alpha)
    rows.append(
        {"source": "total", "df": n - 1, "ss": sst, "ss_percent": 100.0, "F": None, "F_crit": None, "p": None}
    )
    return rows


def label_anova(
    v: np.ndarray,
    lab: np.ndarray,
    host: np.ndarray,
    code_a: np.ndarray,
    code_b: np.ndarray,
    log: bool,
    names: tuple[str, str],
) -> tuple[list[dict], str, str, list[int]] | None:
    """One metric's label ANOVA: (table, scale, unit of replication, labels with one machine).

    ``v`` are run values, ``lab``/``host`` their label and host codes, ``code_a``/``code_b`` the
    factor levels of each label (-1: not in the design). Wherever labels have machines as
    replicates the machine means are the observations (machines nested in labels, residual =
    machine-to-machine variation); a label with one machine contributes its one machine mean and
    is reported as not separable from its machine. Only when no label has two machines are the
    runs the observations: the table then speaks about these machines (unit ``run (these
    machines)``), never about VM types. None when not estimable.
    """
    ca, cb = code_a[lab], code_b[lab]
    keep = (ca >= 0) & (cb >= 0)
    v, lab, host, ca, cb = v[keep], lab[keep], host[keep], ca[keep], cb[keep]
    if not len(v):
        return None
    scale = "log" if log and (v > 0).all() else "raw"
    y = np.log(v) if scale == "log" else v
    key = lab.astype(np.int64) * (int(host.max()) + 1) + host
    _, first, g = np.unique(key, return_index=True, return_inverse=True)
    machines = np.bincount(lab[first])
    present = np.unique(lab)
    single = [int(x) for x in present if machines[x] < 2]
    unit = "run (these machines)"
    if (machines[present] >= 2).any():
        y = np.bincount(g, weights=y) / np.bincount(g)
        ca, cb, unit = ca[first], cb[first], "machine mean"
    la, lb = int(code_a.max()) + 1, int(code_b.max()) + 1
    try:
        return anova_codes(y, ca, cb, la, lb, *names), scale, unit, single
    except ReportError:
        return None
