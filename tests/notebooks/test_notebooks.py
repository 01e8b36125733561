"""Every notebook runs to the end at quick scale through the workload, offline, with real kernels."""

from __future__ import annotations

import nbformat
import pytest
from nbhelpers import NOTEBOOKS, Runner

NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_at_quick_scale(name: str, runner: Runner) -> None:
    out, ctx = runner.run(name, scale="quick")
    assert out.status == "ok", out.error
    assert out.metrics["cells_s"]["value"] > 0
    executed = nbformat.read(ctx.artifacts / out.artifacts[0], as_version=4)
    errors = [o for c in executed.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    source = nbformat.read(NOTEBOOKS / name, as_version=4)
    assert sorted(out.params["datasets"]) == sorted(source.metadata["testbed"]["datasets"])
    assert set(out.params["datasets"].values()) <= {"generated"}
    # the notebook wrote its figures into its own working directory, not into the repository
    workdir = runner.scratch / "notebooks" / f"{runner.index:03d}-{name.removesuffix('.ipynb')}-r0"
    assert workdir.is_dir()
