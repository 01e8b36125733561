"""Certificates: loading PEM/DER bundles, checking one signature, validity at a time, and chains
ending at a pinned root."""

from __future__ import annotations

import itertools
import os
import stat
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from testbed_shared.attest import der, pem
from testbed_shared.attest.model import EvidenceError, Ignored, Result
from testbed_shared.attest.roots import AMD_ARK, INTEL_SGX_ROOT_CA

_SPKI = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
MAX_BUNDLE = 1 << 20


def load_certs(
    data: bytes,
    source: str = "certificate",
    ignored: list[Ignored] | None = None,
    base: int = 0,
    where: str = "",
) -> list[x509.Certificate]:
    """Every certificate of a PEM text, or the one DER certificate ``data`` starts with.

    The certificates are read exactly (``pem``: canonical base64; DER: strict, each certificate
    re-encodes to its own bytes). What lies outside them (PEM layout and text around the blocks,
    bytes after a DER certificate) is no part of any certificate: it is accepted and appended to
    ``ignored`` (offsets in the file ``source``; ``base`` is where ``data`` starts in it)."""
    return [c for c, _span in cert_blocks(data, source, ignored, base, where)]


def cert_blocks(
    data: bytes,
    source: str = "certificate",
    ignored: list[Ignored] | None = None,
    base: int = 0,
    where: str = "",
) -> list[tuple[x509.Certificate, tuple[int, int]]]:
    """:func:`load_certs`, each certificate with its (offset, length) in ``data``."""
    if len(data) > MAX_BUNDLE:
        raise EvidenceError(f"{source}: {len(data)} bytes is too large for certificates")
    sink: list[Ignored] = []
    if data[:1] == b"\x30":
        try:
            end = der.element_end(data)
        except EvidenceError as exc:
            raise EvidenceError(f"{source}: {where}not a certificate ({exc})") from exc
        found = [(data[:end], (0, end))]
        if end < len(data):
            why = f"{where}bytes after the DER certificate"
            sink.append(Ignored.of(source, why, data, [(end, len(data) - end)], base))
    else:
        found = [
            (b.der, (b.start, b.end - b.start))
            for b in pem.blocks(data, "CERTIFICATE", source, sink, base, where)
        ]
    out = []
    for i, (raw, span) in enumerate(found, 1):
        what = f"{where}certificate {i}" if len(found) > 1 else f"{where}certificate".strip()
        try:
            with warnings.catch_warnings():  # AMD's VCEKs carry a zero serial number
                warnings.simplefilter("ignore")
                cert = x509.load_der_x509_certificate(raw)
        except Exception as exc:
            raise EvidenceError(f"{source}: {what}: not a certificate ({exc})") from exc
        if cert.public_bytes(serialization.Encoding.DER) != raw:
            raise EvidenceError(f"{source}: {what}: not in DER's one encoding")
        _parse_all(cert, source)
        outer_algorithm_ok(cert, source)
        out.append((cert, span))
    if ignored is not None:
        ignored += sink
    return out


@dataclass(frozen=True)
class Anchor:
    """A trusted root the operator gave (``--root``): the certificate, its file and place in it."""

    cert: x509.Certificate
    source: str
    data: bytes
    span: tuple[int, int]


def load_anchors(paths: Iterable[Path], ignored: list[Ignored] | None = None) -> list[Anchor]:
    out = []
    for p in paths:
        data = read_evidence(Path(p), "trusted roots")
        out += [Anchor(c, str(p), data, span) for c, span in cert_blocks(data, str(p), ignored)]
    return out


def unused_anchors(res: Result, anchors: Sequence[Anchor]) -> None:
    """A trusted root given that no checked chain contains was read only for its public key (a chain
    whose top has that key ends at a trusted root): its other bytes go to ``ignored``."""
    for a in anchors:
        if fingerprint(a.cert) not in res.used:
            why = "a --root certificate no checked chain contains (only its public key is compared)"
            res.ignored.append(Ignored.of(a.source, why, a.data, [a.span]))


def _parse_all(cert: x509.Certificate, source: str) -> None:
    """``cryptography`` parses names, keys and extensions lazily: read them all now, so a malformed
    certificate is refused here rather than failing somewhere in the middle of a check."""
    try:
        with warnings.catch_warnings():  # AMD's VCEKs carry a zero serial number
            warnings.simplefilter("ignore")
            _ = (list(cert.subject), list(cert.issuer), cert.public_key())
            _ = (cert.not_valid_before_utc, cert.not_valid_after_utc, list(cert.extensions))
            _ = (cert.signature_hash_algorithm, cert.signature_algorithm_oid, cert.serial_number)
    except Exception as exc:
        raise EvidenceError(f"{source}: malformed certificate ({type(exc).__name__}: {exc})") from exc


def fingerprint(cert: x509.Certificate) -> bytes:
    return cert.fingerprint(hashes.SHA256())


