"""The two lanes of `make test` (pytest-xdist, ``-n 2 --dist loadgroup``).

The software-emulated guests (tests/kvm, tests/hyperv: one QEMU process holds a core for most of
their 15-20 minutes while the test waits) and the Azure dress rehearsal (stand-ins and loopback
sshd of its own) run one after another in the ``guests`` lane; everything else runs, in collection
order, in the ``main`` lane beside it. Inside a lane nothing runs concurrently, so tests that share
the checkout, cgroups or libvirt never overlap. Without ``-n`` (make test-studies, a plain pytest)
the marks change nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
#: what the guests lane runs (paths relative to the repository)
GUESTS_LANE = ("tests/kvm/", "tests/hyperv/", "tests/azure/test_azure_rehearsal.py")


def lane(path: Path) -> str:
    """The lane of the tests in *path*."""
    rel = path.resolve().relative_to(ROOT).as_posix()
    return "guests" if rel.startswith(GUESTS_LANE) else "main"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        item.add_marker(pytest.mark.xdist_group(lane(item.path)))
