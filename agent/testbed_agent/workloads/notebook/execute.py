"""Execute a notebook with nbclient and time it: kernel start-up, each code cell, the whole.

Used by the ``kaggle_notebook`` workload. The kernel runs in a session of its own; a watcher
thread kills its process group when the run is interrupted, and each cell's nbclient timeout
is bounded by the time left before the benchmark's deadline.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import nbformat
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

#: the kernel name that always means "ipykernel of the Python running the agent"
NATIVE_KERNEL = "python3"
INJECTED_TAG = "injected-parameters"


@dataclass
class CellTime:
    """Time of one executed code cell, from nbclient's timing metadata (kernel timestamps)."""

    index: int  # index in the executed notebook
    source_index: int | None  # index in the notebook file; None for the injected parameters
    time_s: float
    first_line: str


@dataclass
class Execution:
    """What one execution of a notebook measured, and how it ended."""

    wall_s: float = 0.0  # from starting the kernel to the end of the last cell
    kernel_startup_s: float = 0.0
    kernel_shutdown_s: float = 0.0
    cells: list[CellTime] = field(default_factory=list)
    status: str = "ok"  # ok | failed | timeout | interrupted
    error: str | None = None
    error_name: str | None = None
    failed_cell: int | None = None

    @property
    def cells_s(self) -> float:
        return sum(c.time_s for c in self.cells)

    @property
    def overhead_s(self) -> float:
        return self.wall_s - self.kernel_startup_s - self.cells_s

    def summary(self) -> dict[str, Any]:
        """Timing as stored in the executed notebook's metadata (``metadata.testbed``)."""
        return {
            "wall_s": self.wall_s,
            "kernel_startup_s": self.kernel_startup_s,
            "kernel_shutdown_s": self.kernel_shutdown_s,
            "cells_s": self.cells_s,
            "status": self.status,
            "error": self.error,
            "failed_cell": self.failed_cell,
        }


def kernel_manager(kernel: str) -> AsyncKernelManager:
    """A kernel manager; ``python3`` is pinned to this interpreter's ipykernel.

    Other names are looked up in the Jupyter kernel paths (``jupyter kernelspec list``).
    """
    if kernel == NATIVE_KERNEL:
        return AsyncKernelManager(kernel_name=kernel, kernel_spec_manager=KernelSpecManager(kernel_dirs=[]))
    return AsyncKernelManager(kernel_name=kernel)


def _stamp(value: Any) -> datetime | None:
    if not value:
        return None
    if isinstance(value, datetime):
        return value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def cell_seconds(cell: nbformat.NotebookNode) -> float | None:
    """A code cell's execution time from nbclient's record_timing metadata (busy -> idle)."""
    timing = cell.get("metadata", {}).get("execution", {})
    start = _stamp(timing.get("iopub.status.busy") or timing.get("iopub.execute_input"))
    end = _stamp(timing.get("iopub.status.idle") or timing.get("shell.execute_reply"))
    if start is None or end is None:
        return None
    return max(0.0, (end - start).total_seconds())


def _injected(cell: nbformat.NotebookNode) -> bool:
    return INJECTED_TAG in cell.get("metadata", {}).get("tags", [])


def source_index(nb: nbformat.NotebookNode, index: int) -> int | None:
    """Index of executed cell ``index`` in the notebook file (None: the injected parameters)."""
    if _injected(nb.cells[index]):
        return None
    return index - sum(1 for c in nb.cells[:index] if _injected(c))


def _first_line(cell: nbformat.NotebookNode) -> str:
    lines = [ln for ln in str(cell.source).splitlines() if ln.strip()]
    return lines[0][:80] if lines else ""


class _Stopped(Exception):
    """Raised between cells when the run is interrupted or out of time."""


