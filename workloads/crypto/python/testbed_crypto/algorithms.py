"""The algorithms of CONTRACT.md on top of the `cryptography` package."""

from __future__ import annotations

import functools
import hmac as _hmac
import io
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, padding, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric import padding as apadding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

try:  # cryptography >= 43 keeps the old ciphers under decrepit; older ones (Debian 12: 38) in algorithms
    from cryptography.hazmat.decrepit.ciphers.algorithms import CAST5, Blowfish, TripleDES
except ImportError:  # pragma: no cover - depends on the installed cryptography
    from cryptography.hazmat.primitives.ciphers.algorithms import (  # type: ignore[attr-defined,no-redef]
        CAST5,
        Blowfish,
        TripleDES,
    )


class Unsupported(Exception):
    """This language cannot do the algorithm or key size (exit code 4)."""


@dataclass(frozen=True)
class Alg:
    """One algorithm row of CONTRACT.md."""

    name: str
    kind: str  # cipher | mac | sign | hybrid
    key_bits: tuple[int, ...]
    ops: tuple[str, ...]
    mode: str
    padding: str
    block: int = 16


ALGS: dict[str, Alg] = {
    a.name: a
    for a in (
        Alg(
            "aes-gcm",
            "cipher",
            (128, 192, 256),
            ("encrypt", "decrypt"),
            "GCM, 96-bit nonce, 128-bit tag",
            "none",
        ),
        Alg("aes-ctr", "cipher", (128, 192, 256), ("encrypt", "decrypt"), "CTR, 128-bit counter", "none"),
        Alg("aes-cbc", "cipher", (128, 192, 256), ("encrypt", "decrypt"), "CBC", "PKCS#7"),
        Alg(
            "3des-cbc",
            "cipher",
            (192, 128),
            ("encrypt", "decrypt"),
            "EDE (192: 3 keys; 128: 2 keys, K1 K2 K1), CBC",
            "PKCS#7",
            8,
        ),
        Alg("cast128-cbc", "cipher", (128,), ("encrypt", "decrypt"), "CBC", "PKCS#7", 8),
        Alg("blowfish-cbc", "cipher", (128, 256, 448, 64), ("encrypt", "decrypt"), "CBC", "PKCS#7", 8),
        Alg("twofish-cbc", "cipher", (128, 192, 256), ("encrypt", "decrypt"), "CBC", "PKCS#7"),
        Alg("hmac-sha256", "mac", (256,), ("mac",), "HMAC", "none"),
        Alg("hmac-sha384", "mac", (384,), ("mac",), "HMAC", "none"),
        Alg("ecdsa-p256", "sign", (256,), ("sign", "verify"), "ECDSA with SHA-256, DER signature", "none"),
        Alg("ecdsa-p384", "sign", (384,), ("sign", "verify"), "ECDSA with SHA-384, DER signature", "none"),
        Alg(
            "rsa-oaep",
            "hybrid",
            (2048, 3072, 4096),
            ("encrypt", "decrypt"),
            "RSA-OAEP(SHA-256, MGF1-SHA-256) wraps a 256-bit key; AES-256-GCM payload",
            "OAEP",
        ),
        Alg(
            "rsa-raw",
            "raw",
            (64, 256, 1024, 1536, 2048),
            ("encrypt", "decrypt"),
            "textbook RSA on the data itself: blocks of (bits-1)//8 bytes, 8-byte length header",
            "none",
        ),
    )
}

#: what this implementation cannot do, with the reason shown in results
UNSUPPORTED: dict[str, str] = {}
try:  # Twofish is neither in `cryptography` nor in OpenSSL: oxifish binds the RustCrypto crate
    import oxifish
except ImportError:
    oxifish = None
    UNSUPPORTED["twofish-cbc"] = "Twofish needs the oxifish package (not in cryptography/OpenSSL)"


def _block_cipher(alg: str, key: bytes) -> algorithms.BlockCipherAlgorithm:
    if alg in UNSUPPORTED:
        raise Unsupported(UNSUPPORTED[alg])
    if alg.startswith("aes-"):
        return algorithms.AES(key)
    if alg == "3des-cbc":
        return TripleDES(key)
    if alg == "cast128-cbc":
        return CAST5(key)
    if alg == "blowfish-cbc":
        return Blowfish(key)  # noqa: S304 - the studies' cipher (S4), never for protection
    raise Unsupported(f"no block cipher for {alg}")


def _twofish(key: bytes) -> oxifish.TwofishKey:
    if oxifish is None:
        raise Unsupported(UNSUPPORTED["twofish-cbc"])
    return oxifish.TwofishKey(key)  # CBC with PKCS#7 is its default


def _mode(alg: str, iv: bytes) -> modes.Mode:
    return modes.CTR(iv) if alg == "aes-ctr" else modes.CBC(iv)


