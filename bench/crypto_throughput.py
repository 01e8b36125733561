"""AES-256-GCM of the five crypto programs against the fastest implementation on this machine.

Each language runs on its production path (CONTRACT.md: Python `cryptography`, Go stdlib, Rust
`ring`, Java SunJCE, Node `node:crypto`) after a time-based warm-up, then a timed loop; the system's
`openssl speed` runs beside them. Two call patterns, one thread each:

- **stream**: one cipher object over a 1 MiB input fed 16 KiB per update (Go and ring have no
  incremental GCM: one in-place seal), against `openssl speed -evp aes-256-gcm -bytes 16384`;
- **messages**: 16 KiB messages, a fresh nonce and cipher context each, against
  `openssl speed -aead -evp aes-256-gcm -bytes 16384`.

Like with like: every rate is bytes per second of CPU time (openssl speed's user-CPU divisor; the
programs' rusage over the timed loop, all threads), so other load on the machine does not count.
Rounds alternate all candidates. **The reference of a pattern is the fastest candidate** (highest
median rate over the rounds), named with its version and its code path: the AES instructions its
binary holds (objdump census: 128-bit AES-NI, 256-bit VAES/VPCLMULQDQ, 512-bit VAES) and whether
the CPU has them. Each language's rate is a ratio to the reference: the geometric mean over rounds of
the per-round ratios, with a t interval over rounds (benchlib.paired_ratio, the report's
inference.decide), and a decision against the target: "meets" (>= 0.8 of the fastest) when the whole
interval is at or above 0.8, "misses" when it is below, else "not shown".

Why a language beats the system's `openssl speed` (a ratio above 1 to it, printed too): the census
names the wider code path, and for the OpenSSL-based implementations (openssl speed, Python's
wheel) the rate is measured again with VAES and VPCLMULQDQ masked (OPENSSL_ia32cap): a rate that
falls shows that the wide path is what is faster (docs/crypto.md, "Why a language can beat
openssl speed").
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "agent"))
sys.path.insert(0, str(ROOT / "shared"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import Progress, paired_ratio  # noqa: E402

from testbed_agent.workloads.crypto import LANGUAGES, command  # noqa: E402

CRYPTO = ROOT / "workloads" / "crypto"
VECTORS = CRYPTO / "vectors" / "vectors.json"
TARGET = 0.8
#: pattern -> (payload bytes, timed iterations, extra openssl speed flags)
PATTERNS = {"stream": (1 << 20, 600, []), "messages": (16384, 20000, ["-aead"])}
#: time-based warm-up limit per language (the JVM needs C2)
WARMUP_S = {"java": 10.0}
#: OPENSSL_ia32cap that clears VAES and VPCLMULQDQ (CPUID.7.0:ECX bits 9 and 10, i.e. bits 41 and
#: 42 of the second 64-bit word); an empty value would clear every capability, AES-NI included
MASK_WIDE = ":~0x60000000000"
OPENSSL = "openssl speed"


def openssl_rate(extra: list[str], seconds: int, env: dict[str, str] | None = None) -> float:
    """Bytes per second of `openssl speed -evp aes-256-gcm -bytes 16384` (user-CPU divisor)."""
    argv = ["openssl", "speed", *extra, "-evp", "aes-256-gcm"]
    argv += ["-bytes", "16384", "-seconds", str(seconds), "-mr"]
    out = subprocess.run(
        argv, capture_output=True, text=True, check=True, timeout=120, env={**os.environ, **(env or {})}
    ).stdout
    m = re.search(r"^\+F:\d+:[^:]+:([0-9.eE+]+)\s*$", out, re.M)
    if not m:
        raise SystemExit(f"cannot read openssl speed output: {out[-300:]}")
    return float(m.group(1))


def lang_run(
    lang: str, size: int, iterations: int, warmup_s: float, env: dict[str, str] | None = None
) -> dict:
    """One program run: AES-256-GCM encryption of ``size`` bytes, after a steady-state warm-up."""
    cmd = command(lang, CRYPTO)
    if isinstance(cmd, str):
        raise RuntimeError(cmd)
    argv, extra = cmd
    spec = ["run", "--alg", "aes-gcm", "--key-bits", "256", "--op", "encrypt", "--payload-bytes", str(size)]
    spec += ["--iterations", str(iterations), "--warmup-s", str(warmup_s), "--vectors", str(VECTORS)]
    if size > 16384:
        spec += ["--update-bytes", "16384"]
    proc = subprocess.run(
        [*argv, *spec],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **extra, **(env or {})},
        check=False,
    )
    lines = proc.stdout.strip().splitlines()
    out = json.loads(lines[-1]) if lines else {"error": proc.stderr.strip()[-300:]}
    if proc.returncode != 0:
        raise RuntimeError(out.get("error", f"exit {proc.returncode}"))
    return out


def figures(out: dict[str, Any]) -> dict[str, Any]:
    """Bytes per CPU second of the timed loop (all threads) and per median operation (wall)."""
    size, n = out["payload_bytes"], len(out["times_ns"])
    return {
        "cpu": size * n / (out["cpu_ns"] / 1e9) if out["cpu_ns"] > 0 else float("nan"),
        "median": size / (statistics.median(out["times_ns"]) / 1e9),
        "steady": out.get("steady"),
        "library": out["library"],
        "runtime": out.get("runtime", ""),
        "backend": out.get("backend") or out.get("provider") or "",
    }


# --- what each implementation is: its version and the AES code paths its binary holds -----------


def _objdump_census(path: Path) -> dict[str, int] | None:
    """AES round instructions in ``path`` by register width (None when objdump cannot read it)."""
    if shutil.which("objdump") is None or not path.is_file():
        return None
    proc = subprocess.run(
        ["objdump", "-d", "--no-show-raw-insn", str(path)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        return None
    text = proc.stdout
    return {
        "xmm": len(re.findall(r"\baesenc(?:last)?\s", text))
        + len(re.findall(r"\bvaesenc(?:last)?\s+[^\n]*%xmm", text)),
        "ymm": len(re.findall(r"\bvaesenc(?:last)?\s+[^\n]*%ymm", text)),
        "zmm": len(re.findall(r"\bvaesenc(?:last)?\s+[^\n]*%zmm", text)),
    }


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    m = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
    return set(m.group(1).split()) if m else set()


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


def measure(args: argparse.Namespace, langs: list[str]) -> tuple[dict, dict, dict[str, str], dict]:
    """Rounds over every candidate in a seeded random order: {pattern: {candidate: [rate...]}}."""
    rng = random.Random(args.seed)
    rates: dict[str, dict[str, list[float]]] = {p: {OPENSSL: []} for p in PATTERNS}
    wall: dict[str, dict[str, list[float]]] = {p: {} for p in PATTERNS}
    meta: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    prog = Progress("crypto rounds", args.rounds)
    for _ in range(args.rounds):
        order = [OPENSSL, *langs]
        rng.shuffle(order)
        for cand in order:
            if cand in skipped:
                continue
            for pattern, (size, iterations, extra) in PATTERNS.items():
                if cand == OPENSSL:
                    rates[pattern][OPENSSL].append(openssl_rate(extra, args.seconds))
                    continue
                try:
                    f = figures(lang_run(cand, size, iterations, WARMUP_S.get(cand, args.warmup_s)))
                except RuntimeError as exc:
                    skipped[cand] = str(exc)
                    break
                rates[pattern].setdefault(cand, []).append(f["cpu"])
                wall[pattern].setdefault(cand, []).append(f["median"])
                meta[cand] = f
        prog.step()
    for cands in rates.values():
        for cand in list(cands):
            if cand in skipped or len(cands[cand]) != args.rounds:
                cands.pop(cand, None)
    return rates, wall, skipped, meta


def masked_rates(langs: list[str], seconds: int) -> list[str]:
    """Lines: the OpenSSL-based rates again with VAES/VPCLMULQDQ masked (same pattern: stream)."""
    lines = []
    env = {"OPENSSL_ia32cap": MASK_WIDE}
    plain, masked = openssl_rate([], seconds), openssl_rate([], seconds, env)
    lines.append(f"openssl speed {plain / 1e9:.2f} GB/s, with VAES/VPCLMULQDQ masked {masked / 1e9:.2f} GB/s")
    if "python" in langs:
        size, iterations, _ = PATTERNS["stream"]
        a = figures(lang_run("python", size, iterations, 1.0))["cpu"]
        b = figures(lang_run("python", size, iterations, 1.0, env))["cpu"]
        lines.append(f"python {a / 1e9:.2f} GB/s, with VAES/VPCLMULQDQ masked {b / 1e9:.2f} GB/s")
    return lines


def _verdict(ratio: Any, is_ref: bool) -> str:
    if is_ref:
        return "the reference"
    if ratio.lo >= TARGET:
        return f"meets (>= {TARGET} of the fastest)"
    if ratio.hi < TARGET:
        return f"misses (< {TARGET} of the fastest)"
    return f"not shown (interval spans {TARGET})"


def pattern_table(
    pattern: str,
    cands: dict[str, list[float]],
    wall: dict[str, list[float]],
    meta: dict[str, dict[str, Any]],
    flags: set[str],
    above_openssl: set[str],
) -> dict[str, Any]:
    """Print one pattern's candidates against its fastest; return them as a table."""
    med = {c: statistics.median(v) for c, v in cands.items()}
    ref = max(med, key=lambda c: med[c])
    print(f"{pattern}: reference = the fastest, {ref}: {med[ref] / 1e9:.2f} GB/s ({code_path(ref, flags)})")
    rows = {}
    for cand, values in sorted(cands.items(), key=lambda kv: -med[kv[0]]):
        vs_ref = paired_ratio(values, cands[ref], cand, 100 * (1 / TARGET - 1))
        vs_ssl = statistics.median(v / o for v, o in zip(values, cands[OPENSSL], strict=True))
        if cand != OPENSSL and vs_ssl > 1:
            above_openssl.add(cand)
        verdict = _verdict(vs_ref, cand == ref)
        walls = wall.get(cand)
        wall_txt = f", per median op {statistics.median(walls) / 1e9:.2f} GB/s" if walls else ""
        print(
            f"  {cand:<14} {med[cand] / 1e9:6.2f} GB/s  ratio {vs_ref.ratio:.3f} [{vs_ref.lo:.3f}, "
            f"{vs_ref.hi:.3f}] -> {verdict}; / openssl speed {vs_ssl:.2f}{wall_txt}"
        )
        rows[cand] = {
            "rate_Bps": med[cand],
            "ratio": vs_ref.ratio,
            "ci": [vs_ref.lo, vs_ref.hi],
            "decision": verdict,
            "ratio_to_openssl_speed": vs_ssl,
            "code_path": code_path(cand, flags),
            "library": meta.get(cand, {}).get("library", ""),
        }
    return {"reference": ref, "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4, help="rounds over every candidate (default 4)")
    ap.add_argument("--seconds", type=int, default=1, help="seconds of each openssl speed run (default 1)")
    ap.add_argument("--warmup-s", type=float, default=2.0, help="warm-up limit (Java: 10 s)")
    ap.add_argument("--languages", default=",".join(LANGUAGES), help="comma-separated subset")
    ap.add_argument("--seed", type=int, default=1, help="seed of the order within rounds (default 1)")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args()
    if shutil.which("openssl") is None:
        raise SystemExit("openssl not found: one of the candidates of this benchmark")
    if args.rounds < 2:
        ap.error("--rounds: at least 2 (an interval needs two rounds)")
    langs = [x for x in args.languages.split(",") if x]
    flags = _cpu_flags()
    rates, wall, skipped, meta = measure(args, langs)
    table: dict[str, Any] = {"patterns": {}, "skipped": skipped}
    above_openssl: set[str] = set()
    print(f"AES-256-GCM, {args.rounds} rounds, one thread; rates per CPU second (median over rounds)")
    for pattern, cands in rates.items():
        table["patterns"][pattern] = pattern_table(pattern, cands, wall[pattern], meta, flags, above_openssl)
    for lang, why in skipped.items():
        print(f"  {lang}: skipped: {why}")
    if above_openssl:
        print(f"why {', '.join(sorted(above_openssl))} beat openssl speed (code paths and a masked run):")
        for cand in sorted(above_openssl | {OPENSSL}):
            print(f"  {cand}: {code_path(cand, flags)}")
        for line in masked_rates(langs, args.seconds):
            print(f"  {line}")
    if args.json:
        args.json.write_text(json.dumps(table, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
