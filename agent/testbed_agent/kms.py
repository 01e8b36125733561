"""Envelope encryption through an AWS-KMS-compatible key service.

The data key comes from the key service (GenerateDataKey; Decrypt to unwrap it again), the payload
is encrypted locally with AES-256-GCM; Encrypt, Sign/Verify and GenerateMac are timed too. Key
service round trips and local crypto are timed separately. The embedded default (and the tests)
use moto's KMS server started on 127.0.0.1; a real endpoint is used only when configured.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from testbed_agent.errors import TestbedError

#: dummy credentials the local server accepts; never sent anywhere but loopback
_LOCAL_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
LOCAL_REGION = "us-east-1"


@dataclass
class KmsConfig:
    """Where the key service is; ``endpoint_url`` None with ``local`` False means AWS's own endpoint."""

    local: bool = True
    endpoint_url: str | None = None
    region: str = LOCAL_REGION
    key_id: str | None = None
    sign_key_id: str | None = None
    mac_key_id: str | None = None

    @classmethod
    def from_param(cls, value: Any) -> KmsConfig:
        """``true`` / ``"local"``: the embedded local server; a mapping: a configured endpoint."""
        if value is True or value == "local":
            return cls()
        if not isinstance(value, dict):
            raise ValueError("kms must be true, 'local' or a mapping {endpoint_url, region, key_id, ...}")
        unknown = set(value) - {"endpoint_url", "region", "key_id", "sign_key_id", "mac_key_id", "local"}
        if unknown:
            raise ValueError(f"unknown kms keys: {', '.join(sorted(unknown))}")
        local = bool(value.get("local", False))
        if not local and not value.get("key_id"):
            raise ValueError("a configured (non-local) kms needs key_id (sign_key_id, mac_key_id optional)")
        return cls(
            local=local,
            endpoint_url=value.get("endpoint_url"),
            region=str(value.get("region", LOCAL_REGION)),
            key_id=value.get("key_id"),
            sign_key_id=value.get("sign_key_id"),
            mac_key_id=value.get("mac_key_id"),
        )


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@contextmanager
def local_kms_server(host: str = "127.0.0.1", timeout_s: float = 30.0) -> Iterator[str]:
    """Run moto's server (KMS-compatible) on loopback in its own process; yield its URL."""
    if not host.startswith("127."):
        raise TestbedError(f"the local key service binds to loopback only, not {host}")
    port = _free_port(host)
    env = {**os.environ, "MOTO_CALL_RESET_API": "false"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", host, "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            if proc.poll() is not None:
                err = (proc.stderr.read() if proc.stderr else b"").decode(errors="replace").strip()
                raise TestbedError(
                    f"local KMS server (moto) exited: {err.splitlines()[-1:] or '?'}",
                    hint="is moto[server] installed in this Python? (requirements.txt)",
                )
            try:
                with socket.create_connection((host, port), timeout=0.5):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise TestbedError(
                        "local KMS server (moto) did not start listening",
                        hint=f"tried {host}:{port} for {timeout_s:.0f} s",
                    ) from None
                time.sleep(0.1)
        yield f"http://{host}:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stderr:
            proc.stderr.close()


def make_client(cfg: KmsConfig, endpoint_url: str | None = None) -> Any:
    """A boto3 KMS client: dummy credentials for the local server, the default chain otherwise."""
    import boto3

    if cfg.local:
        return boto3.client("kms", endpoint_url=endpoint_url, region_name=cfg.region, **_LOCAL_CREDENTIALS)
    return boto3.client("kms", endpoint_url=cfg.endpoint_url, region_name=cfg.region)


@dataclass
class Envelope:
    """Keys of one key service and the timed envelope operations."""

    client: Any
    key_id: str
    sign_key_id: str | None = None
    mac_key_id: str | None = None
    timings: dict[str, list[float]] = field(default_factory=dict)

    @classmethod
    def create_keys(cls, client: Any) -> Envelope:
        """Create a symmetric, an ECC P-256 signing and an HMAC-256 key (local server only)."""

        def key(spec: str, usage: str) -> str:
            return str(client.create_key(KeySpec=spec, KeyUsage=usage)["KeyMetadata"]["KeyId"])

        return cls(
            client,
            key("SYMMETRIC_DEFAULT", "ENCRYPT_DECRYPT"),
            key("ECC_NIST_P256", "SIGN_VERIFY"),
            key("HMAC_256", "GENERATE_VERIFY_MAC"),
        )

    def _timed(self, name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter_ns()
        out = fn(*args, **kwargs)
        self.timings.setdefault(name, []).append((time.perf_counter_ns() - t0) / 1e9)
        return out

    def round_trip(self, payload: bytes) -> None:
        """One envelope encryption and decryption of ``payload`` plus the other key-service calls."""
        kms = self.client
        dk = self._timed("generate_data_key_rtt", kms.generate_data_key, KeyId=self.key_id, KeySpec="AES_256")
        nonce = os.urandom(12)
        blob = self._timed("local_encrypt", AESGCM(dk["Plaintext"]).encrypt, nonce, payload, None)
        plain_key = self._timed("decrypt_rtt", kms.decrypt, CiphertextBlob=dk["CiphertextBlob"])["Plaintext"]
        back = self._timed("local_decrypt", AESGCM(plain_key).decrypt, nonce, blob, None)
        if back != payload:
            raise TestbedError("envelope round trip returned a different payload")
        self._timed("encrypt_rtt", self.client.encrypt, KeyId=self.key_id, Plaintext=plain_key)
        if self.sign_key_id:
            sig = self._timed(
                "sign_rtt",
                self.client.sign,
                KeyId=self.sign_key_id,
                Message=payload,
                MessageType="RAW",
                SigningAlgorithm="ECDSA_SHA_256",
            )["Signature"]
            ok = self._timed(
                "verify_rtt",
                self.client.verify,
                KeyId=self.sign_key_id,
                Message=payload,
                MessageType="RAW",
                Signature=sig,
                SigningAlgorithm="ECDSA_SHA_256",
            )
            if not ok.get("SignatureValid"):
                raise TestbedError("key service did not verify its own signature")
        if self.mac_key_id:
            self._timed(
                "generate_mac_rtt",
                self.client.generate_mac,
                KeyId=self.mac_key_id,
                Message=payload,
                MacAlgorithm="HMAC_SHA_256",
            )


@contextmanager
def envelope(cfg: KmsConfig) -> Iterator[tuple[Envelope, str]]:
    """An :class:`Envelope` on the configured or embedded key service, and a description of it."""
    if cfg.local:
        with local_kms_server() as url:
            env = Envelope.create_keys(make_client(cfg, url))
            yield env, f"moto KMS server at {url}"
        return
    assert cfg.key_id is not None
    yield (
        Envelope(make_client(cfg), cfg.key_id, cfg.sign_key_id, cfg.mac_key_id),
        f"KMS at {cfg.endpoint_url or 'the AWS regional endpoint'} ({cfg.region})",
    )
