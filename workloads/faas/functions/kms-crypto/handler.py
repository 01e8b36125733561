"""One cryptographic workload of the crypto-with-key-services study (S0 L96-119, Table I) per call.

Event: ``{"workload": "aes256-encrypt", "payload": "<the 4 KB JSON string>"}``; workloads:
``sha256``/``sha384`` (HMAC generation: KMS GenerateMac with an HMAC_256/384 key),
``aes256-encrypt``/``aes256-decrypt`` (KMS Encrypt/Decrypt with a symmetric key, AES-256-GCM),
``ecc256-sign``/``ecc256-verify``/``ecc384-sign``/``ecc384-verify`` (KMS Sign/Verify, ECDSA on
P-256/P-384), ``rsa2048-encrypt``/``-decrypt`` (and 3072, 4096): envelope encryption, a fresh
AES-256 data key encrypting the payload locally in CTR mode and wrapped by KMS Encrypt with an RSA
key (RSAES_OAEP_SHA_256); decryption unwraps it with KMS Decrypt and decrypts locally.
Decrypt and verify need a ciphertext or signature of the payload: a container makes one with the
matching encrypt or sign call the first time it sees a payload (inside that call, so a cold
decrypt includes it) and keeps it. Key service and keys from the environment: ``KMS_ENDPOINT_URL``
(unset: AWS's regional endpoint), ``AWS_REGION``, ``KMS_KEY_<NAME>`` ids for the names sym, hmac256,
hmac384, p256, p384, rsa2048, rsa3072, rsa4096 (testbed_services.kms.KEYS). The client is made at
init, as deployed functions do. Deployable unchanged with boto3 and cryptography.
"""

import base64
import hashlib
import os
import time

import boto3
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

_KMS = boto3.client(
    "kms", endpoint_url=os.environ.get("KMS_ENDPOINT_URL") or None, region_name=os.environ.get("AWS_REGION")
)
#: made per container: ciphertexts, signatures and envelopes of the payloads seen
_MADE = {}


def _made(key, make):
    """What ``make()`` returns, made once per container and kept."""
    if key not in _MADE:
        _MADE[key] = make()
    return _MADE[key]


def _key(name):
    key = os.environ.get(f"KMS_KEY_{name.upper()}")
    if not key:
        raise ValueError(f"no key id for {name}: set KMS_KEY_{name.upper()}")
    return key


def _ctr(key, nonce, data):
    enc = Cipher(algorithms.AES(key), modes.CTR(nonce)).encryptor()
    return enc.update(data) + enc.finalize()


def _hmac(bits, payload):
    mac = _KMS.generate_mac(KeyId=_key(f"hmac{bits}"), MacAlgorithm=f"HMAC_SHA_{bits}", Message=payload)
    return {"mac_bytes": len(mac["Mac"])}


def _aes_encrypt(payload):
    blob = _KMS.encrypt(KeyId=_key("sym"), Plaintext=payload)["CiphertextBlob"]
    return blob, {"ciphertext_bytes": len(blob)}


def _aes_decrypt(payload, digest):
    blob = _made(("aes", digest), lambda: _aes_encrypt(payload)[0])
    plain = _KMS.decrypt(CiphertextBlob=blob, KeyId=_key("sym"))["Plaintext"]
    return {"ok": plain == payload}


def _sign(bits, payload):
    sig = _KMS.sign(
        KeyId=_key(f"p{bits}"), Message=payload, MessageType="RAW", SigningAlgorithm=f"ECDSA_SHA_{bits}"
    )["Signature"]
    return sig, {"signature_bytes": len(sig)}


def _verify(bits, payload, digest):
    sig = _made(("sig", bits, digest), lambda: _sign(bits, payload)[0])
    ok = _KMS.verify(
        KeyId=_key(f"p{bits}"),
        Message=payload,
        MessageType="RAW",
        Signature=sig,
        SigningAlgorithm=f"ECDSA_SHA_{bits}",
    )["SignatureValid"]
    return {"ok": bool(ok)}


def _envelope(bits, payload):
    data_key, nonce = os.urandom(32), os.urandom(16)
    body = _ctr(data_key, nonce, payload)
    wrapped = _KMS.encrypt(
        KeyId=_key(f"rsa{bits}"), Plaintext=data_key, EncryptionAlgorithm="RSAES_OAEP_SHA_256"
    )["CiphertextBlob"]
    return (wrapped, nonce, body), {"wrapped_key_bytes": len(wrapped), "ciphertext_bytes": len(body)}


def _unwrap(bits, payload, digest):
    wrapped, nonce, body = _made(("env", bits, digest), lambda: _envelope(bits, payload)[0])
    data_key = _KMS.decrypt(
        CiphertextBlob=wrapped, KeyId=_key(f"rsa{bits}"), EncryptionAlgorithm="RSAES_OAEP_SHA_256"
    )["Plaintext"]
    return {"ok": _ctr(data_key, nonce, body) == payload}


def run(workload, payload):
    """Run one workload on ``payload`` (bytes); returns what it produced."""
    digest = hashlib.sha256(payload).hexdigest()
    kind, _, op = workload.partition("-")
    if kind in ("sha256", "sha384") and not op:
        return _hmac(kind[3:], payload)
    if kind == "aes256" and op in ("encrypt", "decrypt"):
        return _aes_encrypt(payload)[1] if op == "encrypt" else _aes_decrypt(payload, digest)
    if kind in ("ecc256", "ecc384") and op in ("sign", "verify"):
        bits = kind[3:]
        return _sign(bits, payload)[1] if op == "sign" else _verify(bits, payload, digest)
    if kind in ("rsa2048", "rsa3072", "rsa4096") and op in ("encrypt", "decrypt"):
        bits = kind[3:]
        return _envelope(bits, payload)[1] if op == "encrypt" else _unwrap(bits, payload, digest)
    raise ValueError(f"unknown workload {workload!r}")


def handler(event, context):
    event = event or {}
    payload = event.get("payload")
    if not isinstance(payload, str) or not payload:
        raise ValueError("payload must be a non-empty string (the study's 4 KB JSON string)")
    data = payload.encode()
    t0 = time.perf_counter()
    out = run(str(event.get("workload", "")), data)
    out["kms_s"] = time.perf_counter() - t0
    out["payload_bytes"] = len(data)
    out["payload_sha256"] = base64.b16encode(hashlib.sha256(data).digest()[:8]).decode().lower()
    return out
