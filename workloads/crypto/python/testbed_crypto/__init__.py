"""Python implementation of the crypto contract (workloads/crypto/CONTRACT.md)."""

from __future__ import annotations

import os
import platform
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cryptography

from testbed_crypto import algorithms as A
from testbed_crypto import vectors as V

CONTRACT = 2
#: time-based warm-up: a batch lasts at least this long; this many successive batches must agree
MIN_BATCH_NS = 10_000_000
STEADY_BATCHES = 3
DEFAULT_TOLERANCE = 0.05
DEFAULT_VECTORS = Path(__file__).resolve().parents[2] / "vectors" / "vectors.json"
DEFAULT_CHUNK = 1 << 20


class SpecError(Exception):
    """A bad spec (exit code 2)."""


class VectorFailure(Exception):
    """A known-answer vector failed (exit code 3)."""


def info() -> dict[str, Any]:
    return {
        "language": "python",
        "runtime": f"CPython {platform.python_version()}",
        "library": f"cryptography {cryptography.__version__}"
        + (f" + oxifish {A.oxifish.__version__}" if A.oxifish is not None else ""),
        "algorithms": [a for a in A.ALGS if a not in A.UNSUPPORTED],
        "unsupported": A.UNSUPPORTED,
    }


def _rusage_ns() -> tuple[int, int]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return int(ru.ru_utime * 1e9), int(ru.ru_stime * 1e9)


def _spec_int(spec: dict[str, Any], key: str, default: int | None, minimum: int) -> int:
    value = spec.get(key, default)
    if value is None:
        raise SpecError(f"{key} is required")
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise SpecError(f"{key} must be an integer >= {minimum}, got {value!r}")
    return value


def _bulk_gcm(key_bits: int, payload: bytes, update: int) -> Callable[[int], object]:
    """One GCM message per operation through one cipher context, ``update`` bytes per update, into
    one reused output buffer (CONTRACT.md ``--update-bytes``)."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    key, prefix = os.urandom(key_bits // 8), os.urandom(8)
    out = bytearray(update + 15)
    view = memoryview(payload)

    def op(n: int) -> object:
        enc = Cipher(algorithms.AES(key), modes.GCM(prefix + n.to_bytes(4, "big"))).encryptor()
        for off in range(0, len(view), update):
            enc.update_into(view[off : off + update], out)
        enc.finalize()
        return enc.tag

    return op


def _key_pair(alg: A.Alg, key_bits: int, vectors: list[dict[str, Any]]) -> tuple[Any, Any]:
    """(private, public) key of a signature or hybrid algorithm: the vector file's."""
    name = alg.name
    vec = next((v for v in vectors if v["alg"] == name and v.get("key_bits", key_bits) == key_bits), None)
    if vec is None:
        raise SpecError(f"no vector with a {key_bits}-bit key for {name} in the vector file")
    return A.load_private(bytes.fromhex(vec["private_key"])), A.load_public(bytes.fromhex(vec["public_key"]))


#: ciphertext files a streamed decryption made before timing (removed when the run ends)
_TEMP_FILES: list[Path] = []


def _ciphertext_file(stream: str, encrypt: Callable[[Any, Callable[[bytes], object]], None]) -> Path:
    """Encrypt ``stream`` once, before timing, into a file beside it (streamed, never in memory)."""
    path = Path(f"{stream}.{os.getpid()}.enc")
    _TEMP_FILES.append(path)
    with open(stream, "rb", buffering=0) as src, open(path, "wb") as out:
        encrypt(src, out.write)
    return path


def _cipher_stream_op(
    alg: A.Alg, op: str, key: bytes, iv0: bytes, stream: str, chunk: int
) -> Callable[[int], object]:
    """One encryption or decryption of a streamed file (decryption reads a file encrypted untimed)."""
    name = alg.name
    if op == "decrypt":
        ciphertext = _ciphertext_file(
            stream, lambda src, out: A.stream_encrypt(name, key, iv0, src, chunk, out)
        )

        def op_stream_decrypt(n: int) -> object:
            with open(ciphertext, "rb", buffering=0) as src:
                A.stream_decrypt(name, key, iv0, src, chunk, len)
            return None

        return op_stream_decrypt

    def op_stream(n: int) -> object:
        with open(stream, "rb", buffering=0) as src:
            A.stream_encrypt(name, key, os.urandom(alg.block), src, chunk, len)
        return None

    return op_stream


