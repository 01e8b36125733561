"""Mutation campaign over the real attestation samples (issue 26 finding 4).

Each evidence set of ``attestsamples`` is verified with one of its files replaced by a mutant: a
bit flip, a truncation, an extension, or a field edit (a 1/2/4-byte integer set to 0, 1, all ones,
its value +-1 or a random value; in text files a character swapped for another of its kind, so
hex stays hex and base64 stays base64). Every outcome is counted:

- refused: the verifier raised ``EvidenceError`` (a one-line error);
- failed: it answered ``verified: false``;
- verified: it answered ``verified: true`` for a mutant that differs in meaning (must be 0);
- equivalent: a mutant that differs only in what the format leaves free, so verifying it is right:
  the length of trailing zero padding (HCL reports fill their NV index with zeros; Azure's quote
  service pads TD quotes), PCR values written differently (``ab`` / ``AB``), and the 32-byte MAC
  of an Azure TDREPORT copy, which only the TDX module of the machine can check (the TD quote
  proves that a TDREPORT with these fields carried a valid MAC);
- traceback: any other exception (must be 0);
- hang: a verification still running after ``hang_s`` seconds (must be 0).

Seeded: the same seed gives the same mutants. ``python shared/tests/attestmutate.py N SEED`` runs a
larger campaign and prints the counts."""

from __future__ import annotations

import random
import shutil
import signal
import struct
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from attestsamples import EvidenceSet, evidence_sets

from testbed_shared.attest.model import EvidenceError
from testbed_shared.attest.tpm import load_pcrs
from testbed_shared.attest.verify import verify_file

_TEXT = {"chain", "tcb_chain", "root", "ak", "tcb_info", "qe_identity", "pcrs"}
_PADDED = {"hcl", "td_quote"}
_HEX = "0123456789abcdef"
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_MAC = (32 + 224, 32 + 256)  # the TDREPORT's MAC inside an Azure HCL report


class Hang(Exception):
    pass


@dataclass
class Campaign:
    tries: int = 0
    outcomes: Counter = field(default_factory=Counter)
    by_op: Counter = field(default_factory=Counter)
    equivalents: Counter = field(default_factory=Counter)
    verified: list[str] = field(default_factory=list)
    tracebacks: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)

    def summary(self) -> str:
        o = self.outcomes
        return (
            f"{self.tries} mutants: {o['refused']} refused, {o['failed']} verified: false, "
            f"{o['equivalent']} equivalent, {len(self.verified)} verified, "
            f"{len(self.tracebacks)} tracebacks, {len(self.hangs)} hangs"
        )


