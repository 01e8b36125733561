"""Function code lookup: ``functions/<name>/function.yml`` (handler, description) + the module."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from testbed_agent.errors import TestbedError
from testbed_agent.faas import faas_dir


@dataclass(frozen=True)
class FunctionCode:
    """Where a function's handler lives: ``code_dir/module.py`` defines ``handler``."""

    name: str
    code_dir: Path
    module: str
    handler: str
    description: str = ""


def default_dirs() -> list[Path]:
    return [faas_dir() / "functions"]


def find_function(name: str, dirs: list[Path]) -> FunctionCode:
    """Resolve a function by name in the functions directories, or by a directory path."""
    candidates = [Path(name)] if "/" in name else [d / name for d in dirs]
    for d in candidates:
        if d.is_dir():
            return _load(d)
    known = sorted({p.name for d in dirs if d.is_dir() for p in d.iterdir() if p.is_dir()})
    raise TestbedError(f"unknown function '{name}'", hint="functions: " + ", ".join(known))


def _load(d: Path) -> FunctionCode:
    meta = {}
    if (d / "function.yml").is_file():
        meta = yaml.safe_load((d / "function.yml").read_text(encoding="utf-8")) or {}
    module, _, handler = str(meta.get("handler", "handler.handler")).rpartition(".")
    if not (d / f"{module}.py").is_file():
        raise TestbedError(f"{d}: handler module {module}.py not found")
    return FunctionCode(d.name, d.resolve(), module, handler, str(meta.get("description", "")))
