"""The cloud seam (issue 28): clouds behind one interface, found by module; adding one is a module
plus a role (docs/extending.md), which this test does with a made-up cloud."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from testbed_agent import clouds
from testbed_agent.cli import build_parser
from testbed_agent.clouds.azure import Azure
from testbed_agent.plan_show import _matrix
from testbed_agent.sysinfo import collect
from testbed_agent.sysinfo.probe import Probe

STRATUS = textwrap.dedent('''
    """A made-up cloud for the test: one module, nothing else in the agent changes."""

    from testbed_agent.clouds.base import Cloud


    class Stratus(Cloud):
        name = "stratus"
        role = "stratus_vm"
        size_var = "stratus_flavor"
        machine_vars = ("stratus_flavor", "stratus_zone")

        @classmethod
        def describe(cls, info):
            info["cloud"]["stratus"] = {"flavor": "s2.large"}

        @classmethod
        def vcpus(cls, size):
            return int(size.split(".")[0][1:]) if size.startswith("s") else None

        @classmethod
        def memory_gib(cls, size, vcpus):
            return 4 * vcpus
''')


@pytest.fixture
def stratus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The clouds package with one more module in it, and that cloud's role."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "stratus.py").write_text(STRATUS)
    roles = tmp_path / "roles"
    (roles / "stratus_vm" / "defaults").mkdir(parents=True)
    (roles / "stratus_vm" / "defaults" / "main.yml").write_text(
        "stratus_zone: zone-b\nstratus_flavor: s2.x\n"
    )
    monkeypatch.setattr(clouds, "__path__", [*clouds.__path__, str(pkg)])
    monkeypatch.setenv("TESTBED_ROLES_DIR", str(roles))
    clouds.PLUGINS.forget()
    yield
    clouds.PLUGINS.forget()


def test_azure_is_the_first_cloud() -> None:
    assert clouds.names() == ("none", "azure")
    assert clouds.get("azure") is Azure and clouds.get("none") is None
    assert clouds.of_host({"azure_vm_size": "Standard_D4s_v5"}) is Azure
    assert clouds.of_host({"testbed_label": "local"}) is None


@pytest.mark.parametrize(
    ("size", "vcpus", "memory"),
    [
        ("Standard_DC4as_v5", 4, 16),
        ("Standard_E8-2as_v5", 2, 16),
        ("Standard_F2s_v2", 2, 4),
        ("odd", None, None),
    ],
)
def test_azure_sizes_from_their_names(size: str, vcpus: int | None, memory: int | None) -> None:
    row = Azure.machine({"azure_vm_size": size})
    assert (row["vcpus"], row["memory_gib"]) == (vcpus, memory)


def test_azure_machine_takes_its_roles_defaults() -> None:
    row = Azure.machine({"azure_vm_size": "Standard_DC2as_v5", "azure_vm_security_type": "ConfidentialVM"})
    assert row["azure_vm_os_disk_type"] and row["os_disk"].endswith(row["azure_vm_os_disk_type"])
    assert row["encryption"] == Azure.role_defaults()["azure_vm_security_encryption_type"]
    assert Azure.machine({"azure_vm_size": "Standard_D2as_v5"})["encryption"] == "-"


def test_a_new_cloud_is_a_module_and_a_role(stratus: None) -> None:
    assert clouds.names() == ("none", "azure", "stratus")
    parser = build_parser()
    assert parser.parse_args(["sysinfo", "--cloud", "stratus"]).cloud == "stratus"
    assert parser.parse_args(["run", "p.yml", "--out", "o", "--cloud", "stratus"]).cloud == "stratus"
    inventory = {"_meta": {"hostvars": {"s-1": {"stratus_flavor": "s8.large"}, "local-1": {}}}}
    rows = {r["host"]: r for r in _matrix(inventory)}
    assert rows["s-1"]["cloud"] == "stratus" and rows["s-1"]["stratus_zone"] == "zone-b"  # role default
    assert (rows["s-1"]["vcpus"], rows["s-1"]["memory_gib"]) == (8, 32)
    assert rows["local-1"]["cloud"] is None and rows["local-1"]["vcpus"] is None
    info = collect(cloud="stratus", probe=Probe())
    assert info["cloud"] == {"provider": "stratus", "stratus": {"flavor": "s2.large"}}
