"""Write vectors.json: the known-answer vectors every implementation must pass.

Run from the repository root: ``.venv/bin/python workloads/crypto/vectors/generate.py``.
Inputs are derived from fixed labels (SHAKE-256), so symmetric vectors are reproducible;
asymmetric keys already in vectors.json are kept, and so are their published outputs: an ECDSA
signature or an RSA-OAEP wrapped key already in the file is verified (the signature against the key
and message, the wrapped key by unwrapping it to the data key) and kept, since OAEP is randomized by
design and a kept signature needs no new one. A new ECDSA key signs deterministically (RFC 6979), a
new RSA key wraps afresh. So regenerating changes nothing unless an input or a published answer
changed: the file is rewritten only when its content differs, and a published output that no longer
verifies stops the generator with the vector's id.
Outputs come from the `cryptography` package and are cross-checked by the four other
implementations; published answers are asserted where they exist (FIPS-197, RFC 4231, the Twofish
paper). Twofish is not in `cryptography`: its answers were computed with Go's x/crypto/twofish and
agree with Rust's `twofish` crate and Bouncy Castle (test_vectors_cross_language).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.decrepit.ciphers.algorithms import CAST5, Blowfish, TripleDES
from cryptography.hazmat.primitives import hashes, padding, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric import padding as apadding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

HERE = Path(__file__).resolve().parent
OUT = HERE / "vectors.json"

#: (key_bits, plaintext bytes, 0; -1: second block of the zero vector) -> twofish-cbc ciphertext (Go x/crypto)
TWOFISH: dict[tuple[int, int, int], str] = {
    (128, 16, -1): ("a645c0dafebc6d6dcf4fc0fa33e78ac5"),
    (128, 0, 0): ("3baa13103c47715f423730caf4a7d6fd"),
    (128, 100, 0): (
        "e37251fb28bf1b64bf2a0129d07af8f7ed60f77513a41a58150a0538a6aaae95e06b59f4c22099cfe2a253991383654c"
        "8dcd75f2b426e295db28715c03d56772fe87ff47288e539b60cc44ec30ec9bed9aa004ccf76a3d9d5b55d9c2591e99e9"
        "10dbedc46eb0f3f8aeaca74772db8dc2"
    ),
    (192, 100, 0): (
        "5fc5b2fefae74901068cd433d57904cc96fd094f186b4dedfb19f9a2472908da11d9ed3a56338e51f05f4a708597a349"
        "eb3a12391576076d6ed741c92412f94e068d53a1cb6266499ab3395303348755d35e6ffdf779d4614858ee156c859872"
        "9cac4296f3a23981796782e31afde9d5"
    ),
    (256, 100, 0): (
        "5bc7b77471b156beb0daf8d091282f3fbca11333d48f6ad79ef786c28c861fd7ea83ce4059342f9cef00413fa445427e"
        "73d5b32100f38a6eacee36cd39417f9b9ed6e9b41b77dca55d0e1169225063edc5681581c96c7434523309d37c801a5b"
        "f4b57c0495f0c5ec050b675f03af3d5e"
    ),
}


def det(label: str, n: int) -> bytes:
    """n reproducible bytes named by label."""
    return hashlib.shake_256(label.encode()).digest(n)


def _cbc(algo: Any, iv: bytes, pt: bytes, block: int) -> bytes:
    padder = padding.PKCS7(block * 8).padder()
    enc = Cipher(algo, modes.CBC(iv)).encryptor()
    return enc.update(padder.update(pt) + padder.finalize()) + enc.finalize()


def _cipher(alg: str, key: bytes, iv: bytes, pt: bytes) -> bytes:
    if alg == "aes-gcm":
        return AESGCM(key).encrypt(iv, pt, None)
    if alg == "aes-ctr":
        enc = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
        return enc.update(pt) + enc.finalize()
    if alg == "aes-cbc":
        return _cbc(algorithms.AES(key), iv, pt, 16)
    if alg == "3des-cbc":
        return _cbc(TripleDES(key), iv, pt, 8)
    if alg == "cast128-cbc":
        return _cbc(CAST5(key), iv, pt, 8)
    if alg == "blowfish-cbc":
        return _cbc(Blowfish(key), iv, pt, 8)
    raise KeyError(alg)


def _gcm_chunked(key: bytes, iv: bytes, pt: bytes, chunk: int) -> bytes:
    aead = AESGCM(key)
    parts = [
        aead.encrypt(iv[:8] + i.to_bytes(4, "big"), pt[off : off + chunk], None)
        for i, off in enumerate(range(0, len(pt), chunk))
    ]
    return b"".join(parts)


CIPHERS = {
    "aes-gcm": ((128, 192, 256), 12),
    "aes-ctr": ((128, 192, 256), 16),
    "aes-cbc": ((128, 192, 256), 16),
    "3des-cbc": ((192, 128), 8),
    "cast128-cbc": ((128,), 8),
    "blowfish-cbc": ((128, 256, 448), 8),
    "twofish-cbc": ((128, 192, 256), 16),
}


def cipher_vectors() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    # FIPS-197 appendix C.1 as the first CBC block (zero IV)
    key, pt = bytes(range(16)), bytes.fromhex("00112233445566778899aabbccddeeff")
    ct = _cipher("aes-cbc", key, bytes(16), pt)
    if ct[:16].hex() != "69c4e0d86a7b0430d8cdb78070b4c55a":
        raise SystemExit("AES-128 does not give FIPS-197 C.1's ciphertext")
    out.append(
        {
            "id": "aes-cbc-fips197-c1",
            "alg": "aes-cbc",
            "key_bits": 128,
            "key": key.hex(),
            "iv": bytes(16).hex(),
            "plaintext": pt.hex(),
            "ciphertext": ct.hex(),
            "note": "first block is FIPS-197 C.1",
        }
    )
    # Twofish paper, zero key and block: first CBC block with a zero IV
    out.append(
        {
            "id": "twofish-cbc-paper-zero",
            "alg": "twofish-cbc",
            "key_bits": 128,
            "key": bytes(16).hex(),
            "iv": bytes(16).hex(),
            "plaintext": bytes(16).hex(),
            "ciphertext": "9f589f5cf6122c32b6bfec2f2ae8c35a" + TWOFISH[(128, 16, -1)],
            "note": "first block is the Twofish paper's 128-bit zero-key answer",
        }
    )
    for alg, (sizes, iv_len) in CIPHERS.items():
        for bits in sizes:
            for n in (0, 100):
                if n == 0 and bits != sizes[0]:
                    continue
                key, iv, pt = det(f"{alg}-{bits}-key", bits // 8), det(f"{alg}-iv", iv_len), det(f"pt-{n}", n)
                ct = TWOFISH[(bits, n, 0)] if alg == "twofish-cbc" else _cipher(alg, key, iv, pt).hex()
                out.append(
                    {
                        "id": f"{alg}-{bits}-{n}b",
                        "alg": alg,
                        "key_bits": bits,
                        "key": key.hex(),
                        "iv": iv.hex(),
                        "plaintext": pt.hex(),
                        "ciphertext": ct,
                    }
                )
        bits = sizes[-1]
        key, iv, pt = det(f"{alg}-{bits}-key", bits // 8), det(f"{alg}-iv", iv_len), det("pt-100", 100)
        if alg == "aes-gcm":
            ct = _gcm_chunked(key, iv, pt, 32).hex()
        elif alg == "twofish-cbc":
            ct = TWOFISH[(bits, 100, 0)]  # CBC streaming output equals the one-shot output
        else:
            ct = _cipher(alg, key, iv, pt).hex()
        out.append(
            {
                "id": f"{alg}-{bits}-stream32",
                "alg": alg,
                "key_bits": bits,
                "key": key.hex(),
                "iv": iv.hex(),
                "plaintext": pt.hex(),
                "ciphertext": ct,
                "chunk_bytes": 32,
            }
        )
    return out


def weak_key_vectors() -> list[dict[str, Any]]:
    """Blowfish with S4's 64-bit key (S4 L308): Eric Young's published ECB answer for the zero key
    and block as the first CBC block (zero IV), and one reproducible 100-byte vector."""
    out = []
    zero = _cipher("blowfish-cbc", bytes(8), bytes(8), bytes(8))
    if zero[:8].hex() != "4ef997456198dd78":
        raise SystemExit("Blowfish does not give Eric Young's vector (zero key, zero block)")
    out.append(
        {
            "id": "blowfish-cbc-64-eay-zero",
            "alg": "blowfish-cbc",
            "key_bits": 64,
            "key": bytes(8).hex(),
            "iv": bytes(8).hex(),
            "plaintext": bytes(8).hex(),
            "ciphertext": zero.hex(),
            "note": "first block is Eric Young's Blowfish answer for the zero key and block",
        }
    )
    key, iv, pt = det("blowfish-cbc-64-key", 8), det("blowfish-cbc-iv", 8), det("pt-100", 100)
    out.append(
        {
            "id": "blowfish-cbc-64-100b",
            "alg": "blowfish-cbc",
            "key_bits": 64,
            "key": key.hex(),
            "iv": iv.hex(),
            "plaintext": pt.hex(),
            "ciphertext": _cipher("blowfish-cbc", key, iv, pt).hex(),
        }
    )
    return out


#: key sizes of rsa-raw: the S4 study's RSA keys (S4 L189-215)
RSA_RAW_BITS = (64, 256, 1024, 1536, 2048)


def _probable_prime(bits: int) -> int:
    """A random prime of exactly ``bits`` bits (Miller-Rabin, 40 rounds; the two top bits set so
    a product of two has exactly twice the bits)."""
    import secrets

    while True:
        n = secrets.randbits(bits) | (3 << (bits - 2)) | 1
        if all(n % p for p in (3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37)) and _miller_rabin(n):
            return n


def _miller_rabin(n: int, rounds: int = 40) -> bool:
    import secrets

    d, s = n - 1, 0
    while d % 2 == 0:
        d, s = d // 2, s + 1
    for _ in range(rounds):
        x = pow(secrets.randbelow(n - 3) + 2, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def _raw_key(bits: int) -> dict[str, int]:
    """An RSA key of exactly ``bits`` bits with e = 65537 (p, q of bits/2 each)."""
    e = 65537
    while True:
        p, q = _probable_prime(bits // 2), _probable_prime(bits - bits // 2)
        phi = (p - 1) * (q - 1)
        if p != q and (p * q).bit_length() == bits and phi % e:
            return {"n": p * q, "e": e, "d": pow(e, -1, phi), "p": p, "q": q}


def _textbook(key: dict[str, int], pt: bytes) -> bytes:
    """CONTRACT.md rsa-raw, written here on its own: length header, blocks of (bits-1)//8 bytes
    raised to e mod n, each as many bytes as the modulus."""
    k, size = (key["n"].bit_length() - 1) // 8, (key["n"].bit_length() + 7) // 8
    blocks = [pt[i : i + k] for i in range(0, len(pt), k)]
    return len(pt).to_bytes(8, "big") + b"".join(
        pow(int.from_bytes(b, "big"), key["e"], key["n"]).to_bytes(size, "big") for b in blocks
    )


def raw_vectors(old: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """rsa-raw: textbook RSA on the data (S4 encrypted files with RSA directly, S4 L189-215)."""
    if pow(65, 17, 3233) != 2790 or pow(2790, 2753, 3233) != 65:
        raise SystemExit("modular exponentiation does not give the RSA paper's worked example")
    out = []
    for bits in RSA_RAW_BITS:
        vid = f"rsa-raw-{bits}"
        if vid in old:
            key = {k: int(old[vid][f"rsa_{k}"], 16) for k in ("n", "e", "d", "p", "q")}
        else:
            key = _raw_key(bits)
        fields = {f"rsa_{k}": format(v, "x") for k, v in key.items()}
        pt = det("pt-100", 100)
        out.append(
            {
                "id": vid,
                "alg": "rsa-raw",
                "key_bits": bits,
                **fields,
                "plaintext": pt.hex(),
                "ciphertext": _textbook(key, pt).hex(),
            }
        )
        if bits == RSA_RAW_BITS[0]:  # streamed in 16-byte reads: blocks straddle the reads
            out.append({**out[-1], "id": f"{vid}-stream16", "chunk_bytes": 16})
    return out


def mac_vectors() -> list[dict[str, Any]]:
    rfc4231 = {
        "hmac-sha256": "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
        "hmac-sha384": "af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e"
        "8e2240ca5e69e2c78b3239ecfab21649",
    }
    out = []
    for alg, digest in (("hmac-sha256", "sha256"), ("hmac-sha384", "sha384")):
        key, msg = b"Jefe", b"what do ya want for nothing?"
        got = hmac.digest(key, msg, digest).hex()
        if got != rfc4231[alg]:
            raise SystemExit(f"{alg} does not give RFC 4231 case 2's MAC")
        out.append({"id": f"{alg}-rfc4231-2", "alg": alg, "key": key.hex(), "message": msg.hex(), "mac": got})
        bits = int(alg[-3:])
        key, msg = det(f"{alg}-key", bits // 8), det("pt-4096", 4096)
        out.append(
            {
                "id": f"{alg}-4096b",
                "alg": alg,
                "key_bits": bits,
                "key": key.hex(),
                "message": msg.hex(),
                "mac": hmac.digest(key, msg, digest).hex(),
            }
        )
    return out


def _der(priv: Any) -> tuple[str, str]:
    p = priv.private_bytes(
        serialization.Encoding.DER, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    q = priv.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return p.hex(), q.hex()


def _kept_signature(old: dict[str, Any] | None, priv: Any, msg: bytes, h: Any) -> bytes:
    """The published signature when it verifies for this key and message; else an RFC 6979 one."""
    if old and old.get("message") == msg.hex() and old.get("signature"):
        sig = bytes.fromhex(old["signature"])
        try:
            priv.public_key().verify(sig, msg, ec.ECDSA(h))
        except InvalidSignature:
            raise SystemExit(f"{old['id']}: the published signature does not verify") from None
        return sig
    return priv.sign(msg, ec.ECDSA(h, deterministic_signing=True))


def _kept_wrap(old: dict[str, Any] | None, priv: Any, data_key: bytes, oaep: Any) -> bytes:
    """The published wrapped key when it unwraps to ``data_key``; else a fresh (randomized) one."""
    if old and old.get("data_key") == data_key.hex() and old.get("wrapped_key"):
        wrapped = bytes.fromhex(old["wrapped_key"])
        try:
            ok = priv.decrypt(wrapped, oaep) == data_key
        except ValueError:
            ok = False
        if not ok:
            raise SystemExit(f"{old['id']}: the published wrapped key does not unwrap to the data key")
        return wrapped
    return priv.public_key().encrypt(data_key, oaep)


def asym_vectors(old: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for alg, curve, h in (
        ("ecdsa-p256", ec.SECP256R1(), hashes.SHA256()),
        ("ecdsa-p384", ec.SECP384R1(), hashes.SHA384()),
    ):
        vid = f"{alg}-1"
        priv = (
            serialization.load_der_private_key(bytes.fromhex(old[vid]["private_key"]), None)
            if vid in old
            else ec.generate_private_key(curve)
        )
        msg = det("pt-200", 200)
        sig = _kept_signature(old.get(vid), priv, msg, h)
        p, q = _der(priv)
        out.append(
            {
                "id": vid,
                "alg": alg,
                "key_bits": int(alg[-3:]),
                "private_key": p,
                "public_key": q,
                "message": msg.hex(),
                "signature": sig.hex(),
            }
        )
    oaep = apadding.OAEP(mgf=apadding.MGF1(hashes.SHA256()), algorithm=hashes.SHA256(), label=None)
    for bits in (2048, 3072, 4096):
        vid = f"rsa-oaep-{bits}"
        priv = (
            serialization.load_der_private_key(bytes.fromhex(old[vid]["private_key"]), None)
            if vid in old
            else rsa.generate_private_key(public_exponent=65537, key_size=bits)
        )
        data_key, iv, pt = det(f"rsa-{bits}-data-key", 32), det("rsa-iv", 12), det("pt-200", 200)
        p, q = _der(priv)
        wrapped = _kept_wrap(old.get(vid), priv, data_key, oaep)
        out.append(
            {
                "id": vid,
                "alg": "rsa-oaep",
                "key_bits": bits,
                "private_key": p,
                "public_key": q,
                "data_key": data_key.hex(),
                "wrapped_key": wrapped.hex(),
                "iv": iv.hex(),
                "plaintext": pt.hex(),
                "ciphertext": AESGCM(data_key).encrypt(iv, pt, None).hex(),
            }
        )
    return out


def main() -> None:
    old = {v["id"]: v for v in json.loads(OUT.read_text())["vectors"]} if OUT.exists() else {}
    doc = {
        "version": 1,
        "description": "Known-answer vectors of workloads/crypto (see README.md)",
        "vectors": cipher_vectors()
        + weak_key_vectors()
        + mac_vectors()
        + asym_vectors(old)
        + raw_vectors(old),
    }
    text = json.dumps(doc, indent=1) + "\n"
    if OUT.exists() and OUT.read_text() == text:
        print(f"{OUT}: unchanged ({len(doc['vectors'])} vectors, published outputs verified)")
        return
    OUT.write_text(text)
    print(f"wrote {len(doc['vectors'])} vectors to {OUT}")


if __name__ == "__main__":
    main()
