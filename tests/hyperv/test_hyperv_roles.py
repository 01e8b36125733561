"""The Hyper-V roles' argument specs equal their defaults, both ways."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("role", ["hyperv_host", "hyperv_guest"])
def test_argument_specs_equal_defaults(role: str) -> None:
    defaults = yaml.safe_load((ROOT / "roles" / role / "defaults/main.yml").read_text())
    spec = yaml.safe_load((ROOT / "roles" / role / "meta/argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    assert set(options) == set(defaults)
    for name, option in options.items():
        templated = isinstance(defaults[name], str) and "{{" in defaults[name]
        if templated:
            assert "default" not in option, f"{role}: {name} is templated, its spec must not state a default"
        else:
            assert option.get("default") == defaults[name], f"{role}: {name}"
        assert option.get("description"), f"{role}: {name} undocumented"
