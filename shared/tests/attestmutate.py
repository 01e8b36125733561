"""Mutation campaign over the real attestation samples (issue 26 finding 4).

Each evidence set of ``attestsamples`` is verified with one of its files replaced by a mutant: a
bit flip, a truncation, an extension, or a field edit (a 1/2/4-byte integer set to 0, 1, all ones,
its value +-1 or a random value; in text files a character swapped for another of its kind, so
hex stays hex and base64 stays base64). Every outcome is counted:

- refused: the verifier raised ``EvidenceError`` (a one-line error);
- failed: it answered ``verified: false``;
- verified: it answered ``verified: true`` for a mutant that differs in meaning (must be 0): its
  result says something else than the original's, or what differs is not recorded in ``ignored``;
- equivalent: a mutant that verifies with the original's result, byte for byte but ``ignored``,
  and differs from the original only in bytes the result records as ignored (bytes after a
  report, quote, certificate or PCS response; the zero padding of HCL reports and Azure's TD
  quotes; the NUL ending a PCK chain; PEM layout and text around the blocks; the 32-byte MAC of an
  Azure TDREPORT copy, which only the TDX module of the machine can check); or in how a PCR value
  is spelled (``ab`` / ``AB``: the same values); or in leaving out of a certificate file a
  certificate the verifier has built in (AMD's ARKs, Intel's root), cut after a whole block.
  Counted apart, by the reason recorded;
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

from attestsamples import evidence_sets

from testbed_shared.attest import chain
from testbed_shared.attest.model import EvidenceError, Ignored, Result
from testbed_shared.attest.tpm import load_pcrs
from testbed_shared.attest.verify import verify_file

_TEXT = {"chain", "tcb_chain", "root", "ak", "tcb_info", "qe_identity", "pcrs"}
_HEX = "0123456789abcdef"
_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_NO_EOL = "no line end after the last END line"


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
    text = role in _TEXT or data.startswith(b"-----BEGIN")  # a VCEK may come as PEM or DER
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


def said(res: Result) -> dict:
    """What a result says about the evidence: all but what it ignored and the time it verified at
    (an option; "now" without ``--as-of``)."""
    out = res.as_dict()
    out.pop("ignored")
    out.pop("as_of")
    return out


def _core(data: bytes, entries: list[Ignored]) -> bytes:
    """``data`` without the spans ``entries`` record (and without a final line end when an entry
    records that one is missing, so that the two spellings compare equal)."""
    drop = sorted(span for e in entries for span in e.spans)
    out, pos = bytearray(), 0
    for o, n in drop:
        out += data[pos:o]
        pos = max(pos, o + n)
    out += data[pos:]
    return bytes(out)


def _inside(original: bytes, mutant: bytes, entries: list[Ignored]) -> bool:
    """Whether every byte where ``mutant`` differs from ``original`` (same length) lies in a span
    the mutant's result records as ignored."""
    if len(original) != len(mutant):
        return False
    spans = [(o, o + n) for e in entries for o, n in e.spans]
    diff = (i for i, (x, y) in enumerate(zip(original, mutant, strict=True)) if x != y)
    return all(any(lo <= i < hi for lo, hi in spans) for i in diff)


def equivalent(
    role: str, original: bytes, mutant: bytes, orig: tuple[Result, str], mut: tuple[Result, str]
) -> str | None:
    """Why a verifying mutant says what the original says and differs only where its result records
    ignored bytes (the reason), or only in PCR spelling; None if it differs in meaning or unrecorded.
    ``orig`` and ``mut``: each result with the path of the file that was mutated."""
    if said(orig[0]) != said(mut[0]):
        return None
    if role == "pcrs":
        try:
            same = load_pcrs(mutant.decode()) == load_pcrs(original.decode())
        except Exception:  # noqa: BLE001 - an unreadable mutant is simply not equivalent
            return None
        return "same PCR values" if same else None
    mine = [i for i in orig[0].ignored if i.source == orig[1]]
    theirs = [i for i in mut[0].ignored if i.source == mut[1]]
    a, b = _core(original, mine), _core(mutant, theirs)
    if any(i.why.endswith(_NO_EOL) for i in mine + theirs):
        a, b = a.removesuffix(b"\n"), b.removesuffix(b"\n")
    if a != b and not _inside(original, mutant, theirs):
        return _built_in_left_out(role, original, mutant)
    key = lambda i: (i.why, i.spans, i.sha256)  # noqa: E731 - local identity of an entry
    new = [i for i in theirs if key(i) not in {key(j) for j in mine}]
    gone = [i for i in mine if key(i) not in {key(j) for j in theirs}]
    return (new or gone or theirs)[0].why.split(" (")[0]


def _built_in_left_out(role: str, original: bytes, mutant: bytes) -> str | None:
    """A certificate file cut after a whole certificate, where every certificate left out is one of
    the verifier's built-in roots: the same chain, its root taken from the built-in store."""
    if role not in _TEXT and not original.startswith(b"-----BEGIN"):
        return None
    try:
        had = {chain.fingerprint(c) for c in chain.load_certs(original)}
        has = {chain.fingerprint(c) for c in chain.load_certs(mutant)}
    except EvidenceError:
        return None
    built_in = {chain.fingerprint(c) for c in chain.amd_roots() + chain.intel_roots()}
    return "a built-in root left out of a certificate file" if has < had and had - has <= built_in else None


def _alarm(_sig: int, _frame: object) -> None:
    raise Hang


def run(per_file: int, seed: int, work: Path, hang_s: float = 20.0) -> Campaign:
    """``per_file`` mutants of every file of every evidence set."""
    rng = random.Random(seed)
    camp = Campaign()
    sets = evidence_sets(work / "sets")
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for si, s in enumerate(sets):
            base = verify_file(s.files[s.main], s.options(s.files))
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
                    res = None
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
                    why = None
                    if outcome == "verified" and res is not None and base.verified:
                        why = equivalent(role, original, data, (base, str(s.files[role])), (res, str(path)))
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
