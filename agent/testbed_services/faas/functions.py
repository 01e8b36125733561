"""Function code lookup: ``functions/<name>/function.yml`` (handler, description) + the module.

Functions are confined to the configured function directories: a function is named, never given
as a path, and its resolved directory (symlinks followed) must lie inside one of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from testbed_services.faas import faas_dir
from testbed_shared.errors import TestbedError
from testbed_shared.paths import workloads_dir

#: function and deployment names: a letter or digit, then letters, digits, ``_``, ``-``, ``.``
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
#: a handler spec ``module.function``, both Python identifiers
HANDLER_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class FunctionCode:
    """Where a function's handler lives: ``code_dir/module.py`` defines ``handler``."""

    name: str
    code_dir: Path
    module: str
    handler: str
    description: str = ""
    #: library directories (inside workloads/) put on the function's PYTHONPATH, as a package
    #: deployed to a real platform would vendor them
    python_path: tuple[Path, ...] = ()


def default_dirs() -> list[Path]:
    return [faas_dir() / "functions"]


def check_name(name: object, what: str = "function name") -> str:
    """``name`` if it is a plain name (no path, no ``..``), else a TestbedError."""
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or ".." in name:
        raise TestbedError(
            f"invalid {what} {str(name)[:80]!r}",
            hint="names are 1-64 letters, digits, '_', '-', '.', starting with a letter or digit",
        )
    return name


def find_function(name: str, dirs: list[Path]) -> FunctionCode:
    """Resolve a function by name inside the functions directories (never by path)."""
    check_name(name)
    for base in dirs:
        root = base.resolve()
        d = (root / name).resolve()
        if d.parent == root and d.is_dir():
            return _load(d)
    known = sorted({p.name for d in dirs if d.is_dir() for p in d.iterdir() if p.is_dir()})
    raise TestbedError(f"unknown function '{name}'", hint="functions: " + ", ".join(known))


def _load(d: Path) -> FunctionCode:
    meta = {}
    if (d / "function.yml").is_file():
        meta = yaml.safe_load((d / "function.yml").read_text(encoding="utf-8")) or {}
    if not isinstance(meta, dict):
        raise TestbedError(f"{d}/function.yml: expected a mapping")
    match = HANDLER_RE.fullmatch(str(meta.get("handler", "handler.handler")))
    if match is None:
        raise TestbedError(f"{d}/function.yml: handler must be module.function")
    module, handler = match.groups()
    path = (d / f"{module}.py").resolve()
    if path.parent != d or not path.is_file():
        raise TestbedError(f"{d}: handler module {module}.py not found")
    return FunctionCode(d.name, d, module, handler, str(meta.get("description", "")), _python_path(d, meta))


def _python_path(d: Path, meta: dict) -> tuple[Path, ...]:
    entries = meta.get("python_path") or []
    if not isinstance(entries, list):
        raise TestbedError(f"{d}/function.yml: python_path must be a list")
    root = workloads_dir().resolve()
    out = []
    for entry in entries:
        path = (root / str(entry)).resolve()
        if not path.is_relative_to(root) or not path.is_dir():
            raise TestbedError(f"{d}/function.yml: python_path {entry!r} is not a directory under {root}")
        out.append(path)
    return tuple(out)
