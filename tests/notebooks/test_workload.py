"""The kaggle_notebook workload with real kernels: timing, failures, timeouts, interrupts."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import psutil
import pytest
from nbhelpers import NOTEBOOKS, ROOT, Runner, code_outputs, write_notebook

from testbed_agent import workloads
from testbed_agent.plan import Benchmark, ParamError, load_plan
from testbed_agent.workloads.notebook import NotebookWorkload, locate
from testbed_shared.errors import BenchmarkTimeout, Interrupted


def _bench(name: str = "SimplePrime.ipynb", datasets: tuple[str, ...] = (), **params: object) -> Benchmark:
    return Benchmark(name=name, type="kaggle_notebook", index=0, line=3, datasets=datasets, params=params)


def _agent_run(plan: Path, out: Path, scratch: Path) -> list[str]:
    """The agent's ``run`` command for one plan, host ``nbtest``, without node_exporter or progress."""
    return [
        sys.executable,
        "-m",
        "testbed_agent",
        "run",
        str(plan),
        "--out",
        str(out),
        "--host",
        "nbtest",
        "--node-exporter",
        "",
        "--no-progress",
        "--scratch",
        str(scratch),
    ]


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_registered_with_parser() -> None:
    assert workloads.registry()["kaggle_notebook"] is NotebookWorkload
    assert NotebookWorkload.parse_kind == "notebook"


@pytest.mark.parametrize(
    ("params", "datasets", "field"),
    [
        ({"scale": "huge"}, (), "params.scale"),
        ({"seed": "x"}, (), "params.seed"),
        ({"cell_timeout_s": -1}, (), "params.cell_timeout_s"),
        ({"parameters": {"not an identifier": 1}}, (), "params.parameters"),
        ({"colour": "red"}, (), "params.colour"),
        ({}, ("no_such_generator",), "datasets"),
    ],
)
def test_check_names_the_bad_field(params: dict, datasets: tuple[str, ...], field: str) -> None:
    with pytest.raises(ParamError) as err:
        NotebookWorkload.check(_bench(datasets=datasets, **params))
    assert err.value.field == field


@pytest.mark.parametrize("name", ["/etc/passwd", "../kaggle_notebooks/SimplePrime.ipynb", "~/x.ipynb"])
def test_notebooks_outside_the_notebooks_dir_are_refused(name: str) -> None:
    with pytest.raises(ParamError, match=r"outside|leaves") as err:  # absolute: outside; '..', '~': leaves
        locate(name)
    assert err.value.field == "name"


def test_missing_notebook_is_a_param_error() -> None:
    with pytest.raises(ParamError) as err:
        NotebookWorkload.check(_bench("NoSuchNotebook.ipynb"))
    assert err.value.field == "name"


def test_names_resolve_in_the_notebooks_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert locate("SimplePrime.ipynb") == NOTEBOOKS / "SimplePrime.ipynb"
    assert locate("SimplePrime") == NOTEBOOKS / "SimplePrime.ipynb"
    write_notebook(tmp_path / "Other.ipynb", "x = 1")
    monkeypatch.setenv("TESTBED_NOTEBOOKS_DIR", str(tmp_path))
    assert locate("Other.ipynb") == tmp_path / "Other.ipynb"


def test_plans_validate(tmp_path: Path) -> None:
    for name in ("notebooks-quick.yml", "notebooks-standard.yml"):
        plan = load_plan(ROOT / "workloads" / "plans" / name)
        assert {b.type for b in plan.benchmarks} == {"kaggle_notebook"}
    text = tmp_path / "classic.txt"
    text.write_text("SimplePrime.ipynb,kaggle_notebook,,20,5\nenergy.ipynb,kaggle_notebook,energy,20,3\n")
    plan = load_plan(text)
    assert [(b.name, b.repetitions, b.wait_s) for b in plan.benchmarks] == [
        ("SimplePrime.ipynb", 5, 20.0),
        ("energy.ipynb", 3, 20.0),
    ]
    assert NotebookWorkload.timeout_s(plan.benchmarks[0]) > 0