def _cipher_op(
    alg: A.Alg, op: str, key: bytes, payload: bytes | None, stream: str | None, chunk: int
) -> Callable[[int], object]:
    """One encryption or decryption of a block cipher (in memory, or of a streamed file)."""
    name = alg.name
    prefix = os.urandom(8)

    def iv_for(n: int) -> bytes:
        if name == "aes-gcm":
            return prefix + n.to_bytes(4, "big")
        if name == "aes-ctr":
            return prefix + n.to_bytes(4, "big") + bytes(4)
        return os.urandom(alg.block)

    if stream:
        return _cipher_stream_op(alg, op, key, iv_for(0), stream, chunk)
    if payload is None:
        raise SpecError(f"{name} needs --payload-bytes, --input or --stream")
    if op == "encrypt":
        return lambda n: A.encrypt(name, key, iv_for(n), payload)
    iv0 = iv_for(0)
    ct = A.encrypt(name, key, iv0, payload)
    return lambda n: A.decrypt(name, key, iv0, ct)


def _mac_op(
    alg: A.Alg, key: bytes, payload: bytes | None, stream: str | None, chunk: int
) -> Callable[[int], object]:
    name = alg.name
    if stream:

        def mac_stream(n: int) -> object:
            with open(stream, "rb", buffering=0) as src:
                return A.stream_mac(name, key, src, chunk)

        return mac_stream
    return lambda n: A.mac(name, key, payload or b"")


def _sign_op(
    alg: A.Alg, op: str, keys: tuple[Any, Any], payload: bytes | None, stream: str | None
) -> Callable[[int], object]:
    name, (priv, pub) = alg.name, keys
    if stream:
        raise SpecError("ecdsa takes --payload-bytes or --input, not --stream")
    data = payload or b""
    if op == "sign":
        return lambda n: A.sign(name, priv, data)
    sig = A.sign(name, priv, data)

    def op_verify(n: int) -> object:
        if not A.verify(name, pub, data, sig):
            raise VectorFailure("own signature failed to verify")
        return None

    return op_verify


