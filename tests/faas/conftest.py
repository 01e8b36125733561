"""Fixtures: a real emulator started as a background process on 127.0.0.1."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed_services import launcher
from testbed_services.faas.client import FaasClient

HERE = Path(__file__).resolve().parent
TEST_PROFILE = HERE / "test-profile.yml"
TEST_FUNCTIONS = HERE / "functions"


def needs_root() -> None:
    """Limits need root; CI runs as root, so a non-root run fails loudly rather than skipping."""
    if os.geteuid() != 0:
        pytest.fail("the FaaS emulator tests need root (cgroups, mounts); run them as root")


class Served:
    """A running ``testbed-agent faas serve`` process (started by the toolkit's launcher) and a
    client for it."""

    def __init__(self, tmp: Path, *args: str) -> None:
        tmp.mkdir(parents=True, exist_ok=True)
        self.log = tmp / "serve.log"
        self.service = launcher.emulator(
            tmp / "url", tmp / "state", "--functions-dir", str(TEST_FUNCTIONS), *args, log=self.log
        )
        self.proc = self.service.proc
        self.url = self.service.url
        self.client = FaasClient(self.url, timeout_s=120)

    def stop(self) -> None:
        self.service.stop(timeout_s=30)


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
