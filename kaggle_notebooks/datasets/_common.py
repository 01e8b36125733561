"""Helpers shared by the generators: sizes by scale and a seeded random generator per data set."""

from __future__ import annotations

import zlib

import numpy as np


def rng(name: str, seed: int) -> np.random.Generator:
    """A generator seeded from the data set's name and the seed, so sets never share a stream."""
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def size(scale: str, quick: int, standard: int, large: int) -> int:
    """The number of rows (or items) at a scale."""
    return {"quick": quick, "standard": standard, "large": large}[scale]
