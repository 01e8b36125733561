"""TPM 2.0 quotes: TPMS_ATTEST parsing, the attestation key's signature (TPM signature schemes),
qualifying data (nonce) and the PCR digest. Bytes after the TPMS_ATTEST or the TPMT_SIGNATURE are
outside what the TPM signed or made: accepted and recorded in the result's ``ignored``."""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from testbed_shared.attest import keys
from testbed_shared.attest.model import EvidenceError, Ignored, Result

TPM_GENERATED = 0xFF544347
ST_ATTEST_QUOTE = 0x8018
_HASHES = {0x0004: "sha1", 0x000B: "sha256", 0x000C: "sha384", 0x000D: "sha512"}
_SIG_SCHEMES = {0x0014: "rsassa", 0x0016: "rsapss", 0x0018: "ecdsa"}
_HASH = {"sha1": hashes.SHA1, "sha256": hashes.SHA256, "sha384": hashes.SHA384, "sha512": hashes.SHA512}


@dataclass(frozen=True)
class Quote:
    raw: bytes
    signer_name: bytes
    extra_data: bytes
    clock: int
    reset_count: int
    restart_count: int
    firmware: int
    pcr_select: dict[str, list[int]]
    pcr_digest: bytes


class _Reader:
    def __init__(self, data: bytes, source: str) -> None:
        self.data, self.pos, self.source = data, 0, source

    def take(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise EvidenceError(f"{self.source}: truncated at byte {self.pos}")
        vals = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return vals if len(vals) > 1 else vals[0]

    def tpm2b(self) -> bytes:
        n = self.take(">H")
        out = self.data[self.pos : self.pos + n]
        if len(out) != n:
            raise EvidenceError(f"{self.source}: truncated TPM2B at byte {self.pos}")
        self.pos += n
        return out


def parse_quote(raw: bytes, source: str = "quote") -> Quote:
    """Parse a TPMS_ATTEST of type quote (what ``tpm2_quote -m`` writes)."""
    r = _Reader(raw, source)
    magic, kind = r.take(">IH")
    if magic != TPM_GENERATED or kind != ST_ATTEST_QUOTE:
        raise EvidenceError(f"{source}: not a TPM2 quote (magic 0x{magic:08x}, type 0x{kind:04x})")
    name, extra = r.tpm2b(), r.tpm2b()
    clock, resets, restarts, _safe = r.take(">QIIB")
    firmware = r.take(">Q")
    select: dict[str, list[int]] = {}
    count = r.take(">I")
    if count > 16:
        raise EvidenceError(f"{source}: {count} PCR selections")
    for _ in range(count):
        alg, size = r.take(">HB")
        if alg not in _HASHES or size > 8 or r.pos + size > len(r.data):
            raise EvidenceError(f"{source}: bad PCR selection (hash 0x{alg:04x}, {size} bytes)")
        bitmap = r.data[r.pos : r.pos + size]
        r.pos += size
        if _HASHES[alg] in select:
            raise EvidenceError(f"{source}: PCR bank {_HASHES[alg]} selected twice")
        select[_HASHES[alg]] = [8 * i + b for i, byte in enumerate(bitmap) for b in range(8) if byte >> b & 1]
    digest = r.tpm2b()
    return Quote(raw[: r.pos], name, extra, clock, resets, restarts, firmware, select, digest)


def parse_signature(raw: bytes, key_bytes: int) -> tuple[str, str, bytes, int]:
    """(scheme, hash, signature bytes, where it ends) from a plain RSA signature (exactly the key's
    size) or a TPMT_SIGNATURE (what follows it is left to the caller)."""
    if key_bytes and len(raw) == key_bytes:
        return "rsassa", "sha256", raw, len(raw)
    r = _Reader(raw, "TPM signature")
    if len(raw) >= 6:
        alg, halg = r.take(">HH")
        scheme, hname = _SIG_SCHEMES.get(alg), _HASHES.get(halg)
        if scheme is not None and hname is not None:
            if scheme in ("rsassa", "rsapss"):
                sig = r.tpm2b()
                if key_bytes and len(sig) != key_bytes:
                    raise EvidenceError(f"TPM signature of {len(sig)} bytes for a {8 * key_bytes}-bit key")
            else:
                rr, ss = r.tpm2b(), r.tpm2b()
                n = max(len(rr), len(ss))
                sig = rr.rjust(n, b"\0") + ss.rjust(n, b"\0")
            return scheme, hname, sig, r.pos
    raise EvidenceError(f"TPM signature of {len(raw)} bytes: neither plain nor TPMT_SIGNATURE")


def load_pcrs(text: str, source: str = "pcrs") -> dict[str, dict[int, bytes]]:
    """PCR values as ``{"sha256": {"0": "hex", ...}}`` (JSON) or ``tpm2_pcrread`` YAML output."""
    try:
        data = json.loads(text)
    except RecursionError as exc:
        raise EvidenceError(f"{source}: nested too deeply") from exc
    except ValueError:
        try:
            data = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError) as exc:
            raise EvidenceError(f"{source}: neither JSON nor YAML ({exc})") from exc
    if not isinstance(data, Mapping):
        raise EvidenceError(f"{source}: expected a mapping of hash algorithm -> PCR index -> value")
    out: dict[str, dict[int, bytes]] = {}
    for alg, bank in data.items():
        size = _DIGEST_SIZES.get(str(alg))
        if size is None or not isinstance(bank, Mapping):
            raise EvidenceError(f"{source}: {alg!r} is not a PCR bank (sha1, sha256, sha384, sha512)")
        try:
            out[str(alg)] = {_pcr_index(k): _pcr_bytes(v, size) for k, v in bank.items()}
        except (TypeError, ValueError, OverflowError) as exc:
            raise EvidenceError(f"{source}: bad PCR value in bank {alg} ({exc})") from exc
    return out


