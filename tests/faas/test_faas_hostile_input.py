"""Issue 26 finding 11 (emulator): list bodies (deployments, /cold and events: the functions
take JSON objects) and numbers beyond the float range are answered 400 with a JSON error, never
500; a deployment field given as 0 is refused instead of silently replaced by the default; an
instance concurrency of 100000 is refused."""

from __future__ import annotations

import pytest

from .test_faas_security import put, raw

pytestmark = pytest.mark.integration


def _post(path: str, body: bytes) -> bytes:
    return f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body


@pytest.fixture(scope="module")
def emu(served):
    served.client.deploy("probe", function="probe", memory_mb=256)
    return served


@pytest.mark.parametrize(
    ("request_", "why"),
    [
        (put("/functions/a", b"[1, 2]"), "must be a JSON object"),
        (put("/functions/a", b"[]"), "must be a JSON object"),
        (put("/functions/a", b'"probe"'), "must be a JSON object"),
        (_post("/cold", b"[1]"), "must be a JSON object"),
        (_post("/functions/probe/invoke", b"1e999"), "out of range"),
        (_post("/functions/probe/invoke", b"[1, 2, 3]"), "must be a JSON object"),
        (_post("/functions/probe/invoke", b'"text"'), "must be a JSON object"),
        (_post("/functions/probe/invoke", b'{"op": "whoami", "x": -1e999}'), "out of range"),
        (put("/functions/a", b'{"function": "probe", "timeout_s": 1e999}'), "out of range"),
        (put("/functions/a", b'{"function": "probe", "timeout_s": 0}'), "timeout 0.0 s outside"),
        (put("/functions/a", b'{"function": "probe", "tmp_mb": 0}'), "tmp_mb must be >= 1"),
        (
            put("/functions/a", b'{"function": "probe", "concurrency": 100000}'),
            "concurrency must be 1 to 1000",
        ),
        (put("/functions/a", b'{"function": "probe", "concurrency": 0}'), "concurrency must be 1 to 1000"),
        (put("/functions/a", b'{"function": "probe", "concurrency": 2.5}'), "whole number"),
        (put("/functions/a", b'{"function": "probe", "memory_mb": 0}'), "memory"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_hostile_bodies_get_400_with_a_json_error(emu, request_: bytes, why: str) -> None:
    status, body = raw(emu.url, request_)
    assert status == 400, body
    assert body["status"] == "error" and why in body["error"]["message"], body
    status, _ = raw(emu.url, b"GET /info HTTP/1.1\r\nHost: x\r\n\r\n")
    assert status == 200  # and the emulator still serves


def test_given_fields_are_used_not_replaced(emu) -> None:
    status, body = raw(
        emu.url, put("/functions/b", b'{"function": "probe", "timeout_s": 7, "concurrency": 3}')
    )
    assert status == 200 and body["timeout_s"] == 7 and body["concurrency"] == 3, body
