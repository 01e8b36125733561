"""What a target gets (issue 28): the agent bundle built by scripts/bundle-agent.sh carries the
target's rooms as two wheels (the shared library testbed_shared from shared/; testbed_agent and
testbed_services from agent/) and the workload definitions, and no controller-only code (the
report, roles, playbooks, inventories)."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: room -> the directory of the distribution that holds it
TARGET_ROOMS = {"testbed_agent": "agent", "testbed_services": "agent", "testbed_shared": "shared"}
CONTROLLER_ONLY = ("testbed_reports", "roles/", "playbooks/", "inventory/", "reports/")


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle")
    res = subprocess.run(
        ["bash", str(ROOT / "scripts" / "bundle-agent.sh"), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "PYTHON": sys.executable},
        check=False,
    )
    assert res.returncode == 0, res.stderr
    return out / "testbed-agent-bundle.tar.gz"


def test_the_bundle_holds_no_controller_code(bundle: Path, tmp_path: Path) -> None:
    with tarfile.open(bundle) as tar:
        names = tar.getnames()
        wheels = sorted(n for n in names if n.startswith("dist/") and n.endswith(".whl"))
        assert len(wheels) == 2, names[:20]
        for wheel in wheels:
            tar.extract(wheel, tmp_path, filter="data")
    assert not [n for n in names if n.startswith(CONTROLLER_ONLY)]
    assert any(n.startswith("workloads/plans/") for n in names)
    modules: list[str] = []
    for wheel in wheels:
        with zipfile.ZipFile(tmp_path / wheel) as whl:
            modules += [n for n in whl.namelist() if n.endswith(".py")]
    rooms = {n.split("/")[0] for n in modules}
    assert rooms == set(TARGET_ROOMS)
    source = {
        str(f.relative_to(ROOT / base))
        for room, base in TARGET_ROOMS.items()
        for f in (ROOT / base / room).rglob("*.py")
        if "__pycache__" not in f.parts
    }
    assert sorted(modules) == sorted(source)  # every module of the three rooms, once, and nothing stale
    assert not [n for n in modules if "testbed_reports" in n or n.split("/")[1:2] == ["tests"]]
