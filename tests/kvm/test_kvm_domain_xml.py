"""Domain XML of the kvm_guest role: rendered for every confidential mode, validated against
libvirt's schema with virt-xml-validate, and refused clearly on a host that cannot run it."""

from __future__ import annotations

import contextlib
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from kvm_helpers import POOL, POOL_PATH, ROOT, ansible_playbook, require_tools, virt_xml_validate

MODES = ("none", "sev", "sev-es", "sev-snp", "tdx")


def _guest_inventory(path: Path, guests: dict[str, dict], with_host: bool = False) -> Path:
    hosts: dict = {"all": {"children": {"kvm": {"hosts": guests}}}}
    if with_host:
        hosts["all"]["children"]["kvm_hosts"] = {
            "hosts": {
                "localhost": {
                    "ansible_connection": "local",
                    "ansible_python_interpreter": "{{ ansible_playbook_python }}",
                    "kvm_host_install_packages": False,
                    "kvm_host_pool_name": POOL,
                    "kvm_host_pool_path": POOL_PATH,
                }
            }
        }
    path.write_text(yaml.safe_dump(hosts))
    return path


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The domain XML of one guest per confidential mode (kvm_guest_state=rendered)."""
    tmp = tmp_path_factory.mktemp("kvm-xml")
    guests = {
        f"xml-{mode}": {
            "kvm_guest_confidential": mode,
            "kvm_guest_memory_mib": 2048,
            "kvm_guest_vcpus": 2,
            "testbed_label": f"label-{mode}",
        }
        for mode in MODES
    }
    inv = _guest_inventory(tmp / "inventory.yml", guests)
    run = ansible_playbook(
        "-i",
        str(inv),
        "playbooks/provision_kvm.yml",
        "-e",
        "kvm_guest_state=rendered",
        "-e",
        f"kvm_guest_render_dir={tmp / 'xml'}",
        timeout=600,
    )
    assert run.rc == 0, run.output[-4000:]
    return tmp / "xml"


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("mode", MODES)
def test_rendered_xml_has_the_launch_security_of_its_mode(rendered: Path, mode: str) -> None:
    doc = ET.parse(rendered / f"xml-{mode}.xml").getroot()
    assert doc.findtext("title") == f"label-{mode}"
    assert doc.findtext("vcpu") == "2"
    assert doc.find("memory").text == "2048"
    ls = doc.find("launchSecurity")
    os_el = doc.find("os")
    # declared, so that libvirt's stored definition keeps one order across starts (idempotent define)
    serial_ctl = doc.find("devices/controller[@type='virtio-serial']")
    assert serial_ctl is not None
    assert (serial_ctl.find("driver[@iommu='on']") is not None) == (mode in ("sev", "sev-es"))
    if mode == "none":
        assert ls is None
        assert os_el.get("firmware") is None
        return
    assert os_el.get("firmware") == "efi"
    assert doc.get("type") == "kvm"
    want_type = {"sev": "sev", "sev-es": "sev", "sev-snp": "sev-snp", "tdx": "tdx"}[mode]
    assert ls.get("type") == want_type
    policy = int(ls.findtext("policy"), 16)
    if mode == "sev":
        assert policy & 0x4 == 0  # no SEV-ES bit
    if mode == "sev-es":
        assert policy & 0x4  # SEV-ES
    if mode == "sev-snp":
        assert policy & (1 << 17)  # reserved bit that SNP requires set
        assert ls.findtext("cbitpos") == "51"
    if mode == "tdx":
        assert ls.find("cbitpos") is None
    if mode in ("sev", "sev-es", "sev-snp"):
        assert doc.find("memtune/hard_limit") is not None
    assert doc.find("devices/memballoon").get("model") == "none"


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("mode", MODES)
def test_rendered_xml_validates_against_libvirts_schema(rendered: Path, new_schemas: Path, mode: str) -> None:
    """virt-xml-validate with the schema of a libvirt that knows sev-snp and tdx (12.x from Debian)."""
    require_tools("virt-xml-validate", "xmllint", "unshare")
    res = virt_xml_validate(rendered / f"xml-{mode}.xml", new_schemas)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "validates" in res.stdout + res.stderr


@pytest.mark.slow
@pytest.mark.integration
def test_installed_libvirt_schema_accepts_plain_and_sev_guests(rendered: Path) -> None:
    """The host's own libvirt schema validates what it can run; Debian 12's 9.0 predates sev-snp."""
    require_tools("virt-xml-validate")
    for mode in ("none", "sev", "sev-es"):
        res = virt_xml_validate(rendered / f"xml-{mode}.xml")
        assert res.returncode == 0, res.stdout + res.stderr
    installed = Path("/usr/share/libvirt/schemas/domaincommon.rng").read_text()
    if "sev-snp" not in installed:
        res = virt_xml_validate(rendered / "xml-sev-snp.xml")
        assert res.returncode != 0  # the old schema rejects it: the reason for the newer schemas


@pytest.mark.slow
@pytest.mark.integration
def test_confidential_guest_is_refused_clearly_on_this_host(tmp_path: Path) -> None:
    """sev-snp and tdx on a host without them: a clear failure naming the reasons, nothing defined."""
    require_tools("virsh", "libvirtd")
    probe = subprocess.run(
        ["python3", str(ROOT / "roles/kvm_host/files/kvm_host_facts.py")],
        capture_output=True,
        text=True,
        check=True,
    )
    caps = yaml.safe_load(probe.stdout)
    if caps["confidential"]["sev-snp"]["supported"] or caps["confidential"]["tdx"]["supported"]:
        pytest.fail("this host can run confidential guests: the refusal test needs one that cannot")
    guests = {
        "refuse-snp": {"kvm_guest_confidential": "sev-snp", "kvm_guest_ssh_port": 2291},
        "refuse-tdx": {"kvm_guest_confidential": "tdx", "kvm_guest_ssh_port": 2292},
    }
    inv = _guest_inventory(tmp_path / "inventory.yml", guests, with_host=True)
    run = ansible_playbook("-i", str(inv), "playbooks/provision_kvm.yml", timeout=600)
    assert run.rc != 0
    out = " ".join(run.output.split())
    for name, mode in (("refuse-snp", "sev-snp"), ("refuse-tdx", "tdx")):
        assert f"{name}: confidential mode '{mode}' was requested, but localhost cannot run it" in out
    assert "Nothing was defined" in out
    assert "libvirt 9.0.0 is older than 10.5.0" in out or "kvm_amd parameter sev_snp is not enabled" in out
    recap = run.recap()
    assert recap["refuse-snp"]["failed"] == 1 and recap["refuse-tdx"]["failed"] == 1
    domains = subprocess.run(
        ["virsh", "-c", "qemu:///system", "list", "--all", "--name"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "refuse-snp" not in domains and "refuse-tdx" not in domains
    # the host role defined this checkout's pool (kvm_helpers.POOL) and its empty directory: gone again
    for action in ("pool-destroy", "pool-undefine"):
        subprocess.run(["virsh", "-c", "qemu:///system", action, POOL], capture_output=True, check=False)
    with contextlib.suppress(OSError):
        Path(POOL_PATH).rmdir()
