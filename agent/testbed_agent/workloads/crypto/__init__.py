"""``crypto``: one algorithm (and key sizes) timed in up to five languages (workloads/crypto/).

Each cell (language x op x key size x input size x CPU count) is one run of that language's
program under the CONTRACT.md command line; the program checks the shared vectors before timing.
All cells of a benchmark go into one record: metric names are ``<cell>.<quantity>``, e.g.
``go.encrypt.time_per_op``; cells that could not run are listed in ``samples.cells`` with the
reason. ``alg: kms-envelope`` times envelope encryption through a KMS-compatible key service.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import re
import shutil
import statistics
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from testbed_agent.benchmark import Benchmark
from testbed_agent.params import ParamError, check_tree, size_bytes
from testbed_agent.results import Outcome, metric
from testbed_agent.workloads.base import RunContext, Workload
from testbed_agent.workloads.crypto import estimate, study
from testbed_agent.workloads.crypto.files import FileKindError, user_files
from testbed_agent.workloads.crypto.kms import run_kms
from testbed_agent.workloads.crypto.tiers import TierCells, resolve_tier, run_tiered, tier_params
from testbed_services.kms import KEYS, KmsConfig
from testbed_shared import cost
from testbed_shared.errors import WorkloadError
from testbed_shared.paths import workloads_dir

LANGUAGES = ("python", "go", "rust", "java", "node")
_CIPHER = ("encrypt", "decrypt")
#: algorithm -> (key sizes, ops, processes a payload); the same table as CONTRACT.md
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
_KEYS = {
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


def _int_list(params: dict[str, Any], key: str, default: list[int]) -> list[int]:
    value = params.get(key, default)
    values = value if isinstance(value, list) else [value]
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
        raise ParamError(f"params.{key}", f"expected a positive integer or a list of them, got {value!r}")
    return list(values)


def _sizes(params: dict[str, Any], key: str) -> list[int]:
    value = params[key]
    values = value if isinstance(value, list) else [value]
    sizes = [size_bytes(v, f"params.{key}") for v in values]
    if not sizes:
        raise ParamError(f"params.{key}", "is empty")
    return sizes


def _resolve_alg(bench: Benchmark) -> tuple[str, tuple[str, int | None] | None]:
    """The algorithm of a benchmark (params.alg, else its name) and what the name says."""
    p = bench.params
    unknown = set(p) - _KEYS
    if unknown:
        raise ParamError(
            f"params.{sorted(unknown)[0]}", "unknown crypto parameter; known: " + ", ".join(sorted(_KEYS))
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


def _resolve_common(p: dict[str, Any], out: dict[str, Any]) -> None:
    """Fill in the parameters every crypto benchmark has: repetitions, warm-up, payload."""
    for key, default in (("iterations", 30), ("warmup", 0)):
        v = p.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or v < (1 if key == "iterations" else 0):
            least = 1 if key == "iterations" else 0
            raise ParamError(f"params.{key}", f"expected an integer >= {least}, got {v!r}")
        out[key] = v
    out["warmup_s"], out["tolerance"] = _steady_params(p)
    if "payload_bytes" in p and "file_sizes" in p:
        raise ParamError("params.file_sizes", "payload_bytes (memory) or file_sizes (streamed), not both")
    if "file_sizes" in p:
        out["file_sizes"] = _sizes(p, "file_sizes")
    else:
        out["payload_sizes"] = _sizes({"payload_bytes": p.get("payload_bytes", 4096)}, "payload_bytes")
    study.check_files(p, out)  # payload kinds, a user's files_dir, guest_cpus
    out["payload"] = p.get("payload", "random")


def _resolve_kms_alg(p: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """The kms-envelope benchmark: its KMS configuration, then the KMS-specific parameters."""

    try:
        out["kms"] = KmsConfig.from_param(p.get("kms", True))
    except ValueError as exc:
        raise ParamError("params.kms", str(exc)) from None
    if "file_sizes" in out:
        raise ParamError("params.file_sizes", "kms-envelope takes payload_bytes")
    return _resolve_kms(p, out)


def _resolve_cells(
    p: dict[str, Any],
    out: dict[str, Any],
    alg: str,
    named: tuple[str, int | None] | None,
    allow_weak_keys: bool = False,
) -> None:
    """Fill in what spans the cells of a local algorithm: key sizes, operations, languages, CPUs."""
    sizes, ops = ALGS[alg]
    default_bits = [named[1]] if named and named[1] else [sizes[0]]
    out["key_bits"] = _int_list(p, "key_bits", default_bits)
    for bits in out["key_bits"]:
        if bits not in sizes:
            raise ParamError("params.key_bits", f"{alg} takes {', '.join(map(str, sizes))}, got {bits}")
    study.check_weak_keys(alg, out["key_bits"], allow_weak_keys)
    out["ops"] = p.get("ops", list(ops))
    if not isinstance(out["ops"], list) or not out["ops"] or any(o not in ops for o in out["ops"]):
        raise ParamError("params.ops", f"{alg} takes a list of {', '.join(ops)}, got {out['ops']!r}")
    if "file_sizes" in out and alg.startswith("ecdsa"):
        raise ParamError("params.file_sizes", "ecdsa signs payload_bytes in memory, not streamed files")
    out["languages"] = _languages(p)
    out["cpus"] = _int_list(p, "cpus", [1]) if "cpus" in p else []
    chunk = _sizes({"chunk_bytes": p.get("chunk_bytes", "1M")}, "chunk_bytes")[0]
    if chunk < 16 or chunk % 16:
        raise ParamError("params.chunk_bytes", f"must be a multiple of 16, got {chunk}")
    out["chunk_bytes"] = chunk


def _resolve_price(p: dict[str, Any], out: dict[str, Any]) -> None:
    """Fill in the price table and what it needs (memory_mb, arch) when the plan gives one."""
    try:
        out["price_table"] = cost.PriceTable.from_dict(p["price_table"])
    except (ValueError, TypeError, AttributeError) as exc:
        raise ParamError("params.price_table", str(exc)) from None
    mem = p.get("memory_mb")
    if isinstance(mem, bool) or not isinstance(mem, (int, float)) or mem <= 0:
        raise ParamError("params.memory_mb", f"a price table needs memory_mb > 0, got {mem!r}")
    out["memory_mb"] = float(mem)
    out["arch"] = str(p.get("arch", "x86_64"))
    if out["arch"] not in out["price_table"].per_gb_second:
        raise ParamError("params.arch", f"no per-GB-second rate for {out['arch']!r} in price_table")


def resolve(bench: Benchmark) -> dict[str, Any]:
    """Validated parameters of a crypto benchmark, defaults filled in; raises ParamError."""
    p = bench.params
    alg, named = _resolve_alg(bench)
    out: dict[str, Any] = {"alg": alg, "crypto_dir": crypto_dir(p)}
    _resolve_common(p, out)
    resolve_tier(p, out)
    if alg == KMS_ALG:
        return _resolve_kms_alg(p, out)
    _resolve_cells(p, out, alg, named, bench.allow_weak_keys)
    if "price_table" in p:
        _resolve_price(p, out)
    return out


def _steady_params(p: dict[str, Any]) -> tuple[float, float]:
    """``warmup_s`` (time-based warm-up limit, 0: none) and ``tolerance`` (steady-state agreement)."""
    warmup_s, tol = p.get("warmup_s", 0), p.get("tolerance", 0.05)
    if isinstance(warmup_s, bool) or not isinstance(warmup_s, (int, float)) or warmup_s < 0:
        raise ParamError("params.warmup_s", f"seconds >= 0, got {warmup_s!r}")
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < 1:
        raise ParamError("params.tolerance", f"a fraction in (0, 1), got {tol!r}")
    return float(warmup_s), float(tol)


def system_cpu() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs from /proc/stat; (0, 0) where there is none."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    return total - idle, total


def _languages(p: dict[str, Any]) -> list[str]:
    langs = p.get("languages", list(LANGUAGES))
    if not isinstance(langs, list) or not langs or any(lang not in LANGUAGES for lang in langs):
        raise ParamError("params.languages", f"a list of {', '.join(LANGUAGES)}, got {langs!r}")
    return langs


def _resolve_kms(p: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """Key-service parameters: languages, key names (kms.KEYS), calls before the warm ones."""

    out["languages"] = _languages(p)
    keys = p.get("kms_keys", list(KEYS))
    if not isinstance(keys, list) or not keys or any(k not in KEYS for k in keys):
        raise ParamError("params.kms_keys", f"a list of {', '.join(KEYS)}, got {keys!r}")
    out["kms_keys"] = keys
    warm = p.get("warm_after", 10 if out["iterations"] > 10 else 1)
    if isinstance(warm, bool) or not isinstance(warm, int) or not 0 <= warm < out["iterations"]:
        raise ParamError("params.warm_after", f"an integer in [0, iterations), got {warm!r}")
    out["warm_after"] = warm
    return out


def crypto_dir(params: dict[str, Any]) -> Path:
    return Path(params["crypto_dir"]) if params.get("crypto_dir") else workloads_dir() / "crypto"


def command(lang: str, root: Path) -> tuple[list[str], dict[str, str]] | str:
    """The command line of one language's program and its extra environment, or why it cannot run."""
    env: dict[str, str] = {}
    if lang == "python":
        env["PYTHONPATH"] = str(root / "python")
        return [sys.executable, "-m", "testbed_crypto"], env
    if lang in ("go", "rust"):
        exe = root / ("go/bin/testbed-crypto" if lang == "go" else "rust/target/release/testbed-crypto")
        if not exe.exists():
            return f"{lang} program not built ({exe.relative_to(root)}; `make build` needs its toolchain)"
        return [str(exe)], env
    runtime = "java" if lang == "java" else "node"
    if shutil.which(runtime) is None:
        return f"{runtime} runtime not found on PATH"
    if lang == "java":
        jar = root / "java/target/testbed-crypto.jar"
        if not jar.exists():
            return "java program not built (java/target/testbed-crypto.jar): `make build` with JDK and Maven"
        # 75 % of the machine's memory as heap: decrypting a 1 GiB file holds it and its ciphertext
        return ["java", "-XX:MaxRAMPercentage=75", "-jar", str(jar)], env
    if not (root / "node/node_modules").is_dir():
        return "node dependencies not installed (node/node_modules): `make build` with npm"
    return ["node", "--openssl-legacy-provider", str(root / "node/main.js")], env


