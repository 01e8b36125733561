"""Shared fixtures: a real node_exporter on a free loopback port, plan files, the agent CLI."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

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
