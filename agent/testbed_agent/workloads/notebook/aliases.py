"""Original notebook and data-set names of the published study -> ours (``aliases.yml``)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path
from typing import Any

import yaml

from testbed_agent.params import ParamError
from testbed_shared.paths import notebooks_dir

ALIASES_FILE = "aliases.yml"


@functools.lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> dict[str, dict[str, str]]:
    """The two tables of an aliases file (``notebooks``, ``datasets``); empty when absent."""
    del mtime  # part of the cache key only
    p = Path(path)
    if not p.is_file():
        return {"notebooks": {}, "datasets": {}}
    try:
        doc = yaml.safe_load(p.read_text()) or {}
        return {k: {str(a): str(b) for a, b in (doc.get(k) or {}).items()} for k in ("notebooks", "datasets")}
    except (yaml.YAMLError, AttributeError, UnicodeDecodeError) as exc:
        problem = " ".join(str(exc).split())[:160]
        raise ParamError("name", f"{p} is not a table of notebooks and datasets: {problem}") from None


def aliases() -> dict[str, dict[str, str]]:
    """The alias tables of the current notebooks directory."""
    path = notebooks_dir() / ALIASES_FILE
    mtime = path.stat().st_mtime if path.is_file() else 0.0
    return _load(str(path), mtime)


def notebook_alias(name: str) -> str | None:
    """Our notebook for an original study name, or None when ``name`` is not an alias."""
    return aliases()["notebooks"].get(name.strip())


def dataset_generator(name: str) -> str:
    """The generator of a data set named in a plan's ``datasets`` column (alias or our name)."""
    return aliases()["datasets"].get(name, name)


def _listed(gen_file: Path, name: str) -> list[str]:
    """A generator module's list ``name`` (FILES, REAL_ALTERNATIVE), read without running it."""
    try:
        tree = ast.parse(gen_file.read_text())
    except (OSError, SyntaxError, UnicodeDecodeError):
        return []
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == name for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return []
            return [str(v) for v in value] if isinstance(value, list) else []
    return []


def dataset_origin(name: str) -> dict[str, Any]:
    """Where data set ``name`` of a plan comes from on this machine, as the notebook workload
    resolves it: its generator, and ``real`` (every file placed in datasets/real/<generator>/),
    ``real, converted`` (the generator's other real form placed) or ``generated``."""
    gens = notebooks_dir() / "datasets"
    gen = dataset_generator(name)
    real = gens / "real" / gen
    files = _listed(gens / f"{gen}.py", "FILES")
    alternative = _listed(gens / f"{gen}.py", "REAL_ALTERNATIVE")
    if files and all((real / f).exists() for f in files):
        source = "real"
    elif alternative and all((real / f).exists() for f in alternative):
        source = "real, converted"
    else:
        source = "generated"
    return {"dataset": name, "generator": gen, "source": source, "real_dir": str(real), "files": files}