_DIGEST_SIZES = {"sha1": 20, "sha256": 32, "sha384": 48, "sha512": 64}


def _pcr_index(k: Any) -> int:
    i = int(k)
    if isinstance(k, bool) or not 0 <= i < 24 or str(k) != str(i):
        raise ValueError(f"PCR index {k!r}")
    return i


def _pcr_bytes(v: Any, size: int) -> bytes:
    if isinstance(v, bool):
        raise TypeError("a PCR value is not a boolean")
    if isinstance(v, int):  # tpm2_pcrread's YAML prints values as 0x... integers
        return v.to_bytes(size, "big")
    text = str(v)
    raw = bytes.fromhex(text.removeprefix("0x"))
    if len(raw) != size:
        raise ValueError(f"{len(raw)} bytes, a digest of this bank has {size}")
    return raw


def pcr_digest(quote: Quote, pcrs: Mapping[str, Mapping[int, bytes]]) -> tuple[bytes | None, str]:
    """The digest the TPM computes: H(concatenation of the selected PCRs in selection order)."""
    buf = b""
    for alg, indices in quote.pcr_select.items():
        bank = pcrs.get(alg, {})
        missing = [i for i in indices if i not in bank]
        if missing:
            return None, f"PCR values missing for {alg} {missing}"
        buf += b"".join(bank[i] for i in indices)
    extra = {alg: sorted(set(bank) - set(quote.pcr_select.get(alg, []))) for alg, bank in pcrs.items()}
    extra = {alg: idx for alg, idx in extra.items() if idx}
    if extra:
        return None, f"PCR values given that the quote does not select: {extra}"
    return hashlib.sha256(buf).digest(), "sha256"


def verify_signature(key: Any, msg: bytes, raw_sig: bytes) -> tuple[bool, str, int]:
    """Whether ``raw_sig`` (plain or TPMT_SIGNATURE) by ``key`` verifies over ``msg``; the detail;
    where the signature structure ends in ``raw_sig``."""
    size = key.key_size // 8 if isinstance(key, rsa.RSAPublicKey) else 0
    scheme, halg, sig, end = parse_signature(raw_sig, size)
    algo = _HASH[halg]()
    where = f"{scheme}/{halg} with AK {keys.fingerprint(key)}"
    try:
        if isinstance(key, rsa.RSAPublicKey):
            pad = (
                padding.PSS(padding.MGF1(algo), padding.PSS.AUTO)
                if scheme == "rsapss"
                else padding.PKCS1v15()
            )
            key.verify(sig, msg, pad, algo)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            if not keys.ecdsa_raw_ok(key, msg, sig, algo):
                raise InvalidSignature
        else:
            return False, f"unsupported AK type {type(key).__name__}", end
    except (InvalidSignature, ValueError):
        return False, f"signature does NOT verify ({where})", end
    return True, f"verifies ({where})", end


def verify_quote(
    res: Result,
    msg: bytes,
    sig: bytes,
    ak: Any,
    *,
    nonce: bytes | None,
    pcrs: Mapping[str, Mapping[int, bytes]] | None = None,
    prefix: str = "tpm",
    sources: tuple[str, str] = ("quote", "signature"),
) -> Quote:
    """Add the quote checks (signature, nonce, PCR digest) to ``res``; ``sources`` name the quote
    message and signature files in what ``res.ignored`` records."""
    quote = parse_quote(msg, sources[0])
    ok, detail, end = verify_signature(ak, quote.raw, sig)
    for data, used, source, what in (
        (msg, len(quote.raw), sources[0], "TPMS_ATTEST"),
        (sig, end, sources[1], "TPMT_SIGNATURE"),
    ):
        if used < len(data):
            why = f"bytes after the {what} (the TPM neither made nor signed them)"
            res.ignored.append(Ignored.of(source, why, data, [(used, len(data) - used)]))
    res.add(f"{prefix}: quote signature", ok, detail)
    res.info["tpm_quote"] = {
        "qualifying_data": quote.extra_data.hex(),
        "pcr_select": quote.pcr_select,
        "pcr_digest": quote.pcr_digest.hex(),
        "clock": quote.clock,
        "reset_count": quote.reset_count,
    }
    if nonce is None:
        res.add(f"{prefix}: qualifying data", False, "no expected nonce given (--nonce)")
    else:
        res.add(
            f"{prefix}: qualifying data == expected nonce",
            quote.extra_data == nonce,
            f"quote {quote.extra_data.hex() or '(empty)'} vs expected {nonce.hex()}",
        )
    if pcrs is not None:
        want, why = pcr_digest(quote, pcrs)
        res.add(
            f"{prefix}: PCR digest",
            want == quote.pcr_digest,
            f"quote {quote.pcr_digest.hex()[:16]}... vs PCR values "
            + (f"{want.hex()[:16]}..." if want else why),
        )
    return quote
