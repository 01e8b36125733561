"""Public keys in the shapes attestation evidence carries them: PEM or DER, JWK (Azure's HCLAkPub),
raw P-256 points (TDX), and raw r||s ECDSA signatures."""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from testbed_shared.attest import der, pem
from testbed_shared.attest.model import EvidenceError, Ignored

_SPKI = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)


def load_public_key(data: bytes, source: str = "key", ignored: list[Ignored] | None = None) -> Any:
    """A public key from one PEM ``PUBLIC KEY`` block (layout tolerated and recorded as in
    ``pem``) or DER (bytes after the key recorded), appending what was ignored to ``ignored``."""
    sink: list[Ignored] = []
    try:
        if data[:1] == b"\x30":
            end = der.element_end(data)
            raw = data[:end]
            if end < len(data):
                sink.append(
                    Ignored.of(source, "bytes after the DER public key", data, [(end, len(data) - end)])
                )
        else:
            found = pem.blocks(data, "PUBLIC KEY", source, sink)
            if len(found) != 1:
                raise EvidenceError(f"{source}: {len(found)} PEM public keys (one expected)")
            raw = found[0].der
        key = serialization.load_der_public_key(raw)
    except (ValueError, TypeError, UnsupportedAlgorithm, EvidenceError) as exc:
        raise EvidenceError(f"{source}: not a public key ({exc})") from exc
    if key.public_bytes(*_SPKI) != raw:
        raise EvidenceError(f"{source}: the public key is not in DER's one encoding")
    if ignored is not None:
        ignored += sink
    return key


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
    return hashlib.sha256(key.public_bytes(*_SPKI)).hexdigest()[:16]