@functools.lru_cache(maxsize=16)
def _aesgcm(key: bytes) -> AESGCM:
    """One AEAD object per key, as an application keeps it (the key schedule is not per message)."""
    return AESGCM(key)


def encrypt(alg: str, key: bytes, iv: bytes, data: bytes) -> bytes:
    """One-shot encryption (GCM: ciphertext || tag)."""
    if alg == "aes-gcm":
        return _aesgcm(key).encrypt(iv, data, None)
    if alg == "twofish-cbc":
        return _twofish(key).encrypt(data, iv=iv)
    enc = Cipher(_block_cipher(alg, key), _mode(alg, iv)).encryptor()
    if alg == "aes-ctr":
        return enc.update(data) + enc.finalize()
    padder = padding.PKCS7(ALGS[alg].block * 8).padder()
    return enc.update(padder.update(data) + padder.finalize()) + enc.finalize()


def decrypt(alg: str, key: bytes, iv: bytes, data: bytes) -> bytes:
    """One-shot decryption; raises on a bad tag or padding."""
    if alg == "aes-gcm":
        return _aesgcm(key).decrypt(iv, data, None)
    if alg == "twofish-cbc":
        return _twofish(key).decrypt(data, iv=iv)
    dec = Cipher(_block_cipher(alg, key), _mode(alg, iv)).decryptor()
    out = dec.update(data) + dec.finalize()
    if alg == "aes-ctr":
        return out
    unpadder = padding.PKCS7(ALGS[alg].block * 8).unpadder()
    return unpadder.update(out) + unpadder.finalize()


def stream_encrypt(
    alg: str, key: bytes, iv: bytes, src: BinaryIO, chunk: int, sink: Callable[[bytes], object]
) -> None:
    """Encrypt a stream chunk by chunk (GCM: one message per chunk, see CONTRACT.md)."""
    if alg == "aes-gcm":
        aead = AESGCM(key)
        n = 0
        while block := src.read(chunk):
            sink(aead.encrypt(iv[:8] + n.to_bytes(4, "big"), block, None))
            n += 1
        return
    if alg == "twofish-cbc":
        session = _twofish(key).encryptor(iv=iv)
        while block := src.read(chunk):
            sink(session.update(block))
        sink(session.finalize())
        return
    enc = Cipher(_block_cipher(alg, key), _mode(alg, iv)).encryptor()
    padder = None if alg == "aes-ctr" else padding.PKCS7(ALGS[alg].block * 8).padder()
    while block := src.read(chunk):
        sink(enc.update(padder.update(block) if padder else block))
    sink(enc.update(padder.finalize() if padder else b"") + enc.finalize())


def mac(alg: str, key: bytes, data: bytes) -> bytes:
    return _hmac.digest(key, data, "sha256" if alg == "hmac-sha256" else "sha384")


def stream_mac(alg: str, key: bytes, src: BinaryIO, chunk: int) -> bytes:
    h = _hmac.new(key, digestmod="sha256" if alg == "hmac-sha256" else "sha384")
    while block := src.read(chunk):
        h.update(block)
    return h.digest()


def _ec_hash(alg: str) -> hashes.HashAlgorithm:
    return hashes.SHA256() if alg == "ecdsa-p256" else hashes.SHA384()


def load_private(der: bytes) -> object:
    return serialization.load_der_private_key(der, password=None)


def load_public(der: bytes) -> object:
    return serialization.load_der_public_key(der)


def sign(alg: str, private_key: ec.EllipticCurvePrivateKey, data: bytes) -> bytes:
    return private_key.sign(data, ec.ECDSA(_ec_hash(alg)))


def verify(alg: str, public_key: ec.EllipticCurvePublicKey, data: bytes, signature: bytes) -> bool:
    try:
        public_key.verify(signature, data, ec.ECDSA(_ec_hash(alg)))
    except InvalidSignature:
        return False
    return True


_OAEP = apadding.OAEP(mgf=apadding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None)


def wrap(public_key: object, data_key: bytes) -> bytes:
    return public_key.encrypt(data_key, _OAEP)  # type: ignore[attr-defined]


def unwrap(private_key: object, wrapped: bytes) -> bytes:
    return private_key.decrypt(wrapped, _OAEP)  # type: ignore[attr-defined]


def hybrid_encrypt(public_key: object, data: bytes) -> bytes:
    """Fresh data key wrapped with RSA-OAEP || nonce || AES-256-GCM(data)."""
    data_key = os.urandom(32)
    nonce = os.urandom(12)
    return wrap(public_key, data_key) + nonce + AESGCM(data_key).encrypt(nonce, data, None)


def hybrid_decrypt(private_key: object, blob: bytes, modulus_bytes: int) -> bytes:
    k = modulus_bytes
    wrapped, nonce, body = blob[:k], blob[k : k + 12], blob[k + 12 :]
    return AESGCM(unwrap(private_key, wrapped)).decrypt(nonce, body, None)


