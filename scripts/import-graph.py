"""Draw the import graph of the toolkit's packages (testbed_shared, testbed_services, testbed_agent,
testbed_reports) as SVG through graphviz ``dot``, and count their lines.

    python scripts/import-graph.py --out docs/img/import-graph-after.svg
    git worktree add /tmp/before a81eeeb
    python scripts/import-graph.py --root /tmp/before --out docs/img/import-graph-before.svg
    python scripts/import-graph.py --lines [--root DIR]

A node is a module or subpackage directly in a package (``testbed_agent.workloads`` stands for
every module under it); one box per package. Every import statement is an edge, at module level,
inside a function or under ``if TYPE_CHECKING:`` (as agent/tests/test_import_graph.py counts them).
Red: an edge from a package into one it may not import (the layers: testbed_shared <-
testbed_services <- testbed_agent; testbed_reports -> testbed_shared only). Orange, dashed: an
edge that is part of an import cycle between modules (an orange frame: a cycle among the modules of
one subpackage). ``--lines``: the lines of Python per package,
of bench/ and of the tests.
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {
    "testbed_shared": set(),
    "testbed_services": {"testbed_shared"},
    "testbed_agent": {"testbed_shared", "testbed_services"},
    "testbed_reports": {"testbed_shared"},
}
COLOURS = {
    "testbed_shared": "#e8f0fe",
    "testbed_services": "#fef7e0",
    "testbed_agent": "#e6f4ea",
    "testbed_reports": "#fce8e6",
}


def package_files(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for the modules of the four packages under ``root`` (whichever
    distribution directory holds them)."""
    found: dict[str, Path] = {}
    for pkg in LAYERS:
        for init in sorted(root.glob(f"*/{pkg}/__init__.py")):
            base = init.parent.parent
            for path in (base / pkg).rglob("*.py"):
                parts = list(path.relative_to(base).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                found[".".join(parts)] = path
    return found


def edges_of(mods: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of the four packages it imports (every import statement)."""
    out: dict[str, set[str]] = {}
    for name, path in mods.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                deps |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join([*package[: len(package) - node.level + 1], *([base] if base else [])])
                deps |= {f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names}
        out[name] = {d for d in deps if d in mods and d != name}
    return out


def cycle_edges(edges: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The module edges inside a strongly connected component (each is part of a cycle)."""
    reach: dict[str, set[str]] = {}
    for start in edges:
        seen, todo = set(), [start]
        while todo:
            for dep in edges[todo.pop()]:
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        reach[start] = seen
    return {(a, b) for a, deps in edges.items() for b in deps if a in reach[b]}


def node_of(module: str) -> str:
    """The drawn node of a module: its package's module or subpackage (two name parts)."""
    return ".".join(module.split(".")[:2])


def dot_source(edges: dict[str, set[str]], title: str) -> str:
    cycles = cycle_edges(edges)
    cyc = {(node_of(a), node_of(b)) for a, b in cycles}
    inside = {node_of(a) for a, b in cycles if node_of(a) == node_of(b)}
    drawn: dict[tuple[str, str], str] = {}
    for a, deps in edges.items():
        for b in deps:
            na, nb = node_of(a), node_of(b)
            if na == nb:
                continue
            top_a, top_b = na.split(".")[0], nb.split(".")[0]
            if top_a != top_b and top_b not in LAYERS[top_a]:
                drawn[(na, nb)] = 'color="#d93025", penwidth=2.2'
            elif (na, nb) in cyc:
                drawn.setdefault((na, nb), 'color="#f29900", style=dashed, penwidth=1.6')
            else:
                drawn.setdefault((na, nb), 'color="#80868b55", arrowsize=0.5')
    nodes: dict[str, set[str]] = defaultdict(set)
    for name in edges:
        nodes[name.split(".")[0]].add(node_of(name))
    lines = [
        "digraph imports {",
        f'  label="{title}"; labelloc=t; fontsize=22; fontname="Helvetica";',
        "  rankdir=LR; newrank=true; ranksep=1.2; nodesep=0.08; concentrate=true;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, height=0.25];',
    ]
    for pkg in LAYERS:
        if not nodes.get(pkg):
            continue
        lines.append(f'  subgraph "cluster_{pkg}" {{ label="{pkg}"; fontsize=16; style=rounded;')
        for n in sorted(nodes[pkg]):
            label = n.split(".", 1)[1] if "." in n else "(package)"
            ring = ', color="#f29900", penwidth=2.5' if n in inside else ""
            label += " (cycle inside)" if n in inside else ""
            lines.append(f'    "{n}" [label="{label}", fillcolor="{COLOURS[pkg]}"{ring}];')
        lines.append("  }")
    lines += [f'  "{a}" -> "{b}" [{style}];' for (a, b), style in sorted(drawn.items())]
    lines.append("}")
    return "\n".join(lines) + "\n"


def count_lines(root: Path) -> dict[str, int]:
    """Lines of Python (all physical lines) per package, bench/ and the tests (every file under a
    ``tests`` directory, and conftest.py)."""
    out: dict[str, int] = {}
    mods = package_files(root)
    for pkg in LAYERS:
        out[pkg] = sum(
            len(p.read_text(encoding="utf-8").splitlines()) for n, p in mods.items() if n.split(".")[0] == pkg
        )
    out["bench"] = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in (root / "bench").glob("*.py"))
    skip = {".venv", ".scratch", "node_modules", ".git"}
    tests = [
        p
        for p in root.rglob("*.py")
        if ("tests" in p.relative_to(root).parts or p.name == "conftest.py")
        and not skip & set(p.relative_to(root).parts)
    ]
    out["tests"] = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in tests)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to read (default: this one)")
    ap.add_argument("--out", type=Path, help="SVG file to write (needs graphviz's dot)")
    ap.add_argument("--title", default="", help="the picture's title (default: the root's commit)")
    ap.add_argument("--lines", action="store_true", help="print the lines of Python per package")
    args = ap.parse_args()
    if args.lines:
        for name, n in count_lines(args.root).items():
            print(f"{name}\t{n}")
    if args.out is None:
        return 0
    if shutil.which("dot") is None:
        print("error: graphviz's dot is not installed (apt-get install graphviz)", file=sys.stderr)
        return 2
    commit = subprocess.run(["git", "-C", str(args.root), "log", "-1", "--format=%h"], capture_output=True,
                            text=True, check=False).stdout.strip()  # fmt: skip
    edges = edges_of(package_files(args.root))
    source = dot_source(edges, args.title or f"import graph at {commit or args.root}")
    svg = subprocess.run(["dot", "-Tsvg"], input=source, capture_output=True, text=True, check=False)
    if svg.returncode != 0:
        print(f"error: dot failed: {svg.stderr.strip()}", file=sys.stderr)
        return 1
    args.out.write_text(svg.stdout)
    print(f"{args.out}: {len(edges)} modules")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
