"""``kaggle_notebook``: run a data-science notebook, timed cell by cell (issue 3).

The notebook is looked up in ``kaggle_notebooks/`` (``TESTBED_NOTEBOOKS_DIR`` overrides), its
data set generated once per (generator, seed, scale) into the run's scratch directory (or read
from ``kaggle_notebooks/datasets/real/<name>/`` when the real files are there), parameters are
injected with papermill and the cells run with nbclient in a working directory of their own.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from testbed_agent.benchmark import Benchmark
from testbed_agent.params import ParamError, spec
from testbed_agent.results import Outcome, metric
from testbed_agent.workloads.base import RunContext, Workload
from testbed_agent.workloads.notebook.aliases import dataset_generator, notebook_alias
from testbed_shared.errors import BenchmarkTimeout, Interrupted, WorkloadError
from testbed_shared.paths import notebooks_dir

SCALES = ("quick", "standard", "large")
#: default timeout of one execution, by scale
SCALE_TIMEOUT_S = {"quick": 900.0, "standard": 3600.0, "large": 4 * 3600.0}
#: typical seconds of one execution, by scale (duration estimate)
SCALE_TYPICAL_S = {"quick": 30.0, "standard": 300.0, "large": 1800.0}
#: (generator, seed, scale, cache root) -> data directory, so repetitions never regenerate
_DATA_CACHE: dict[tuple[str, int, str, str], Path] = {}


def locate(name: str) -> Path:
    """Resolve a plan name (``SimplePrime.ipynb``, ``airline-delay``, an original study name
    listed in ``aliases.yml``) to a notebook file inside the notebooks directory."""
    base = notebooks_dir()
    raw = Path(notebook_alias(name) or name)
    if raw.is_absolute():  # an absolute path inside the notebooks directory names that notebook
        try:
            raw = raw.resolve().relative_to(base.resolve())
        except ValueError:
            raise ParamError(
                "name", f"notebook '{name}' is outside {base}: name it relative to that directory"
            ) from None
    if ".." in raw.parts or str(raw).startswith("~"):
        raise ParamError("name", f"notebook '{name}' leaves {base}: name it relative to that directory")
    candidates = [base / raw]
    if raw.suffix != ".ipynb":
        candidates.append(candidates[0].with_name(candidates[0].name + ".ipynb"))
    root = base.resolve()
    for path in candidates:
        if path.is_file():
            if root not in path.resolve().parents:
                raise ParamError("name", f"notebook '{name}' resolves outside {base}")
            return path
    raise ParamError("name", f"no notebook '{name}' in {base} (set TESTBED_NOTEBOOKS_DIR to change)")


def notebook_datasets(bench: Benchmark, path: Path) -> list[str]:
    """Data sets a notebook needs: the plan's datasets field, else the notebook's metadata."""
    if bench.datasets:
        return list(bench.datasets)
    import nbformat  # noqa: PLC0415 - notebooks extra (nbformat, papermill, nbclient): only the notebook type needs it

    meta = nbformat.read(path, as_version=4).metadata.get("testbed", {})
    return list(meta.get("datasets", []))


@dataclass(frozen=True)
class NotebookParams:
    scale: str = spec("standard", choices=SCALES)
    seed: int = spec(42, "int", lo=0, hi=2**32 - 1)
    kernel: str = spec("python3", pattern=r"[A-Za-z0-9_.-]{1,64}")
    cell_timeout_s: float = spec(0, "num", lo=0, hi=7 * 86_400)
    parameters: dict = field(default_factory=dict, metadata={"kind": "map", "pattern": r"[A-Za-z_]\w{0,63}"})


class NotebookWorkload(Workload):
    """Execute one notebook with nbclient; metrics: wall, kernel start-up, cell times."""

    type: ClassVar[str] = "kaggle_notebook"
    tool: ClassVar[str] = "nbclient"
    parse_kind: ClassVar[str] = "notebook"
    aliases = ("notebook",)
    name_suffixes = (".ipynb",)
    Params = NotebookParams
    #: wall time
    primary = (r"wall_s",)

    @classmethod
    def check_environment(cls, bench: Benchmark, params: NotebookParams) -> None:
        path = locate(bench.name)
        gens = generators_dir()
        for name in notebook_datasets(bench, path):
            gen = dataset_generator(name)
            if not (gens / f"{gen}.py").is_file():
                raise ParamError(
                    "datasets", f"no generator '{gen}' in {gens} and no alias '{name}' in aliases.yml"
                )

    @classmethod
    def default_timeout(cls, params: NotebookParams) -> float:
        return SCALE_TIMEOUT_S[params.scale]

    @classmethod
    def estimate_s(cls, params: NotebookParams) -> float:
        return SCALE_TYPICAL_S[params.scale]

    def run(self, ctx: RunContext, params: NotebookParams) -> Outcome:
        import nbformat  # noqa: PLC0415 - notebooks extra (nbformat, papermill, nbclient): only the notebook type needs it
        from papermill.iorw import load_notebook_node  # noqa: PLC0415 - notebooks extra (nbformat, papermill, nbclient): only the notebook type needs it
        from papermill.parameterize import parameterize_notebook  # noqa: PLC0415 - notebooks extra (nbformat, papermill, nbclient): only the notebook type needs it

        from testbed_agent.workloads.notebook.execute import execute  # noqa: PLC0415 - notebooks extra (nbformat, papermill, nbclient): only the notebook type needs it

        bench, p = ctx.bench, params
        path = locate(bench.name)
        scale, seed = p.scale, p.seed
        kernel = p.kernel
        data = {
            name: prepare_dataset(ctx, dataset_generator(name), seed, scale)
            for name in notebook_datasets(bench, path)
        }
        workdir = ctx.scratch / "notebooks" / f"{bench.index:03d}-{path.stem}-r{ctx.repetition}"
        shutil.rmtree(workdir, ignore_errors=True)
        workdir.mkdir(parents=True)

        values: dict[str, Any] = {"scale": scale, "seed": seed}
        if data:
            values["data_dir"] = str(next(iter(data.values()))[0])
        values.update(p.parameters)
        nb = parameterize_notebook(load_notebook_node(str(path)), values)
        kernel_log = ctx.artifact("kernel.log")
        run = execute(
            nb,
            workdir=workdir,
            kernel=kernel,
            remaining=ctx.remaining,
            stop=ctx.stop,
            cell_timeout_s=p.cell_timeout_s or None,
            env=kernel_env(),
            kernel_log=kernel_log,
        )
        artifact = ctx.artifact("ipynb")
        nbformat.write(nb, artifact)

        effective = {
            "scale": scale,
            "seed": seed,
            "kernel": kernel,
            "notebook": path.name,
            "notebook_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "datasets": {n: src for n, (_, src) in data.items()},
            "dataset_source": dataset_source(data),
            "dataset_generators": {n: dataset_generator(n) for n in data},
            **({"parameters": p.parameters} if p.parameters else {}),
        }
        if run.status == "timeout":
            raise BenchmarkTimeout(f"{path.name}: {run.error}")
        if run.status == "interrupted":
            raise Interrupted(f"{path.name}: {run.error}")
        out = Outcome(
            samples={"cells": [vars(c) for c in run.cells], "kernel_shutdown_s": run.kernel_shutdown_s},
            tool=tool_info(kernel),
            artifacts=[artifact.name, kernel_log.name],
            params=effective,
        )
        if run.status != "ok":
            out.status = "failed"
            out.error = f"{path.name}: {run.error}"
            out.samples.update(failed_cell=run.failed_cell, error_name=run.error_name)
            return out
        out.metrics = timing_metrics(run.wall_s, run.kernel_startup_s, run.cells_s)
        return out

    @staticmethod
    def parse_file(path: Path) -> dict[str, Any]:
        """Metrics of an executed notebook from its timing metadata (``record_timing``)."""
        import nbformat  # noqa: PLC0415 - notebooks extra (nbformat, papermill, nbclient): only the notebook type needs it

        from testbed_agent.workloads.notebook.execute import cell_seconds  # noqa: PLC0415 - notebooks extra (nbformat, papermill, nbclient): only the notebook type needs it

        nb = nbformat.read(path, as_version=4)
        cells = [
            {"index": i, "time_s": t}
            for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and (t := cell_seconds(c)) is not None
        ]
        if not cells:
            raise WorkloadError(
                f"{path}: no cell timing metadata",
                hint="execute with nbclient record_timing=True (the default)",
            )
        cells_s = sum(c["time_s"] for c in cells)
        meta = nb.metadata.get("testbed", {})
        metrics = (
            {"cells_s": metric(cells_s, "s", "lower")}
            if not meta.get("wall_s")
            else timing_metrics(meta["wall_s"], meta.get("kernel_startup_s", 0.0), cells_s)
        )
        return {"metrics": metrics, "samples": {"cells": cells}, "tool": {"name": "nbclient"}}


def dataset_source(data: dict[str, tuple[Path, str]]) -> str | None:
    """``real``, ``generated`` or ``mixed`` for the data sets of one execution; None without any."""
    sources = {src for _, src in data.values()}
    if not sources:
        return None
    return sources.pop() if len(sources) == 1 else "mixed"


def timing_metrics(wall_s: float, startup_s: float, cells_s: float) -> dict[str, dict[str, Any]]:
    """The metrics of one execution; overhead is what the agent adds around the cells."""
    overhead = max(0.0, wall_s - startup_s - cells_s)
    return {
        "wall_s": metric(wall_s, "s", "lower"),
        "cells_s": metric(cells_s, "s", "lower"),
        "kernel_startup_s": metric(startup_s, "s", "lower"),
        "overhead_s": metric(overhead, "s", "lower"),
    }


def tool_info(kernel: str) -> dict[str, Any]:
    import nbclient  # noqa: PLC0415 - notebooks extra (nbformat, papermill, nbclient): only the notebook type needs it

    return {
        "name": "nbclient",
        "version": nbclient.__version__,
        "kernel": kernel,
        "python": sys.version.split()[0],
    }


def kernel_env() -> dict[str, str]:
    """Environment of the kernel: headless plots, keras on jax, reproducible hashing."""
    env = dict(os.environ)
    env.setdefault("MPLBACKEND", "Agg")
    env.setdefault("KERAS_BACKEND", "jax")
    env.setdefault("PYTHONHASHSEED", "0")
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    return env


def generators_dir() -> Path:
    return notebooks_dir() / "datasets"


def _source(found: Path, cache: Path) -> str:
    """``real`` (placed files), ``generated``, or what a converted real set says (``mixed``)."""
    if cache not in found.parents:
        return "real"
    marker = found / ".source"
    return marker.read_text().strip() if marker.is_file() else "generated"


def prepare_dataset(ctx: RunContext, name: str, seed: int, scale: str) -> tuple[Path, str]:
    """Directory of data set ``name``: the real files if placed, else generated (cached)."""
    cache = ctx.scratch / "datasets"
    key = (name, seed, scale, str(cache), str(generators_dir()))  # real files live beside the generators
    if key in _DATA_CACHE and _DATA_CACHE[key].is_dir():
        found = _DATA_CACHE[key]
        return found, _source(found, cache)
    script = generators_dir() / "generate.py"
    proc = ctx.exec(
        [sys.executable, str(script), name, "--seed", str(seed), "--scale", scale, "--cache", str(cache)],
        check=False,
    )
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        raise WorkloadError(
            f"data set '{name}' could not be generated: {tail[0][:300]}",
            hint=f"run {script} {name} --scale {scale} by hand to see the error",
        )
    found = Path(proc.stdout.strip().splitlines()[-1])
    _DATA_CACHE[key] = found
    return found, _source(found, cache)