def json_payload(size: int) -> bytes:
    """A JSON document of exactly ``size`` bytes (size >= 32), like an API request body."""
    doc: dict[str, Any] = {"id": "testbed-crypto", "items": [], "pad": ""}
    i = 0
    while len(json.dumps(doc)) < size - 64:
        doc["items"].append({"n": i, "name": f"item-{i}", "price": round(i * 1.25, 2)})
        i += 1
    doc["pad"] = "x" * max(0, size - len(json.dumps(doc)))
    data = json.dumps(doc).encode()
    if len(data) != size:
        raise WorkloadError(f"cannot make a {size}-byte JSON payload")
    return data


def input_file(scratch: Path, size: int, kind: str) -> Path:
    """A scratch file of ``size`` random (or JSON) bytes, made once and reused."""
    d = scratch / "crypto"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{kind}-{size}.bin"
    if path.exists() and path.stat().st_size == size:
        return path
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        if kind == "json":
            fh.write(json_payload(size))
        elif kind == "text":
            _write_text(fh, size)
        else:
            left = size
            while left:
                n = min(left, 1 << 20)
                fh.write(os.urandom(n))
                left -= n
    tmp.replace(path)
    return path


#: words of the text files (the study's "text" file kind: compressible ASCII prose)
_WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "cloud",
    "virtual",
    "machine",
    "hypervisor",
    "encrypts",
    "file",
    "data",
    "with",
    "key",
    "block",
    "cipher",
    "mode",
    "and",
    "measures",
    "time",
    "and",
    "processor",
    "load",
    "of",
    "each",
    "run",
]


