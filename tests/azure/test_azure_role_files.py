"""Consistency of the Azure part's files: pinned SDK requirements, argument specs vs defaults."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
COLLECTION = ROOT / ".venv/lib/python3.11/site-packages/ansible_collections/azure/azcollection"


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"{path.name}: {line!r} is not pinned with =="
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_requirements_azure_pins_what_the_collection_asks_for() -> None:
    pins = _pins(ROOT / "requirements-azure.txt")
    wanted = [
        Requirement(line)
        for line in (COLLECTION / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert wanted
    for req in wanted:
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        assert name in pins, f"{req.name} is missing from requirements-azure.txt"
        assert req.specifier.contains(Version(pins[name]), prereleases=True), (req, pins[name])
    project = _pins_loose(ROOT / "requirements.txt")
    assert pins["ansible"] == project["ansible"] and pins["ansible-core"] == project["ansible-core"]


def _pins_loose(path: Path) -> dict[str, str]:
    out = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if "==" in line:
            name, version = line.split("==", 1)
            out[re.sub(r"\[.*\]", "", name).lower()] = version
    return out


def test_install_script_does_not_need_the_azure_sdks() -> None:
    assert "requirements-azure" not in (ROOT / "scripts/install.sh").read_text()
    assert "azure-deps" in (ROOT / "mk/azure.mk").read_text()


def test_every_role_default_is_in_the_argument_spec() -> None:
    role = ROOT / "roles/azure_vm"
    defaults = yaml.safe_load((role / "defaults/main.yml").read_text())
    specs = yaml.safe_load((role / "meta/argument_specs.yml").read_text())["argument_specs"]
    assert all(name.startswith("azure_vm_") for name in defaults)
    assert sorted(set(defaults) - set(specs["main"]["options"])) == []
    assert sorted(set(defaults) - set(specs["teardown"]["options"])) == []
    assert specs["main"]["options"]["azure_vm_security_encryption_type"]["choices"] == [
        "VMGuestStateOnly",
        "DiskWithVMGuestState",
        "NonPersistedTPM",
    ]
    assert specs["main"]["options"]["azure_vm_secret"].get("no_log") is True
