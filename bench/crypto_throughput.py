"""AES-256-GCM: each language's harness against that language's own benchmark of the same library
calls (target: at least 0.9 of it), and every implementation against the machine's fastest
(information).

The harness is the crypto program the agent runs (CONTRACT.md: Python `cryptography`, Go stdlib,
Rust `ring`, Java SunJCE, Node `node:crypto`), after its time-based warm-up, then a timed loop.
Two call patterns, one thread each:

- **stream**: one GCM message of 1 MiB per operation through one cipher context fed 16 KiB per
  update into one reused buffer (Go and ring have no incremental GCM: one in-place seal);
- **messages**: 16 KiB messages, a fresh nonce and cipher context each.

**The reference of a language** is that language's own benchmark tool timing the same library calls
at the same buffer sizes, without the harness around them (its dispatch, nonce bookkeeping, clock
reads, result lists): Go's `testing.B` (workloads/crypto/go/gcm_bench_test.go), criterion for Rust
(rust/benches/gcm.rs), pyperf for Python (python/gcm_pyperf.py), a JMH-shaped timed loop for Java
(java/bench/GcmReference.java: warm-up, then 0.5 s iterations) and a script of node's own
benchmark shape for Node (node/bench/gcm.js). Like with like, every rate is bytes per second of the
process's CPU time (all threads: the harness's rusage over its timed loop, the references' CPU
clock), so other load on the machine does not count.

Rounds alternate the languages in a seeded random order (and, within a language, its two harness
runs and its reference run). Estimand: the geometric mean over rounds of harness/reference; unit:
the round; interval: t on the per-round log ratios at 95 % / L for the L planned looks (Bonferroni,
so stopping at the first look where every language is decided keeps the error rate at 5 %). By
default one look after 3 rounds (a 95 % interval; `make bench` keeps to 15 minutes); longer runs
plan more looks (``--cap 28 --first 12 --every 8``). Decision: "met" when the whole interval is at
or above 0.9, "not met" when below it, otherwise "not shown" with the rounds that would decide. It
runs until every ratio is decided, the last planned look, or the time budget (``--budget-s``), and
says which.

Information, as before: each harness against the fastest implementation on the machine for the same
pattern (highest median harness rate, `openssl speed -evp aes-256-gcm -bytes 16384` included),
named with its version and the AES code path its binary holds (objdump census: 128-bit AES-NI,
256-bit VAES/VPCLMULQDQ, 512-bit VAES) and whether the CPU has it; when an OpenSSL-based
implementation beats `openssl speed`, its rate again with VAES and VPCLMULQDQ masked
(OPENSSL_ia32cap; docs/crypto.md, "Why a language can beat openssl speed").
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import ALPHA, Progress, at_least, looks  # noqa: E402

from testbed_agent.sysinfo.probe import Probe  # noqa: E402
from testbed_agent.workloads.crypto import LANGUAGES, command  # noqa: E402
from testbed_shared.paths import build_cache  # noqa: E402

CRYPTO = ROOT / "workloads" / "crypto"
#: the cargo target the build shares (mk/crypto.mk: TESTBED_CACHE/cargo-target)
CARGO_TARGET = build_cache() / "cargo-target"
VECTORS = CRYPTO / "vectors" / "vectors.json"
TARGET = 0.9
#: pattern -> (payload bytes, timed iterations of the harness, extra openssl speed flags)
PATTERNS = {"stream": (1 << 20, 600, []), "messages": (16384, 20000, ["-aead"])}
UPDATE = 16384
#: what the references read for their buffer sizes (the harness's, so both do the same work)
SIZES_ENV = {
    "GCM_STREAM_BYTES": str(PATTERNS["stream"][0]),
    "GCM_UPDATE_BYTES": str(UPDATE),
    "GCM_MESSAGE_BYTES": str(PATTERNS["messages"][0]),
}
#: time-based warm-up limit per language, harness and reference alike (the JVM needs C2)
WARMUP_S = {"java": 10.0}
#: OPENSSL_ia32cap that clears VAES and VPCLMULQDQ (CPUID.7.0:ECX bits 9 and 10, i.e. bits 41 and
#: 42 of the second 64-bit word); an empty value would clear every capability, AES-NI included
MASK_WIDE = ":~0x60000000000"
OPENSSL = "openssl speed"


def _run(
    argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: int = 600
) -> str:
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise RuntimeError(f"{' '.join(argv[:3])}... exited {proc.returncode}: {' | '.join(tail)[-400:]}")
    return proc.stdout


def openssl_rate(extra: list[str], seconds: int, env: dict[str, str] | None = None) -> float:
    """Bytes per second of `openssl speed -evp aes-256-gcm -bytes 16384` (user-CPU divisor)."""
    argv = [
        "openssl",
        "speed",
        *extra,
        "-evp",
        "aes-256-gcm",
        "-bytes",
        "16384",
        "-seconds",
        str(seconds),
        "-mr",
    ]
    out = _run(argv, env=env, timeout=120)
    m = re.search(r"^\+F:\d+:[^:]+:([0-9.eE+]+)\s*$", out, re.M)
    if not m:
        raise SystemExit(f"cannot read openssl speed output: {out[-300:]}")
    return float(m.group(1))


# --- the harness: the crypto program the agent runs ------------------------------------------------


def lang_run(
    lang: str, size: int, iterations: int, warmup_s: float, env: dict[str, str] | None = None
) -> dict:
    """One harness run: AES-256-GCM encryption of ``size`` bytes, after a steady-state warm-up."""
    cmd = command(lang, CRYPTO)
    if isinstance(cmd, str):
        raise RuntimeError(cmd)
    argv, extra = cmd
    spec = ["run", "--alg", "aes-gcm", "--key-bits", "256", "--op", "encrypt", "--payload-bytes", str(size)]
    spec += ["--iterations", str(iterations), "--warmup-s", str(warmup_s), "--vectors", str(VECTORS)]
    if size > UPDATE:
        spec += ["--update-bytes", str(UPDATE)]
    out = _run([*argv, *spec], env={**extra, **(env or {})})
    return json.loads(out.strip().splitlines()[-1])


def harness_rate(out: dict[str, Any]) -> float:
    """Bytes per CPU second of the harness's timed loop (all threads)."""
    size, n = out["payload_bytes"], len(out["times_ns"])
    return size * n / (out["cpu_ns"] / 1e9) if out["cpu_ns"] > 0 else math.nan


