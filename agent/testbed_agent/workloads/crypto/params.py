"""The typed params of a ``crypto`` benchmark (:class:`CryptoParams`) and the parse step that builds them.

A crypto benchmark's parameters depend on each other and on the benchmark itself: the algorithm
(and key size) may come from its name (``aes-256-gcm``), unsafe key sizes need the plan's
``allow_weak_keys``, and ``kms-envelope`` takes other parameters than a local cipher. So
:func:`parse` checks the plan's mapping in a fixed order, naming the field of the first error, and
builds one frozen :class:`CryptoParams`: the common fields, the cells' dimensions, and one optional
part per variant (``files``: streamed files; ``kms``: the key service; ``tier``: a FaaS memory
tier's cgroup; ``price``: a FaaS price table).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed_agent.benchmark import Benchmark
from testbed_agent.params import ParamError, size_bytes, spec
from testbed_agent.workloads.crypto import study
from testbed_agent.workloads.crypto.tiers import TierParams, parse_tier
from testbed_services.kms import KEYS, KmsConfig
from testbed_shared import cost
from testbed_shared.paths import workloads_dir

LANGUAGES = ("python", "go", "rust", "java", "node")
_CIPHER = ("encrypt", "decrypt")
#: algorithm -> (key sizes, ops); the same table as CONTRACT.md
ALGS: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "aes-gcm": ((128, 192, 256), _CIPHER),
    "aes-ctr": ((128, 192, 256), _CIPHER),
    "aes-cbc": ((128, 192, 256), _CIPHER),
    "3des-cbc": ((192, 128), _CIPHER),
    "cast128-cbc": ((128,), _CIPHER),
    "blowfish-cbc": ((128, 256, 448, 64), _CIPHER),
    "twofish-cbc": ((128, 192, 256), _CIPHER),
    "hmac-sha256": ((256,), ("mac",)),
    "hmac-sha384": ((384,), ("mac",)),
    "ecdsa-p256": ((256,), ("sign", "verify")),
    "ecdsa-p384": ((384,), ("sign", "verify")),
    "rsa-oaep": ((2048, 3072, 4096), _CIPHER),
    # textbook RSA on the data itself (S4: RSA applied to files with 64- to 2048-bit keys)
    "rsa-raw": ((64, 256, 1024, 1536, 2048), _CIPHER),
}
KMS_ALG = "kms-envelope"
#: the parameter names a plan's crypto entry may give
PLAN_KEYS = frozenset(
    {
        "languages",
        "alg",
        "key_bits",
        "ops",
        "payload_bytes",
        "payload",
        "file_sizes",
        "chunk_bytes",
        "iterations",
        "warmup",
        "cpus",
        "price_table",
        "memory_mb",
        "arch",
        "kms",
        "kms_keys",
        "warm_after",
        "warmup_s",
        "tolerance",
        "crypto_dir",
        "tier_profile",
        "guest_cpus",
        "files_dir",
    }
)


#: a part of the params that parse builds from several plan keys (its own dataclass)
_PART = {"kind": "part"}


@dataclass(frozen=True)
class FileParams:
    """Streamed files: generated ones of ``sizes`` (params.file_sizes), or a user's ``dir`` (files_dir)."""

    sizes: tuple[int, ...] = ()
    dir: str | None = None


@dataclass(frozen=True)
class KmsParams:
    """``kms-envelope``: where the key service is, the keys (kms.KEYS) called, calls before the warm ones."""

    config: KmsConfig
    keys: tuple[str, ...]
    warm_after: int


@dataclass(frozen=True)
class PriceParams:
    """A FaaS price table (params.price_table) and what it needs: the memory size and architecture."""

    table: cost.PriceTable
    memory_mb: float
    arch: str


@dataclass(frozen=True)
class CryptoParams:
    """The typed params of a crypto benchmark, built by :func:`parse` (which checks every rule below
    and what spans fields; defaults are the field defaults, or the benchmark's name for ``alg`` and
    ``key_bits``). ``kms`` is set for ``kms-envelope`` only, whose cells are languages x keys; a
    local algorithm's cells are languages x key sizes x ops x sizes (x CPU counts)."""

    alg: str = spec(kind="str", choices=(*ALGS, KMS_ALG))
    #: the directory of the five programs and the vectors (default: the repository's)
    crypto_dir: Path | None = field(default=None, metadata={"kind": "str"})
    languages: tuple[str, ...] = spec(LANGUAGES, "names", choices=LANGUAGES)
    iterations: int = spec(30, "int", lo=1)
    warmup: int = spec(0, "int", lo=0)
    #: time-based warm-up limit (0: none) and the steady-state agreement it waits for
    warmup_s: float = spec(0.0, "num", lo=0)
    tolerance: float = spec(0.05, "num", lo=0, hi=1)
    payload: str = spec("random", choices=study.PAYLOADS)
    #: sizes of an in-memory payload; empty when ``files.sizes`` are streamed instead
    payload_bytes: tuple[int, ...] = spec((4096,), "sizes")
    #: a local algorithm's key sizes and operations (empty for kms-envelope)
    key_bits: tuple[int, ...] = spec((), "ints", lo=1)
    ops: tuple[str, ...] = spec((), "names")
    #: CPU counts pinned with taskset, or the vCPU counts of the guests the cells are for
    cpus: tuple[int, ...] = spec((), "ints", lo=1)
    guest_cpus: tuple[int, ...] = spec((), "ints", lo=1)
    chunk_bytes: int = spec(1 << 20, "size", lo=16)
    files: FileParams | None = field(default=None, metadata=_PART)
    kms: KmsParams | None = field(default=None, metadata=_PART)
    tier: TierParams | None = field(default=None, metadata=_PART)
    price: PriceParams | None = field(default=None, metadata=_PART)

    @property
    def streamed(self) -> bool:
        """Files are streamed (file_sizes or files_dir), not a payload in memory."""
        return self.files is not None

    @property
    def file_sizes(self) -> tuple[int, ...]:
        """The generated files' sizes (empty without file_sizes)."""
        return self.files.sizes if self.files is not None else ()


