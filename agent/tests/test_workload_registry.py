"""A workload type is one module (issue 28): the registry finds the types, and each type's module
owns its params, aliases, primary metrics, estimate and parser kind."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil

import pytest

from testbed_agent import workloads
from testbed_agent.benchmark import Benchmark
from testbed_agent.params import ParamError
from testbed_agent.workloads.base import Workload

TYPES = {"crypto", "dd", "faas", "fio", "kaggle_notebook", "pyperformance", "sysinfo"}


def test_the_registry_finds_every_type() -> None:
    assert set(workloads.registry()) == TYPES
    assert not workloads.unavailable()


def test_each_module_of_the_package_is_one_type() -> None:
    """Every module or subpackage directly in workloads/ (but base) defines exactly one type."""
    for info in pkgutil.iter_modules(workloads.__path__):
        if info.name == "base":
            continue
        module = importlib.import_module(f"testbed_agent.workloads.{info.name}")
        own = [
            obj
            for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, Workload) and obj.__module__ == module.__name__
        ]
        assert len(own) == 1, info.name
        assert workloads.registry()[own[0].type] is own[0]


@pytest.mark.parametrize(
    ("name", "given", "expected"),
    [
        ("fio_4k_randread", "standard", "fio"),
        ("dd_write", "", "dd"),
        ("systeminfo", "standard", "sysinfo"),
        ("sysinfo", "standard", "sysinfo"),
        ("pyperformance", "standard", "pyperformance"),
        ("SimplePrime.ipynb", "standard", "kaggle_notebook"),
        ("x", "notebook", "kaggle_notebook"),
        ("x", "Systeminfo", "sysinfo"),
        ("x", "pyperf", "pyperformance"),
        ("x", "crypto", "crypto"),
        ("whatever", "standard", "standard"),
        ("x", "nonesuch", "nonesuch"),
    ],
)
def test_types_resolve_from_their_modules_aliases_and_names(name: str, given: str, expected: str) -> None:
    assert workloads.resolve_type(name, given) == expected


@pytest.mark.parametrize("wtype", sorted(TYPES))
def test_params_are_a_frozen_dataclass_with_a_rule_per_field(wtype: str) -> None:
    cls = workloads.registry()[wtype]
    assert dataclasses.is_dataclass(cls.Params) and cls.Params.__dataclass_params__.frozen
    for f in dataclasses.fields(cls.Params):
        assert "kind" in f.metadata, f"{wtype}.{f.name}"


@pytest.mark.parametrize(
    ("wtype", "name", "params"),
    [
        ("dd", "dd_x", {}),
        ("fio", "fio_4k_randread", {}),
        ("pyperformance", "pyperformance", {}),
        ("kaggle_notebook", "SimplePrime.ipynb", {}),
        ("faas", "f", {"function": "echo"}),
        ("sysinfo", "sysinfo", {}),
        ("crypto", "aes-256-gcm", {}),
    ],
)
def test_defaults_estimate_and_timeout_come_from_the_module(wtype: str, name: str, params: dict) -> None:
    cls = workloads.registry()[wtype]
    bench = Benchmark(name, wtype, 0, 1, params=params)
    typed = cls.parse(bench)
    assert cls.estimate_s(typed) > 0
    assert cls.timeout_s(bench) == cls.default_timeout(typed) > 0
    assert cls.timeout_s(dataclasses.replace(bench, timeout_s=7.0)) == 7.0


def test_typed_params_reach_run_converted() -> None:
    """``run`` gets numbers, not the plan's strings: dd's 64k is 65536 bytes."""
    typed = workloads.parse_params("dd", {"bs": "64k", "count": 3})
    assert typed.bs == 65536 and typed.count == 3 and typed.iflag == "direct"


def test_faas_calls_default_depends_on_the_mode() -> None:
    assert workloads.parse_params("faas", {"function": "f"}).calls == 5
    assert workloads.parse_params("faas", {"function": "f", "mode": "scaling"}).calls == 1
    with pytest.raises(ParamError, match="retention needs"):
        workloads.parse_params("faas", {"function": "f", "mode": "retention"})


def test_pyperformance_fast_flag_is_the_mode_unless_a_mode_is_given() -> None:
    assert workloads.parse_params("pyperformance", {"fast": True}).run_mode == "fast"
    assert workloads.parse_params("pyperformance", {"fast": True, "mode": "rigorous"}).run_mode == "rigorous"
    assert workloads.parse_params("pyperformance", {}).run_mode == "normal"


def test_primary_metrics_by_type_and_alias() -> None:
    assert workloads.primary_metrics("notebook", ["wall_s", "cells_s"]) == ["wall_s"]
    assert workloads.primary_metrics("nonesuch", ["x"]) == []


def test_parser_kinds_are_the_modules() -> None:
    kinds = {cls.parse_kind for cls in workloads.registry().values() if cls.parse_kind}
    assert kinds == {"fio", "dd", "pyperf", "notebook"}