# --- the references: each language's own benchmark of the same calls ------------------------------


class Reference:
    """A language's own benchmark of the two patterns: ``prepare`` builds it once (outside the
    rounds), ``run`` measures both patterns and returns bytes per CPU second of each."""

    tool = ""

    def __init__(self, lang: str, work: Path) -> None:
        self.lang, self.work = lang, work

    def prepare(self) -> None:
        """Build what the reference needs (once)."""

    def run(self, warmup_s: float) -> dict[str, float]:
        raise NotImplementedError


def _rates(per_op_ns: dict[str, float]) -> dict[str, float]:
    return {p: PATTERNS[p][0] / (ns / 1e9) for p, ns in per_op_ns.items()}


class GoReference(Reference):
    tool = "go test -bench (testing.B, cpu-ns/op from getrusage)"

    def prepare(self) -> None:
        self.exe = self.work / "gcm.test"
        _run(["go", "test", "-c", "-o", str(self.exe), "."], cwd=CRYPTO / "go")

    def run(self, warmup_s: float) -> dict[str, float]:
        out = _run(
            [str(self.exe), "-test.run", "^$", "-test.bench", "^BenchmarkGCM", "-test.benchtime", "2s"],
            cwd=CRYPTO / "go",
            env=SIZES_ENV,
        )
        got = {}
        for name, pattern in (("GCMStream", "stream"), ("GCMMessages", "messages")):
            m = re.search(rf"^Benchmark{name}\S*\s.*?([0-9.]+) cpu-ns/op", out, re.M)
            if not m:
                raise RuntimeError(f"go test printed no cpu-ns/op for {name}: {out[-300:]}")
            got[pattern] = float(m.group(1))
        return _rates(got)


