"""Helpers of the notebook tests: a run helper and small notebooks written on the fly."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from testbed_agent.plan import Benchmark
from testbed_agent.results import Outcome
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.notebook import NotebookWorkload

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "kaggle_notebooks"
#: the published data-science study's plan, in its classic form with the original names
STUDY_PLAN = ROOT / "workloads" / "plans" / "cc-datascience-study.txt"


class Runner:
    """Runs one execution of a notebook through the workload class, as the agent's runner does."""

    def __init__(self, scratch: Path, artifacts: Path) -> None:
        self.scratch = scratch
        self.artifacts = artifacts
        self.stop = threading.Event()
        self.index = 0

    def bench(self, name: str, datasets: tuple[str, ...] = (), **params: Any) -> Benchmark:
        self.index += 1
        return Benchmark(
            name=name,
            type="kaggle_notebook",
            index=self.index,
            line=self.index,
            datasets=datasets,
            params=params,
        )

    def context(self, bench: Benchmark, timeout_s: float | None = None) -> RunContext:
        deadline = time.monotonic() + (timeout_s or NotebookWorkload.timeout_s(bench))
        return RunContext(
            bench=bench,
            repetition=0,
            scratch=self.scratch,
            artifacts=self.artifacts,
            deadline=deadline,
            stop=self.stop,
        )

    def run(
        self, name: str, timeout_s: float | None = None, datasets: tuple[str, ...] = (), **params: Any
    ) -> tuple[Outcome, RunContext]:
        bench = self.bench(name, datasets, **params)
        NotebookWorkload.check(bench)
        ctx = self.context(bench, timeout_s)
        return NotebookWorkload().run(ctx, NotebookWorkload.parse(ctx.bench)), ctx


def write_notebook(path: Path, *sources: str) -> Path:
    """A notebook: a markdown title, a tagged parameters cell, then one code cell per source."""
    params = new_code_cell('scale = "standard"\nseed = 42')
    params.metadata["tags"] = ["parameters"]
    cells = [new_markdown_cell("# test notebook"), params, *(new_code_cell(s) for s in sources)]
    nb = new_notebook(
        cells=cells,
        metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
    )
    nbformat.write(nb, path)
    return path


def code_outputs(nb: nbformat.NotebookNode) -> str:
    """All text a notebook's code cells printed."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", "") or "".join(out.get("traceback", [])) + out.get("ename", ""))
    return "\n".join(parts)
