"""Fixtures of the notebook tests: a shared scratch directory, a runner (one thread per library: the
root conftest.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from nbhelpers import NOTEBOOKS, Runner


@pytest.fixture(scope="session")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One scratch directory for the session, so generated data sets are reused across tests."""
    return tmp_path_factory.mktemp("nb-scratch")


@pytest.fixture
def runner(scratch: Path, tmp_path: Path) -> Iterator[Runner]:
    yield Runner(scratch, tmp_path / "artifacts")


@pytest.fixture
def nbdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A notebooks directory of the test's own (with SimplePrime), as TESTBED_NOTEBOOKS_DIR: the
    workload refuses notebooks outside the notebooks directory."""
    path = tmp_path / "notebooks"
    path.mkdir()
    shutil.copy(NOTEBOOKS / "SimplePrime.ipynb", path)
    monkeypatch.setenv("TESTBED_NOTEBOOKS_DIR", str(path))
    return path
