"""Public keys in the shapes attestation evidence carries them: PEM, JWK (Azure's HCLAkPub), raw
P-256 points (TDX), and the TPM signature schemes."""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from testbed_shared.attest.model import EvidenceError

_HASH = {"sha1": hashes.SHA1, "sha256": hashes.SHA256, "sha384": hashes.SHA384, "sha512": hashes.SHA512}


def load_public_key(data: bytes, source: str = "key") -> Any:
    """A public key from exactly one PEM block (as ``openssl pkey -pubout`` writes it) or DER."""
    spki = (serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    try:
        if data.startswith(b"-----BEGIN"):
            key = serialization.load_pem_public_key(data)
            if key.public_bytes(*spki) != data:
                raise EvidenceError(f"{source}: text around the PEM public key or other line lengths")
            return key
        return serialization.load_der_public_key(data)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise EvidenceError(f"{source}: not a public key ({exc})") from exc


def _b64u(s: Any, what: str) -> int:
    if not isinstance(s, str) or not s or len(s) > 4096:
        raise EvidenceError(f"JWK {what}: not a base64url string")
    try:
        raw = base64.b64decode(s + "=" * (-len(s) % 4), altchars=b"-_", validate=True)
    except (ValueError, binascii.Error) as exc:
        raise EvidenceError(f"JWK {what}: not base64url ({exc})") from exc
    return int.from_bytes(raw, "big")


def jwk_public_key(jwk: dict[str, Any]) -> Any:
    """An RSA or EC public key from a JWK."""
    try:
        if jwk.get("kty") == "RSA":
            return rsa.RSAPublicNumbers(_b64u(jwk.get("e"), "e"), _b64u(jwk.get("n"), "n")).public_key()
        if jwk.get("kty") == "EC":
            curve = {"P-256": ec.SECP256R1(), "P-384": ec.SECP384R1()}.get(jwk.get("crv"))  # type: ignore[call-overload]
            if curve is None:
                raise EvidenceError(f"JWK curve {jwk.get('crv')!r} is not supported")
            return ec.EllipticCurvePublicNumbers(
                _b64u(jwk.get("x"), "x"), _b64u(jwk.get("y"), "y"), curve
            ).public_key()
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise EvidenceError(f"JWK: not a valid public key ({exc})") from exc
    raise EvidenceError(f"JWK key type {jwk.get('kty')!r} is not supported")


def p256_point(raw: bytes) -> ec.EllipticCurvePublicKey:
    """A P-256 key from the 64-byte x||y form TDX quotes use."""
    return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b"\x04" + raw)


def ecdsa_raw_ok(key: Any, data: bytes, sig: bytes, algo: hashes.HashAlgorithm) -> bool:
    """Verify a raw r||s (big-endian halves) ECDSA signature."""
    half = len(sig) // 2
    if not sig or len(sig) % 2:
        return False
    try:
        key.verify(
            encode_dss_signature(int.from_bytes(sig[:half], "big"), int.from_bytes(sig[half:], "big")),
            data,
            ec.ECDSA(algo),
        )
    except (InvalidSignature, ValueError):
        return False
    return True


def fingerprint(key: Any) -> str:
    der = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return hashlib.sha256(der).hexdigest()[:16]


def verify_tpm_signature(key: Any, msg: bytes, raw_sig: bytes) -> tuple[bool, str]:
    """A TPM quote signature (plain or TPMT_SIGNATURE) by ``key``."""
    from testbed_shared.attest.tpm import parse_signature  # noqa: PLC0415 - cuts an import cycle of issue 26's code (agent/tests/test_import_graph.py KNOWN_CYCLES)

    size = key.key_size // 8 if isinstance(key, rsa.RSAPublicKey) else 0
    scheme, halg, sig = parse_signature(raw_sig, size)
    algo = _HASH[halg]()
    where = f"{scheme}/{halg} with AK {fingerprint(key)}"
    try:
        if isinstance(key, rsa.RSAPublicKey):
            pad = (
                padding.PSS(padding.MGF1(algo), padding.PSS.AUTO)
                if scheme == "rsapss"
                else padding.PKCS1v15()
            )
            key.verify(sig, msg, pad, algo)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            if not ecdsa_raw_ok(key, msg, sig, algo):
                raise InvalidSignature
        else:
            return False, f"unsupported AK type {type(key).__name__}"
    except (InvalidSignature, ValueError):
        return False, f"signature does NOT verify ({where})"
    return True, f"verifies ({where})"