def test_simpleprime_is_timed_cell_by_cell(runner: Runner) -> None:
    out, ctx = runner.run("SimplePrime.ipynb", scale="quick")
    assert out.status == "ok", out.error
    m = {k: v["value"] for k, v in out.metrics.items()}
    assert set(m) == {"wall_s", "cells_s", "kernel_startup_s", "overhead_s"}
    assert all(v["unit"] == "s" and v["better"] == "lower" for v in out.metrics.values())
    assert 0 < m["kernel_startup_s"] < m["wall_s"]
    assert 0 < m["cells_s"] <= m["wall_s"] - m["kernel_startup_s"] + 1e-3
    source = nbformat.read(NOTEBOOKS / "SimplePrime.ipynb", as_version=4)
    code = [i for i, c in enumerate(source.cells) if c.cell_type == "code"]
    cells = out.samples["cells"]
    assert [c["source_index"] for c in cells if c["source_index"] is not None] == code
    assert sum(c["source_index"] is None for c in cells) == 1  # the injected parameters
    assert out.params["scale"] == "quick" and out.params["notebook"] == "SimplePrime.ipynb"
    executed = nbformat.read(ctx.artifacts / out.artifacts[0], as_version=4)
    assert "2\n3\n5\n7\n11\n13\n" in code_outputs(executed)  # the study's SimplePrime: a prime a line
    assert "Time taken to find 10000 prime numbers" in code_outputs(executed)  # the paper's last line
    parsed = NotebookWorkload.parse_file(ctx.artifacts / out.artifacts[0])
    assert parsed["metrics"]["cells_s"]["value"] == pytest.approx(m["cells_s"], rel=1e-6)
    assert parsed["metrics"]["wall_s"]["value"] == pytest.approx(m["wall_s"])
    # the notebook ran in a directory of its own inside the scratch directory
    assert (runner.scratch / "notebooks").is_dir()


def test_papermill_parameters_reach_the_notebook(runner: Runner) -> None:
    out, ctx = runner.run("SimplePrime.ipynb", scale="quick", parameters={"n": 25})
    assert out.status == "ok", out.error
    text = code_outputs(nbformat.read(ctx.artifacts / out.artifacts[0], as_version=4))
    assert "Time taken to find 25 prime numbers" in text and "\n97\n" in text  # the 25th prime is 97


def test_failing_cell_gives_a_failed_outcome_naming_it(runner: Runner, tmp_path: Path, nbdir: Path) -> None:
    nb = write_notebook(nbdir / "Broken.ipynb", "x = 1", "y = x / 0", "print('never reached')")
    out, ctx = runner.run(nb.name)
    assert out.status == "failed"
    assert "cell 3" in out.error and "ZeroDivisionError" in out.error
    assert out.samples["failed_cell"] == 3 and out.samples["error_name"] == "ZeroDivisionError"
    assert out.metrics == {}
    executed = nbformat.read(ctx.artifacts / out.artifacts[0], as_version=4)
    text = code_outputs(executed)
    assert "ZeroDivisionError" in text and "never reached" not in text


def test_cell_timeout_ends_the_kernel(runner: Runner, tmp_path: Path, nbdir: Path) -> None:
    nb = write_notebook(nbdir / "Slow.ipynb", "import os\nprint(os.getpid())", "import time\ntime.sleep(120)")
    t0 = time.monotonic()
    with pytest.raises(BenchmarkTimeout, match="cell 3"):
        runner.run(nb.name, cell_timeout_s=3)
    assert time.monotonic() - t0 < 60
    artifact = next(runner.artifacts.glob("*Slow.ipynb-r0.ipynb"))
    pid = int(code_outputs(nbformat.read(artifact, as_version=4)).split()[0])
    assert _gone(pid)


