"""What ``plan show`` says about a crypto benchmark before it runs: its cell matrix and an estimate
of its duration from the bytes of its cells and measured cipher rates."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING, Any

from testbed_agent.workloads.crypto.files import FileKindError, user_files

if TYPE_CHECKING:
    from testbed_agent.workloads.crypto.params import CryptoParams

#: MB/s (10**6 B/s) of one CPU encrypting a streamed file, per algorithm and language: the
#: docs/crypto.md table "Streamed 64 MiB files" (development machine, 2 shared vCPUs under load,
#: so on the slow side). Algorithms without a row use AES-CBC's (GCM, CTR and HMAC are faster).
CRYPTO_MBPS = {
    "aes-cbc": {"python": 344, "go": 501, "rust": 556, "java": 303, "node": 448},
    "3des-cbc": {"python": 22, "go": 11, "rust": 5, "java": 6, "node": 13},
    "cast128-cbc": {"python": 51, "go": 48, "rust": 50, "java": 41, "node": 101},
    "blowfish-cbc": {"python": 112, "go": 99, "rust": 109, "java": 76, "node": 117},
    "twofish-cbc": {"python": 1, "go": 47, "rust": 1, "java": 65, "node": 42},
    "rsa-oaep": {"python": 759, "go": 2302, "rust": 677, "java": 42, "node": 454},
}
#: MB/s of Python's textbook RSA on a file (rsa-raw, S4) by key size: (encrypt, decrypt), measured
#: on the development machine under load (decryption: the CRT private-key operation per block)
RSA_RAW_MBPS = {
    64: (0.31, 0.084),
    256: (0.98, 0.065),
    1024: (0.48, 0.02),
    1536: (0.47, 0.011),
    2048: (0.25, 0.009),
}
#: MB/s at which the file kinds are made (crypto.files; a PNG's stored deflate blocks are the slowest)
FILE_MBPS = {"image": 70, "archive": 230, "pdf": 500, "random": 200, "text": 200, "json": 100}
#: seconds of one operation besides its bytes: the RSA private-key unwrap (slowest language, about
#: 2x what the development machine measured) and an ECDSA signature
CRYPTO_OP_S = {2048: 0.003, 3072: 0.008, 4096: 0.02, "ecdsa": 0.002}
#: seconds to start one cell's process and check its vectors (about 2x the development machine's)
CRYPTO_START_S = {"python": 0.3, "go": 0.05, "rust": 0.05, "java": 1.5, "node": 0.3}


def cell_matrix(params: CryptoParams) -> dict[str, Any]:
    """The cell matrix of a crypto benchmark: its count and each dimension."""
    languages = list(params.languages)
    if params.kms is not None:  # kms-envelope: languages x key-service keys
        keys = list(params.kms.keys)
        return {
            "count": len(languages) * len(keys),
            "alg": params.alg,
            "kms_keys": keys,
            "languages": languages,
        }
    streamed = bool(params.file_sizes)
    mine = user_sizes(params)
    sizes = list(mine or (params.file_sizes if streamed else params.payload_bytes))
    dims: dict[str, Any] = {
        "alg": params.alg,
        "key_bits": list(params.key_bits),
        "payload": params.payload,
        "file_sizes" if streamed or mine else "payload_bytes": sizes,
        "ops": list(params.ops),
        "cpus": list(params.cpus),
        "languages": languages,
    }
    if params.guest_cpus:
        dims["guest_cpus"] = list(params.guest_cpus)
    if params.files is not None and params.files.dir is not None:  # a user's files: read here if present
        where = params.files.dir
        dims["files_dir"] = where if mine else f"{where} (not readable here: sizes unknown)"
    count = len(languages) * len(params.key_bits) * len(params.ops) * len(sizes)
    out = {"count": count * max(1, len(params.cpus), len(params.guest_cpus)), **dims}
    if streamed:
        out["files"] = files_cost(params)
    return out


def files_cost(params: CryptoParams) -> dict[str, Any]:
    """What a streamed benchmark's files cost a machine: the largest, the scratch space they and a
    decryption's ciphertext take at once, and the seconds to make them (streamed, never in memory)."""
    sizes = list(params.file_sizes)
    ciphertext = max(sizes) if "decrypt" in params.ops else 0
    return {
        "kind": params.payload,
        "sizes": sizes,
        "largest_bytes": max(sizes),
        "ciphertext_bytes": ciphertext,
        "scratch_bytes": sum(sizes) + ciphertext,
        "make_s": round(sum(sizes) / (FILE_MBPS.get(params.payload, 200) * 1e6), 1),
    }


def user_sizes(params: CryptoParams) -> tuple[int, ...]:
    """The sizes of a user's files (``files_dir``: each file a cell) when the directory can be read
    here; () otherwise (a directory on the target only: the estimate then counts the payload
    default, and ``plan show`` says so)."""
    if params.files is None or params.files.dir is None:
        return ()
    try:
        return tuple(f.size for f in user_files(Path(params.files.dir)))
    except (FileKindError, OSError):
        return ()


def crypto_estimate_s(params: CryptoParams) -> float:
    """Seconds of all cells of a local-algorithm crypto benchmark: an estimate from bytes and rates.

    Per cell: process start, the steady-state warm-up (``warmup_s``, plus one operation it may
    overrun by) and every operation on the payload (cold, warm-up, timed and, for decryption, the
    ciphertext made before timing) at the algorithm's rate in that language. Cells run once per
    CPU count (cells over the machine's CPUs are skipped in a run: counted here all the same).
    """
    sizes = user_sizes(params) or params.file_sizes or params.payload_bytes
    total = sum(
        _cell_s(params, lang, bits, op, size)
        for lang, bits, op, size in itertools.product(params.languages, params.key_bits, params.ops, sizes)
    )
    make = files_cost(params)["make_s"] if params.file_sizes else 0.0
    # guest_cpus: a machine runs the cells of its own vCPU count only (one of them)
    return total * max(1, len(params.cpus)) + make


def _cell_s(params: CryptoParams, lang: str, bits: int, op: str, size: int) -> float:
    alg = params.alg
    if alg == "rsa-raw":
        enc, dec = RSA_RAW_MBPS[bits]
        rate = (dec if op == "decrypt" else enc) * 1e6
        return (
            CRYPTO_START_S[lang] + size / (enc * 1e6) + (1 + params.warmup + params.iterations) * size / rate
        )
    rate = CRYPTO_MBPS.get(alg, CRYPTO_MBPS["aes-cbc"])[lang] * 1e6
    extra = CRYPTO_OP_S["ecdsa"] if alg.startswith("ecdsa") else 0.0
    one = size / rate + (CRYPTO_OP_S.get(bits, 0.0) if alg == "rsa-oaep" else extra)
    ops = 1 + params.warmup + params.iterations + (op in ("decrypt", "verify"))
    warm = params.warmup_s + one if params.warmup_s else 0.0
    return CRYPTO_START_S[lang] + warm + ops * one
