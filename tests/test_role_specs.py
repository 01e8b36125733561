"""Every role's argument spec and its defaults agree both ways, for every role under roles/.

A spec option that is not `required: true` must have a value in defaults/main.yml (otherwise the
first task that uses it fails with "undefined variable" - the azure_vm polling timeout did), every
default must be declared in the spec, a `default:` written in the spec must equal the role's
default, and a literal default must have the spec's type and be one of its `choices`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from repotest import ROOT

ROLES = sorted(p for p in (ROOT / "roles").iterdir() if (p / "meta/argument_specs.yml").is_file())
TYPES = {"str": str, "int": int, "bool": bool, "list": list, "dict": dict, "float": (int, float), "path": str}


def _load(role: Path) -> tuple[dict, dict]:
    defaults = yaml.safe_load((role / "defaults/main.yml").read_text()) or {}
    specs = yaml.safe_load((role / "meta/argument_specs.yml").read_text())["argument_specs"]
    return defaults, specs


def _mismatches(defaults: dict, specs: dict) -> list[str]:
    out = []
    declared: set[str] = set()
    for entry, spec in specs.items():
        for name, opt in (spec.get("options") or {}).items():
            declared.add(name)
            out += _option_mismatches(f"{entry}.{name}", name, opt, defaults)
    out += [f"default {name} is not in the argument spec" for name in sorted(set(defaults) - declared)]
    return out


def _option_mismatches(where: str, name: str, opt: dict, defaults: dict) -> list[str]:
    if opt.get("required"):
        return [f"{where} is required but has a default"] if name in defaults else []
    if name not in defaults:
        return [f"{where} is optional but has no value in defaults/main.yml"]
    value = defaults[name]
    out = []
    if "default" in opt and opt["default"] != value:
        out.append(f"{where}: spec default {opt['default']!r} != defaults/main.yml {value!r}")
    templated = isinstance(value, str) and "{{" in value
    kind = TYPES.get(opt.get("type", "str"))
    if not templated and kind and not isinstance(value, kind):
        out.append(f"{where}: default {value!r} is not of type {opt.get('type', 'str')}")
    values = value if isinstance(value, list) else [value]
    if not templated and "choices" in opt and not set(map(str, values)) <= set(map(str, opt["choices"])):
        out.append(f"{where}: default {value!r} is not one of {opt['choices']}")
    return out


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_argument_spec_and_defaults_agree(role: Path) -> None:
    defaults, specs = _load(role)
    assert _mismatches(defaults, specs) == []


def test_the_check_catches_an_option_without_default() -> None:
    specs = {"main": {"options": {"x_timeout": {"type": "int"}, "x_name": {"type": "str", "default": "a"}}}}
    assert _mismatches({"x_name": "b", "x_extra": 1}, specs) == [
        "main.x_timeout is optional but has no value in defaults/main.yml",
        "main.x_name: spec default 'a' != defaults/main.yml 'b'",
        "default x_extra is not in the argument spec",
    ]