class RustReference(Reference):
    tool = "criterion (iter_custom on CLOCK_PROCESS_CPUTIME_ID)"

    def prepare(self) -> None:
        out = _run(
            ["cargo", "bench", "--locked", "--bench", "gcm", "--no-run", "--message-format=json", "-q"],
            cwd=CRYPTO / "rust",
            env={"CARGO_TARGET_DIR": os.environ.get("CARGO_TARGET_DIR", str(CARGO_TARGET))},
            timeout=1800,
        )
        # the bench target's own artifact: cargo also lists the package's binary (built for
        # benches too), and in no fixed order
        messages = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        exes = [
            m["executable"]
            for m in messages
            if m.get("executable")
            and "bench" in m.get("target", {}).get("kind", [])
            and m["target"]["name"] == "gcm"
        ]
        if not exes:
            raise RuntimeError("cargo bench --no-run built no executable of the bench gcm")
        self.exe = exes[-1]

    def run(self, warmup_s: float) -> dict[str, float]:
        home = self.work / "criterion"
        _run(
            [
                self.exe,
                "--bench",
                "--noplot",
                "--warm-up-time",
                str(max(1.0, warmup_s)),
                "--measurement-time",
                "3",
            ],
            cwd=CRYPTO / "rust",
            env={**SIZES_ENV, "CRITERION_HOME": str(home)},
        )
        got = {}
        for pattern in PATTERNS:
            est = json.loads((home / "gcm" / pattern / "new" / "estimates.json").read_text())
            got[pattern] = float(est["mean"]["point_estimate"])
        return _rates(got)


#: pyperf's worker processes and values per run (its defaults, 20 x 3, take a minute a pattern)
PYPERF_ARGS = ("--processes", "4", "--values", "3", "--quiet")


class PythonReference(Reference):
    tool = "pyperf (bench_time_func on time.process_time_ns)"

    def run(self, warmup_s: float) -> dict[str, float]:
        out = self.work / "pyperf.json"
        out.unlink(missing_ok=True)
        _run(
            [sys.executable, str(CRYPTO / "python" / "gcm_pyperf.py"), *PYPERF_ARGS, "-o", str(out)],
            env=SIZES_ENV,
        )
        doc = json.loads(out.read_text())
        got = {}
        for bench in doc["benchmarks"]:
            name = bench["metadata"]["name"].removeprefix("gcm-")
            values = [v for run in bench["runs"] for v in run.get("values", [])]
            got[name] = 1e9 * statistics.fmean(values)
        return _rates(got)


class JavaReference(Reference):
    tool = "a JMH-shaped timed loop (warm-up, 0.5 s iterations, process CPU time)"

    def prepare(self) -> None:
        self.classes = self.work / "java"
        _run(["javac", "-d", str(self.classes), str(CRYPTO / "java" / "bench" / "GcmReference.java")])

    def run(self, warmup_s: float) -> dict[str, float]:
        out = _run(
            ["java", "-XX:MaxRAMPercentage=75", "-cp", str(self.classes), "GcmReference", str(warmup_s), "3"],
            env=SIZES_ENV,
        )
        doc = json.loads(out.strip().splitlines()[-1])
        return _rates({p: doc[p]["cpu_ns_per_op"] for p in PATTERNS})


class NodeReference(Reference):
    tool = "node's own benchmark shape (benchmark/crypto/aes-gcm-throughput.js), process.cpuUsage"

    def run(self, warmup_s: float) -> dict[str, float]:
        out = _run(
            [
                "node",
                "--openssl-legacy-provider",
                str(CRYPTO / "node" / "bench" / "gcm.js"),
                str(warmup_s),
                "3",
            ],
            env=SIZES_ENV,
        )
        doc = json.loads(out.strip().splitlines()[-1])
        return _rates({p: doc[p]["cpu_ns_per_op"] for p in PATTERNS})


REFERENCES: dict[str, type[Reference]] = {
    "python": PythonReference,
    "go": GoReference,
    "rust": RustReference,
    "java": JavaReference,
    "node": NodeReference,
}


# --- what each implementation is: its version and the AES code paths its binary holds -----------


#: an AES round instruction in objdump's output: VEX (v) or legacy, and its operands
_AES_ROUND = re.compile(r"\b(v?)aesenc(?:last)?\s+(.*)")


@functools.cache
def _objdump_census(path: Path) -> dict[str, int] | None:
    """AES round instructions in ``path`` by register width (None when objdump cannot read it).

    Cached: the tables name the same binary more than once, and disassembling the Python
    package's bundled OpenSSL (14 MB) takes 15 s. Only lines naming ``aesenc`` are parsed."""
    if shutil.which("objdump") is None or not path.is_file():
        return None
    proc = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", str(path)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return None
    counts = {"xmm": 0, "ymm": 0, "zmm": 0}
    for line in proc.stdout.splitlines():
        found = _AES_ROUND.search(line) if "aesenc" in line else None
        if found is None:
            continue
        if not found[1]:  # legacy AES-NI: 128-bit only
            counts["xmm"] += 1
            continue
        width = next((w for w in ("zmm", "ymm", "xmm") if f"%{w}" in found[2]), None)
        if width:
            counts[width] += 1
    return counts


