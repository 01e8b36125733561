"""Helpers of the crypto suite tests: the five programs and the shared vector file.

(Not a conftest.py: other test directories import their own ``conftest`` by that name.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from testbed_agent.workloads.crypto import LANGUAGES, command

__all__ = ["LANGUAGES", "command"]

ROOT = Path(__file__).resolve().parents[2]
CRYPTO = ROOT / "workloads" / "crypto"
VECTORS = CRYPTO / "vectors" / "vectors.json"
#: the toolchain each language's program is built with (by mk/crypto.mk)
TOOLCHAIN = {"python": None, "go": "go", "rust": "cargo", "java": "mvn", "node": "npm"}


def program(lang: str) -> tuple[list[str], dict[str, str]]:
    """The command of one language; skip when its toolchain is absent, fail when it is not built."""
    tool = TOOLCHAIN[lang]
    if tool is not None and shutil.which(tool) is None:
        pytest.skip(f"{tool} toolchain not installed on this machine")
    cmd = command(lang, CRYPTO)
    if isinstance(cmd, str):
        pytest.fail(f"{cmd} - run `make build` (make test does)")
    return cmd


def run_program(lang: str, *args: str, timeout: float = 300) -> tuple[int, dict[str, Any]]:
    """Run one program with the contract's arguments; (exit code, its JSON output)."""
    argv, env = program(lang)
    proc = subprocess.run(
        [*argv, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    assert lines, f"{lang} printed nothing; stderr: {proc.stderr[-500:]}"
    return proc.returncode, json.loads(lines[-1])


def load_vectors(path: Path = VECTORS) -> dict[str, Any]:
    return json.loads(path.read_text())


def write_vectors(path: Path, vectors: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"version": 1, "vectors": vectors}))
    return path
