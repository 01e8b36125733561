"""Data set generators: deterministic from (seed, scale), cached, the real files preferred."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from nbhelpers import NOTEBOOKS

GENERATE = NOTEBOOKS / "datasets" / "generate.py"
GENERATORS = sorted(
    p.stem for p in GENERATE.parent.glob("*.py") if not p.stem.startswith("_") and p.stem != "generate"
)


def generate(name: str, cache: Path, seed: int = 42, scale: str = "quick", real: Path | None = None) -> Path:
    cmd = [sys.executable, str(GENERATE), name, "--seed", str(seed), "--scale", scale, "--cache", str(cache)]
    if real is not None:
        cmd += ["--real", str(real)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=300)
    return Path(out.stdout.strip().splitlines()[-1])


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != ".complete"):
        h.update(f.relative_to(folder).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def test_every_notebook_names_an_existing_generator() -> None:
    import nbformat

    names = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    assert len(names) == 11
    for name in names:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        assert any("parameters" in c.metadata.get("tags", []) for c in nb.cells), name
        for ds in nb.metadata["testbed"]["datasets"]:
            assert ds in GENERATORS, (name, ds)


@pytest.mark.parametrize("name", GENERATORS)
def test_generator_writes_its_files(name: str, scratch: Path) -> None:
    folder = generate(name, scratch / "datasets")  # the cache the notebook tests use too
    assert folder == scratch / "datasets" / f"{name}-seed42-quick"
    assert (folder / ".complete").exists()
    assert any(folder.rglob("*.*"))


def test_public_columns_and_rates(scratch: Path) -> None:
    cards = pd.read_csv(generate("creditcard", scratch / "datasets") / "creditcard.csv")
    assert list(cards.columns) == ["Time", *[f"V{i}" for i in range(1, 29)], "Amount", "Class"]
    assert 0.001 < cards["Class"].mean() < 0.003
    flights = pd.read_csv(generate("flights", scratch / "datasets") / "flights.csv", low_memory=False)
    wanted = ("AIRLINE", "ORIGIN_AIRPORT", "DEPARTURE_DELAY", "ARRIVAL_DELAY", "CANCELLED", "WEATHER_DELAY")
    assert set(wanted) <= set(flights.columns)
    assert 0.005 < flights["CANCELLED"].mean() < 0.03
    shoppers = pd.read_csv(generate("shoppers", scratch / "datasets") / "online_shoppers_intention.csv")
    assert 0.1 < shoppers["Revenue"].mean() < 0.22 and shoppers.shape[1] == 18
    tweets = generate("tweets", scratch / "datasets") / "training.1600000.processed.noemoticon.csv"
    first = pd.read_csv(tweets, header=None, encoding="latin-1", nrows=5)
    assert first.shape[1] == 6 and set(first[0]) <= {0, 4}


def test_same_seed_same_bytes_other_seed_other_data(tmp_path: Path) -> None:
    a = generate("shoppers", tmp_path / "a", seed=7)
    b = generate("shoppers", tmp_path / "b", seed=7)
    c = generate("shoppers", tmp_path / "c", seed=8)
    assert digest(a) == digest(b) != digest(c)


def test_cached_set_is_not_regenerated(tmp_path: Path) -> None:
    first = generate("apps", tmp_path)
    marker = (first / ".complete").stat().st_mtime_ns
    data = (first / "googleplaystore.csv").stat().st_mtime_ns
    assert generate("apps", tmp_path) == first
    assert (first / ".complete").stat().st_mtime_ns == marker
    assert (first / "googleplaystore.csv").stat().st_mtime_ns == data
    assert generate("apps", tmp_path, scale="standard") != first


def test_real_files_are_preferred_when_complete(tmp_path: Path) -> None:
    real = tmp_path / "real"
    (real / "shoppers").mkdir(parents=True)
    assert generate("shoppers", tmp_path / "cache", real=real).parent == tmp_path / "cache"  # incomplete
    (real / "shoppers" / "online_shoppers_intention.csv").write_text("Revenue\nTrue\n")
    assert generate("shoppers", tmp_path / "cache", real=real) == real / "shoppers"


def test_unknown_generator_is_an_error(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(GENERATE), "nope", "--cache", str(tmp_path)], capture_output=True, text=True
    )
    assert proc.returncode != 0 and "no generator 'nope'" in proc.stderr
