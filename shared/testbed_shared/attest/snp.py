"""AMD SEV-SNP ATTESTATION_REPORT: fields, TCB and policy decoding, the VCEK signature and the
VCEK -> ASK -> ARK chain (Milan, Genoa, Turin)."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from testbed_shared.attest import chain
from testbed_shared.attest.model import EvidenceError, Ignored, Result

REPORT_SIZE = 0x4A0  # 1184 bytes
SIGNED_SIZE = 0x2A0
_SIG_R, _SIG_S, _SIG_LEN = 0x2A0, 0x2E8, 72

_POLICY_BITS = {
    16: "smt_allowed",
    18: "migration_agent_allowed",
    19: "debug_allowed",
    20: "single_socket_only",
    21: "cxl_allowed",
    22: "mem_aes_256_xts_required",
    23: "rapl_disabled",
    24: "ciphertext_hiding_required",
}
_VCEK_TCB_OIDS = {
    "bootloader": "1.3.6.1.4.1.3704.1.3.1",
    "tee": "1.3.6.1.4.1.3704.1.3.2",
    "snp": "1.3.6.1.4.1.3704.1.3.3",
    "microcode": "1.3.6.1.4.1.3704.1.3.8",
    "fmc": "1.3.6.1.4.1.3704.1.3.9",
}
VCEK_HWID_OID = "1.3.6.1.4.1.3704.1.4"


@dataclass(frozen=True)
class SnpReport:
    raw: bytes
    version: int
    guest_svn: int
    policy: int
    vmpl: int
    signature_algo: int
    current_tcb: int
    platform_info: int
    signing_key: int  # 0 VCEK, 1 VLEK
    report_data: bytes
    measurement: bytes
    host_data: bytes
    id_key_digest: bytes
    reported_tcb: int
    cpuid_fam: int
    cpuid_mod: int
    chip_id: bytes
    committed_tcb: int
    launch_tcb: int

    @property
    def signed_part(self) -> bytes:
        return self.raw[:SIGNED_SIZE]

    @property
    def signature_rs(self) -> tuple[int, int]:
        r = int.from_bytes(self.raw[_SIG_R : _SIG_R + _SIG_LEN], "little")
        s = int.from_bytes(self.raw[_SIG_S : _SIG_S + _SIG_LEN], "little")
        return r, s

    @property
    def turin_layout(self) -> bool:
        """Turin (family 1Ah) lays out TCB values differently; v3+ reports say the family."""
        return self.version >= 3 and self.cpuid_fam == 0x1A


def parse_report(raw: bytes, source: str = "report") -> SnpReport:
    """Parse a 1184-byte SEV-SNP report (versions 2 to 5) at the start of ``raw`` (what follows is
    the caller's to record). Bytes 0x000-0x29F are signed; of the signature area only r and s
    (P-384: 48 of their 72 bytes each) may be non-zero."""
    if len(raw) < REPORT_SIZE:
        raise EvidenceError(f"{source}: {len(raw)} bytes, an SEV-SNP report has {REPORT_SIZE}")
    version, svn, policy = struct.unpack_from("<IIQ", raw, 0)
    if not 2 <= version <= 5:
        raise EvidenceError(f"{source}: SEV-SNP report version {version} (expected 2 to 5)")
    for start, end, what in (
        (_SIG_R + 48, _SIG_R + _SIG_LEN, "signature r beyond 48 bytes"),
        (_SIG_S + 48, _SIG_S + _SIG_LEN, "signature s beyond 48 bytes"),
        (_SIG_S + _SIG_LEN, REPORT_SIZE, "reserved bytes after the signature"),
    ):
        if any(raw[start:end]):
            raise EvidenceError(f"{source}: {what} (0x{start:03X}-0x{end - 1:03X}) are not zero")
    vmpl, algo, cur_tcb, plat, flags = struct.unpack_from("<IIQQI", raw, 0x30)
    return SnpReport(
        raw=bytes(raw[:REPORT_SIZE]),
        version=version,
        guest_svn=svn,
        policy=policy,
        vmpl=vmpl,
        signature_algo=algo,
        current_tcb=cur_tcb,
        platform_info=plat,
        signing_key=(flags >> 2) & 0x7,
        report_data=raw[0x50:0x90],
        measurement=raw[0x90:0xC0],
        host_data=raw[0xC0:0xE0],
        id_key_digest=raw[0xE0:0x110],
        reported_tcb=struct.unpack_from("<Q", raw, 0x180)[0],
        cpuid_fam=raw[0x188],
        cpuid_mod=raw[0x189],
        chip_id=raw[0x1A0:0x1E0],
        committed_tcb=struct.unpack_from("<Q", raw, 0x1E0)[0],
        launch_tcb=struct.unpack_from("<Q", raw, 0x1F0)[0],
    )


def decode_tcb(tcb: int, turin: bool = False) -> dict[str, int]:
    """TCB_VERSION: security patch levels of each firmware component."""
    b = tcb.to_bytes(8, "little")
    if turin:
        return {"fmc": b[0], "bootloader": b[1], "tee": b[2], "snp": b[3], "microcode": b[7]}
    return {"bootloader": b[0], "tee": b[1], "snp": b[6], "microcode": b[7]}


def decode_policy(policy: int) -> dict[str, Any]:
    out: dict[str, Any] = {"abi_major": (policy >> 8) & 0xFF, "abi_minor": policy & 0xFF}
    out.update({name: bool(policy >> bit & 1) for bit, name in _POLICY_BITS.items()})
    return out


def summary(rep: SnpReport) -> dict[str, Any]:
    turin = rep.turin_layout
    return {
        "version": rep.version,
        "guest_svn": rep.guest_svn,
        "vmpl": rep.vmpl,
        "policy": decode_policy(rep.policy),
        "signing_key": {0: "vcek", 1: "vlek"}.get(rep.signing_key, f"unknown({rep.signing_key})"),
        "current_tcb": decode_tcb(rep.current_tcb, turin),
        "reported_tcb": decode_tcb(rep.reported_tcb, turin),
        "committed_tcb": decode_tcb(rep.committed_tcb, turin),
        "launch_tcb": decode_tcb(rep.launch_tcb, turin),
        "chip_id": rep.chip_id.hex(),
        "host_data": rep.host_data.hex(),
        "id_key_digest": rep.id_key_digest.hex(),
    }


def der_int(value: bytes) -> int | None:
    """The value of a small DER INTEGER (``02 len bytes``), as the VCEK's TCB extensions hold."""
    if len(value) >= 3 and value[0] == 0x02 and value[1] == len(value) - 2:
        return int.from_bytes(value[2:], "big", signed=True)
    return None


def vcek_tcb(ext_values: dict[str, bytes]) -> dict[str, int]:
    out = {}
    for name, oid in _VCEK_TCB_OIDS.items():
        if oid in ext_values and (v := der_int(ext_values[oid])) is not None:
            out[name] = v
    return out


def tcb_matches(cert_tcb: dict[str, int], reported: dict[str, int]) -> tuple[bool, list[str]]:
    diffs = [
        f"{k} cert {v} != report {reported.get(k)}"
        for k, v in cert_tcb.items()
        if k in reported and reported[k] != v
    ]
    return not diffs and bool(cert_tcb), diffs


def product_of(names: Sequence[str]) -> str | None:
    for name in names:
        for product in ("Milan", "Genoa", "Turin"):
            if product in name:
                return product
    return None


def verify_snp(
    raw: bytes,
    pool: Sequence[Any],
    when: datetime,
    *,
    allow_debug: bool = False,
    extra_roots: Sequence[Any] = (),
    source: str = "report",
) -> Result:
    """Verify an SEV-SNP report: the VCEK signature, the VCEK's chip and TCB, the AMD chain, policy."""

    rep = parse_report(raw, source)
    res = Result("sev-snp", when, measurement=rep.measurement.hex(), report_data=rep.report_data.hex())
    if len(raw) > REPORT_SIZE:
        why = "bytes after the 1184-byte report (no signature covers them)"
        res.ignored.append(Ignored.of(source, why, raw, [(REPORT_SIZE, len(raw) - REPORT_SIZE)]))
    res.info["snp"] = summary(rep)
    res.add(
        "snp: signature algorithm", rep.signature_algo == 1, f"{rep.signature_algo} (1 = ECDSA P-384 SHA-384)"
    )
    vcek = chain.find_signer(pool, lambda key: chain.ecdsa_le_ok(key, rep.signed_part, rep.signature_rs))
    if vcek is None:
        res.add(
            "snp: report signature", False, f"no VCEK/VLEK among {len(pool)} certificates verifies the report"
        )
        return res
    res.add(
        "snp: report signature", True, f"ECDSA P-384 over bytes 0x000-0x29F verifies with '{chain.cn(vcek)}'"
    )
    exts = chain.raw_extensions(vcek)
    hwid = exts.get(VCEK_HWID_OID)
    if hwid is not None:
        res.add(
            "snp: VCEK belongs to this chip",
            hwid == rep.chip_id,
            f"hwID {hwid[:8].hex()}... vs CHIP_ID {rep.chip_id[:8].hex()}...",
        )
    ok, diffs = tcb_matches(vcek_tcb(exts), decode_tcb(rep.reported_tcb, rep.turin_layout))
    res.add("snp: VCEK TCB == REPORTED_TCB", ok, "; ".join(diffs) or f"{vcek_tcb(exts)}")
    path = chain.build_path(vcek, pool, chain.amd_roots() + list(extra_roots))
    product = product_of([chain.cn(c) for c in path]) or "unknown"
    res.info["snp"]["product"] = product
    chain.check_chain(res, "snp chain", path, chain.amd_roots() + list(extra_roots), when)
    pol = decode_policy(rep.policy)
    res.add(
        "snp: policy debug",
        allow_debug or not pol["debug_allowed"],
        f"debug {'ALLOWED' if pol['debug_allowed'] else 'disallowed'} by the guest policy"
        + (" (accepted: --allow-debug)" if allow_debug and pol["debug_allowed"] else ""),
    )
    res.add("snp: policy reserved bit 17", bool(rep.policy >> 17 & 1), f"policy 0x{rep.policy:x}")
    return res
