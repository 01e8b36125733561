"""testbed_agent.clouds.azure: IMDS reader against a stand-in on 127.0.0.1, vTPM hardware report parsing."""

from __future__ import annotations

import hashlib
import json
import socket
import stat
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from testbed_agent.clouds import azure
from testbed_shared import errors

COMPUTE = {
    "vmSize": "Standard_DC4as_v5",
    "location": "westeurope",
    "name": "sev-enc-1",
    "vmId": "0f0e0d0c-0000-4000-8000-000000000001",
    "zone": "",
    "resourceId": "/subscriptions/0/resourceGroups/r1/providers/Microsoft.Compute/virtualMachines/sev-enc-1",
    "securityProfile": {
        "secureBootEnabled": "true",
        "virtualTpmEnabled": "true",
        "encryptionAtHost": "false",
        "securityType": "ConfidentialVM",
    },
    "storageProfile": {
        "imageReference": {
            "publisher": "Canonical",
            "offer": "ubuntu-24_04-lts",
            "sku": "cvm",
            "version": "24.04.202611010",
        }
    },
    "tagsList": [{"name": "testbed_run", "value": "r1"}, {"name": "testbed_label", "value": "SEV-Encrypted"}],
}


class _Imds(BaseHTTPRequestHandler):
    """IMDS stand-in: answers only with the Metadata header, like the real service."""

    body: bytes = json.dumps({"compute": COMPUTE, "network": {}}).encode()
    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Metadata")))
        if self.headers.get("Metadata") != "true":
            self.send_response(400)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def imds_server() -> Iterator[tuple[str, type[_Imds]]]:
    handler = type("Handler", (_Imds,), {"seen": []})
    server = HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


