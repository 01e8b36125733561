"""Evidence built by the tests with their own keys: an AMD-like chain (ARK -> ASK -> VCEK), SEV-SNP
reports, Azure HCL reports whose claims carry an attestation key, and TPM2 quotes signed by it."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

#: evidence captured on real hardware (shared/tests/data/attestation-samples, with its licences)
SAMPLES = Path(__file__).parent / "data" / "attestation-samples"

CHIP_ID = bytes(range(64))
TCB = {"bootloader": 3, "tee": 0, "snp": 8, "microcode": 115}
_PSS = padding.PSS(mgf=padding.MGF1(hashes.SHA384()), salt_length=48)


def _name(cn: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Testbed Test CA"),
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
        ]
    )


def _der_int(v: int) -> bytes:
    return bytes([2, 1, v])


def make_cert(subject: str, key, issuer: str, issuer_key, *, ca: bool, extensions=()) -> x509.Certificate:
    now = datetime.now(UTC)
    b = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=365))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    for oid, value in extensions:
        b = b.add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier(oid), value), critical=False)
    pad = _PSS if isinstance(issuer_key, rsa.RSAPrivateKey) else None
    return b.sign(issuer_key, hashes.SHA384(), rsa_padding=pad)


def pem(*certs: x509.Certificate) -> bytes:
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs)


@dataclass
class AmdLikeChain:
    """ARK (self-signed, RSA-PSS) -> ASK -> VCEK (P-384) carrying CHIP_ID and TCB extensions."""

    ark_key: rsa.RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(65537, 2048))
    ask_key: rsa.RSAPrivateKey = field(default_factory=lambda: rsa.generate_private_key(65537, 2048))
    vcek_key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP384R1())
    )

    def __post_init__(self) -> None:
        self.ark = make_cert("ARK-Testbed", self.ark_key, "ARK-Testbed", self.ark_key, ca=True)
        self.ask = make_cert("SEV-Testbed", self.ask_key, "ARK-Testbed", self.ark_key, ca=True)
        ext = [("1.3.6.1.4.1.3704.1.4", CHIP_ID)]
        oids = {"bootloader": 1, "tee": 2, "snp": 3, "microcode": 8}
        ext += [(f"1.3.6.1.4.1.3704.1.3.{oids[k]}", _der_int(v)) for k, v in TCB.items()]
        self.vcek = make_cert(
            "SEV-VCEK", self.vcek_key, "SEV-Testbed", self.ask_key, ca=False, extensions=ext
        )

    def write(self, folder: Path) -> tuple[Path, Path]:
        """(chain PEM with VCEK, ASK, ARK; root PEM with the ARK alone)."""
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "chain.pem").write_bytes(pem(self.vcek, self.ask, self.ark))
        (folder / "root.pem").write_bytes(pem(self.ark))
        return folder / "chain.pem", folder / "root.pem"


def tcb_u64() -> int:
    return int.from_bytes(
        bytes([TCB["bootloader"], TCB["tee"], 0, 0, 0, 0, TCB["snp"], TCB["microcode"]]), "little"
    )


def snp_report(
    key: ec.EllipticCurvePrivateKey,
    report_data: bytes,
    *,
    policy: int = 0x30000,
    measurement: bytes = b"\x11" * 48,
) -> bytes:
    """A version-2 SEV-SNP report signed like the firmware does (r, s little-endian)."""
    r = bytearray(1184)
    struct.pack_into("<IIQ", r, 0, 2, 0, policy)
    struct.pack_into("<IIQQ", r, 0x30, 0, 1, tcb_u64(), 1)
    r[0x50:0x90] = report_data.ljust(64, b"\0")
    r[0x90:0xC0] = measurement
    struct.pack_into("<Q", r, 0x180, tcb_u64())
    r[0x1A0:0x1E0] = CHIP_ID
    struct.pack_into("<Q", r, 0x1E0, tcb_u64())
    struct.pack_into("<Q", r, 0x1F0, tcb_u64())
    der = key.sign(bytes(r[:0x2A0]), ec.ECDSA(hashes.SHA384()))
    rr, ss = decode_dss_signature(der)
    r[0x2A0:0x2E8] = rr.to_bytes(72, "little")
    r[0x2E8:0x330] = ss.to_bytes(72, "little")
    return bytes(r)


def _b64u(n: int) -> str:
    return base64.urlsafe_b64encode(n.to_bytes((n.bit_length() + 7) // 8, "big")).rstrip(b"=").decode()


def ak_jwk(ak_pub: rsa.RSAPublicKey) -> dict:
    nums = ak_pub.public_numbers()
    return {"kid": "HCLAkPub", "key_ops": ["sign"], "kty": "RSA", "e": _b64u(nums.e), "n": _b64u(nums.n)}


def hcl_report(
    vcek_key: ec.EllipticCurvePrivateKey,
    ak_pub: rsa.RSAPublicKey,
    *,
    user_data: bytes | None = None,
    claims_edit=None,
    size: int | None = None,
) -> bytes:
    """An Azure HCL report: header, SNP report with REPORT_DATA = SHA-256(claims), runtime claims."""
    claims = {"keys": [ak_jwk(ak_pub)], "vm-configuration": {"secure-boot": True, "tpm-enabled": True}}
    if user_data is not None:
        claims["user-data"] = user_data.hex().upper()
    raw_claims = json.dumps(claims, separators=(",", ":")).encode()
    snp = snp_report(vcek_key, hashlib.sha256(raw_claims).digest())
    if claims_edit:
        raw_claims = claims_edit(raw_claims)
    runtime = struct.pack("<5I", 20 + len(raw_claims), 1, 2, 1, len(raw_claims)) + raw_claims
    header = b"HCLA" + struct.pack("<7I", 1, 32 + 1184 + len(runtime), 2, 0, 0, 0, 0)
    out = header + snp + runtime
    return out.ljust(size, b"\0") if size else out  # the NV index's zero padding


def tpm_quote(ak: rsa.RSAPrivateKey, nonce: bytes, pcrs: dict[int, bytes]) -> tuple[bytes, bytes]:
    """(TPMS_ATTEST, TPMT_SIGNATURE) of a sha256 PCR quote signed RSASSA/SHA-256."""
    select = sorted(pcrs)
    bitmap = bytearray(3)
    for i in select:
        bitmap[i // 8] |= 1 << (i % 8)
    digest = hashlib.sha256(b"".join(pcrs[i] for i in select)).digest()
    msg = (
        struct.pack(">IH", 0xFF544347, 0x8018)
        + struct.pack(">H", 2)
        + b"\x00\x0b"
        + struct.pack(">H", len(nonce))
        + nonce
        + struct.pack(">QIIB", 123456, 1, 0, 1)
        + struct.pack(">Q", 0x2020031200120003)
        + struct.pack(">IHB", 1, 0x000B, 3)
        + bytes(bitmap)
        + struct.pack(">H", 32)
        + digest
    )
    sig = ak.sign(msg, padding.PKCS1v15(), hashes.SHA256())
    return msg, struct.pack(">HHH", 0x0014, 0x000B, len(sig)) + sig


def flip(data: bytes, offset: int) -> bytes:
    b = bytearray(data)
    b[offset] ^= 0x01
    return bytes(b)


@dataclass
class IntelLikeChain:
    """Root CA -> PCK leaf (P-256), the quoting enclave's attestation key, all the tests' own."""

    root_key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    pck_key: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    ak: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))

    def __post_init__(self) -> None:
        self.root = make_cert(
            "Testbed SGX Root CA", self.root_key, "Testbed SGX Root CA", self.root_key, ca=True
        )
        self.pck = make_cert(
            "Testbed SGX PCK Certificate", self.pck_key, "Testbed SGX Root CA", self.root_key, ca=False
        )


def _raw_sig(key: ec.EllipticCurvePrivateKey, data: bytes) -> bytes:
    r, s = decode_dss_signature(key.sign(data, ec.ECDSA(hashes.SHA256())))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


INTEL_QE_VENDOR = bytes.fromhex("939a7233f79c4ca9940a0db3957f0607")


def td_body(report_data: bytes, mrtd: bytes = b"\x22" * 48) -> bytes:
    """A 584-byte TD quote body (TEE_TCB_SVN, MRSEAM... RTMRs, REPORTDATA) with these values."""
    body = bytearray(584)
    body[0:16] = bytes([3, 0, 5]) + bytes(13)
    body[16:64] = b"\x5e" * 48
    body[136:184] = mrtd
    body[328:520] = b"\x7a" * 192
    body[520:584] = report_data.ljust(64, b"\0")
    return bytes(body)


def tdx_quote_v4(
    chain: IntelLikeChain, report_data: bytes, mrtd: bytes = b"\x22" * 48, body: bytes | None = None
) -> bytes:
    """A version-4 TDX quote: header, 584-byte TD report, AK signature, QE report certified by the
    PCK leaf whose REPORT_DATA binds the AK, and the NUL-terminated PCK chain (certification data
    6 / 5), laid out as Intel's quoting enclave does."""
    header = struct.pack("<HHIHH", 4, 2, 0x81, 0, 0) + INTEL_QE_VENDOR + bytes(20)
    body = body or td_body(report_data, mrtd)
    signed = header + body
    ak_raw = chain.ak.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )[1:]
    auth = bytes(range(32))
    qe = bytearray(384)
    qe[320:352] = hashlib.sha256(ak_raw + auth).digest()
    certs = pem(chain.pck, chain.root) + b"\0"
    inner = struct.pack("<HI", 5, len(certs)) + certs
    cert6 = bytes(qe) + _raw_sig(chain.pck_key, bytes(qe)) + struct.pack("<H", len(auth)) + auth + inner
    sig = _raw_sig(chain.ak, signed) + ak_raw + struct.pack("<HI", 6, len(cert6)) + cert6
    return signed + struct.pack("<I", len(sig)) + sig


