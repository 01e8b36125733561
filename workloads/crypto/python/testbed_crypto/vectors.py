"""Known-answer checks of the shared vector file (workloads/crypto/vectors/)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from testbed_crypto import algorithms as A


def load(path: str | Path) -> list[dict[str, Any]]:
    """The vector list of a vector file."""
    doc = json.loads(Path(path).read_text(encoding="utf-8"))
    return list(doc["vectors"])


def _h(v: dict[str, Any], key: str) -> bytes:
    return bytes.fromhex(v[key])


def _check_cipher(v: dict[str, Any], alg: str, produced: dict[str, str], problems: list[str]) -> None:
    key, iv, pt, ct = _h(v, "key"), _h(v, "iv"), _h(v, "plaintext"), _h(v, "ciphertext")
    if "chunk_bytes" in v:
        out = bytearray()
        A.stream_encrypt(alg, key, iv, io.BytesIO(pt), int(v["chunk_bytes"]), out.extend)
        got = bytes(out)
        _check_cipher_stream_decrypt(v, alg, problems)
    else:
        got = A.encrypt(alg, key, iv, pt)
        if A.decrypt(alg, key, iv, ct) != pt:
            problems.append("decryption differs")
    if got != ct:
        problems.append(f"ciphertext differs: got {got.hex()[:32]}...")


def _check_mac(v: dict[str, Any], alg: str, produced: dict[str, str], problems: list[str]) -> None:
    got = A.mac(alg, _h(v, "key"), _h(v, "message"))
    if got != _h(v, "mac"):
        problems.append(f"mac differs: got {got.hex()[:32]}...")


def _check_sign(v: dict[str, Any], alg: str, produced: dict[str, str], problems: list[str]) -> None:
    priv, pub = A.load_private(_h(v, "private_key")), A.load_public(_h(v, "public_key"))
    msg, sig = _h(v, "message"), _h(v, "signature")
    if not A.verify(alg, pub, msg, sig):
        problems.append("given signature does not verify")
    if A.verify(alg, pub, msg + b"x", sig):
        problems.append("signature verifies a different message")
    own = A.sign(alg, priv, msg)
    if not A.verify(alg, pub, msg, own):
        problems.append("own signature does not verify")
    produced["signature"] = own.hex()


def _check_hybrid(v: dict[str, Any], alg: str, produced: dict[str, str], problems: list[str]) -> None:
    priv, pub = A.load_private(_h(v, "private_key")), A.load_public(_h(v, "public_key"))
    data_key = _h(v, "data_key")
    if A.unwrap(priv, _h(v, "wrapped_key")) != data_key:
        problems.append("unwrapped data key differs")
    got = A.encrypt("aes-gcm", data_key, _h(v, "iv"), _h(v, "plaintext"))
    if got != _h(v, "ciphertext"):
        problems.append("payload ciphertext differs")
    own = A.wrap(pub, data_key)
    if A.unwrap(priv, own) != data_key:
        problems.append("own wrapped key does not unwrap")
    produced["wrapped_key"] = own.hex()


def _check_raw(v: dict[str, Any], alg: str, produced: dict[str, str], problems: list[str]) -> None:
    key = A.RawKey.from_vector(v)
    pt, ct = _h(v, "plaintext"), _h(v, "ciphertext")
    if key.n != key.p * key.q or pow(pow(2, key.e, key.n), key.d, key.n) != 2:
        problems.append("the vector's key is not an RSA key")
    if "chunk_bytes" in v:
        out = bytearray()
        A.raw_encrypt_stream(key, len(pt), io.BytesIO(pt), int(v["chunk_bytes"]), out.extend)
        got = bytes(out)
        back = bytearray()
        A.raw_decrypt_stream(key, io.BytesIO(ct), int(v["chunk_bytes"]), back.extend)
    else:
        got, back = A.raw_encrypt(key, pt), bytearray(A.raw_decrypt(key, ct))
    if got != ct:
        problems.append(f"ciphertext differs: got {got.hex()[:32]}...")
    if bytes(back) != pt:
        problems.append("decryption differs")


def _check_cipher_stream_decrypt(v: dict[str, Any], alg: str, problems: list[str]) -> None:
    """A stream vector also decrypts chunk by chunk back to its plaintext."""
    out = bytearray()
    chunk = int(v["chunk_bytes"])
    A.stream_decrypt(alg, _h(v, "key"), _h(v, "iv"), io.BytesIO(_h(v, "ciphertext")), chunk, out.extend)
    if bytes(out) != _h(v, "plaintext"):
        problems.append("streamed decryption differs")


#: vector kind -> checker appending to ``problems`` and filling ``produced``
_CHECKERS = {
    "cipher": _check_cipher,
    "mac": _check_mac,
    "sign": _check_sign,
    "hybrid": _check_hybrid,
    "raw": _check_raw,
}


def check_one(v: dict[str, Any]) -> dict[str, Any]:
    """Run one vector: {"id", "ok", "error", "produced"}; raises Unsupported."""
    alg = v["alg"]
    if alg in A.UNSUPPORTED:
        raise A.Unsupported(A.UNSUPPORTED[alg])
    kind = A.ALGS[alg].kind
    produced: dict[str, str] = {}
    problems: list[str] = []
    checker = _CHECKERS.get(kind)
    if checker is not None:
        checker(v, alg, produced, problems)
    return {"id": v["id"], "ok": not problems, "error": "; ".join(problems) or None, "produced": produced}


def check(vectors: list[dict[str, Any]], alg: str | None = None) -> dict[str, Any]:
    """Check all vectors (of one algorithm when ``alg`` is given)."""
    results, unsupported = [], []
    for v in vectors:
        if alg is not None and v["alg"] != alg:
            continue
        try:
            results.append(check_one(v))
        except A.Unsupported as exc:
            unsupported.append({"id": v["id"], "reason": str(exc)})
        except Exception as exc:  # noqa: BLE001 - any exception is a failed vector
            results.append(
                {"id": v["id"], "ok": False, "error": f"{type(exc).__name__}: {exc}", "produced": {}}
            )
    passed = sum(r["ok"] for r in results)
    return {
        "language": "python",
        "results": results,
        "passed": passed,
        "failed": len(results) - passed,
        "unsupported": unsupported,
    }