def _binary(lang: str) -> tuple[Path | None, str]:
    """The file holding ``lang``'s AES code, and what it is."""
    if lang == OPENSSL:
        lib = subprocess.run(
            ["openssl", "version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        found = [p for p in Path("/usr/lib").rglob("libcrypto.so.3")] if Path("/usr/lib").is_dir() else []
        return (found[0] if found else None), f"system {lib}"
    if lang == "python":
        try:
            import cryptography
            from cryptography.hazmat.backends.openssl import backend

            so = Path(cryptography.__file__).parent / "hazmat/bindings/_rust.abi3.so"
            return so, f"cryptography {cryptography.__version__}, bundled {backend.openssl_version_text()}"
        except ImportError:
            return None, "cryptography not installed"
    if lang in ("go", "rust"):
        exe = CRYPTO / ("go/bin/testbed-crypto" if lang == "go" else "rust/target/release/testbed-crypto")
        return exe, ""
    if lang == "node" and shutil.which("node"):
        ver = subprocess.run(
            ["node", "-p", "process.version + ' with OpenSSL ' + process.versions.openssl"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        return Path(shutil.which("node") or ""), f"Node {ver}"
    return None, ""


def code_path(lang: str, flags: set[str]) -> str:
    """The AES code paths in the implementation's binary, and which of them this CPU can run."""
    path, what = _binary(lang)
    if lang == "java":
        return "HotSpot intrinsics, generated at run time (no static census)"
    census = _objdump_census(path) if path else None
    if census is None:
        return what or "code path not inspectable"
    wide = []
    if census["zmm"]:
        wide.append(
            f"512-bit VAES ({census['zmm']} instr.{'' if 'avx512f' in flags else ', CPU lacks AVX-512'})"
        )
    if census["ymm"]:
        can = "vaes" in flags and "vpclmulqdq" in flags
        wide.append(f"256-bit VAES/VPCLMULQDQ ({census['ymm']} instr.{'' if can else ', CPU lacks VAES'})")
    paths = ", ".join(wide) if wide else "128-bit AES-NI only"
    return f"{what + '; ' if what else ''}{paths}"


# --- measurement ---------------------------------------------------------------------------------


class Rounds:
    """Harness and reference rates per language and pattern, openssl speed per pattern, by round."""

    def __init__(self, langs: list[str], work: Path, seed: int, seconds: int) -> None:
        self.langs, self.seconds = langs, seconds
        self.rng = random.Random(seed)
        self.refs: dict[str, Reference] = {}
        self.skipped: dict[str, str] = {}
        self.harness: dict[str, dict[str, list[float]]] = {p: {} for p in PATTERNS}
        self.reference: dict[str, dict[str, list[float]]] = {p: {} for p in PATTERNS}
        self.openssl: dict[str, list[float]] = {p: [] for p in PATTERNS}
        self.meta: dict[str, dict[str, Any]] = {}
        for lang in langs:
            why = command(lang, CRYPTO)
            if isinstance(why, str):
                self.skipped[lang] = why
                continue
            ref = REFERENCES[lang](lang, work)
            try:
                ref.prepare()
            except (RuntimeError, OSError, subprocess.TimeoutExpired) as exc:
                self.skipped[lang] = f"its reference benchmark could not be built: {exc}"
                continue
            self.refs[lang] = ref

    @property
    def n(self) -> int:
        return len(self.openssl["stream"])

    def round(self) -> None:
        jobs: list[tuple[str, Callable[[], None]]] = [("openssl", self._openssl)]
        for lang in self.refs:
            if lang in self.skipped:
                continue
            parts = [lambda lang=lang, p=p: self._harness(lang, p) for p in PATTERNS]
            parts.append(lambda lang=lang: self._reference(lang))
            self.rng.shuffle(parts)
            jobs.append((lang, lambda parts=parts: [f() for f in parts]))
        self.rng.shuffle(jobs)
        for lang, job in jobs:
            try:
                job()
            except (RuntimeError, OSError, subprocess.TimeoutExpired, json.JSONDecodeError, KeyError) as exc:
                self.skipped[lang] = str(exc)
        for lang in self.skipped:  # a language that failed in a round leaves every table
            for table in (self.harness, self.reference):
                for per in table.values():
                    per.pop(lang, None)

    def _openssl(self) -> None:
        for p, (_, _, extra) in PATTERNS.items():
            self.openssl[p].append(openssl_rate(extra, self.seconds))

    def _harness(self, lang: str, pattern: str) -> None:
        size, iterations, _ = PATTERNS[pattern]
        out = lang_run(lang, size, iterations, WARMUP_S.get(lang, 2.0))
        self.harness[pattern].setdefault(lang, []).append(harness_rate(out))
        self.meta[lang] = {
            "library": out["library"],
            "runtime": out.get("runtime", ""),
            "steady": out.get("steady"),
        }

    def _reference(self, lang: str) -> None:
        for p, rate in self.refs[lang].run(WARMUP_S.get(lang, 2.0)).items():
            self.reference[p].setdefault(lang, []).append(rate)

    def ratios(self, alpha: float) -> dict[str, dict[str, Any]]:
        """{pattern: {lang: AtLeast}} of harness / reference over the rounds so far."""
        out: dict[str, dict[str, Any]] = {}
        for p in PATTERNS:
            out[p] = {}
            for lang, h in self.harness[p].items():
                r = self.reference[p].get(lang, [])
                if len(h) == len(r) >= 2:
                    out[p][lang] = at_least(h, r, f"{lang} {p}", TARGET, alpha)
        return out


def masked_rates(langs: list[str], seconds: int) -> list[str]:
    """Lines: the OpenSSL-based rates again with VAES/VPCLMULQDQ masked (same pattern: stream)."""
    lines = []
    env = {"OPENSSL_ia32cap": MASK_WIDE}
    plain, masked = openssl_rate([], seconds), openssl_rate([], seconds, env)
    lines.append(f"openssl speed {plain / 1e9:.2f} GB/s, with VAES/VPCLMULQDQ masked {masked / 1e9:.2f} GB/s")
    if "python" in langs:
        size, iterations, _ = PATTERNS["stream"]
        a = harness_rate(lang_run("python", size, iterations, 1.0))
        b = harness_rate(lang_run("python", size, iterations, 1.0, {"OPENSSL_ia32cap": MASK_WIDE}))
        lines.append(f"python {a / 1e9:.2f} GB/s, with VAES/VPCLMULQDQ masked {b / 1e9:.2f} GB/s")
    return lines


def fastest_table(rounds: Rounds, flags: set[str], above_openssl: set[str]) -> dict[str, Any]:
    """Information: each harness (and openssl speed) against the fastest of the pattern."""
    table: dict[str, Any] = {}
    for p in PATTERNS:
        cands = {**rounds.harness[p], OPENSSL: rounds.openssl[p]}
        med = {c: statistics.median(v) for c, v in cands.items() if v}
        ref = max(med, key=lambda c: med[c])
        print(
            f"  {p}: the fastest is {ref}, {med[ref] / 1e9:.2f} GB/s per CPU second ({code_path(ref, flags)})"
        )
        rows = {}
        for cand in sorted(med, key=lambda c: -med[c]):
            n = min(len(cands[cand]), len(cands[ref]), len(cands[OPENSSL]))
            vs_ref = statistics.median(a / b for a, b in zip(cands[cand][:n], cands[ref][:n], strict=True))
            vs_ssl = statistics.median(
                a / b for a, b in zip(cands[cand][:n], cands[OPENSSL][:n], strict=True)
            )
            if cand != OPENSSL and vs_ssl > 1:
                above_openssl.add(cand)
            print(
                f"    {cand:<14} {med[cand] / 1e9:6.2f} GB/s  {vs_ref:.3f} of the fastest, "
                f"{vs_ssl:.2f} of openssl speed"
            )
            rows[cand] = {
                "rate_Bps": med[cand],
                "of_fastest": vs_ref,
                "of_openssl_speed": vs_ssl,
                "code_path": code_path(cand, flags),
            }
        table[p] = {"fastest": ref, "rows": rows}
    return table


def measure(rounds: Rounds, plan: list[int], alpha: float, cap: int, budget_s: float, start: float) -> str:
    """Rounds until every ratio is decided at a planned look, the cap, or the time budget: which."""
    prog = Progress("crypto rounds", cap)
    while rounds.n < cap:
        begun = time.monotonic()
        rounds.round()
        prog.step()
        if rounds.n in plan:
            got = rounds.ratios(alpha)
            if got and all(r.decision != "not shown" for per in got.values() for r in per.values()):
                return f"every ratio decided at the look after round {rounds.n}"
        if rounds.n < cap and time.monotonic() - start + (time.monotonic() - begun) > budget_s:
            return f"the time budget ({budget_s:.0f} s) after round {rounds.n}"
    return "the last planned look"


def report(rounds: Rounds, alpha: float) -> dict[str, Any]:
    """Print harness / reference per pattern and language; return them as a table."""
    out: dict[str, Any] = {}
    for p, per in rounds.ratios(alpha).items():
        print(f"  {p}: harness / its language's own benchmark (target: at least {TARGET})")
        for lang, r in per.items():
            h = statistics.median(rounds.harness[p][lang])
            ref = statistics.median(rounds.reference[p][lang])
            tool = rounds.refs[lang].tool
            print(f"    {lang:<6} harness {h / 1e9:.2f} GB/s, {tool} {ref / 1e9:.2f} GB/s: ratio {r.line()}")
            out.setdefault(p, {})[lang] = {
                "harness_Bps": h,
                "reference_Bps": ref,
                "reference": tool,
                "ratio": r.ratio,
                "ci": [r.lo, r.hi],
                "level": r.level,
                "decision": r.decision,
                "rounds": r.n,
            }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--first", type=int, default=3, help="rounds before the first look (default 3)")
    ap.add_argument("--every", type=int, default=2, help="rounds between looks (default 2)")
    ap.add_argument(
        "--cap",
        type=int,
        default=3,
        help="rounds at most (default 3: one look, a 95 %% interval, about 5 min in all)",
    )
    ap.add_argument(
        "--budget-s",
        type=float,
        default=300,
        help="no new round that would end after this (default 300: three rounds of about 90 s)",
    )
    ap.add_argument("--seconds", type=int, default=1, help="seconds of each openssl speed run (default 1)")
    ap.add_argument("--languages", default=",".join(LANGUAGES), help="comma-separated subset")
    ap.add_argument("--seed", type=int, default=1, help="seed of the order within rounds (default 1)")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args()
    if shutil.which("openssl") is None:
        raise SystemExit("openssl not found: one of the candidates of this benchmark")
    if not 2 <= args.first <= args.cap:
        ap.error("--first: between 2 and --cap (an interval needs two rounds)")
    langs = [x for x in args.languages.split(",") if x]
    unknown = sorted(set(langs) - set(LANGUAGES))
    if unknown:
        ap.error(f"--languages: unknown {', '.join(unknown)} (known: {', '.join(LANGUAGES)})")
    plan = looks(args.first, args.cap, args.every)
    alpha = ALPHA / len(plan)
    start, load0 = time.monotonic(), os.getloadavg()[0]
    print(
        f"AES-256-GCM: harness / the language's own benchmark, target at least {TARGET}; looks after "
        f"rounds {', '.join(map(str, plan))} ({1 - alpha:.2%} intervals), budget {args.budget_s:.0f} s; "
        f"load average {load0:.2f} on {os.cpu_count()} CPUs",
        flush=True,
    )
    flags = Probe().cpuinfo_flags()
    with tempfile.TemporaryDirectory(prefix="crypto-bench-") as tmp:
        rounds = Rounds(langs, Path(tmp), args.seed, args.seconds)
        stop = measure(rounds, plan, alpha, args.cap, args.budget_s, start)
    load1 = os.getloadavg()[0]
    print(
        f"AES-256-GCM, {rounds.n} rounds in {time.monotonic() - start:.0f} s, stopped at {stop}; "
        f"load average {load0:.2f} before, {load1:.2f} after; rates per CPU second"
    )
    table: dict[str, Any] = {"rounds": rounds.n, "stop": stop, "load": [load0, load1]}
    table["harness_vs_reference"] = report(rounds, alpha)
    for lang, why in rounds.skipped.items():
        print(f"  {lang}: skipped: {why}")
    table["skipped"] = rounds.skipped
    print("information: each harness against the fastest implementation on this machine")
    above: set[str] = set()
    table["fastest"] = fastest_table(rounds, flags, above)
    if above:
        print(f"why {', '.join(sorted(above))} beat openssl speed (code paths and a masked run):")
        for cand in sorted(above | {OPENSSL}):
            print(f"  {cand}: {code_path(cand, flags)}")
        for line in masked_rates(langs, args.seconds):
            print(f"  {line}")
    if args.json:
        args.json.write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
