#!/usr/bin/env python3
"""Generate a notebook data set deterministically from a seed and a scale, or find the real one.

    generate.py NAME [--seed 42] [--scale quick|standard|large] [--cache DIR]

Prints the directory holding the data set's files. When every file the data set needs is in
``real/NAME/`` beside this script, that directory is printed and nothing is generated.
Otherwise the files are written once to ``CACHE/NAME-seedS-SCALE/`` (marked complete by a
``.complete`` file) and reused by later calls with the same (name, seed, scale).
A generator may also take another real form (``REAL_ALTERNATIVE`` files and ``adapt``, e.g. the
study's ``Google-Playstore.csv`` for ``apps``): the converted set is cached as
``CACHE/NAME-real-<size>-<mtime>-seedS/`` with its ``.source`` (``real`` or ``mixed``).
"""

from __future__ import annotations

import argparse
import importlib
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCALES = ("quick", "standard", "large")


def generators() -> list[str]:
    """Names of the generator modules beside this script."""
    return sorted(p.stem for p in HERE.glob("*.py") if not p.stem.startswith("_") and p.stem != "generate")


def resolve(name: str, seed: int, scale: str, cache: Path, real: Path) -> Path:
    """Directory with data set ``name``: real files if complete, else the (cached) generated set."""
    if name not in generators():
        raise SystemExit(f"error: no generator '{name}' (known: {', '.join(generators())})")
    module = importlib.import_module(name)
    real_dir = real / name
    if all((real_dir / f).exists() for f in module.FILES):
        return real_dir
    alternative = [real_dir / f for f in getattr(module, "REAL_ALTERNATIVE", [])]
    if alternative and all(p.exists() for p in alternative):
        stamp = "-".join(f"{p.stat().st_size}-{int(p.stat().st_mtime)}" for p in alternative)
        out = cache / f"{name}-real-{stamp}-seed{seed}"
        return _build(out, module, lambda d: module.adapt(real_dir, d, seed=seed), source="mixed")
    out = cache / f"{name}-seed{seed}-{scale}"
    return _build(out, module, lambda d: module.generate(d, seed=seed, scale=scale), source="generated")


def _build(out: Path, module: Any, write: Callable[[Path], None], source: str) -> Path:
    """``out`` written once by ``write`` (atomically: a .tmp directory renamed), reused after."""
    if (out / ".complete").exists():
        return out
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    t0 = time.perf_counter()
    write(tmp)
    (tmp / ".source").write_text(source + "\n")
    missing = [f for f in module.FILES if not (tmp / f).exists()]
    if missing:
        raise SystemExit(f"error: generator '{module.__name__}' did not write {', '.join(missing)}")
    (tmp / ".complete").write_text(f"{time.perf_counter() - t0:.3f}\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name", help="data set: " + ", ".join(generators()))
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--scale", choices=SCALES, default="quick")
    ap.add_argument("--cache", type=Path, default=Path(".datasets"), help="where generated sets are kept")
    ap.add_argument("--real", type=Path, default=HERE / "real", help="where real data sets are placed")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(HERE))
    print(resolve(args.name, args.seed, args.scale, args.cache.resolve(), args.real.resolve()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
