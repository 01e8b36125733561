"""The key service (AWS-KMS-compatible) the crypto workload's ``kms-envelope`` cells and the S0
study's functions call: where it is (:class:`KmsConfig`), the local one (moto's server on
127.0.0.1, started by :mod:`launcher` as ``python -m testbed_services.kms``), its keys
(:data:`KEYS`, created on the local server) and an admin client. A real endpoint is used only when
configured. The clients that time the calls, one per language, are the workload's
(``testbed_agent.workloads.crypto.kms``).

moto answers Encrypt and Decrypt with an RSA key by its own symmetric scheme, so RSA-2048, 3072
and 4096 would do the same work. The local server therefore does what KMS does with an RSA key
(:func:`install_rsa_oaep`): Encrypt is RSAES-OAEP with SHA-1 or SHA-256 under the key's public
key (the ciphertext blob is the raw OAEP ciphertext, as long as the modulus; the plaintext limit
of each key size and hash is enforced), Decrypt is OAEP decryption with the private key and needs
the KeyId and EncryptionAlgorithm, as KMS's does. The real AWS SDKs of every language talk to it
over the real KMS protocol; its other operations are moto's.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from testbed_services import launcher
from testbed_shared.errors import TestbedError

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


@contextmanager
def local_kms_server(
    host: str = "127.0.0.1", timeout_s: float = 30.0, tracker: launcher.Tracker | None = None
) -> Iterator[str]:
    """The local key service (moto's server with real RSA-OAEP, :func:`serve`) on loopback in its
    own process (:mod:`launcher`); its URL."""
    if not host.startswith("127."):
        raise TestbedError(f"the local key service binds to loopback only, not {host}")
    number = launcher.free_port(host)
    svc = launcher.start(
        [sys.executable, "-m", "testbed_services.kms", "-H", host, "-p", str(number)],
        name="local KMS server (moto, RSA-OAEP)",
        ready=launcher.port(host, number),
        env={**os.environ, "MOTO_CALL_RESET_API": "false"},
        tracker=tracker,
        timeout_s=timeout_s,
        hint="is moto[server] installed in this Python? (requirements.txt)",
    )
    try:
        yield svc.url
    finally:
        svc.stop(timeout_s=10)


#: KMS's RSA encryption algorithms: their hash and its digest size in bytes
OAEP_HASHES = {"RSAES_OAEP_SHA_1": ("SHA1", 20), "RSAES_OAEP_SHA_256": ("SHA256", 32)}


def _oaep(algorithm: str) -> Any:
    from cryptography.hazmat.primitives import hashes  # noqa: PLC0415 - crypto extra: the server process only
    from cryptography.hazmat.primitives.asymmetric import padding  # noqa: PLC0415 - crypto extra, as above

    h = getattr(hashes, OAEP_HASHES[algorithm][0])
    return padding.OAEP(mgf=padding.MGF1(h()), algorithm=h(), label=None)


def _rsa_key(response: Any, key_id: str | None) -> Any:
    """The moto key behind ``key_id`` when it is an RSA encryption key, else None."""
    if not key_id:
        return None
    backend = response.kms_backend
    try:
        key = backend.keys[backend.any_id_to_key_id(key_id)]
    except KeyError:
        return None
    return key if str(key.key_spec).startswith("RSA_") else None


def install_rsa_oaep() -> None:
    """Make moto's KMS Encrypt and Decrypt do RSAES-OAEP with an RSA key, as KMS does."""
    from moto.kms import exceptions as kms_errors  # noqa: PLC0415 - the server process only
    from moto.kms.responses import KmsResponse  # noqa: PLC0415 - the server process only

    plain_encrypt, plain_decrypt = KmsResponse.encrypt, KmsResponse.decrypt

    def algorithm_of(response: Any, key: Any) -> str:
        if key.key_usage != "ENCRYPT_DECRYPT":
            raise kms_errors.InvalidKeyUsageException()
        alg = response._get_param("EncryptionAlgorithm")
        if alg not in OAEP_HASHES:
            raise kms_errors.ValidationException(
                f"EncryptionAlgorithm {alg} is not valid for an {key.key_spec} key: use one of "
                + ", ".join(OAEP_HASHES)
            )
        return str(alg)

    def encrypt(self: Any) -> str:
        key = _rsa_key(self, self._get_param("KeyId"))
        if key is None:
            return plain_encrypt(self)
        alg = algorithm_of(self, key)
        plaintext = self._get_param("Plaintext")
        if isinstance(plaintext, str):
            plaintext = plaintext.encode("utf-8")
        public = key.private_key.private_key.public_key()
        limit = public.key_size // 8 - 2 * OAEP_HASHES[alg][1] - 2
        if not plaintext or len(plaintext) > limit:
            raise kms_errors.ValidationException(
                f"Plaintext of {len(plaintext or b'')} bytes: {key.key_spec} with {alg} takes 1 to {limit}"
            )
        blob = public.encrypt(plaintext, _oaep(alg))
        return json.dumps(
            {"CiphertextBlob": base64.b64encode(blob).decode(), "KeyId": key.arn, "EncryptionAlgorithm": alg}
        )

    def decrypt(self: Any) -> str:
        key = _rsa_key(self, self._get_param("KeyId"))
        if key is None:
            return plain_decrypt(self)
        alg = algorithm_of(self, key)
        try:
            plain = key.private_key.private_key.decrypt(self._get_param("CiphertextBlob"), _oaep(alg))
        except (ValueError, TypeError):
            raise kms_errors.InvalidCiphertextException() from None
        return json.dumps(
            {"Plaintext": base64.b64encode(plain).decode(), "KeyId": key.arn, "EncryptionAlgorithm": alg}
        )

    KmsResponse.encrypt, KmsResponse.decrypt = encrypt, decrypt


def serve(argv: list[str]) -> None:
    """moto's server (``-H HOST -p PORT``) with :func:`install_rsa_oaep`."""
    from moto import server  # noqa: PLC0415 - the server process only

    install_rsa_oaep()
    server.main(argv)


def make_client(cfg: KmsConfig, endpoint_url: str | None = None) -> Any:
    """A boto3 KMS client: dummy credentials for the local server, the default chain otherwise."""
    import boto3  # noqa: PLC0415 - crypto extra: boto3 only where a key service is called

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
def key_service(
    cfg: KmsConfig, names: list[str], tracker: launcher.Tracker | None = None
) -> Iterator[tuple[str | None, dict[str, str], str]]:
    """(endpoint URL or None for AWS's own, key ids by name, description) of the key service; a
    local one is started for the block (tracked by ``tracker``, the agent's, when given)."""
    if cfg.local:
        with local_kms_server(tracker=tracker) as url:
            yield url, create_keys(make_client(cfg, url), names), f"moto KMS server at {url}"
        return
    keys = configured_keys(cfg)
    yield (
        cfg.endpoint_url,
        {n: keys[n] for n in names if n in keys},
        f"KMS at {cfg.endpoint_url or 'the AWS regional endpoint'} ({cfg.region})",
    )


if __name__ == "__main__":
    serve(sys.argv[1:])
