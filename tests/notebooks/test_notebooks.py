"""Every notebook runs to the end at quick scale through the workload, offline, with real kernels.

The notebooks are run as the published study's plan names them (original Kaggle file names and
its ``datasets`` column, resolved through kaggle_notebooks/aliases.yml), so this one run of each
notebook checks both the notebook and the study plan's notebook lines (issue 16 item 1).
"""

from __future__ import annotations

import nbformat
import pytest
from nbhelpers import NOTEBOOKS, STUDY_PLAN, Runner

from testbed_agent.plan import load_plan
from testbed_agent.workloads.notebook.aliases import notebook_alias

STUDY = [b for b in load_plan(STUDY_PLAN).benchmarks if b.type == "kaggle_notebook"]
#: (plan name, datasets column) of each run: the study's lines, then ours it does not name
LINES = [(b.name, b.datasets) for b in STUDY]
LINES += [
    (p.name, ())
    for p in sorted(NOTEBOOKS.glob("*.ipynb"))
    if p.name not in {notebook_alias(n) or n for n, _ in LINES}  # SimplePrime has no alias
]


def test_the_study_names_every_notebook_but_simpleprime() -> None:
    assert [n for n, d in LINES if not d] == ["SimplePrime.ipynb"]
    assert len(LINES) == len(list(NOTEBOOKS.glob("*.ipynb")))


@pytest.mark.slow
@pytest.mark.parametrize(("name", "datasets"), LINES, ids=[n for n, _ in LINES])
def test_notebook_runs_at_quick_scale(name: str, datasets: tuple[str, ...], runner: Runner) -> None:
    out, ctx = runner.run(name, datasets=datasets, scale="quick")
    assert out.status == "ok", out.error
    assert out.metrics["cells_s"]["value"] > 0
    executed = nbformat.read(ctx.artifacts / out.artifacts[0], as_version=4)
    errors = [o for c in executed.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert errors == []
    ours = notebook_alias(name) or name
    assert out.params["notebook"] == ours
    source = nbformat.read(NOTEBOOKS / ours, as_version=4)
    # the record names the data sets as the plan did, the generator behind each, and their source
    assert sorted(out.params["datasets"]) == sorted(datasets or source.metadata["testbed"]["datasets"])
    # each data set the plan names is made by one of the notebook's generators (the study names
    # several Kaggle data sets where one generator stands for them: movie, pycaret)
    assert set(out.params["dataset_generators"]) == set(out.params["datasets"])
    assert set(out.params["dataset_generators"].values()) == set(source.metadata["testbed"]["datasets"])
    assert set(out.params["datasets"].values()) <= {"generated"}
    assert out.params["dataset_source"] == (
        "generated" if datasets or source.metadata["testbed"]["datasets"] else None
    )
    # the notebook wrote its figures into its own working directory, not into the repository
    workdir = runner.scratch / "notebooks" / f"{runner.index:03d}-{ours.removesuffix('.ipynb')}-r0"
    assert workdir.is_dir()
