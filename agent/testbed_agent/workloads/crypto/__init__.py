"""``crypto``: one algorithm (and key sizes) timed in up to five languages (workloads/crypto/).

Each cell (language x op x key size x input size x CPU count) is one run of that language's
program under the CONTRACT.md command line; the program checks the shared vectors before timing.
All cells of a benchmark go into one record: metric names are ``<cell>.<quantity>``, e.g.
``go.encrypt.time_per_op``; cells that could not run are listed in ``samples.cells`` with the
reason. ``alg: kms-envelope`` times envelope encryption through a KMS-compatible key service.
``run`` receives the typed params (:class:`~testbed_agent.workloads.crypto.params.CryptoParams`).
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
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from testbed_agent.benchmark import Benchmark
from testbed_agent.params import check_tree
from testbed_agent.results import Outcome, metric
from testbed_agent.workloads.base import RunContext, Workload
from testbed_agent.workloads.crypto import estimate, study
from testbed_agent.workloads.crypto.files import FileKindError, UserFile, user_files
from testbed_agent.workloads.crypto.kms import run_kms
from testbed_agent.workloads.crypto.params import (
    ALGS,
    KMS_ALG,
    LANGUAGES,
    PLAN_KEYS,
    CryptoParams,
    alg_from_name,
    crypto_dir,
    parse,
)
from testbed_agent.workloads.crypto.tiers import TierCells, run_tiered, tier_params
from testbed_shared import cost
from testbed_shared.errors import WorkloadError

__all__ = [
    "ALGS",
    "KMS_ALG",
    "LANGUAGES",
    "Crypto",
    "CryptoParams",
    "alg_from_name",
    "command",
    "crypto_dir",
    "json_payload",
]


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


def cell_metrics(out: dict[str, Any], params: CryptoParams) -> dict[str, dict[str, Any]]:
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
    price = params.price
    if price is not None:
        table = price.table
        warm = cost.invocation_cost(price.memory_mb, median, table, price.arch)
        cold = cost.invocation_cost(price.memory_mb, out["cold_ns"] / 1e9, table, price.arch)
        m["gb_seconds"] = metric(warm["gb_seconds"], "GB*s", "lower")
        m["price_per_invocation"] = metric(warm["price"], table.currency, "lower")
        m["cold_price_per_invocation"] = metric(cold["price"], table.currency, "lower")
        eff = cost.cost_efficiency(m["ops_per_s"]["value"], warm["price"])
        if eff != float("inf"):
            m["cost_efficiency"] = metric(eff, f"op/s/{table.currency}", "higher")
    return m


def cells(
    params: CryptoParams, sizes: Sequence[int], files: list[UserFile] | None = None
) -> list[dict[str, Any]]:
    """Every language x key size x op x size (or file) x CPU-count cell, named as its metrics are.

    CPU counts are ``cpus`` (taskset) or ``guest_cpus`` (the guest the cell is for); with
    ``files`` (a user's directory) each file is a cell, named by its position.
    """
    out = []
    counts = params.cpus or params.guest_cpus or (0,)
    mode = "taskset" if params.cpus else "guest" if params.guest_cpus else None
    items = list(enumerate(files)) if files else [(None, size) for size in sizes]
    for lang, bits, op, (i, item), ncpu in itertools.product(
        params.languages, params.key_bits, params.ops, items, counts
    ):
        size = item.size if files else item
        parts = [lang, op]
        if len(params.key_bits) > 1:
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
    cmd: Any, info: dict[str, Any], affinity: list[int], params: CryptoParams, streamed: bool
) -> str | None:
    """Why a cell cannot run here (its program is missing, a Python-only feature, a guest of
    another vCPU count, too few CPUs, no taskset), or None."""
    ncpu = info["cpus"] or 0
    reason = cmd if isinstance(cmd, str) else None
    if reason is None:
        reason = study.language_skip(info["language"], params.alg, info["op"], streamed, info["bytes"])
    if reason is None and info.get("cpu_mode") == "guest":
        return study.guest_skip(ncpu, len(affinity))
    if reason is None and ncpu > len(affinity):
        reason = f"machine has {len(affinity)} CPUs, cell needs {ncpu}"
    if reason is None and ncpu and shutil.which("taskset") is None:
        reason = "taskset (util-linux) not found: cannot pin to CPUs"
    return reason


def _cell_argv(
    ctx: RunContext,
    params: CryptoParams,
    info: dict[str, Any],
    prog: list[str],
    vectors: Path,
    streamed: bool,
) -> list[str]:
    """The ``run`` command line of one cell (without CPU pinning)."""
    argv = [
        *prog,
        "run",
        "--alg",
        params.alg,
        "--key-bits",
        str(info["key_bits"]),
        "--op",
        info["op"],
        "--iterations",
        str(params.iterations),
        "--warmup",
        str(params.warmup),
        "--vectors",
        str(vectors),
        "--chunk-bytes",
        str(params.chunk_bytes),
    ]
    if params.warmup_s:
        argv += ["--warmup-s", str(params.warmup_s), "--tolerance", str(params.tolerance)]
    size = info["bytes"]
    if streamed:
        # a file: streamed (decryption too, in Python: a ciphertext file made before timing)
        argv += study.input_argv(info["language"], info["op"], _file_of(ctx, params, info))
    elif params.payload in ("json", "text"):
        argv += ["--input", str(input_file(ctx.scratch, size, params.payload))]
    else:
        argv += ["--payload-bytes", str(size)]
    return argv


def _file_of(ctx: RunContext, params: CryptoParams, info: dict[str, Any]) -> Path:
    """The file a streamed cell works on: the user's, a generated PDF/image/archive, or bytes."""
    if "file" in info and params.files is not None and params.files.dir is not None:
        return Path(params.files.dir) / info["file"]
    if params.payload in study.KINDS:
        return study.kind_file(ctx.scratch, params.payload, info["bytes"])
    return input_file(ctx.scratch, info["bytes"], params.payload)


def _set_status(outcome: Outcome, cell_log: list[dict[str, Any]], failures: list[str]) -> None:
    """Failed when a cell failed, skipped when no cell ran, else left as it is."""
    ran = [c for c in cell_log if c["status"] == "ok"]
    if failures:
        outcome.status, outcome.error = "failed", "; ".join(failures)[:2000]
    elif not ran:
        reasons = sorted({c["reason"] for c in cell_log})
        outcome.status, outcome.error = "skipped", "no cell could run: " + "; ".join(reasons)[:2000]


def _user_files(params: CryptoParams) -> list[UserFile] | None:
    """A user's files (params.files_dir) as crypto.files.UserFile, or None."""
    if params.files is None or params.files.dir is None:
        return None
    try:
        return user_files(Path(params.files.dir))
    except FileKindError as exc:
        raise WorkloadError(f"params.files_dir: {exc}") from None


class Crypto(Workload):
    """Algorithm and key sizes (from the name where params say none) over languages, payloads or
    files and CPU counts; or ``kms-envelope``'s key-service calls. Params: :class:`CryptoParams`."""

    type = "crypto"
    tool = "testbed-crypto"
    Params = CryptoParams
    #: throughput per cell (time per operation where a cell has no byte size)
    primary = (r".+\.throughput", r".+\.time_per_op")
    default_timeout_s = 3600.0
    estimate_note = "estimated from file bytes and measured cipher rates, docs/crypto.md"

    @classmethod
    def parse(cls, bench: Benchmark) -> CryptoParams:
        """The typed params: the algorithm may come from ``bench.name``, weak keys need the plan's
        ``allow_weak_keys`` (:func:`testbed_agent.workloads.crypto.params.parse`)."""
        check_tree(bench.params)
        return parse(bench)

    @classmethod
    def param_keys(cls) -> set[str]:
        """The plan's parameter names (the typed params group them differently)."""
        return set(PLAN_KEYS)

    @classmethod
    def estimate_s(cls, params: CryptoParams) -> float:
        """From the cells' bytes and measured cipher rates (kms-envelope: the typical minute)."""
        return estimate.crypto_estimate_s(params) if params.kms is None else cls.typical_s

    @classmethod
    def cells(cls, params: CryptoParams) -> dict[str, Any] | None:
        return estimate.cell_matrix(params)

    @classmethod
    def primary_metrics(cls, names: Iterable[str]) -> list[str]:
        """A cell's ``throughput``; its ``time_per_op`` where the same cell has no throughput."""
        names = sorted(set(names))
        first = [n for n in names if re.fullmatch(cls.primary[0], n)]
        cells = {n.rsplit(".", 1)[0] for n in first}
        rest = [n for n in names if re.fullmatch(cls.primary[1], n) and n.rsplit(".", 1)[0] not in cells]
        return sorted(first + rest)

    def run(self, ctx: RunContext, params: CryptoParams) -> Outcome:
        root = params.crypto_dir or crypto_dir({})
        tiers = TierCells(params.tier) if params.tier is not None else None
        try:
            return self._run_tiers(ctx, params, root, tiers)
        finally:
            if tiers is not None:
                tiers.close()

    def _run_tiers(
        self, ctx: RunContext, params: CryptoParams, root: Path, tiers: TierCells | None
    ) -> Outcome:
        """The benchmark's cells (each in its tier's cgroup when ``tiers``), as one outcome."""
        if params.kms is not None:
            outcome = run_kms(ctx, params, root, tiers)
            tier_params(outcome, tiers)
            return outcome
        vectors = root / "vectors" / "vectors.json"
        if not vectors.exists():
            raise WorkloadError(
                f"vector file missing: {vectors}", hint="set params.crypto_dir or TESTBED_WORKLOADS_DIR"
            )
        streamed = params.streamed
        files = _user_files(params)
        sizes = [f.size for f in files] if files else list(params.file_sizes or params.payload_bytes)
        metrics, samples, versions, failures = self._run_cells(ctx, params, root, vectors, tiers, files)
        outcome = Outcome(
            metrics=metrics,
            samples=samples,
            tool={"name": self.tool, "version": "contract 2", "implementations": versions},
            params={
                "alg": params.alg,
                "key_bits": list(params.key_bits),
                "ops": list(params.ops),
                "languages": list(params.languages),
                "bytes": sizes,
                "streamed": streamed,
                "payload": params.payload,
                **({"guest_cpus": list(params.guest_cpus)} if params.guest_cpus else {}),
                **({"files": [f.path.name for f in files]} if files else {}),
            },
        )
        tier_params(outcome, tiers)
        _set_status(outcome, samples["cells"], failures)
        return outcome

    def _run_cells(
        self,
        ctx: RunContext,
        params: CryptoParams,
        root: Path,
        vectors: Path,
        tiers: TierCells | None,
        files: list[UserFile] | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, str], list[str]]:
        """Run every cell: (metrics, samples, implementation versions, failures)."""
        metrics: dict[str, Any] = {}
        samples: dict[str, Any] = {"cells": []}
        versions: dict[str, str] = {}
        failures: list[str] = []
        streamed = bool(params.file_sizes) or bool(files)
        sizes = params.file_sizes or params.payload_bytes
        affinity = sorted(os.sched_getaffinity(0))
        commands = {lang: command(lang, root) for lang in params.languages}
        for info in cells(params, sizes, files):
            cell, lang, ncpu = info["cell"], info["language"], info["cpus"] or 0
            cmd = commands[lang]
            reason = _skip_reason(cmd, info, affinity, params, streamed)
            if reason is not None or isinstance(cmd, str):
                samples["cells"].append({**info, "status": "skipped", "reason": reason})
                continue
            argv = _cell_argv(ctx, params, info, cmd[0], vectors, streamed)
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
            for q, v in {**cell_metrics(out, params), **cg_metrics}.items():
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
