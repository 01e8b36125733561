"""The one launcher of local services (issue 28): start, wait until ready, stop; tracked by the
agent's process tracker when it has one."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from testbed_agent.procs import ProcessTracker, proc_stat
from testbed_services import launcher
from testbed_shared.errors import Interrupted
from testbed_shared.errors import TestbedError as ServiceError

#: a service: writes its child's pid and its URL to files, then serves until SIGTERM
SERVICE = """
import os, signal, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open(sys.argv[1] + ".child", "w").write(str(child.pid))
print("service up", flush=True)
open(sys.argv[1], "w").write("http://127.0.0.1:1\\n")
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
time.sleep(600)
"""


def _service(tmp_path: Path) -> tuple[list[str], Path]:
    script = tmp_path / "service.py"
    script.write_text(SERVICE)
    url = tmp_path / "url"
    return [sys.executable, str(script), str(url)], url


def _gone(pid: int, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if proc_stat(pid) is None:
            return True
        time.sleep(0.05)
    return False


def test_start_waits_until_ready_and_stop_ends_the_whole_service(tmp_path: Path) -> None:
    cmd, url = _service(tmp_path)
    with launcher.running(
        cmd, name="test service", ready=launcher.url_file(url), log=tmp_path / "log"
    ) as svc:
        assert svc.url == "http://127.0.0.1:1"
        child = int(Path(f"{url}.child").read_text())
        assert proc_stat(svc.proc.pid) is not None and proc_stat(child) is not None
    assert svc.proc.returncode == 0  # SIGTERM: it ended cleanly
    assert _gone(child)  # and nothing it started outlives it
    assert "service up" in (tmp_path / "log").read_text()


def test_a_tracked_service_is_recorded_and_forgotten(tmp_path: Path) -> None:
    tracker = ProcessTracker(tmp_path / "state", "launcher-test")
    tracker.open()
    cmd, url = _service(tmp_path)
    svc = launcher.start(cmd, name="tracked", ready=launcher.url_file(url), tracker=tracker)
    try:
        assert svc.proc.pid in {int(line.split()[0]) for line in tracker.pidfile.read_text().splitlines()}
        assert svc.proc.pid in tracker.leftovers()  # a resumed run would reap it
    finally:
        svc.stop()
        tracker.close()
    assert not tracker.pidfile.read_text().strip()
    # its cgroup goes too, though the service's child may still be exiting when close() is called
    # (a clean clone's make test left an empty testbed-agent/launcher-test behind)
    assert tracker.cgroup is None or not tracker.cgroup.exists()


def test_a_service_that_exits_early_is_one_error_with_its_output(tmp_path: Path) -> None:
    cmd = [sys.executable, "-c", "import sys; print('no such profile: x'); sys.exit(3)"]
    with pytest.raises(ServiceError, match=r"exited \(3\) before it was ready: no such profile: x"):
        launcher.start(cmd, name="svc", ready=lambda: None)


def test_a_service_never_ready_is_stopped_and_refused(tmp_path: Path) -> None:
    cmd, _ = _service(tmp_path)
    with pytest.raises(ServiceError, match=r"not ready within 0\.5 s"):
        launcher.start(cmd, name="svc", ready=lambda: None, timeout_s=0.5)
    child = Path(f"{tmp_path / 'url'}.child")
    if child.exists():
        assert _gone(int(child.read_text()))


def test_interrupt_while_waiting(tmp_path: Path) -> None:
    stop = threading.Event()
    stop.set()
    cmd, _ = _service(tmp_path)
    with pytest.raises(Interrupted):
        launcher.start(cmd, name="svc", ready=lambda: None, stop=stop)


def test_port_probe_and_loopback_only_moto(tmp_path: Path) -> None:
    port = launcher.free_port()
    assert launcher.port("127.0.0.1", port)() is None
    with pytest.raises(ServiceError, match="loopback"):
        launcher.moto_server("0.0.0.0")
    assert os.environ.get("PATH")  # the probes leave the environment alone
