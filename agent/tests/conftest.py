"""Shared fixtures: a real node_exporter on a free loopback port, plan files, the agent CLI, and
processes that die with the test."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from testbed_agent.procs import die_with_parent

NODE_EXPORTER = "/usr/bin/prometheus-node-exporter"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def node_exporter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    """A real Prometheus node_exporter on 127.0.0.1 with a textfile collector directory."""
    assert Path(NODE_EXPORTER).exists(), "prometheus-node-exporter is installed by make (apt)"
    textfile = tmp_path_factory.mktemp("textfile")
    port = free_port()
    proc = subprocess.Popen(
        [
            NODE_EXPORTER,
            f"--web.listen-address=127.0.0.1:{port}",
            f"--collector.textfile.directory={textfile}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/metrics"
    for _ in range(100):
        try:
            urllib.request.urlopen(url, timeout=1).read()
            break
        except OSError:
            time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("node_exporter did not start")
    yield {"url": url, "textfile": textfile, "port": port}
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def write_plan(tmp_path: Path):
    def _write(text: str, name: str = "plan.yml") -> Path:
        p = tmp_path / name
        p.write_text(text)
        return p

    return _write


@pytest.fixture
def fio_available() -> None:
    assert shutil.which("fio"), "fio is installed by make (apt)"


def end(proc: subprocess.Popen, grace: float = 30.0) -> None:
    """SIGTERM (the agent then ends its benchmark and records it), SIGKILL after ``grace`` s."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


@pytest.fixture
def spawn() -> Iterator[Callable[..., subprocess.Popen]]:
    """``spawn(cmd, **popen_kwargs)``: a process that does not outlive the test. It gets SIGTERM
    when the test's process dies (``PR_SET_PDEATHSIG``: pytest-timeout's thread method ends the
    worker with ``os._exit``, which runs no teardown), and at teardown (a failed assertion,
    pytest-timeout's signal method) it is ended with :func:`end`."""
    procs: list[subprocess.Popen] = []

    def _spawn(cmd: list[str], **kw) -> subprocess.Popen:
        proc = subprocess.Popen(cmd, preexec_fn=die_with_parent(signal.SIGTERM), **kw)  # noqa: PLW1509 - prctl only
        procs.append(proc)
        return proc

    yield _spawn
    for proc in procs:
        end(proc)
