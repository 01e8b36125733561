"""kvm_host_facts.py: what a KVM host can run, decided from fake /proc, /sys and domcapabilities."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from kvm_helpers import ROOT

SCRIPT = ROOT / "roles/kvm_host/files/kvm_host_facts.py"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kvm_host_facts", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


facts = _load()

SNP_DOMCAPS = """<domainCapabilities><os><loader supported='yes'>
<value>/usr/share/OVMF/OVMF.amdsev.fd</value></loader></os><features>
<sev supported='yes'><cbitpos>51</cbitpos><reducedPhysBits>1</reducedPhysBits><maxGuests>509</maxGuests>
</sev><launchSecurity supported='yes'><enum name='sectype'><value>sev</value><value>sev-snp</value>
</enum></launchSecurity></features></domainCapabilities>"""


def _fake_root(tmp_path: Path, vendor: str, flags: str, params: dict[str, dict[str, str]]) -> Path:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text(
        f"processor\t: 0\nvendor_id\t: {vendor}\nmodel name\t: Test CPU\nflags\t\t: fpu {flags}\n\n"
        f"processor\t: 1\nvendor_id\t: {vendor}\n"
    )
    for module, values in params.items():
        pdir = tmp_path / "sys/module" / module / "parameters"
        pdir.mkdir(parents=True)
        for name, value in values.items():
            (pdir / name).write_text(value + "\n")
    (tmp_path / "dev").mkdir()
    (tmp_path / "dev/kvm").write_text("")
    return tmp_path


def test_cpu_and_module_params_of_an_snp_host(tmp_path: Path) -> None:
    root = _fake_root(
        tmp_path,
        "AuthenticAMD",
        "svm sev sev_es sev_snp",
        {"kvm_amd": {"sev": "Y", "sev_es": "Y", "sev_snp": "Y"}},
    )
    cpu = facts.cpu_info(root)
    assert cpu["vendor"] == "amd" and cpu["svm"] and not cpu["vmx"] and cpu["count"] == 2
    assert cpu["cc_flags"] == ["sev", "sev_es", "sev_snp"]
    params = facts.module_params(root)
    assert params["sev_snp"] is True and params["tdx"] is None and params["kvm_amd_loaded"]


def test_snp_host_with_new_libvirt_supports_snp_but_not_tdx(tmp_path: Path) -> None:
    root = _fake_root(
        tmp_path,
        "AuthenticAMD",
        "svm sev sev_es sev_snp",
        {"kvm_amd": {"sev": "Y", "sev_es": "Y", "sev_snp": "Y"}},
    )
    caps = facts.parse_domcapabilities(SNP_DOMCAPS)
    assert caps["sev"] and caps["sev_snp"] and not caps["tdx"]
    assert caps["firmware"] == ["/usr/share/OVMF/OVMF.amdsev.fd"]
    support = facts.confidential_support(
        facts.cpu_info(root), facts.module_params(root), True, (10, 5, 0), caps
    )
    assert support["sev-snp"] == {"supported": True, "reasons": []}
    assert support["sev"]["supported"] and support["sev-es"]["supported"]
    assert not support["tdx"]["supported"]
    assert any("Intel" in r for r in support["tdx"]["reasons"])


def test_old_libvirt_and_disabled_module_are_named_as_reasons(tmp_path: Path) -> None:
    root = _fake_root(tmp_path, "AuthenticAMD", "svm", {"kvm_amd": {"sev": "N", "sev_snp": "N"}})
    support = facts.confidential_support(
        facts.cpu_info(root), facts.module_params(root), True, (9, 0, 0), facts.parse_domcapabilities("")
    )
    reasons = " | ".join(support["sev-snp"]["reasons"])
    assert not support["sev-snp"]["supported"]
    assert "sev_snp is not enabled" in reasons
    assert "libvirt 9.0.0 is older than 10.5.0" in reasons
    assert "does not offer sev-snp" in reasons


def test_tdx_host(tmp_path: Path) -> None:
    root = _fake_root(tmp_path, "GenuineIntel", "vmx tdx_host_platform", {"kvm_intel": {"tdx": "Y"}})
    caps = facts.parse_domcapabilities(
        "<domainCapabilities><features><launchSecurity supported='yes'><enum name='sectype'>"
        "<value>tdx</value></enum></launchSecurity></features></domainCapabilities>"
    )
    support = facts.confidential_support(
        facts.cpu_info(root), facts.module_params(root), True, (11, 7, 0), caps
    )
    assert support["tdx"]["supported"]
    assert not support["sev-snp"]["supported"]


def test_no_vmx_or_svm_means_software_emulation(tmp_path: Path) -> None:
    root = _fake_root(tmp_path, "AuthenticAMD", "sse2 hypervisor", {})
    support = facts.confidential_support(
        facts.cpu_info(root),
        facts.module_params(root),
        False,
        (9, 0, 0),
        facts.parse_domcapabilities("not xml"),
    )
    for mode in facts.CC_MODES:
        assert not support[mode]["supported"]
        assert "software emulation" in support[mode]["reasons"][0]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Using library: libvirt 9.0.0", (9, 0, 0)),
        ("Running hypervisor: QEMU 7.2.22", (7, 2, 22)),
        ("QEMU 8.2", (8, 2, 0)),
        ("", None),
    ],
)
def test_parse_version(text: str, want: tuple[int, ...] | None) -> None:
    assert facts.parse_version(text) == want


def test_script_prints_json_for_this_machine() -> None:
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--uri", "test:///default"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    out = json.loads(proc.stdout)
    assert out["domain_type"] in ("kvm", "qemu")
    assert set(out["confidential"]) == set(facts.CC_MODES)
    assert out["domain_type_reason"]


def test_the_host_uuid_comes_from_libvirt_capabilities() -> None:
    caps = "<capabilities><host><uuid>4C4C4544-004A-3510-8043-CAC04F563533</uuid><cpu/></host></capabilities>"
    assert facts.parse_host_uuid(caps) == "4c4c4544-004a-3510-8043-cac04f563533"
    assert facts.parse_host_uuid("<capabilities><host/></capabilities>") is None
    assert facts.parse_host_uuid("<capabilities><host><uuid>not-a-uuid</uuid></host></capabilities>") is None
    assert facts.parse_host_uuid("not xml") is None
    assert facts.parse_host_uuid("") is None