_DEFAULT = {f.name: f.default for f in dataclasses.fields(CryptoParams)}


def alg_from_name(name: str) -> tuple[str, int | None] | None:
    """Algorithm and key size a name says: ``aes-256-gcm`` -> (aes-gcm, 256), ``ecdsa-p256`` -> (.., None)."""
    low = name.lower()
    if low in ALGS or low == KMS_ALG:
        return low, None
    m = re.fullmatch(r"aes-(\d+)-(gcm|ctr|cbc)", low)
    if m:
        return f"aes-{m[2]}", int(m[1])
    m = re.fullmatch(r"(.+)-(\d+)", low)
    if m and m[1] in ALGS:
        return m[1], int(m[2])
    return None


def parse(bench: Benchmark) -> CryptoParams:
    """The checked, typed params of a crypto benchmark, defaults filled in; raises ParamError."""
    p = bench.params
    alg, named = _alg(bench)
    common = _common(p)
    tier = parse_tier(p)
    if alg == KMS_ALG:
        return CryptoParams(alg=alg, crypto_dir=crypto_dir(p), tier=tier, **common, **_kms(p, common))
    cells = _cells(p, alg, named, common, bench.allow_weak_keys)
    price = _price(p) if "price_table" in p else None
    return CryptoParams(alg=alg, crypto_dir=crypto_dir(p), tier=tier, price=price, **common, **cells)


def crypto_dir(params: dict[str, Any]) -> Path:
    """``params.crypto_dir``, else the repository's workloads/crypto."""
    return Path(params["crypto_dir"]) if params.get("crypto_dir") else workloads_dir() / "crypto"


def _int_list(params: dict[str, Any], key: str, default: list[int]) -> tuple[int, ...]:
    value = params.get(key, default)
    values = value if isinstance(value, list) else [value]
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
        raise ParamError(f"params.{key}", f"expected a positive integer or a list of them, got {value!r}")
    return tuple(values)


def _sizes(key: str, value: Any) -> tuple[int, ...]:
    values = value if isinstance(value, list) else [value]
    sizes = tuple(size_bytes(v, f"params.{key}") for v in values)
    if not sizes:
        raise ParamError(f"params.{key}", "is empty")
    return sizes


def _alg(bench: Benchmark) -> tuple[str, tuple[str, int | None] | None]:
    """The algorithm of a benchmark (params.alg, else its name) and what the name says."""
    p = bench.params
    unknown = set(p) - PLAN_KEYS
    if unknown:
        raise ParamError(
            f"params.{sorted(unknown)[0]}", "unknown crypto parameter; known: " + ", ".join(sorted(PLAN_KEYS))
        )
    named = alg_from_name(bench.name)
    alg = p.get("alg") or (named[0] if named else None)
    if alg != KMS_ALG and alg not in ALGS:
        raise ParamError(
            "params.alg",
            f"unknown algorithm {alg!r} (and the name does not say one); known: "
            + ", ".join([*ALGS, KMS_ALG]),
        )
    return alg, named


def _common(p: dict[str, Any]) -> dict[str, Any]:
    """The fields every crypto benchmark has: repetitions, warm-up, payload or files, guests."""
    out: dict[str, Any] = {}
    for key in ("iterations", "warmup"):
        v = p.get(key, _DEFAULT[key])
        least = 1 if key == "iterations" else 0
        if isinstance(v, bool) or not isinstance(v, int) or v < least:
            raise ParamError(f"params.{key}", f"expected an integer >= {least}, got {v!r}")
        out[key] = v
    out["warmup_s"], out["tolerance"] = _steady(p)
    if "payload_bytes" in p and "file_sizes" in p:
        raise ParamError("params.file_sizes", "payload_bytes (memory) or file_sizes (streamed), not both")
    file_sizes = _sizes("file_sizes", p["file_sizes"]) if "file_sizes" in p else ()
    out["payload_bytes"] = (
        () if file_sizes else _sizes("payload_bytes", p.get("payload_bytes", list(_DEFAULT["payload_bytes"])))
    )
    files_dir, out["guest_cpus"] = study.check_files(p, file_sizes)  # payload kinds, files_dir, guests
    if file_sizes or files_dir is not None:
        out["files"] = FileParams(sizes=file_sizes, dir=files_dir)
    out["payload"] = p.get("payload", _DEFAULT["payload"])
    return out