def unused_certificates(res: Result, pool: Sequence[x509.Certificate]) -> None:
    """Every certificate the caller gave must be part of a checked chain: one that is not is bytes
    nobody checked (e.g. a certificate edited so that a built-in root stands in for it). Added only
    to a result that would otherwise verify (after a failed check unused certificates are noise)."""
    unused = [c for c in pool if fingerprint(c) not in res.used]
    if unused and res.verified:
        names = ", ".join(f"'{cn(c)}'" for c in unused)
        res.add(
            "chain: every given certificate is checked",
            False,
            f"not part of any checked chain: {names} (give only the certificates of this evidence)",
        )


def outer_algorithm_ok(cert: x509.Certificate, source: str = "certificate") -> None:
    """Refuse a certificate whose unsigned outer signature algorithm differs from the signed inner
    one, or whose signature BIT STRING has unused bits (bytes no signature covers)."""

    inner, outer, bits = der.certificate_parts(cert.public_bytes(serialization.Encoding.DER))
    if inner != outer:
        raise EvidenceError(f"{source}: '{cn(cert)}': outer signature algorithm differs from the signed one")
    if not bits or bits[0] != 0:
        raise EvidenceError(f"{source}: '{cn(cert)}': signature BIT STRING has unused bits")


def load_cert_files(paths: Iterable[Path], ignored: list[Ignored] | None = None) -> list[x509.Certificate]:
    out: list[x509.Certificate] = []
    for p in paths:
        out += load_certs(read_evidence(Path(p), "certificates"), str(p), ignored)
    return out


def cn(cert: x509.Certificate) -> str:
    try:
        names = cert.subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
        return str(names[0].value) if names else cert.subject.rfc4514_string()
    except ValueError:
        return "(unreadable subject)"


def signed_by(cert: x509.Certificate, issuer: x509.Certificate) -> tuple[bool, str]:
    """Whether ``issuer``'s key made ``cert``'s signature (RSA-PSS, RSA PKCS#1 v1.5 or ECDSA)."""
    try:
        key = issuer.public_key()
        algo = cert.signature_hash_algorithm
    except (ValueError, UnsupportedAlgorithm) as exc:
        return False, f"'{cn(cert)}': unsupported key or signature algorithm ({exc})"
    if algo is None:
        return False, f"'{cn(cert)}': signature algorithm without a hash"
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
    except (InvalidSignature, ValueError, UnsupportedAlgorithm):
        return False, f"signature of '{cn(cert)}' does not verify with the key of '{cn(issuer)}'"
    return True, f"'{cn(cert)}' signed by '{cn(issuer)}'"


def read_evidence(path: Path, what: str, limit: int = MAX_BUNDLE * 16) -> bytes:
    """A regular file's bytes (no device, FIFO or directory; bounded size), or an EvidenceError."""

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise EvidenceError(f"{path}: {exc.strerror} ({what})") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise EvidenceError(f"{path}: not a regular file ({what})")
        if st.st_size > limit:
            raise EvidenceError(f"{path}: {st.st_size} bytes is too large ({what})")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(limit + 1)
    except OSError as exc:
        raise EvidenceError(f"{path}: {exc.strerror} ({what})") from exc
    finally:
        os.close(fd)


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
    res.used.update(fingerprint(c) for c in chain)
    for child, parent in itertools.pairwise(chain):
        good, detail = signed_by(child, parent)
        ok &= res.add(f"{prefix}: {cn(child)} signed by {cn(parent)}", good, detail)
    top = chain[-1]
    if top.issuer != top.subject:
        names = top.issuer.get_attributes_for_oid(x509.NameOID.COMMON_NAME)
        issuer = str(names[0].value) if names else top.issuer.rfc4514_string()
        ok &= res.add(
            f"{prefix}: issuer of {cn(top)} given",
            False,
            f"no certificate named '{issuer}' among those given and the {len(roots)} trusted roots",
        )
    else:
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
    return [load_certs(text.encode() + b"\n")[0] for text in AMD_ARK.values()]


@cache
def intel_roots() -> list[x509.Certificate]:
    return load_certs(INTEL_SGX_ROOT_CA.encode() + b"\n")


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
    except (InvalidSignature, ValueError):
        return False
    return True


def find_signer(pool: Sequence[x509.Certificate], works: Callable[[object], bool]) -> x509.Certificate | None:
    """The first certificate whose public key makes ``works`` true."""
    return next((c for c in pool if works(c.public_key())), None)


def build_path(
    leaf: x509.Certificate, pool: Sequence[x509.Certificate], roots: Sequence[x509.Certificate]
) -> list[x509.Certificate]:
    """Leaf, then issuers found by name up to a self-issued one. The caller's certificates (``pool``)
    come first: a built-in root stands in for an issuer only when ``pool`` has none of that name,
    so a given certificate that fails is reported as failing instead of being quietly replaced."""
    path = [leaf]
    while path[-1].issuer != path[-1].subject and len(path) < 8:
        mine = [c for c in pool if c.subject == path[-1].issuer and c not in path]
        cands = mine or [c for c in roots if c.subject == path[-1].issuer and c not in path]
        if not cands:
            break
        path.append(next((c for c in cands if signed_by(path[-1], c)[0]), cands[0]))
    return path
