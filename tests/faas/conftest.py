"""Fixtures: a real emulator started as a background process on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed_services.faas.client import FaasClient

HERE = Path(__file__).resolve().parent
TEST_PROFILE = HERE / "test-profile.yml"
TEST_FUNCTIONS = HERE / "functions"


def needs_root() -> None:
    """Limits need root; CI runs as root, so a non-root run fails loudly rather than skipping."""
    if os.geteuid() != 0:
        pytest.fail("the FaaS emulator tests need root (cgroups, mounts); run them as root")


class Served:
    """A running ``testbed-agent faas serve`` process and a client for it."""

    def __init__(self, tmp: Path, *args: str) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        url_file = tmp / "url"
        self.log = tmp / "serve.log"
        cmd = [
            sys.executable,
            "-m",
            "testbed_agent",
            "faas",
            "serve",
            "--port",
            "0",
            "--url-file",
            str(url_file),
            "--state-dir",
            str(tmp / "state"),
            "--functions-dir",
            str(TEST_FUNCTIONS),
            *args,
        ]
        with open(self.log, "w") as fh:
            self.proc = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
        end = time.monotonic() + 30
        while not (url_file.exists() and url_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > end:
                self.stop()
                raise RuntimeError("emulator did not start: " + self.log.read_text())
            time.sleep(0.05)
        self.url = url_file.read_text().strip()
        self.client = FaasClient(self.url, timeout_s=120)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    needs_root()
    s = Served(tmp_path_factory.mktemp("faas"), "--profile", str(TEST_PROFILE))
    yield s
    s.client.close()
    s.stop()
    assert s.proc.returncode == 0, s.log.read_text()


@pytest.fixture
def start_emulator(tmp_path: Path) -> Iterator[object]:
    """Start another emulator with the given serve options; stopped (and checked) at teardown."""
    needs_root()
    started: list[Served] = []

    def start(*args: str) -> Served:
        s = Served(tmp_path / f"emu{len(started)}", *args)
        started.append(s)
        return s

    yield start
    for s in started:
        s.client.close()
        if s.proc.poll() is None:  # a test may have killed one on purpose
            s.stop()
            assert s.proc.returncode == 0, s.log.read_text()
