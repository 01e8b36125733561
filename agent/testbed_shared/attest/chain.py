"""Certificates: loading PEM/DER bundles, checking one signature, validity at a time, and chains
ending at a pinned root."""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import cache
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from testbed_shared.attest.model import EvidenceError, Result

_SPKI = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
_PEM = re.compile(rb"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)


def load_certs(data: bytes, source: str = "certificate") -> list[x509.Certificate]:
    """Every certificate in a PEM bundle, or the one DER certificate ``data`` holds."""
    try:
        with warnings.catch_warnings():  # AMD's VCEKs carry a zero serial number
            warnings.simplefilter("ignore")
            blocks = _PEM.findall(data)
            if blocks:
                return [x509.load_pem_x509_certificate(b) for b in blocks]
            return [x509.load_der_x509_certificate(data)]
    except ValueError as exc:
        raise EvidenceError(f"{source}: not a certificate ({exc})") from exc


def load_cert_files(paths: Iterable[Path]) -> list[x509.Certificate]:
    out: list[x509.Certificate] = []
    for p in paths:
        try:
            out += load_certs(Path(p).read_bytes(), str(p))
        except OSError as exc:
            raise EvidenceError(f"{p}: {exc.strerror}") from exc
    return out


def cn(cert: x509.Certificate) -> str:
    names = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
    return str(names[0].value) if names else cert.subject.rfc4514_string()


def signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> tuple[bool, str]:
    """Whether ``issuer``'s key made ``cert``'s signature (RSA-PSS, RSA PKCS#1 v1.5 or ECDSA)."""
    key = issuer.public_key()
    algo = cert.signature_hash_algorithm or hashes.SHA384()
    try:
        if isinstance(key, rsa.RSAPublicKey):
            pss = cert.signature_algorithm_oid == x509.SignatureAlgorithmOID.RSASSA_PSS
            pad = (
                padding.PSS(mgf=padding.MGF1(algo), salt_length=algo.digest_size)
                if pss
                else padding.PKCS1v15()
            )
            key.verify(cert.signature, cert.tbs_certificate_bytes, pad, algo)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(algo))
        else:
            return False, f"unsupported issuer key {type(key).__name__}"
    except InvalidSignature:
        return False, f"signature of '{cn(cert)}' does not verify with the key of '{cn(issuer)}'"
    return True, f"'{cn(cert)}' signed by '{cn(issuer)}'"


def valid_at(cert: x509.Certificate, when: datetime) -> tuple[bool, str]:
    lo, hi = cert.not_valid_before_utc, cert.not_valid_after_utc
    ok = lo <= when <= hi
    state = "valid" if ok else "NOT valid"
    return ok, f"'{cn(cert)}' {state} at {when:%Y-%m-%dT%H:%M:%SZ} ({lo:%Y-%m-%d} .. {hi:%Y-%m-%d})"


def same_key(a: x509.Certificate, b: x509.Certificate) -> bool:
    return a.public_key().public_bytes(*_SPKI) == b.public_key().public_bytes(*_SPKI)


def check_chain(
    res: Result,
    prefix: str,
    chain: Sequence[x509.Certificate],
    roots: Sequence[x509.Certificate],
    when: datetime,
) -> bool:
    """Leaf first: each certificate signed by the next, all valid at ``when``, the last one
    self-signed and holding the key of one of ``roots``. Adds one check per link."""
    ok = True
    for child, parent in itertools.pairwise(chain):
        good, detail = signed_by(child, parent)
        ok &= res.add(f"{prefix}: {cn(child)} signed by {cn(parent)}", good, detail)
    top = chain[-1]
    good, detail = signed_by(top, top)
    ok &= res.add(f"{prefix}: {cn(top)} self-signed", good, detail)
    pinned = any(same_key(top, r) for r in roots)
    ok &= res.add(
        f"{prefix}: {cn(top)} is a trusted root",
        pinned,
        f"'{cn(top)}' key {'is one of' if pinned else 'is NONE of'} the {len(roots)} trusted roots",
    )
    for cert in chain:
        good, detail = valid_at(cert, when)
        ok &= res.add(f"{prefix}: {cn(cert)} validity", good, detail)
    return ok


@cache
def amd_roots() -> list[x509.Certificate]:
    from testbed_shared.attest.roots import AMD_ARK

    return [load_certs(pem.encode())[0] for pem in AMD_ARK.values()]


@cache
def intel_roots() -> list[x509.Certificate]:
    from testbed_shared.attest.roots import INTEL_SGX_ROOT_CA

    return load_certs(INTEL_SGX_ROOT_CA.encode())


def raw_extensions(cert: x509.Certificate) -> dict[str, bytes]:
    """Unrecognized (vendor) extensions as OID -> raw extnValue bytes."""
    out = {}
    for ext in cert.extensions:
        if isinstance(ext.value, x509.UnrecognizedExtension):
            out[ext.oid.dotted_string] = ext.value.value
    return out


def ecdsa_le_ok(
    key: object, data: bytes, rs: tuple[int, int], algo: hashes.HashAlgorithm | None = None
) -> bool:
    """Whether the ECDSA signature (r, s) over ``data`` verifies with ``key``."""
    if not isinstance(key, ec.EllipticCurvePublicKey):
        return False
    try:
        key.verify(encode_dss_signature(*rs), data, ec.ECDSA(algo or hashes.SHA384()))
    except InvalidSignature:
        return False
    return True


def find_signer(pool: Sequence[x509.Certificate], works: Callable[[object], bool]) -> x509.Certificate | None:
    """The first certificate whose public key makes ``works`` true."""
    return next((c for c in pool if works(c.public_key())), None)


def build_path(
    leaf: x509.Certificate, pool: Sequence[x509.Certificate], roots: Sequence[x509.Certificate]
) -> list[x509.Certificate]:
    """Leaf, then issuers found by name in ``pool`` (then ``roots``) up to a self-issued one."""
    path = [leaf]
    candidates = list(pool) + list(roots)
    while path[-1].issuer != path[-1].subject and len(path) < 8:
        parent = next(
            (
                c
                for c in candidates
                if c.subject == path[-1].issuer and c not in path and signed_by(path[-1], c)[0]
            ),
            None,
        ) or next((c for c in candidates if c.subject == path[-1].issuer and c not in path), None)
        if parent is None:
            break
        path.append(parent)
    return path
