"""Regression tests of issue 12 items 2 and 9: what a function may touch, and hostile API input."""

from __future__ import annotations

import json
import os
import pwd
import socket
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from testbed_services.faas.logs import LOG_CAP

pytestmark = pytest.mark.integration


def raw(url: str, data: bytes) -> tuple[int, dict]:
    """Send ``data`` as the whole HTTP request; the status and the strictly parsed JSON answer."""
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := sock.recv(1 << 16):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), strict_json(body)


def strict_json(data: bytes | str) -> dict:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in a response")

    return json.loads(data, parse_constant=refuse)


def put(path: str, body: bytes, headers: str = "") -> bytes:
    length = f"Content-Length: {len(body)}\r\n" if "Content-Length" not in headers else ""
    return f"PUT {path} HTTP/1.1\r\nHost: x\r\n{headers}{length}\r\n".encode() + body


@pytest.fixture(scope="module")
def probe(served):
    served.client.deploy("probe", function="probe", memory_mb=256, env={"SECRET": "hunter2-value"})
    return served


def call(served, event: dict) -> tuple[int, dict]:
    status, body, _ = served.client.invoke("probe", event)
    return status, body


@pytest.mark.parametrize(
    ("path", "spec"),
    [
        ("/functions/x", {"function": "/etc"}),
        ("/functions/x", {"function": str(Path(__file__).parent / "functions" / "probe")}),
        ("/functions/x", {"function": "../functions/probe"}),
        ("/functions/x", {"function": "..%2Fprobe"}),
        ("/functions/x", {"function": ".."}),
        ("/functions/x", {"function": "pro be"}),
        ("/functions/x", {"function": ["probe"]}),
        ("/functions/..%2F..%2Fetc", {"function": "probe"}),
        ("/functions/..", {"function": "probe"}),
        ("/functions/.hidden", {"function": "probe"}),
    ],
)
def test_function_paths_and_traversal_names_rejected(served, path, spec):
    status, body = served.client.request("PUT", path, spec)
    assert status == 400, body
    assert body["error"]["type"] == "ApiError"


def test_symlink_out_of_the_functions_dir_rejected(start_emulator, tmp_path):
    outside = tmp_path / "outside" / "evil"
    outside.mkdir(parents=True)
    (outside / "handler.py").write_text("def handler(e, c):\n    return 'escaped'\n")
    fdir = tmp_path / "fns"
    fdir.mkdir()
    (fdir / "evil").symlink_to(outside)
    emu = start_emulator("--functions-dir", str(fdir), "--cgroup", "none")
    status, body = emu.client.request("PUT", "/functions/evil", {"function": "evil"})
    assert status == 400 and "unknown function" in body["error"]["message"]


def test_function_runs_unprivileged_and_cannot_read_shadow(probe):
    status, body = call(probe, {"op": "whoami"})
    assert status == 200
    uid = pwd.getpwnam("testbed-faas").pw_uid
    assert body["result"]["uid"] == body["result"]["euid"] == uid != 0
    assert body["result"]["groups"] == [] or 0 not in body["result"]["groups"]
    status, body = call(probe, {"op": "read", "path": "/etc/shadow"})
    assert status == 500 and body["error"]["exception"] == "PermissionError", body
    assert probe.client.info()["function_user"] == "testbed-faas"


@pytest.mark.parametrize("where", ["/var/tmp", "/tmp", "/dev/shm"])
def test_writes_to_shared_dirs_do_not_reach_the_host(probe, where):
    target = Path(where) / f"faas-probe-{uuid.uuid4().hex}"
    try:
        status, body = call(probe, {"op": "write", "path": str(target)})
        assert not target.exists(), f"{target} reached the host"
    finally:
        target.unlink(missing_ok=True)
    assert status == 200, body  # the function has its own private copy of these directories


@pytest.mark.parametrize("path", ["/etc/faas-probe", "/work/faas-probe", "/root/faas-probe"])
def test_host_is_read_only_to_functions(probe, path):
    path = f"{path}-{uuid.uuid4().hex}"
    try:
        status, body = call(probe, {"op": "write", "path": path})
        assert not Path(path).exists()
    finally:
        Path(path).unlink(missing_ok=True)  # had the test failed, leave nothing behind
    assert status == 500 and body["error"]["exception"] in ("OSError", "PermissionError", "FileNotFoundError")