def _hybrid_op(
    op: str, key_bits: int, keys: tuple[Any, Any], payload: bytes | None, stream: str | None, chunk: int
) -> Callable[[int], object]:
    priv, pub = keys
    if stream and op == "decrypt":
        data_key, iv0 = os.urandom(32), os.urandom(12)
        wrapped = A.wrap(pub, data_key)
        ciphertext = _ciphertext_file(
            stream, lambda src, out: A.stream_encrypt("aes-gcm", data_key, iv0, src, chunk, out)
        )

        def hybrid_stream_decrypt(n: int) -> object:
            with open(ciphertext, "rb", buffering=0) as src:
                A.stream_decrypt("aes-gcm", A.unwrap(priv, wrapped), iv0, src, chunk, len)
            return None

        return hybrid_stream_decrypt
    if stream:

        def hybrid_stream(n: int) -> object:
            data_key = os.urandom(32)
            A.wrap(pub, data_key)
            with open(stream, "rb", buffering=0) as src:
                A.stream_encrypt("aes-gcm", data_key, os.urandom(12), src, chunk, len)
            return None

        return hybrid_stream
    if op == "encrypt":
        return lambda n: A.hybrid_encrypt(pub, payload or b"")
    blob = A.hybrid_encrypt(pub, payload or b"")
    return lambda n: A.hybrid_decrypt(priv, blob, key_bits // 8)


def _raw_op(
    name: str,
    op: str,
    key_bits: int,
    payload: bytes | None,
    stream: str | None,
    chunk: int,
    vectors: list[dict[str, Any]],
) -> Callable[[int], object]:
    """Textbook RSA on the data itself (``rsa-raw``): the vector file's key of that size."""
    vec = next((v for v in vectors if v["alg"] == name and v.get("key_bits") == key_bits), None)
    if vec is None:
        raise SpecError(f"no vector with a {key_bits}-bit key for {name} in the vector file")
    key = A.RawKey.from_vector(vec)
    if stream:
        total = os.path.getsize(stream)
        if op == "encrypt":

            def raw_stream(n: int) -> object:
                with open(stream, "rb", buffering=0) as src:
                    A.raw_encrypt_stream(key, total, src, chunk, len)
                return None

            return raw_stream
        ciphertext = _ciphertext_file(
            stream, lambda src, out: A.raw_encrypt_stream(key, total, src, chunk, out)
        )

        def raw_stream_decrypt(n: int) -> object:
            with open(ciphertext, "rb", buffering=0) as src:
                A.raw_decrypt_stream(key, src, chunk, len)
            return None

        return raw_stream_decrypt
    data = payload or b""
    if op == "encrypt":
        return lambda n: A.raw_encrypt(key, data)
    blob = A.raw_encrypt(key, data)
    return lambda n: A.raw_decrypt(key, blob)


def _make_op(
    alg: A.Alg,
    op: str,
    key_bits: int,
    payload: bytes | None,
    stream: str | None,
    chunk: int,
    vectors: list[dict[str, Any]],
) -> Callable[[int], object]:
    """A function of the operation number doing one operation (setup done here, untimed)."""
    if alg.kind == "raw":
        return _raw_op(alg.name, op, key_bits, payload, stream, chunk, vectors)
    if alg.kind == "cipher":
        return _cipher_op(alg, op, os.urandom(key_bits // 8), payload, stream, chunk)
    if alg.kind == "mac":
        return _mac_op(alg, os.urandom(key_bits // 8), payload, stream, chunk)
    keys = _key_pair(alg, key_bits, vectors)
    if alg.kind == "sign":
        return _sign_op(alg, op, keys, payload, stream)
    return _hybrid_op(op, key_bits, keys, payload, stream, chunk)


def steady_warmup(
    do: Callable[[int], object], first: int, seconds: float, tolerance: float, clock: Callable[[], int]
) -> dict[str, Any]:
    """Time-based warm-up (CONTRACT.md): batches of >= BATCH_NS for at least half of ``seconds``,
    then until STEADY_BATCHES agree, at most ``seconds``."""
    if seconds <= 0:
        return {"ops": 0, "ns": 0, "steady": None, "batches": []}
    start = clock()
    deadline = start + int(seconds * 1e9)
    batch_ns = max(MIN_BATCH_NS, int(seconds * 1e9) // 50)
    n, size, means = first, 1, []
    while True:
        t = clock()
        for _ in range(size):
            do(n)
            n += 1
        took = clock() - t
        if took < batch_ns:
            size *= 2
            continue
        means.append(took // size)
        last = means[-STEADY_BATCHES:]
        agree = len(last) == STEADY_BATCHES and (max(last) - min(last)) <= tolerance * sorted(last)[1]
        now = clock()
        ok = agree and now >= start + (deadline - start) // 2  # at least half of the time (JIT tiers)
        if ok or now >= deadline:
            return {"ops": n - first, "ns": clock() - start, "steady": ok, "batches": means}


def _spec_alg(spec: dict[str, Any]) -> tuple[str, A.Alg, int, str]:
    """The validated (alg name, algorithm, key_bits, op) of a spec."""
    name = spec.get("alg")
    if name not in A.ALGS:
        raise SpecError(f"unknown alg {name!r}; known: {', '.join(A.ALGS)}")
    alg = A.ALGS[name]
    if name in A.UNSUPPORTED:
        raise A.Unsupported(A.UNSUPPORTED[name])
    key_bits = _spec_int(spec, "key_bits", alg.key_bits[0], 1)
    if key_bits not in alg.key_bits:
        raise SpecError(f"{name} takes key_bits {', '.join(map(str, alg.key_bits))}, got {key_bits}")
    op = spec.get("op") or alg.ops[0]
    if op not in alg.ops:
        raise SpecError(f"{name} takes op {', '.join(alg.ops)}, got {op!r}")
    return name, alg, key_bits, op


def _spec_input(spec: dict[str, Any], op: str) -> tuple[bytes | None, str | None]:
    """(in-memory payload, streamed file path) of a spec: exactly one of them is set."""
    sources = [k for k in ("payload_bytes", "input", "stream") if spec.get(k) is not None]
    if len(sources) != 1:
        raise SpecError("give exactly one of payload_bytes, input, stream")
    payload: bytes | None = None
    stream: str | None = None
    if "payload_bytes" in sources:
        payload = os.urandom(_spec_int(spec, "payload_bytes", None, 0))
    elif "input" in sources:
        payload = Path(spec["input"]).read_bytes()
    else:
        stream = str(spec["stream"])
        if op not in ("encrypt", "decrypt", "mac"):
            raise SpecError("stream takes op encrypt, decrypt or mac")
        os.stat(stream)
    return payload, stream


def _checked_vectors(spec: dict[str, Any], name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The vector list and the check report of ``name``; raises VectorFailure when one fails."""
    vectors = V.load(spec.get("vectors") or DEFAULT_VECTORS)
    report = V.check(vectors, name)
    if report["failed"] or not report["results"]:
        bad = [r for r in report["results"] if not r["ok"]]
        why = f"{bad[0]['id']}: {bad[0]['error']}" if bad else "no vector for this algorithm"
        raise VectorFailure(f"vector check failed before timing: {why}")
    return vectors, report


def _timed(
    do: Callable[[int], object], iterations: int, warmup: int, warmup_s: float, tolerance: float
) -> dict[str, Any]:
    """Cold call, warm-up (counted, then time-based) and the timed iterations of ``do``."""
    clock = time.perf_counter_ns
    t0 = clock()
    do(0)
    cold = clock() - t0
    for i in range(warmup):
        do(1 + i)
    steady = steady_warmup(do, 1 + warmup, warmup_s, tolerance, clock)
    warmup += steady["ops"]
    times = []
    w0 = clock()  # the wall window encloses the CPU window
    u0, s0 = _rusage_ns()
    for i in range(iterations):
        t = clock()
        do(1 + warmup + i)
        times.append(clock() - t)
    u1, s1 = _rusage_ns()
    wall = clock() - w0
    return {
        "warmup": warmup,
        "cold_ns": cold,
        "warmup_ns": steady["ns"],
        "steady": steady["steady"],
        "warmup_batches_ns": steady["batches"],
        "times_ns": times,
        "wall_ns": wall,
        "cpu_user_ns": u1 - u0,
        "cpu_sys_ns": s1 - s0,
        "cpu_ns": (u1 - u0) + (s1 - s0),
    }


def run_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one spec (keys of CONTRACT.md) and return the result dict ``run`` prints."""
    name, alg, key_bits, op = _spec_alg(spec)
    iterations = _spec_int(spec, "iterations", None, 1)
    warmup = _spec_int(spec, "warmup", 0, 0)
    warmup_s = float(spec.get("warmup_s") or 0)
    tolerance = float(spec.get("tolerance") or DEFAULT_TOLERANCE)
    if warmup_s < 0 or not 0 < tolerance < 1:
        raise SpecError(f"warmup_s must be >= 0 and tolerance in (0, 1), got {warmup_s}, {tolerance}")
    chunk = _spec_int(spec, "chunk_bytes", DEFAULT_CHUNK, 16)
    if chunk % 16:
        raise SpecError(f"chunk_bytes must be a multiple of 16, got {chunk}")
    payload, stream = _spec_input(spec, op)
    size = len(payload) if payload is not None else os.path.getsize(stream or "")
    vectors, report = _checked_vectors(spec, name)
    update = _spec_int(spec, "update_bytes", 0, 0)
    if update:
        if name != "aes-gcm" or op != "encrypt" or payload is None or update % 16:
            raise SpecError("update_bytes: aes-gcm encrypt of an in-memory payload, a multiple of 16")
        do = _bulk_gcm(key_bits, payload, update)
    else:
        do = _make_op(alg, op, key_bits, payload, stream, chunk, vectors)
    try:
        timed = _timed(do, iterations, warmup, warmup_s, tolerance)
    finally:
        while _TEMP_FILES:
            _TEMP_FILES.pop().unlink(missing_ok=True)
    return {
        "contract": CONTRACT,
        **{k: v for k, v in info().items() if k in ("language", "runtime", "library")},
        "alg": name,
        "key_bits": key_bits,
        "op": op,
        "mode": alg.mode,
        "padding": alg.padding,
        "payload_bytes": size,
        "input": "stream" if stream else "memory",
        "update_bytes": update or None,
        "iterations": iterations,
        "warmup": timed["warmup"],
        "vectors": {"checked": len(report["results"]), "passed": report["passed"]},
        **{k: v for k, v in timed.items() if k != "warmup"},
        "process_cpu_ns": time.process_time_ns(),
    }


__all__ = ["CONTRACT", "SpecError", "VectorFailure", "check_vectors", "info", "run_spec"]


def check_vectors(path: str | Path | None = None) -> dict[str, Any]:
    """Check every vector of the file (default: the shared vector file)."""
    return V.check(V.load(path or DEFAULT_VECTORS))
