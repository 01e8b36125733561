"""make test's lanes (conftest.py): every lane gets a worker of its own, and the lanes hold what
their docstring says."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _root_conftest():
    spec = importlib.util.spec_from_file_location("root_conftest", ROOT / "conftest.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _test_files() -> list[str]:
    tops = ("tests", "agent/tests", "reports/tests", "shared/tests")
    return sorted(str(p.relative_to(ROOT)) for top in tops for p in (ROOT / top).rglob("test_*.py"))


def test_make_test_starts_one_worker_per_lane() -> None:
    """With fewer workers than lanes xdist queues a lane behind another on one worker."""
    lanes = {_root_conftest().lane(f) for f in _test_files()}
    assert lanes == {"guests", "runs", "units", "main"}
    args = re.search(r"^PYTEST_ARGS\s*\?=(.*)$", (ROOT / "Makefile").read_text(), re.M)
    assert args is not None
    workers = re.search(r"(?:^|\s)-n\s*(\d+)", args[1])
    assert workers is not None and int(workers[1]) == len(lanes), args[1]
    assert "--dist loadscope" in args[1]


def test_the_lanes_hold_what_they_say() -> None:
    lane = _root_conftest().lane
    assert lane("tests/kvm/test_kvm_guest_integration.py::test_guest_runs") == "guests"
    assert lane("tests/azure/test_azure_rehearsal.py::test_x") == "runs"
    assert lane("agent/tests/test_reliability_kills.py::test_x") == "runs"
    assert lane("reports/tests/test_report_load.py::test_x") == "units"
    assert lane("shared/tests/test_records.py::test_x") == "units"
    assert lane("tests/test_lint.py::test_ruff") == "units"
    # the agent's tests run cgroups, dd and fio: in the main and runs lanes, never in the units lane
    assert lane("agent/tests/test_runner.py::test_x") == "main"
    assert lane("tests/faas/test_faas_cgroups.py::test_x") == "main"
    # the units lane runs no Ansible, libvirt, cgroup or node_exporter: none of its files names them
    units = [f for f in _test_files() if lane(f) == "units"]
    assert len(units) > 50
    for f in units:
        text = (ROOT / f).read_text()
        for marker in (
            '"ansible-playbook"',
            "ansible_playbook(",
            "/sys/fs/cgroup",
            "cgroup.procs",
            "virsh",
            "node_exporter",
        ):
            assert marker not in text, f"{f} names {marker}: it belongs in the main lane"


def test_the_runs_lane_gives_node_exporter_its_own_port() -> None:
    """The runs lane runs beside the main lane, whose tests start node_exporter on its default port."""
    lane = _root_conftest().lane
    for f in _test_files():
        text = (ROOT / f).read_text()
        if lane(f) == "runs" and "node_exporter" in text:
            own = "node_exporter_port" in text or '"node_exporter_enabled": False' in text
            assert own, f"{f} starts node_exporter on its default port: main lane"
