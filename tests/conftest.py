"""Fixtures of the repository-level tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from repotest import ROOT


@pytest.fixture
def root() -> Path:
    return ROOT
