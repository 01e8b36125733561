"""runs.py's sort-based groupings give what the pandas and numpy calls they replace give.

``group_ranks`` stands in for ``Series.groupby(codes).rank()`` (average ranks of ties, NaN kept),
``ranks_in_sequence`` for the same on a key without ties, ``run_order`` for ``lexsort(...)``'s
inverse and ``Runs.sequence`` for ``np.lexsort((order, codes))``. Checked on random data with many
ties, few and many groups (``group_sort`` takes a different path for each), and missing values.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from testbed_reports.runs import Runs, group_ranks, ranks_in_sequence, run_order


@pytest.mark.parametrize(("n", "groups"), [(50, 3), (5000, 2), (5000, 900), (20000, 40)])
def test_group_ranks_are_pandas_grouped_ranks(n: int, groups: int) -> None:
    rng = np.random.default_rng(n + groups)
    codes = rng.integers(0, groups, n)
    values = rng.integers(0, 25, n).astype(float)  # many ties
    want = pd.Series(values).groupby(codes).rank().to_numpy()
    np.testing.assert_array_equal(group_ranks(values, codes), want)
    values[rng.random(n) < 0.05] = np.nan  # missing values stay missing
    want = pd.Series(values).groupby(codes).rank().to_numpy()
    np.testing.assert_array_equal(group_ranks(values, codes), want)


def _observations(rng: np.random.Generator, n: int) -> pd.DataFrame:
    starts = [f"2026-11-29T10:{m:02d}:00Z" for m in range(30)]
    return pd.DataFrame(
        {
            "benchmark": pd.Categorical(rng.choice(["fio", "dd", "crypto"], n)),
            "metric": pd.Categorical(rng.choice(["bw", "lat"], n)),
            "label": pd.Categorical(rng.choice(["a", "b"], n)),
            "host": pd.Categorical(rng.choice(["h1", "h2", "h3"], n)),
            "started_at": rng.choice(starts, n),
            "repetition": rng.integers(0, 1000, n),
            "value": rng.normal(10, 1, n),
        }
    )


def test_run_order_and_sequence_match_lexsort() -> None:
    rng = np.random.default_rng(36)
    obs = _observations(rng, 3000)
    order = run_order(obs)
    perm = np.lexsort((obs["repetition"].to_numpy(), obs["started_at"].astype(str).to_numpy()))
    np.testing.assert_array_equal(order, perm.argsort())
    shared = Runs.of(obs)
    runs, codes = shared.frame, shared.machines()[1]
    want = np.lexsort((run_order(runs), codes))
    np.testing.assert_array_equal(shared.sequence(), want)
    got = ranks_in_sequence(shared.sequence(), codes)
    np.testing.assert_array_equal(got, pd.Series(run_order(runs)).groupby(codes).rank().to_numpy())


def test_a_record_without_a_start_time_sorts_after_the_timed_ones() -> None:
    """started_at is optional in a record: run order puts a missing start after every RFC 3339 time
    (as its text "None" sorts), where pandas 3's astype(str) left it missing and the sort failed."""
    obs = pd.DataFrame(
        {"started_at": ["2026-01-01T00:00:02Z", None, "2026-01-01T00:00:01Z"], "repetition": [0, 0, 0]}
    )
    assert run_order(obs).tolist() == [1, 2, 0]
    obs["started_at"] = obs["started_at"].astype("category")
    assert run_order(obs).tolist() == [1, 2, 0]
