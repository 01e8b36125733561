"""The import graph of the toolkit's packages (issue 28): no cycles, and each room imports only the
rooms below it.

Every ``import`` statement counts, at module level or inside a function (a lazy import hides a
cycle, it does not remove it); imports under ``if TYPE_CHECKING:`` do not run and do not count.
Rooms, from the bottom: ``testbed_shared`` (libraries the controller shares with targets) <-
``testbed_services`` (services the toolkit runs) <- ``testbed_agent`` (the target agent) <-
``testbed_reports`` (the controller's report). The agent bundle a target gets holds the first three;
nothing in them may import the report.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {
    "testbed_shared": ROOT / "shared",
    "testbed_services": ROOT / "agent",
    "testbed_agent": ROOT / "agent",
    "testbed_reports": ROOT / "reports",
}
#: what each room may import (besides itself)
ALLOWED = {
    "testbed_shared": set(),
    "testbed_services": {"testbed_shared"},
    "testbed_agent": {"testbed_shared", "testbed_services"},
    "testbed_reports": {"testbed_shared", "testbed_services", "testbed_agent"},
}
#: cycles known when this test was written, in code another issue owns (issue 26: attestation, guard):
#: listed so that the test catches every new one; remove an entry when its cycle is gone (the test
#: fails on a listed cycle that no longer exists, so the list only shrinks)
KNOWN_CYCLES: set[frozenset[str]] = {
    frozenset({"testbed_agent.guard", "testbed_agent.scratch"}),  # issue 26 (guard held by descriptor)
    frozenset({"testbed_shared.attest.keys", "testbed_shared.attest.tpm"}),
    frozenset({"testbed_shared.attest.manifest", "testbed_shared.attest.verify"}),
}


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the four packages."""
    found = {}
    for pkg, base in PACKAGES.items():
        for path in (base / pkg).rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else getattr(test, "attr", "")
            if name == "TYPE_CHECKING":
                skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def imports_of(name: str, path: Path, mods: dict[str, Path]) -> set[str]:
    """The modules of the four packages that ``name`` imports (``from pkg import mod`` names mod)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skip = _type_checking_nodes(tree)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in mods else base)
    return {m for m in out if m in mods and m != name}


@functools.cache
def graph() -> dict[str, set[str]]:
    mods = modules()
    return {name: imports_of(name, path, mods) for name, path in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for start, deps in edges.items():
        if start in index:
            continue
        work = [(start, iter(sorted(deps)))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.add(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    found.append(frozenset(comp))
    return found


def test_the_cycle_finder_finds_a_cycle_through_a_lazy_import() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [frozenset({"a", "b", "c"})]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_parser_sees_lazy_imports_and_skips_type_checking(tmp_path: Path) -> None:
    mod = tmp_path / "m.py"
    mod.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import p.b\n"
        "def f():\n    from p import c\n    from . import d\n"
    )
    mods = {"p.m": mod, "p.b": mod, "p.c": mod, "p.d": mod}
    assert imports_of("p.m", mod, mods) == {"p.c", "p.d"}


def test_no_import_cycles() -> None:
    found = set(cycles(graph()))
    new = [sorted(c) for c in found - KNOWN_CYCLES]
    assert not new, f"import cycles: {new}"
    gone = [sorted(c) for c in KNOWN_CYCLES - found]
    assert not gone, f"these cycles are gone: remove them from KNOWN_CYCLES: {gone}"


def test_plan_parser_and_workloads_form_no_cycle() -> None:
    """The cycle the issue found: plan -> params -> workloads/* -> plan."""
    edges = graph()
    assert "testbed_agent.plan" not in edges["testbed_agent.params"]
    for name, deps in edges.items():
        if name.startswith("testbed_agent.workloads"):
            assert "testbed_agent.plan" not in deps, name


@pytest.mark.parametrize("room", sorted(ALLOWED))
def test_each_room_imports_only_the_rooms_below_it(room: str) -> None:
    wrong = sorted(
        f"{name} imports {dep}"
        for name, deps in graph().items()
        if name.split(".")[0] == room
        for dep in deps
        if dep.split(".")[0] not in ALLOWED[room] | {room}
    )
    assert not wrong


def test_every_package_says_what_it_holds() -> None:
    """Each package and subpackage opens with a docstring (README "Where the code is")."""
    missing = [
        name
        for name, path in modules().items()
        if path.name == "__init__.py" and not ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not missing