def _steady(p: dict[str, Any]) -> tuple[float, float]:
    """``warmup_s`` (time-based warm-up limit, 0: none) and ``tolerance`` (steady-state agreement)."""
    warmup_s, tol = p.get("warmup_s", _DEFAULT["warmup_s"]), p.get("tolerance", _DEFAULT["tolerance"])
    if isinstance(warmup_s, bool) or not isinstance(warmup_s, (int, float)) or warmup_s < 0:
        raise ParamError("params.warmup_s", f"seconds >= 0, got {warmup_s!r}")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < 1:
        raise ParamError("params.tolerance", f"a fraction in (0, 1), got {tol!r}")
    return float(warmup_s), float(tol)


def _languages(p: dict[str, Any]) -> tuple[str, ...]:
    langs = p.get("languages", list(_DEFAULT["languages"]))
    if not isinstance(langs, list) or not langs or any(lang not in LANGUAGES for lang in langs):
        raise ParamError("params.languages", f"a list of {', '.join(LANGUAGES)}, got {langs!r}")
    return tuple(langs)


def _kms(p: dict[str, Any], common: dict[str, Any]) -> dict[str, Any]:
    """The kms-envelope fields: the key service, then languages, key names and warm calls."""
    try:
        config = KmsConfig.from_param(p.get("kms", True))
    except ValueError as exc:
        raise ParamError("params.kms", str(exc)) from None
    if "file_sizes" in p:
        raise ParamError("params.file_sizes", "kms-envelope takes payload_bytes")
    languages = _languages(p)
    keys = p.get("kms_keys", list(KEYS))
    if not isinstance(keys, list) or not keys or any(k not in KEYS for k in keys):
        raise ParamError("params.kms_keys", f"a list of {', '.join(KEYS)}, got {keys!r}")
    iterations = common["iterations"]
    warm = p.get("warm_after", 10 if iterations > 10 else 1)
    if isinstance(warm, bool) or not isinstance(warm, int) or not 0 <= warm < iterations:
        raise ParamError("params.warm_after", f"an integer in [0, iterations), got {warm!r}")
    return {"languages": languages, "kms": KmsParams(config=config, keys=tuple(keys), warm_after=warm)}


def _cells(
    p: dict[str, Any],
    alg: str,
    named: tuple[str, int | None] | None,
    common: dict[str, Any],
    allow_weak_keys: bool,
) -> dict[str, Any]:
    """What spans the cells of a local algorithm: key sizes, operations, languages, CPUs, chunks."""
    sizes, ops = ALGS[alg]
    default_bits = [named[1]] if named and named[1] else [sizes[0]]
    key_bits = _int_list(p, "key_bits", default_bits)
    for bits in key_bits:
        if bits not in sizes:
            raise ParamError("params.key_bits", f"{alg} takes {', '.join(map(str, sizes))}, got {bits}")
    study.check_weak_keys(alg, key_bits, allow_weak_keys)
    chosen = p.get("ops", list(ops))
    if not isinstance(chosen, list) or not chosen or any(o not in ops for o in chosen):
        raise ParamError("params.ops", f"{alg} takes a list of {', '.join(ops)}, got {chosen!r}")
    if "file_sizes" in p and alg.startswith("ecdsa"):
        raise ParamError("params.file_sizes", "ecdsa signs payload_bytes in memory, not streamed files")
    languages = _languages(p)
    cpus = _int_list(p, "cpus", [1]) if "cpus" in p else ()
    chunk = _sizes("chunk_bytes", p.get("chunk_bytes", _DEFAULT["chunk_bytes"]))[0]
    if chunk < 16 or chunk % 16:
        raise ParamError("params.chunk_bytes", f"must be a multiple of 16, got {chunk}")
    return {
        "key_bits": key_bits,
        "ops": tuple(chosen),
        "languages": languages,
        "cpus": cpus,
        "chunk_bytes": chunk,
    }


def _price(p: dict[str, Any]) -> PriceParams:
    """The price table and what it needs (memory_mb, arch)."""
    try:
        table = cost.PriceTable.from_dict(p["price_table"])
    except (ValueError, TypeError, AttributeError) as exc:
        raise ParamError("params.price_table", str(exc)) from None
    mem = p.get("memory_mb")
    if isinstance(mem, bool) or not isinstance(mem, (int, float)) or mem <= 0:
        raise ParamError("params.memory_mb", f"a price table needs memory_mb > 0, got {mem!r}")
    arch = str(p.get("arch", "x86_64"))
    if arch not in table.per_gb_second:
        raise ParamError("params.arch", f"no per-GB-second rate for {arch!r} in price_table")
    return PriceParams(table=table, memory_mb=float(mem), arch=arch)