def test_root_home_hidden(probe):
    status, body = call(probe, {"op": "read", "path": "/root/.bashrc"})
    assert status == 500 and body["error"]["exception"] in ("FileNotFoundError", "PermissionError")


def test_info_redacts_environment_values(probe):
    text = json.dumps(probe.client.info())
    assert "hunter2-value" not in text
    assert probe.client.info()["functions"]["probe"]["env"] == {"SECRET": "<redacted>"}
    _status, body = call(probe, {"op": "env"})
    assert body["result"]["secret"] == "hunter2-value", "the function itself still gets it"


@pytest.mark.parametrize(
    "spec",
    [
        {"function": "calcs", "keep_alive_s": float("nan")},
        {"function": "calcs", "keep_alive_s": float("inf")},
        {"function": "calcs", "timeout_s": float("nan")},
        {"function": "calcs", "memory_mb": True},
        {"function": "calcs", "env": ["A=1"]},
        {"function": "calcs", "env": {"A": {"nested": 1}}},
        {"function": "calcs", "tmp_mb": "lots"},
    ],
)
def test_bad_deployment_values_rejected(served, spec):
    status, body = served.client.request("PUT", "/functions/bad", spec)
    assert status == 400, body


@pytest.mark.parametrize(
    "request_bytes",
    [
        put("/functions/m", b"{not json"),
        put("/functions/m", b"\xff\xfe{}"),
        put("/functions/m", b'{"keep_alive_s": NaN}'),
        put("/functions/m", b"[" * 100_000 + b"]" * 100_000),
        put("/functions/m", b"{}", "Content-Length: abc\r\n"),
        put("/functions/m", b"{}", "Content-Length: -5\r\n"),
        b"POST /cold HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n[]",
        b'POST /functions/probe/invoke HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n{"a": 1e9',
        b"POST /functions/probe/invoke HTTP/1.1\r\nHost: x\r\nContent-Length: 4400\r\n\r\n" + b"9" * 4400,
    ],
)
def test_malformed_bodies_get_400_json(probe, request_bytes):
    status, body = raw(probe.url, request_bytes)
    assert status == 400, body
    assert body["status"] == "error" and body["error"]["message"]


def test_non_finite_result_is_an_error_not_invalid_json(probe):
    status, body = raw(
        probe.url,
        b'POST /functions/probe/invoke HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\n\r\n{"op": "nan"}',
    )
    assert status == 500 and body["error"]["type"] == "FunctionError"
    assert "JSON" in body["error"]["message"] or "float" in body["error"]["message"]


def test_function_output_is_capped(probe):
    status, _ = call(probe, {"op": "print", "n": 8 * LOG_CAP})
    assert status == 200
    time.sleep(0.5)  # the collector drains the pipe asynchronously
    inst = next(i for i in probe.client.info()["instances"] if i["function"] == "probe")
    assert inst["log_bytes"] >= 8 * LOG_CAP and inst["log_truncated_bytes"] >= 7 * LOG_CAP
    status, logs = probe.client.request("GET", "/functions/probe/logs")
    text = logs[inst["id"]]
    assert status == 200 and text.startswith("[... ") and "bytes truncated ...]" in text
    assert len(text) <= LOG_CAP + 100
    assert _disk_bytes(probe) < 8 * LOG_CAP, "function output is not written to an uncapped file"


def _disk_bytes(served) -> int:
    state = Path(served.log).parent / "state"
    total = 0
    for root, _dirs, files in os.walk(state):
        if os.path.ismount(root):
            _dirs.clear()
            continue
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files if not f.endswith(".img"))
    return total


def test_instance_directories_removed_when_reclaimed(served):
    c = served.client
    c.deploy("short", function="calcs", memory_mb=128, keep_alive_s=0.3)
    assert c.invoke("short", {"array_size": 2, "function_calls": 2})[0] == 200
    state = next((Path(served.log).parent / "state").glob("emu-*"))
    end = time.monotonic() + 10
    while time.monotonic() < end:  # the reaper retires an instance just after taking it out of the pool
        live = {i["id"] for i in c.info()["instances"]}
        dirs = {p.name for p in state.glob("i-*")}
        if dirs <= live and not any(i["function"] == "short" for i in c.info()["instances"]):
            break
        time.sleep(0.1)
    assert dirs <= live, f"directories of reclaimed instances left: {dirs - live}"
