"""AES-256-GCM of the five crypto programs against OpenSSL, measured side by side in one run.

1. Bulk throughput on 16 KiB buffers (median time per one-shot encryption of a 16 KiB buffer,
   nonce fresh each time) as a ratio to `openssl speed -evp aes-256-gcm -bytes 16384` measured in
   the same round; rounds alternate OpenSSL and the languages so drift hits both.
   Target: the OpenSSL-backed implementations (Python `cryptography`, Node `node:crypto`) >= 0.8.
2. Per-call cost on 4 KB payloads: median time of one 4096-byte encryption, and the overhead above
   the language's own bulk rate (t_4K - 4096 B / bulk throughput), beside OpenSSL's 4 KB figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "agent"))

from testbed_agent.workloads.crypto import LANGUAGES, command  # noqa: E402

CRYPTO = ROOT / "workloads" / "crypto"
VECTORS = CRYPTO / "vectors" / "vectors.json"
OPENSSL_BACKED = {"python", "node"}
TARGET = 0.8


def openssl_rate(size: int, seconds: int) -> float:
    """Bytes per second of `openssl speed -evp aes-256-gcm` at one buffer size."""
    argv = ["openssl", "speed", "-evp", "aes-256-gcm", "-bytes", str(size), "-seconds", str(seconds), "-mr"]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=120).stdout
    m = re.search(r"^\+F:\d+:[^:]+:([0-9.eE+]+)\s*$", out, re.M)
    if not m:
        raise SystemExit(f"cannot read openssl speed output: {out[-300:]}")
    return float(m.group(1))


def lang_time(lang: str, size: int, iterations: int, warmup: int) -> tuple[float, str]:
    """Median seconds of one AES-256-GCM encryption of ``size`` bytes, and the library used."""
    cmd = command(lang, CRYPTO)
    if isinstance(cmd, str):
        raise RuntimeError(cmd)
    argv, env = cmd
    spec = [
        "run",
        "--alg",
        "aes-gcm",
        "--key-bits",
        "256",
        "--op",
        "encrypt",
        "--payload-bytes",
        str(size),
        "--iterations",
        str(iterations),
        "--warmup",
        str(warmup),
        "--vectors",
        str(VECTORS),
    ]
    proc = subprocess.run(
        [*argv, *spec], capture_output=True, text=True, timeout=600, env={**os.environ, **env}, check=False
    )
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if proc.returncode != 0:
        raise RuntimeError(out.get("error", f"exit {proc.returncode}"))
    return statistics.median(out["times_ns"]) / 1e9, out["library"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="alternating OpenSSL/language rounds (default 3)")
    ap.add_argument("--seconds", type=int, default=1, help="seconds of each openssl speed run (default 1)")
    ap.add_argument("--iterations", type=int, default=3000, help="timed encryptions per program run")
    ap.add_argument("--warmup", type=int, default=20000, help="untimed encryptions first (JIT warm-up)")
    ap.add_argument("--languages", default=",".join(LANGUAGES), help="comma-separated subset")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args()
    if shutil.which("openssl") is None:
        raise SystemExit("openssl not found: the reference of this benchmark")
    langs = [x for x in args.languages.split(",") if x]
    bulk: dict[str, list[float]] = {lang: [] for lang in langs}
    call: dict[str, list[float]] = {lang: [] for lang in langs}
    ratio: dict[str, list[float]] = {lang: [] for lang in langs}
    ref16, ref4 = [], []
    libs: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for _ in range(args.rounds):
        r16 = openssl_rate(16384, args.seconds)
        ref16.append(r16)
        ref4.append(openssl_rate(4096, args.seconds))
        for lang in langs:
            if lang in skipped:
                continue
            try:
                t16, libs[lang] = lang_time(lang, 16384, args.iterations, args.warmup)
                t4, _ = lang_time(lang, 4096, args.iterations, args.warmup)
            except RuntimeError as exc:
                skipped[lang] = str(exc)
                continue
            bulk[lang].append(16384 / t16)
            ratio[lang].append(16384 / t16 / r16)
            call[lang].append(t4)
    o16, o4 = statistics.median(ref16), statistics.median(ref4)
    print(
        f"AES-256-GCM, median of {args.rounds} alternating rounds; OpenSSL 16 KiB: {o16 / 1e9:.2f} GB/s, "
        f"4 KB call: {4096 / o4 * 1e6:.2f} us"
    )
    head = ("language", "GB/s 16KiB", "vs openssl", "4KB call us", "overhead us")
    print(f"{head[0]:<8} {head[1]:>10} {head[2]:>10} {head[3]:>11} {head[4]:>11}  library")
    figures: dict[str, Any] = {"openssl": {"bulk_Bps": o16, "call_4k_s": 4096 / o4}, "languages": {}}
    missed = []
    for lang in langs:
        if lang in skipped:
            print(f"{lang:<8} skipped: {skipped[lang]}")
            figures["languages"][lang] = {"skipped": skipped[lang]}
            continue
        b, r = statistics.median(bulk[lang]), statistics.median(ratio[lang])
        t4 = statistics.median(call[lang])
        over = t4 - 4096 / b
        mark = ""
        if lang in OPENSSL_BACKED:
            mark = f"  [OpenSSL-backed: target >= {TARGET}: {'met' if r >= TARGET else 'MISSED'}]"
            if r < TARGET:
                missed.append(lang)
        row = f"{lang:<8} {b / 1e9:>10.2f} {r:>10.2f} {t4 * 1e6:>11.2f} {over * 1e6:>11.2f}"
        print(f"{row}  {libs[lang]}{mark}")
        figures["languages"][lang] = {
            "bulk_Bps": b,
            "ratio_to_openssl": r,
            "call_4k_s": t4,
            "call_overhead_s": over,
            "library": libs[lang],
        }
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))
    if missed:
        print(f"note: {', '.join(missed)} below the {TARGET} target in this run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