def _flip(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    if not data:
        return "flip", b"\x01"
    at = rng.randrange(len(data))
    b = bytearray(data)
    b[at] ^= 1 << rng.randrange(8)
    return f"flip@{at}", bytes(b)


def _truncate(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    n = rng.randrange(len(data)) if data else 0
    return f"truncate@{n}", data[:n]


def _extend(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    tail = bytes(rng.randrange(256) for _ in range(rng.choice((1, 2, 8, 64))))
    return f"extend+{len(tail)}", data + tail


def _field(data: bytes, rng: random.Random, text: bool) -> tuple[str, bytes]:
    if not data:
        return "field", b"\0"
    b = bytearray(data)
    if text:
        alphabet = [a for a in (_HEX, _HEX.upper(), "0123456789", _B64) if chr(b[0]) in a]
        at = rng.randrange(len(b))
        for kind in (_HEX, _B64):
            if chr(b[at]) in kind:
                alphabet = [kind]
                break
        else:
            new = rng.choice([c for c in range(32, 127) if c != b[at]])
            return f"field@{at}", bytes(b[:at] + bytes([new]) + b[at + 1 :])
        choices = [c for c in alphabet[0] if c != chr(b[at])]
        b[at] = ord(rng.choice(choices))
        return f"field@{at}", bytes(b)
    size = rng.choice((1, 2, 4))
    at = rng.randrange(max(1, len(b) - size + 1)) // size * size
    if at + size > len(b):
        return _flip(data, rng)
    fmt = {1: "<B", 2: "<H", 4: "<I"}[size]
    old = struct.unpack_from(fmt, b, at)[0]
    top = (1 << (8 * size)) - 1
    new = rng.choice((0, 1, top, (old + 1) & top, (old - 1) & top, rng.randrange(top + 1)))
    if new == old:
        new = (old + 1) & top
    struct.pack_into(fmt, b, at, new)
    return f"field{size}@{at}", bytes(b)


def mutants(data: bytes, role: str, rng: random.Random, n: int) -> Iterator[tuple[str, bytes]]:
    text = role in _TEXT
    made = 0
    while made < n:
        r = rng.random()
        if r < 0.30:
            op, out = _flip(data, rng)
        elif r < 0.50:
            op, out = _truncate(data, rng)
        elif r < 0.65:
            op, out = _extend(data, rng)
        else:
            op, out = _field(data, rng, text)
        if out != data:  # a mutant differs from its original
            made += 1
            yield op, out


def equivalent(s: EvidenceSet, role: str, original: bytes, mutant: bytes) -> str | None:
    """Why a mutant differs from the original only where the format leaves bytes free, or None."""
    if role in _PADDED and mutant.rstrip(b"\0") == original.rstrip(b"\0"):
        return "zero padding length"
    if role == "hcl" and "td_quote" in s.files and len(mutant) == len(original):
        diff = [i for i, (a, b) in enumerate(zip(original, mutant, strict=True)) if a != b]
        if diff and all(_MAC[0] <= i < _MAC[1] for i in diff):
            return "TDREPORT MAC"
    if role == "pcrs":
        try:
            same = load_pcrs(mutant.decode()) == load_pcrs(original.decode())
        except Exception:  # noqa: BLE001 - an unreadable mutant is simply not equivalent
            return None
        return "same PCR values" if same else None
    return None


def _alarm(_sig: int, _frame: object) -> None:
    raise Hang


def run(per_file: int, seed: int, work: Path, hang_s: float = 20.0) -> Campaign:
    """``per_file`` mutants of every file of every evidence set."""
    rng = random.Random(seed)
    camp = Campaign()
    sets = evidence_sets(work / "sets")
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for si, s in enumerate(x for x in sets if x.campaign):
            for role in sorted(s.files):
                original = s.files[role].read_bytes()
                for mi, (op, data) in enumerate(mutants(original, role, rng, per_file)):
                    path = work / f"m{si}-{role}-{mi}"
                    path.write_bytes(data)
                    files = {**s.files, role: path}
                    camp.tries += 1
                    camp.by_op[op.split("@")[0].split("+")[0]] += 1
                    where = f"{s.name} / {role} / {op}"
                    signal.setitimer(signal.ITIMER_REAL, hang_s)
                    try:
                        res = verify_file(files[s.main], s.options(files))
                        outcome = "verified" if res.verified else "failed"
                    except EvidenceError:
                        outcome = "refused"
                    except Hang:
                        outcome = "hang"
                        camp.hangs.append(where)
                    except Exception:  # noqa: BLE001 - the campaign counts what must not happen
                        outcome = "traceback"
                        camp.tracebacks.append(f"{where}: {traceback.format_exc(limit=3)}")
                    finally:
                        signal.setitimer(signal.ITIMER_REAL, 0)
                    path.unlink()
                    why = equivalent(s, role, original, data) if outcome == "verified" else None
                    if why:
                        outcome = "equivalent"
                        camp.equivalents[why] += 1
                    elif outcome == "verified":
                        camp.verified.append(where)
                    camp.outcomes[outcome] += 1
    finally:
        signal.signal(signal.SIGALRM, old)
    return camp


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else 26
    tmp = Path(tempfile.mkdtemp(prefix="attestmutate-"))
    try:
        c = run(n, seed, tmp)
    finally:
        shutil.rmtree(tmp)
    print(c.summary())
    print("by operation:", dict(c.by_op))
    print("equivalent:", dict(c.equivalents))
    for line in c.verified + c.tracebacks + c.hangs:
        print(" ", line)
    sys.exit(1 if c.verified or c.tracebacks or c.hangs else 0)
