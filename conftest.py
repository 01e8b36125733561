"""The two lanes of `make test` (pytest-xdist, ``-n 2 --dist loadscope``).

The software-emulated guests (tests/kvm, tests/hyperv: one QEMU process holds a core for most of
their 15-20 minutes while the test waits), the Azure dress rehearsal (stand-ins and a loopback sshd
of its own) and two run.yml tests run one after another in the ``guests`` lane; everything else
runs, in collection order, in the ``main`` lane beside it. Inside a lane nothing runs concurrently,
so tests that share cgroups, libvirt or the default node_exporter port never overlap; what both
lanes' run.yml runs share in the checkout (the agent bundle) is built under a lock.
``--dist loadscope`` is given lanes as its scopes here (xdist's ``loadgroup`` marks cannot do it
under pytest 9: xdist 3.8 renames node ids through an attribute pytest 9 no longer reads).
Without ``-n`` (make test-studies, a plain pytest) nothing changes.
"""

from __future__ import annotations

from typing import Any

import pytest

#: what the guests lane runs (node id prefixes, relative to the repository)
GUESTS_LANE = (
    "tests/kvm/",
    "tests/hyperv/",
    "tests/azure/test_azure_rehearsal.py",
    # two run.yml tests with their own ports and directories, to even out the lanes (measured: the
    # guests lane took 25 min and the main lane 34 before they moved)
    "tests/test_ansible_local.py",
    "tests/faas/test_faas_platform_runyml.py",
)


def lane(nodeid: str) -> str:
    """The lane of the test *nodeid*."""
    return "guests" if nodeid.startswith(GUESTS_LANE) else "main"


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getoption("dist") != "loadscope":
        return None  # xdist's own scheduler for any other --dist
    from xdist.scheduler import LoadScopeScheduling  # noqa: PLC0415 - only with pytest-xdist running

    class LaneScheduling(LoadScopeScheduling):
        """loadscope with the two lanes as its scopes."""

        def _split_scope(self, nodeid: str) -> str:
            return lane(nodeid)

    return LaneScheduling(config, log)
