"""testbed-kms: the key-service part of workloads/crypto/CONTRACT.md in Python (boto3).

Each call to the key service is timed alone (round trip); local AES-256-GCM (cryptography) apart.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

_SIGN = {"ECC_NIST_P256": "ECDSA_SHA_256", "ECC_NIST_P384": "ECDSA_SHA_384"}


class Job:
    """One key on one key service; ``t`` collects nanoseconds per call name."""

    def __init__(self, client: Any, key: str, spec: str, payload: bytes) -> None:
        self.c, self.key, self.spec, self.payload = client, key, spec, payload
        self.prefix = os.urandom(8)
        self.t: dict[str, list[int]] = {}

    def timed(self, name: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        t0 = time.perf_counter_ns()
        out = fn(*args, **kw)
        self.t.setdefault(name, []).append(time.perf_counter_ns() - t0)
        return out

    def envelope(self, i: int) -> None:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM

        alg: dict[str, str] = {}
        if self.spec == "SYMMETRIC_DEFAULT":
            o = self.timed("generate_data_key", self.c.generate_data_key, KeyId=self.key, KeySpec="AES_256")
            dk, wrapped = o["Plaintext"], o["CiphertextBlob"]
        else:
            dk, alg = os.urandom(32), {"EncryptionAlgorithm": "RSAES_OAEP_SHA_256"}
            wrapped = self.timed("encrypt", self.c.encrypt, KeyId=self.key, Plaintext=dk, **alg)[
                "CiphertextBlob"
            ]
        nonce = self.prefix + i.to_bytes(4, "big")
        ct = self.timed("local_encrypt", lambda: AESGCM(dk).encrypt(nonce, self.payload, None))
        back_key = self.timed("decrypt", self.c.decrypt, KeyId=self.key, CiphertextBlob=wrapped, **alg)[
            "Plaintext"
        ]
        back = self.timed("local_decrypt", lambda: AESGCM(back_key).decrypt(nonce, ct, None))
        if back != self.payload:
            raise RuntimeError("envelope round trip returned a different payload")

    def sign(self, i: int) -> None:
        kw = {
            "KeyId": self.key,
            "Message": self.payload,
            "MessageType": "RAW",
            "SigningAlgorithm": _SIGN.get(self.spec, "RSASSA_PSS_SHA_256"),
        }
        sig = self.timed("sign", self.c.sign, **kw)["Signature"]
        if not self.timed("verify", self.c.verify, Signature=sig, **kw)["SignatureValid"]:
            raise RuntimeError("key service did not verify its own signature")

    def mac(self, i: int) -> None:
        kw = {
            "KeyId": self.key,
            "Message": self.payload,
            "MacAlgorithm": "HMAC_SHA_384" if self.spec == "HMAC_384" else "HMAC_SHA_256",
        }
        mac = self.timed("generate_mac", self.c.generate_mac, **kw)["Mac"]
        if not self.timed("verify_mac", self.c.verify_mac, Mac=mac, **kw)["MacValid"]:
            raise RuntimeError("key service did not verify its own MAC")


def run(a: argparse.Namespace) -> dict[str, Any]:
    """Time ``a.iterations`` round trips of one key; the JSON object the command prints."""
    t0 = time.perf_counter_ns()
    import boto3

    client = boto3.client(
        "kms",
        endpoint_url=a.endpoint,
        region_name=a.region,
        aws_access_key_id=os.environ.get("AWS_ACCESS_KEY_ID", "testing"),
        aws_secret_access_key=os.environ.get("AWS_SECRET_ACCESS_KEY", "testing"),
    )
    job = Job(client, a.key_id, a.key_spec, os.urandom(a.payload_bytes))
    job.t["client_init"] = [time.perf_counter_ns() - t0]
    step = {"ENCRYPT_DECRYPT": job.envelope, "SIGN_VERIFY": job.sign, "GENERATE_VERIFY_MAC": job.mac}[a.usage]
    for i in range(a.iterations):
        step(i)
    import cryptography

    return {
        "contract": 2,
        "language": "python",
        "runtime": f"CPython {platform.python_version()}",
        "library": f"boto3 {boto3.__version__}; local AES-256-GCM: cryptography {cryptography.__version__}",
        "key_spec": a.key_spec,
        "usage": a.usage,
        "payload_bytes": a.payload_bytes,
        "iterations": a.iterations,
        "times_ns": job.t,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="testbed_kms", description=__doc__)
    p.add_argument("cmd", choices=["run"])
    p.add_argument("--endpoint", required=True)
    p.add_argument("--region", default="us-east-1")
    p.add_argument("--key-id", required=True)
    p.add_argument("--key-spec", required=True)
    p.add_argument(
        "--usage", required=True, choices=["ENCRYPT_DECRYPT", "SIGN_VERIFY", "GENERATE_VERIFY_MAC"]
    )
    p.add_argument("--iterations", type=int, default=30)
    p.add_argument("--payload-bytes", type=int, default=4096)
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        if exc.code:
            print(json.dumps({"error": "bad usage (see --help)"}))
        return 2 if exc.code else 0
    try:
        out = run(args)
    except Exception as exc:  # noqa: BLE001 - the contract: one JSON line, exit 1
        print(json.dumps({"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}))
        return 1
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