def stream_decrypt(
    alg: str, key: bytes, iv: bytes, src: BinaryIO, chunk: int, sink: Callable[[bytes], object]
) -> None:
    """Decrypt what :func:`stream_encrypt` wrote, chunk by chunk (GCM: chunk + 16-byte tag each)."""
    if alg == "aes-gcm":
        aead = AESGCM(key)
        n = 0
        while block := src.read(chunk + 16):
            sink(aead.decrypt(iv[:8] + n.to_bytes(4, "big"), block, None))
            n += 1
        return
    if alg == "twofish-cbc":
        session = _twofish(key).decryptor(iv=iv)
        while block := src.read(chunk):
            sink(session.update(block))
        sink(session.finalize())
        return
    dec = Cipher(_block_cipher(alg, key), _mode(alg, iv)).decryptor()
    unpadder = None if alg == "aes-ctr" else padding.PKCS7(ALGS[alg].block * 8).unpadder()
    while block := src.read(chunk):
        out = dec.update(block)
        sink(unpadder.update(out) if unpadder else out)
    out = dec.finalize()
    sink(unpadder.update(out) + unpadder.finalize() if unpadder else out)


# -- textbook RSA on the data (S4 applied RSA to whole files: workloads/studies/S4) --------------


@dataclass(frozen=True)
class RawKey:
    """An RSA key for textbook RSA (no padding): modulus, exponents and primes."""

    n: int
    e: int
    d: int
    p: int
    q: int

    @classmethod
    def from_vector(cls, v: dict[str, str]) -> RawKey:
        """The key of an ``rsa-raw`` vector (hex fields rsa_n, rsa_e, rsa_d, rsa_p, rsa_q)."""
        return cls(*(int(v[f"rsa_{k}"], 16) for k in ("n", "e", "d", "p", "q")))

    @property
    def out_bytes(self) -> int:
        """Bytes of one ciphertext block: the modulus's length."""
        return (self.n.bit_length() + 7) // 8

    @property
    def in_bytes(self) -> int:
        """Bytes of data in one block: the most that stays below the modulus."""
        return (self.n.bit_length() - 1) // 8

    @functools.cached_property
    def _crt(self) -> tuple[int, int, int]:
        return self.d % (self.p - 1), self.d % (self.q - 1), pow(self.q, -1, self.p)

    def encrypt_int(self, m: int) -> int:
        return pow(m, self.e, self.n)

    def decrypt_int(self, c: int) -> int:
        dp, dq, qinv = self._crt
        m1, m2 = pow(c, dp, self.p), pow(c, dq, self.q)
        return m2 + ((qinv * (m1 - m2)) % self.p) * self.q


def raw_encrypt_stream(
    key: RawKey, total: int, src: BinaryIO, chunk: int, sink: Callable[[bytes], object]
) -> None:
    """The data's length (8 bytes, big-endian), then each block of ``in_bytes`` bytes (the last
    may be shorter) raised to e mod n, ``out_bytes`` bytes each."""
    sink(total.to_bytes(8, "big"))
    k, size, rest = key.in_bytes, key.out_bytes, b""
    while block := src.read(chunk):
        data = rest + block
        whole = len(data) - len(data) % k
        sink(
            b"".join(
                key.encrypt_int(int.from_bytes(data[i : i + k], "big")).to_bytes(size, "big")
                for i in range(0, whole, k)
            )
        )
        rest = data[whole:]
    if rest:
        sink(key.encrypt_int(int.from_bytes(rest, "big")).to_bytes(size, "big"))


def raw_decrypt_stream(key: RawKey, src: BinaryIO, chunk: int, sink: Callable[[bytes], object]) -> None:
    """Undo :func:`raw_encrypt_stream`."""
    header = src.read(8)
    if len(header) != 8:
        raise ValueError("rsa-raw ciphertext shorter than its length header")
    left = int.from_bytes(header, "big")
    k, size, rest = key.in_bytes, key.out_bytes, b""
    chunk = max(size, chunk - chunk % size)
    while block := src.read(chunk):
        data = rest + block
        whole = len(data) - len(data) % size
        out = []
        for i in range(0, whole, size):
            n = min(k, left)
            out.append(key.decrypt_int(int.from_bytes(data[i : i + size], "big")).to_bytes(n, "big"))
            left -= n
        sink(b"".join(out))
        rest = data[whole:]
    if rest or left:
        raise ValueError("rsa-raw ciphertext is truncated")


def raw_encrypt(key: RawKey, data: bytes) -> bytes:
    out = bytearray()
    raw_encrypt_stream(key, len(data), io.BytesIO(data), 1 << 20, out.extend)
    return bytes(out)


def raw_decrypt(key: RawKey, data: bytes) -> bytes:
    out = bytearray()
    raw_decrypt_stream(key, io.BytesIO(data), 1 << 20, out.extend)
    return bytes(out)