def _write_text(fh: Any, size: int) -> None:
    """``size`` bytes of ASCII text lines made of common words (seeded by the size: reproducible)."""

    rng = random.Random(size)  # noqa: S311 - file content, not key material
    left = size
    while left:
        line = " ".join(rng.choices(_WORDS, k=4096)).encode()[: min(left, 1 << 20) - 1] + b"\n"
        fh.write(line[:left])
        left -= len(line[:left])


def size_label(n: int) -> str:
    for unit, k in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k}{unit}"
    return f"{n}B"


def cell_metrics(out: dict[str, Any], res: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Quantities of one cell from the program's output (and the FaaS price table)."""
    times = [t / 1e9 for t in out["times_ns"]]
    median = statistics.median(times)
    size = int(out["payload_bytes"])
    cpu_s = out["cpu_ns"] / 1e9
    m = {
        "time_per_op": metric(median, "s", "lower"),
        "time_per_op_mean": metric(statistics.fmean(times), "s", "lower"),
        "cold_time": metric(out["cold_ns"] / 1e9, "s", "lower"),
        "ops_per_s": metric(1 / median if median > 0 else 0.0, "op/s", "higher"),
        "cpu_percent": metric(
            100.0 * out["cpu_ns"] / out["wall_ns"] if out["wall_ns"] else 0.0, "%", "lower"
        ),
        "cpu_s_per_op": metric(cpu_s / len(times), "s", "lower"),
    }
    # the warm-up's counters (steady, its operations and length) describe how the cell ran, not what
    # it measured: they stay in samples (cell_samples), never metrics a report would average
    if size > 0:
        m["throughput"] = metric(size / median if median > 0 else 0.0, "B/s", "higher")
        m["cpu_s_per_gb"] = metric(cpu_s / (size * len(times) / 1e9), "s/GB", "lower")
    table = res.get("price_table")
    if table is not None:
        warm = cost.invocation_cost(res["memory_mb"], median, table, res["arch"])
        cold = cost.invocation_cost(res["memory_mb"], out["cold_ns"] / 1e9, table, res["arch"])
        m["gb_seconds"] = metric(warm["gb_seconds"], "GB*s", "lower")
        m["price_per_invocation"] = metric(warm["price"], table.currency, "lower")
        m["cold_price_per_invocation"] = metric(cold["price"], table.currency, "lower")
        eff = cost.cost_efficiency(m["ops_per_s"]["value"], warm["price"])
        if eff != float("inf"):
            m["cost_efficiency"] = metric(eff, f"op/s/{table.currency}", "higher")
    return m


def cells(res: dict[str, Any], sizes: list[int], files: list[Any] | None = None) -> list[dict[str, Any]]:
    """Every language x key size x op x size (or file) x CPU-count cell, named as its metrics are.

    CPU counts are ``cpus`` (taskset) or ``guest_cpus`` (the guest the cell is for); with
    ``files`` (a user's directory) each file is a cell, named by its position.
    """
    out = []
    counts = res["cpus"] or res.get("guest_cpus") or [0]
    mode = "taskset" if res["cpus"] else "guest" if res.get("guest_cpus") else None
    items = list(enumerate(files)) if files else [(None, size) for size in sizes]
    for lang, bits, op, (i, item), ncpu in itertools.product(
        res["languages"], res["key_bits"], res["ops"], items, counts
    ):
        size = item.size if files else item
        parts = [lang, op]
        if len(res["key_bits"]) > 1:
            parts.append(f"k{bits}")
        if files and len(files) > 1:
            parts.append(f"f{i + 1}")
        elif len(sizes) > 1:
            parts.append(size_label(size))
        if ncpu:
            parts.append(f"cpu{ncpu}")
        cell = {
            "cell": ".".join(parts),
            "language": lang,
            "op": op,
            "key_bits": bits,
            "bytes": size,
            "cpus": ncpu or None,
            "cpu_mode": mode,
        }
        if files:
            cell.update(file=item.path.name, file_kind=item.kind)
        out.append(cell)
    return out


#: per-cell output kept in the samples
_KEEP_SAMPLES = (
    "times_ns",
    "cold_ns",
    "cpu_user_ns",
    "cpu_sys_ns",
    "vectors",
    "mode",
    "padding",
    "input",
    "steady",
    "warmup_ns",
    "warmup_batches_ns",
    "backend",
    "provider",
)


def _skip_reason(
    cmd: Any, info: dict[str, Any], affinity: list[int], res: dict[str, Any], streamed: bool
) -> str | None:
    """Why a cell cannot run here (its program is missing, a Python-only feature, a guest of
    another vCPU count, too few CPUs, no taskset), or None."""
    ncpu = info["cpus"] or 0
    reason = cmd if isinstance(cmd, str) else None
    if reason is None:
        reason = study.language_skip(info["language"], res["alg"], info["op"], streamed, info["bytes"])
    if reason is None and info.get("cpu_mode") == "guest":
        return study.guest_skip(ncpu, len(affinity))
    if reason is None and ncpu > len(affinity):
        reason = f"machine has {len(affinity)} CPUs, cell needs {ncpu}"
    if reason is None and ncpu and shutil.which("taskset") is None:
        reason = "taskset (util-linux) not found: cannot pin to CPUs"
    return reason


def _cell_argv(
    ctx: RunContext, res: dict[str, Any], info: dict[str, Any], prog: list[str], vectors: Path, streamed: bool
) -> list[str]:
    """The ``run`` command line of one cell (without CPU pinning)."""
    argv = [
        *prog,
        "run",
        "--alg",
        res["alg"],
        "--key-bits",
        str(info["key_bits"]),
        "--op",
        info["op"],
        "--iterations",
        str(res["iterations"]),
        "--warmup",
        str(res["warmup"]),
        "--vectors",
        str(vectors),
        "--chunk-bytes",
        str(res["chunk_bytes"]),
    ]
    if res["warmup_s"]:
        argv += ["--warmup-s", str(res["warmup_s"]), "--tolerance", str(res["tolerance"])]
    size = info["bytes"]
    if streamed:
        # a file: streamed (decryption too, in Python: a ciphertext file made before timing)
        argv += study.input_argv(info["language"], info["op"], _file_of(ctx, res, info))
    elif res["payload"] in ("json", "text"):
        argv += ["--input", str(input_file(ctx.scratch, size, res["payload"]))]
    else:
        argv += ["--payload-bytes", str(size)]
    return argv


def _file_of(ctx: RunContext, res: dict[str, Any], info: dict[str, Any]) -> Path:
    """The file a streamed cell works on: the user's, a generated PDF/image/archive, or bytes."""
    if "file" in info:
        return Path(res["files_dir"]) / info["file"]
    if res["payload"] in study.KINDS:
        return study.kind_file(ctx.scratch, res["payload"], info["bytes"])
    return input_file(ctx.scratch, info["bytes"], res["payload"])


def _set_status(outcome: Outcome, cell_log: list[dict[str, Any]], failures: list[str]) -> None:
    """Failed when a cell failed, skipped when no cell ran, else left as it is."""
    ran = [c for c in cell_log if c["status"] == "ok"]
    if failures:
        outcome.status, outcome.error = "failed", "; ".join(failures)[:2000]
    elif not ran:
        reasons = sorted({c["reason"] for c in cell_log})
        outcome.status, outcome.error = "skipped", "no cell could run: " + "; ".join(reasons)[:2000]


def _user_files(res: dict[str, Any]) -> list[Any] | None:
    """A user's files (params.files_dir) as crypto.files.UserFile, or None."""
    if "files_dir" not in res:
        return None
    try:
        return user_files(Path(res["files_dir"]))
    except FileKindError as exc:
        raise WorkloadError(f"params.files_dir: {exc}") from None


class Crypto(Workload):
    """The typed params of a crypto benchmark are the mapping :func:`resolve` returns (algorithm
    and key sizes from the name where params say none, cells, payloads, price table, tier)."""

    type = "crypto"
    tool = "testbed-crypto"
    #: checks its own keys (:data:`_KEYS`) in :func:`resolve`
    Params = None
    #: throughput per cell (time per operation where a cell has no byte size)
    primary = (r".+\.throughput", r".+\.time_per_op")
    default_timeout_s = 3600.0
    estimate_note = "estimated from file bytes and measured cipher rates, docs/crypto.md"

    @classmethod
    def parse(cls, bench: Benchmark) -> dict[str, Any]:
        check_tree(bench.params)
        return resolve(bench)

    @classmethod
    def estimate_s(cls, params: dict[str, Any]) -> float:
        """From the cells' bytes and measured cipher rates (kms-envelope: the typical minute)."""
        return estimate.crypto_estimate_s(params) if "key_bits" in params else cls.typical_s

    @classmethod
    def cells(cls, params: dict[str, Any]) -> dict[str, Any] | None:
        return estimate.cell_matrix(params)

    @classmethod
    def primary_metrics(cls, names: Iterable[str]) -> list[str]:
        """A cell's ``throughput``; its ``time_per_op`` where the same cell has no throughput."""
        names = sorted(set(names))
        first = [n for n in names if re.fullmatch(cls.primary[0], n)]
        cells = {n.rsplit(".", 1)[0] for n in first}
        rest = [n for n in names if re.fullmatch(cls.primary[1], n) and n.rsplit(".", 1)[0] not in cells]
        return sorted(first + rest)

    def run(self, ctx: RunContext, params: dict[str, Any]) -> Outcome:
        res = params
        root = res["crypto_dir"]
        tiers = TierCells(res["tier"]) if "tier" in res else None
        try:
            return self._run_tiers(ctx, res, root, tiers)
        finally:
            if tiers is not None:
                tiers.close()

    def _run_tiers(
        self, ctx: RunContext, res: dict[str, Any], root: Path, tiers: TierCells | None
    ) -> Outcome:
        """The benchmark's cells (each in its tier's cgroup when ``tiers``), as one outcome."""
        if res["alg"] == KMS_ALG:
            outcome = run_kms(ctx, res, root, tiers)
            tier_params(outcome, tiers)
            return outcome
        vectors = root / "vectors" / "vectors.json"
        if not vectors.exists():
            raise WorkloadError(
                f"vector file missing: {vectors}", hint="set params.crypto_dir or TESTBED_WORKLOADS_DIR"
            )
        streamed = "file_sizes" in res or "files_dir" in res
        files = _user_files(res)
        sizes = [f.size for f in files] if files else res["file_sizes"] if streamed else res["payload_sizes"]
        metrics, samples, versions, failures = self._run_cells(ctx, res, root, vectors, tiers, files)
        outcome = Outcome(
            metrics=metrics,
            samples=samples,
            tool={"name": self.tool, "version": "contract 2", "implementations": versions},
            params={
                "alg": res["alg"],
                "key_bits": res["key_bits"],
                "ops": res["ops"],
                "languages": res["languages"],
                "bytes": sizes,
                "streamed": streamed,
                "payload": res["payload"],
                **({"guest_cpus": res["guest_cpus"]} if res.get("guest_cpus") else {}),
                **({"files": [f.path.name for f in files]} if files else {}),
            },
        )
        tier_params(outcome, tiers)
        _set_status(outcome, samples["cells"], failures)
        return outcome

    def _run_cells(
        self,
        ctx: RunContext,
        res: dict[str, Any],
        root: Path,
        vectors: Path,
        tiers: TierCells | None,
        files: list[Any] | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, str], list[str]]:
        """Run every cell: (metrics, samples, implementation versions, failures)."""
        metrics: dict[str, Any] = {}
        samples: dict[str, Any] = {"cells": []}
        versions: dict[str, str] = {}
        failures: list[str] = []
        streamed = "file_sizes" in res or bool(files)
        sizes = res.get("file_sizes") or res.get("payload_sizes") or []
        affinity = sorted(os.sched_getaffinity(0))
        commands = {lang: command(lang, root) for lang in res["languages"]}
        for info in cells(res, sizes, files):
            cell, lang, ncpu = info["cell"], info["language"], info["cpus"] or 0
            cmd = commands[lang]
            reason = _skip_reason(cmd, info, affinity, res, streamed)
            if reason is not None or isinstance(cmd, str):
                samples["cells"].append({**info, "status": "skipped", "reason": reason})
                continue
            argv = _cell_argv(ctx, res, info, cmd[0], vectors, streamed)
            if ncpu and info["cpu_mode"] == "taskset":
                argv = ["taskset", "-c", ",".join(map(str, affinity[:ncpu])), *argv]
            busy0, total0 = system_cpu()
            status, out, cg_metrics = run_tiered(
                tiers, cell, argv, lambda a, env=cmd[1]: self._run_cell(ctx, a, env)
            )
            busy1, total1 = system_cpu()
            if status != "ok":
                samples["cells"].append({**info, "status": status, "reason": out["error"]})
                if status == "failed":
                    failures.append(f"{cell}: {out['error']}")
                continue
            versions[lang] = f"{out['runtime']}; {out['library']}"
            for q, v in {**cell_metrics(out, res), **cg_metrics}.items():
                metrics[f"{cell}.{q}"] = v
            if total1 > total0:
                sys_pct = 100.0 * (busy1 - busy0) / (total1 - total0)
                metrics[f"{cell}.system_cpu_percent"] = metric(sys_pct, "%", "lower")
            samples[cell] = {k: out[k] for k in _KEEP_SAMPLES if k in out}
            if out.get("steady") is not None:  # the warm-up's own count (it never was a measurement)
                samples[cell]["warmup_ops"] = out.get("warmup", 0)
            samples["cells"].append({**info, "status": "ok", "reason": None})
        return metrics, samples, versions, failures

    @staticmethod
    def _run_cell(ctx: RunContext, argv: list[str], extra_env: dict[str, str]) -> tuple[str, dict[str, Any]]:
        """Run one program; (ok|skipped|failed, its JSON output or {"error"})."""
        env = {**os.environ, **extra_env} if extra_env else None
        proc = ctx.exec(argv, env=env, check=False)
        try:
            out = json.loads(proc.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-1:] or ["no output"]
            return "failed", {"error": f"exit {proc.returncode}: {tail[0][:300]}"}
        if proc.returncode == 4:
            return "skipped", {"error": out.get("error", "unsupported")}
        if proc.returncode != 0 or "error" in out:
            return "failed", {"error": f"exit {proc.returncode}: {out.get('error', '?')}"}
        return "ok", out