def tdreport(body: bytes) -> bytes:
    """The 1024-byte TDREPORT a quote with this body was made from (MAC: zeros, nobody can check it)."""
    tee_tcb_info = bytearray(239)
    tee_tcb_info[0:8] = bytes.fromhex("ff01030000000000")
    tee_tcb_info[8:128] = body[0:120]  # TEE_TCB_SVN, MRSEAM, MRSIGNERSEAM, SEAMATTRIBUTES
    tdinfo = bytearray(512)
    tdinfo[0:400] = body[120:520]  # TDATTRIBUTES, XFAM, MRTD, MRCONFIGID, MROWNER(CONFIG), RTMRs
    mac = bytearray(256)
    mac[0] = 0x81
    mac[32:80] = hashlib.sha384(bytes(tee_tcb_info)).digest()
    mac[80:128] = hashlib.sha384(bytes(tdinfo)).digest()
    mac[128:192] = body[520:584]
    return bytes(mac) + bytes(tee_tcb_info) + bytes(17) + bytes(tdinfo)


def hcl_report_tdx(tdreport_data: bytes, mrtd: bytes, claims: dict, size: int = 2600) -> tuple[bytes, bytes]:
    """(HCL report, TD quote body) of an Azure TDX VM whose REPORTDATA is SHA-256 of the claims
    (or ``tdreport_data``): the header says request type 2, the request data report type 4."""
    raw_claims = json.dumps(claims, separators=(",", ":")).encode()
    body = td_body(tdreport_data or hashlib.sha256(raw_claims).digest(), mrtd)
    runtime = struct.pack("<5I", 20 + len(raw_claims), 2 - 1, 4, 1, len(raw_claims)) + raw_claims
    header = b"HCLA" + struct.pack("<7I", 2, 32 + 1184 + len(runtime), 2, 0, 0, 0, 0)
    return (header + tdreport(body).ljust(1184, b"\0") + runtime).ljust(size, b"\0"), body