def _run_cells(
    client: NotebookClient,
    nb: nbformat.NotebookNode,
    result: Execution,
    at: list[int],
    stop: threading.Event,
    remaining: Callable[[], float],
    cell_timeout_s: float | None,
) -> None:
    """Execute the code cells in order, each within what is left of the deadline."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        at[0] = index
        if stop.is_set():
            raise _Stopped("interrupted")
        left = remaining()
        if left <= 0:
            raise _Stopped("timeout")
        limit = left if cell_timeout_s is None else min(left, cell_timeout_s)
        client.timeout = max(1, int(limit + 0.999))
        client.execute_cell(cell, index)
        secs = cell_seconds(cell) or 0.0
        result.cells.append(CellTime(index, source_index(nb, index), secs, _first_line(cell)))


#: exceptions that end a notebook execution with a record rather than a crash
_ENDINGS = (CellExecutionError, CellTimeoutError, NoSuchKernel, DeadKernelError, _Stopped, RuntimeError)


def _outcome(exc: BaseException, why: str | None, timeout: int, kernel: str) -> tuple[str, str, str]:
    """(status, error name, message) for how a notebook execution ended."""
    if isinstance(exc, CellExecutionError):
        evalue = " ".join(str(exc.evalue).split())[:300]
        return "failed", exc.ename, f"{exc.ename}: {evalue}"
    if isinstance(exc, CellTimeoutError):
        return why or "timeout", "CellTimeoutError", f"did not finish within {timeout} s"
    if isinstance(exc, NoSuchKernel):
        return "failed", "NoSuchKernel", f"no Jupyter kernel named {kernel!r}"
    why = why or (str(exc) if isinstance(exc, _Stopped) else "")
    if why in ("interrupted", "timeout"):
        return why, why, "interrupted by signal" if why == "interrupted" else "benchmark timeout reached"
    return "failed", type(exc).__name__, str(exc).strip().splitlines()[0][:300]


def execute(
    nb: nbformat.NotebookNode,
    *,
    workdir: Path,
    kernel: str,
    remaining: Callable[[], float],
    stop: threading.Event,
    cell_timeout_s: float | None = None,
    env: dict[str, str] | None = None,
    kernel_log: Path | None = None,
) -> Execution:
    """Run every cell of ``nb`` in place (outputs and timing land in ``nb``); never raises for
    a failing cell, a timeout or an interrupt: the returned :class:`Execution` says how it ended."""
    result = Execution()
    client = NotebookClient(
        nb,
        km=kernel_manager(kernel),
        kernel_name=kernel,
        record_timing=True,
        allow_errors=False,
        startup_timeout=max(1, int(min(120.0, remaining()))),
        shutdown_kernel="immediate",
        resources={"metadata": {"path": str(workdir)}},
    )
    client.owns_km = True  # we handed nbclient the manager; it must still shut the kernel down
    done = threading.Event()
    reason: dict[str, str] = {}

    def watch() -> None:
        """Kill the kernel's process group on interrupt or when the deadline passes."""
        while not done.wait(0.2):
            if stop.is_set() or remaining() <= 0:
                reason["why"] = "interrupted" if stop.is_set() else "timeout"
                _kill_kernel(client)
                return

    watcher = threading.Thread(target=watch, name="nb-watch", daemon=True)
    log = None
    t0 = time.perf_counter()
    at = [-1]  # index of the cell running when execution stopped
    try:
        watcher.start()
        log = open(kernel_log or os.devnull, "wb")  # noqa: SIM115 - closed in finally
        with client.setup_kernel(cwd=str(workdir), env=env or dict(os.environ), stdout=log, stderr=log):
            result.kernel_startup_s = time.perf_counter() - t0
            try:
                _run_cells(client, nb, result, at, stop, remaining, cell_timeout_s)
            finally:
                result.wall_s = time.perf_counter() - t0
                t_shut = time.perf_counter()
            # leaving the block shuts the kernel down
        result.kernel_shutdown_s = time.perf_counter() - t_shut
    except _ENDINGS as exc:
        status, ename, message = _outcome(exc, reason.get("why"), client.timeout, kernel)
        _fail(result, nb, -1 if isinstance(exc, NoSuchKernel) else at[0], status, ename, message)
    finally:
        done.set()
        watcher.join(timeout=5)
        if not result.wall_s:
            result.wall_s = time.perf_counter() - t0
        _kill_kernel(client)
        if log is not None:
            log.close()
    nb.metadata["testbed"] = result.summary()
    return result


def _fail(result: Execution, nb: nbformat.NotebookNode, index: int, status: str, name: str, msg: str) -> None:
    result.status = status
    result.error_name = name
    if index >= 0:
        result.failed_cell = source_index(nb, index)
        where = "injected parameters cell" if result.failed_cell is None else f"cell {result.failed_cell}"
        result.error = f"{where} ({_first_line(nb.cells[index])!r}): {msg}"
    else:
        result.error = f"kernel start-up: {msg}"


def _kill_kernel(client: NotebookClient) -> None:
    """SIGKILL the kernel's process group (it is a session leader), if it still runs."""
    km = client.km
    provisioner = getattr(km, "provisioner", None) if km is not None else None
    pid = getattr(provisioner, "pid", None)
    if not pid:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
