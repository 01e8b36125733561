"""Original notebook and data-set names of the published study -> ours (``aliases.yml``)."""

from __future__ import annotations

import functools
from pathlib import Path

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
