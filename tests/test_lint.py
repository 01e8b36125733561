"""Style gates that CI enforces through `make test`: ruff and ansible-lint (production)."""

from __future__ import annotations

import subprocess

import pytest
from repotest import ROOT, VENV_BIN


def test_ruff_clean() -> None:
    res = subprocess.run([str(VENV_BIN / "ruff"), "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-4000:]


def test_ruff_formatted() -> None:
    res = subprocess.run(
        [str(VENV_BIN / "ruff"), "format", "--check", "."], cwd=ROOT, capture_output=True, text=True
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]


@pytest.mark.slow
def test_ansible_lint_production_profile() -> None:
    res = subprocess.run(
        [str(VENV_BIN / "ansible-lint"), "--profile", "production", "--offline"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]


def test_every_role_is_documented_and_specified() -> None:
    for role in sorted(p for p in (ROOT / "roles").iterdir() if p.is_dir()):
        for required in ("README.md", "defaults/main.yml", "meta/argument_specs.yml", "meta/main.yml"):
            assert (role / required).is_file(), f"{role.name}: missing {required}"
        prefix = role.name + "_"
        for line in (role / "defaults" / "main.yml").read_text().splitlines():
            if line and not line.startswith(("#", "-", " ")) and ":" in line:
                name = line.split(":")[0]
                assert line.startswith(prefix), f"{role.name}: variable {name} lacks prefix {prefix}"