def test_imds_reads_size_and_security_profile(
    imds_server: tuple[str, type[_Imds]], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoint, handler = imds_server
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # IMDS must bypass proxies
    info = azure.imds(endpoint, timeout=5)
    assert handler.seen == [(f"/metadata/instance?api-version={azure.IMDS_API_VERSION}", "true")]
    assert info["vm_size"] == "Standard_DC4as_v5"
    assert info["security_type"] == "ConfidentialVM"
    assert (info["secure_boot"], info["vtpm"], info["encryption_at_host"]) == (True, True, False)
    assert info["image"]["sku"] == "cvm"
    assert info["tags"] == {"testbed_run": "r1", "testbed_label": "SEV-Encrypted"}
    assert info["zone"] is None and info["source"] == endpoint


def test_imds_standard_vm_has_no_security_type(imds_server: tuple[str, type[_Imds]]) -> None:
    endpoint, handler = imds_server
    compute = dict(
        COMPUTE,
        vmSize="Standard_D4as_v5",
        securityProfile={"secureBootEnabled": "false", "virtualTpmEnabled": "false"},
    )
    handler.body = json.dumps({"compute": compute}).encode()
    info = azure.imds(endpoint, timeout=5)
    assert info["security_type"] is None and info["vtpm"] is False and info["encryption_at_host"] is None


def test_imds_unreachable_is_a_testbed_error() -> None:
    with socket.socket() as sock:  # a loopback port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(errors.TestbedError) as err:
        azure.imds(f"http://127.0.0.1:{port}", timeout=2)
    assert "did not answer" in err.value.message and "--cloud azure" in (err.value.hint or "")


def test_imds_refuses_non_http_endpoints() -> None:
    with pytest.raises(errors.TestbedError, match="not an http"):
        azure.imds("file:///etc/passwd")


def test_imds_garbage_is_a_testbed_error(imds_server: tuple[str, type[_Imds]]) -> None:
    endpoint, handler = imds_server
    handler.body = b"<html>captive portal</html>"
    with pytest.raises(errors.TestbedError, match="not JSON"):
        azure.imds(endpoint, timeout=5)
    handler.body = b'{"network": {}}'
    with pytest.raises(errors.TestbedError, match="compute"):
        azure.imds(endpoint, timeout=5)


def _hcl_blob(report_type: int, hw: bytes, claims: dict) -> bytes:
    variable = json.dumps(claims).encode()
    header = b"HCLA" + struct.pack("<4I", 2, 2600, 1, 0) + bytes(12)
    runtime = struct.pack("<5I", 20 + len(variable), 1, report_type, 1, len(variable)) + variable
    return header + hw.ljust(1184, b"\0") + runtime


def _snp_report() -> bytes:
    hw = bytearray(1184)
    struct.pack_into("<IIQ", hw, 0, 2, 7, 0x30000)
    hw[0x50:0x90] = bytes(range(64))
    hw[0x90:0xC0] = bytes([0xAB]) * 48
    hw[0x1A0:0x1E0] = bytes([0xC1]) * 64
    return bytes(hw)


CLAIMS = {"keys": [{"kid": "HCLAkPub"}], "vm-configuration": {"secure-boot": True, "tpm-enabled": True}}


def test_parse_snp_report() -> None:
    blob = _hcl_blob(2, _snp_report(), CLAIMS)
    report = azure.parse_hcl_report(blob)
    assert report["format"] == "azure-hcl" and report["report_type"] == "sev-snp"
    assert report["sha256"] == hashlib.sha256(blob).hexdigest()
    assert report["measurement"] == "ab" * 48 and report["chip_id"] == "c1" * 64
    assert report["report_data"] == bytes(range(64)).hex()
    assert (report["snp_version"], report["guest_svn"], report["policy"]) == (2, 7, "0x30000")
    assert report["runtime"]["key_ids"] == ["HCLAkPub"]
    assert report["runtime"]["vm_configuration"] == {"secure-boot": True, "tpm-enabled": True}
    assert report["runtime"]["report_data_hash"] == "sha256"


def test_parse_tdx_report() -> None:
    td = bytearray(1024)
    td[128:192] = bytes([0x11]) * 64
    td[528:576] = bytes([0x5A]) * 48
    report = azure.parse_hcl_report(_hcl_blob(4, bytes(td), CLAIMS))
    assert report["report_type"] == "tdx"
    assert report["measurement"] == "5a" * 48 and report["report_data"] == "11" * 64
    assert report["hardware_report_sha256"] == hashlib.sha256(bytes(td)).hexdigest()


def test_parse_unknown_blob_keeps_digest() -> None:
    report = azure.parse_hcl_report(b"not a report")
    assert report == {
        "size": 12,
        "sha256": hashlib.sha256(b"not a report").hexdigest(),
        "format": "unknown",
        "report_type": "unknown",
    }


def _fake_tool(tmp_path: Path, script: str) -> str:
    tool = tmp_path / "tpm2_nvread"
    tool.write_text("#!/bin/sh\n" + script)
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return str(tool)


def test_hardware_report_reads_nv_index_with_tpm2_nvread(tmp_path: Path) -> None:
    blob = tmp_path / "report.bin"
    blob.write_bytes(_hcl_blob(2, _snp_report(), CLAIMS))
    args = tmp_path / "args"
    device = tmp_path / "tpmrm0"
    device.touch()
    tool = _fake_tool(tmp_path, f'echo "$@ $TPM2TOOLS_TCTI" > {args}\ncat {blob}\n')
    report = azure.hardware_report(tpm2_nvread=tool, device=device)
    assert report is not None and report["report_type"] == "sev-snp"
    assert report["source"] == "vtpm-nv:0x01400001" and report["measurement"] == "ab" * 48
    assert args.read_text().split() == ["-C", "o", "0x01400001", f"device:{device}"]


def test_hardware_report_absent_without_tpm_or_tool(tmp_path: Path) -> None:
    tool = _fake_tool(tmp_path, "exit 0\n")
    assert azure.hardware_report(tpm2_nvread=tool, device=tmp_path / "no-tpm") is None
    device = tmp_path / "tpmrm0"
    device.touch()
    assert azure.hardware_report(tpm2_nvread=str(tmp_path / "missing-tool"), device=device) is None


def test_hardware_report_failure_is_recorded(tmp_path: Path) -> None:
    device = tmp_path / "tpmrm0"
    device.touch()
    tool = _fake_tool(tmp_path, "echo 'ERROR: the NV index is not defined' >&2\nexit 1\n")
    report = azure.hardware_report(tpm2_nvread=tool, device=device)
    assert report == {
        "source": "vtpm-nv:0x01400001",
        "error": f"{tool} exited 1: ERROR: the NV index is not defined",
    }