def test_benchmark_deadline_is_a_timeout(runner: Runner, tmp_path: Path, nbdir: Path) -> None:
    nb = write_notebook(nbdir / "Slower.ipynb", "import time\ntime.sleep(120)")
    t0 = time.monotonic()
    with pytest.raises(BenchmarkTimeout):
        runner.run(nb.name, timeout_s=8)
    assert time.monotonic() - t0 < 60


def test_interrupt_kills_the_kernel(runner: Runner, tmp_path: Path, nbdir: Path) -> None:
    nb = write_notebook(nbdir / "Long.ipynb", "import os\nprint(os.getpid())", "import time\ntime.sleep(120)")
    timer = threading.Timer(6, runner.stop.set)
    timer.start()
    t0 = time.monotonic()
    try:
        with pytest.raises(Interrupted):
            runner.run(nb.name)
    finally:
        timer.cancel()
    assert time.monotonic() - t0 < 60
    artifact = next(runner.artifacts.glob("*Long.ipynb-r0.ipynb"))
    pid = int(code_outputs(nbformat.read(artifact, as_version=4)).split()[0])
    assert _gone(pid)


def test_unknown_kernel_is_a_failed_outcome(runner: Runner, tmp_path: Path, nbdir: Path) -> None:
    nb = write_notebook(nbdir / "K.ipynb", "x = 1")
    out, _ = runner.run(nb.name, kernel="no-such-kernel")
    assert out.status == "failed" and "no-such-kernel" in out.error


def test_plan_goes_on_after_a_failing_notebook(tmp_path: Path, nbdir: Path) -> None:
    broken = write_notebook(nbdir / "Broken.ipynb", "raise KeyError('boom')")
    plan = tmp_path / "plan.yml"
    plan.write_text(
        "name: nb-failure\n"
        "benchmarks:\n"
        f"  - {{name: '{broken.name}', type: kaggle_notebook}}\n"
        "  - {name: SimplePrime.ipynb, type: kaggle_notebook, params: {scale: quick}}\n"
    )
    out = tmp_path / "results" / "run1"
    proc = subprocess.run(
        _agent_run(plan, out, tmp_path / "scratch"),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    records = [json.loads(line) for line in (out / "nbtest.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["failed", "ok"], proc.stderr
    assert "cell 2" in records[0]["error"] and "KeyError" in records[0]["error"]
    assert records[1]["metrics"]["wall_s"]["unit"] == "s"
    for rec in records:
        assert rec["artifacts"] and all((out / a).exists() for a in rec["artifacts"])
    parsed = subprocess.run(
        [sys.executable, "-m", "testbed_agent", "parse", "notebook", str(out / records[1]["artifacts"][0])],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(parsed.stdout)["metrics"]["cells_s"]["value"] > 0


def test_sigterm_to_the_agent_records_interrupted_and_ends_the_kernel(tmp_path: Path, nbdir: Path) -> None:
    nb = write_notebook(
        nbdir / "Sleeper.ipynb",
        "import os\nopen('kernel.pid', 'w').write(str(os.getpid()))",
        "import time\ntime.sleep(300)",
    )
    plan = tmp_path / "plan.yml"
    plan.write_text(f"name: nb-sigterm\nbenchmarks:\n  - {{name: '{nb.name}', type: kaggle_notebook}}\n")
    out, scratch = tmp_path / "results" / "run1", tmp_path / "scratch"
    proc = subprocess.Popen(
        _agent_run(plan, out, scratch),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(scratch.glob("notebooks/*/kernel.pid")) and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.2)
        pid_file = next(scratch.glob("notebooks/*/kernel.pid"))
        time.sleep(0.5)
        kernel = int(pid_file.read_text())
        proc.send_signal(15)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    records = [json.loads(line) for line in (out / "nbtest.jsonl").read_text().splitlines()]
    assert [r["status"] for r in records] == ["interrupted"]
    assert _gone(kernel)
