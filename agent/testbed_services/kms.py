"""Key services (AWS-KMS-compatible) for the crypto workload: the server, its keys, the clients.

Each language's client (workloads/crypto/kms/<language>, the real AWS SDK of that language) runs one
key per process: envelope encryption (data key from the key service, payload encrypted locally with
AES-256-GCM, key unwrapped again), Sign/Verify or GenerateMac/VerifyMac. Key-service round trips and
local crypto are timed apart. The embedded default (and the tests) use moto's KMS server started on
127.0.0.1; a real endpoint is used only when configured.
"""

from __future__ import annotations

import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed_shared.errors import TestbedError
from testbed_shared.records import metric

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


#: key name (plan parameter ``kms_keys``) -> (KMS key spec, key usage); the paths each key takes:
#: ENCRYPT_DECRYPT envelope (symmetric: GenerateDataKey/Decrypt; RSA: Encrypt/Decrypt of a local data
#: key, RSAES_OAEP_SHA_256), SIGN_VERIFY Sign/Verify (ECDSA_SHA_256/384, RSASSA_PSS_SHA_256),
#: GENERATE_VERIFY_MAC GenerateMac/VerifyMac
KEYS: dict[str, tuple[str, str]] = {
    "sym": ("SYMMETRIC_DEFAULT", "ENCRYPT_DECRYPT"),
    "rsa2048": ("RSA_2048", "ENCRYPT_DECRYPT"),
    "rsa3072": ("RSA_3072", "ENCRYPT_DECRYPT"),
    "rsa4096": ("RSA_4096", "ENCRYPT_DECRYPT"),
    "rsa2048-sign": ("RSA_2048", "SIGN_VERIFY"),
    "rsa3072-sign": ("RSA_3072", "SIGN_VERIFY"),
    "rsa4096-sign": ("RSA_4096", "SIGN_VERIFY"),
    "p256": ("ECC_NIST_P256", "SIGN_VERIFY"),
    "p384": ("ECC_NIST_P384", "SIGN_VERIFY"),
    "hmac256": ("HMAC_256", "GENERATE_VERIFY_MAC"),
    "hmac384": ("HMAC_384", "GENERATE_VERIFY_MAC"),
}
#: the old single-key settings of a configured endpoint and the key names they stand for
_LEGACY = {"key_id": "sym", "sign_key_id": "p256", "mac_key_id": "hmac256"}


def configured_keys(cfg: KmsConfig) -> dict[str, str]:
    """Key ids of a configured (non-local) endpoint by key name."""
    return {name: getattr(cfg, attr) for attr, name in _LEGACY.items() if getattr(cfg, attr)}


def create_keys(client: Any, names: list[str]) -> dict[str, str]:
    """Create one key per name on the local server; their ids by name."""
    out = {}
    for name in names:
        spec, usage = KEYS[name]
        out[name] = str(client.create_key(KeySpec=spec, KeyUsage=usage)["KeyMetadata"]["KeyId"])
    return out


@contextmanager
def key_service(cfg: KmsConfig, names: list[str]) -> Iterator[tuple[str | None, dict[str, str], str]]:
    """(endpoint URL or None for AWS's own, key ids by name, description) of the key service."""
    if cfg.local:
        with local_kms_server() as url:
            yield url, create_keys(make_client(cfg, url), names), f"moto KMS server at {url}"
        return
    keys = configured_keys(cfg)
    yield (
        cfg.endpoint_url,
        {n: keys[n] for n in names if n in keys},
        f"KMS at {cfg.endpoint_url or 'the AWS regional endpoint'} ({cfg.region})",
    )


def client_command(lang: str, root: Path) -> tuple[list[str], dict[str, str]] | str:
    """Command line of one language's key-service client (workloads/crypto/kms), or why it cannot run."""
    kms = root / "kms"
    if lang == "python":
        return [sys.executable, str(kms / "python" / "testbed_kms.py")], {}
    paths = {
        "go": (kms / "go/bin/testbed-kms", []),
        "rust": (kms / "rust/target/release/testbed-kms", []),
        "java": (kms / "java/target/testbed-kms.jar", ["java", "-jar"]),
        "node": (kms / "node/node_modules/@aws-sdk/client-kms", ["node", str(kms / "node/main.js")]),
    }
    path, prefix = paths[lang]
    if not path.exists():
        return f"{lang} key-service client not built ({path.relative_to(root)}; `make crypto-kms`)"
    if prefix and shutil.which(prefix[0]) is None:
        return f"{prefix[0]} runtime not found on PATH"
    if lang == "java":
        return [*prefix, str(path)], {}
    return (prefix or [str(path)]), {}


def client_env(cfg: KmsConfig) -> dict[str, str]:
    """Environment of a client process: dummy credentials for the local server only."""
    env = {"AWS_EC2_METADATA_DISABLED": "true", "AWS_REGION": cfg.region}
    if cfg.local:
        env |= {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
    return env


def call_metrics(prefix: str, times_ns: dict[str, list[int]], warm_after: int) -> dict[str, Any]:
    """Cold (first call) and warm (median of the calls after ``warm_after``) seconds per call name."""
    out: dict[str, Any] = {}
    for call, values in times_ns.items():
        secs = [v / 1e9 for v in values]
        if call == "client_init":
            out[f"{prefix}.client_init"] = metric(secs[0], "s", "lower")
            continue
        name = call if call.startswith("local_") else f"{call}_rtt"
        warm = secs[warm_after:] if len(secs) > warm_after else secs[1:] or secs
        out[f"{prefix}.{name}"] = metric(statistics.median(warm), "s", "lower")
        out[f"{prefix}.{name}_first"] = metric(secs[0], "s", "lower")
    return out
