"""A dataset's observations read a part at a time, each part a set of whole benchmarks (issue 36).

Every statistic the report computes lies within one benchmark: its groups are (benchmark, metric,
label, host) or finer. Only the family's decisions span benchmarks, and ``build`` takes them over
the cells of every part at the end. A report can therefore read its observations one part at a
time. A part holds every observation of its benchmarks and no other. The records, fingerprints,
percentiles and parameters are read whole; there is one record per run, against one observation
per run and metric. A part holds at most ``part_rows()`` observations, unless a single benchmark
has more. A dataset that fits is one part, read as before. Peak memory is then the records plus
one part, not every observation.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from testbed_reports.errors import ReportError
from testbed_reports.load import Dataset

#: observations a part may hold (``TESTBED_REPORT_PART_ROWS`` says otherwise): 5 x 10^6 is
#: about 0.5 GiB of observations, 1.5 GiB with the statistics' working arrays (bench/report_scale.py)
PART_ROWS = 5_000_000
PART_ENV = "TESTBED_REPORT_PART_ROWS"


def part_rows() -> int:
    """The most observations a part holds: ``$TESTBED_REPORT_PART_ROWS``, else ``PART_ROWS``."""
    text = os.environ.get(PART_ENV, "").strip()
    if not text:
        return PART_ROWS
    try:
        rows = int(text)
    except ValueError:
        rows = 0
    if rows < 1:
        raise ReportError(
            f"{PART_ENV}={text!r}: expected a positive whole number of observations",
            f"unset it (default {PART_ROWS}) or give e.g. {PART_ENV}=2000000",
        )
    return rows


def plan(counts: Mapping[str, int], limit: int) -> list[list[str]]:
    """The benchmarks, sorted, cut into consecutive parts of at most ``limit`` observations each
    (a benchmark with more than ``limit`` is a part alone)."""
    out: list[list[str]] = []
    size = 0
    for bench in sorted(counts):
        n = counts[bench]
        if not out or size + n > limit:
            out.append([])
            size = 0
        out[-1].append(bench)
        size += n
    return out


@dataclass
class Parts:
    """A dataset whose observations are read a part at a time.

    ``ds`` holds everything but the observations (its ``obs``: no rows, the loader's columns).
    ``groups`` lists the benchmarks of each part, sorted, or is one ``None`` for everything at
    once. ``read`` gives the observations of a part's benchmarks, or all of them for ``None``,
    in the whole frame's row order. ``labels`` and ``count`` are the observations' labels and
    their number. ``csv`` holds the rows read from CSV files, which have no record.
    """

    ds: Dataset
    groups: list[list[str] | None]
    read: Callable[[Sequence[str] | None], pd.DataFrame]
    labels: set[str]
    count: int
    csv: pd.DataFrame

    def __iter__(self) -> Iterator[Dataset]:
        """Each part as a Dataset: the part's observations with everything else whole."""
        for group in self.groups:
            yield dataclasses.replace(self.ds, obs=self.read(group))

    @classmethod
    def whole(cls, ds: Dataset) -> Parts:
        """A dataset already in memory as one part."""
        obs = ds.obs
        csv = obs[obs["record"].to_numpy() < 0] if len(obs) and "record" in obs else obs.iloc[:0]
        labels = {str(x) for x in obs["label"].unique()} if len(obs) else set()
        rest = dataclasses.replace(ds, obs=obs.iloc[:0])
        return cls(rest, [None], lambda _group: obs, labels, len(obs), csv)
