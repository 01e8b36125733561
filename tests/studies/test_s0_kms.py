"""S0's key service: the local KMS does the RSA work a key size implies (issue 39 item 9). moto
answered Encrypt/Decrypt with an RSA key by its own symmetric scheme (a fixed-size blob whatever
the key, the same work for RSA-2048, 3072 and 4096); the local server now does RSAES-OAEP as KMS
does: the ciphertext is as long as the modulus, a ciphertext made with the key's public key (from
GetPublicKey) decrypts through the service, the key size's plaintext limit holds, and Decrypt
needs the algorithm. Talked to with boto3 over the real KMS protocol on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("moto")
boto3 = pytest.importorskip("boto3")
from botocore.exceptions import ClientError  # noqa: E402 - after the skip
from cryptography.hazmat.primitives import hashes  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import padding  # noqa: E402
from cryptography.hazmat.primitives.serialization import load_der_public_key  # noqa: E402

from testbed_services.kms import KmsConfig, create_keys, local_kms_server, make_client  # noqa: E402


@pytest.fixture(scope="module")
def kms() -> Iterator[tuple[Any, dict[str, str]]]:
    with local_kms_server() as url:
        client = make_client(KmsConfig(), url)
        yield client, create_keys(client, ["rsa2048", "rsa3072", "rsa4096", "sym"])


def _oaep(h: type[hashes.HashAlgorithm]) -> padding.OAEP:
    return padding.OAEP(mgf=padding.MGF1(h()), algorithm=h(), label=None)


@pytest.mark.parametrize(("name", "bits"), [("rsa2048", 2048), ("rsa3072", 3072), ("rsa4096", 4096)])
@pytest.mark.parametrize(
    ("alg", "h"), [("RSAES_OAEP_SHA_256", hashes.SHA256), ("RSAES_OAEP_SHA_1", hashes.SHA1)]
)
def test_rsa_keys_do_real_oaep_of_their_size(kms, name: str, bits: int, alg: str, h: Any) -> None:
    client, keys = kms
    key = keys[name]
    blob = client.encrypt(KeyId=key, Plaintext=b"k" * 32, EncryptionAlgorithm=alg)["CiphertextBlob"]
    assert len(blob) == bits // 8  # the raw OAEP ciphertext: as long as the modulus
    back = client.decrypt(KeyId=key, CiphertextBlob=blob, EncryptionAlgorithm=alg)
    assert back["Plaintext"] == b"k" * 32 and back["EncryptionAlgorithm"] == alg
    # a ciphertext made outside the service with the key's public key decrypts through it
    public = load_der_public_key(client.get_public_key(KeyId=key)["PublicKey"])
    mine = public.encrypt(b"outside", _oaep(h))  # type: ignore[union-attr]
    assert client.decrypt(KeyId=key, CiphertextBlob=mine, EncryptionAlgorithm=alg)["Plaintext"] == b"outside"
    # KMS's limit: modulus bytes - 2 x hash bytes - 2 (190 for RSA-2048 with SHA-256)
    limit = bits // 8 - 2 * h.digest_size - 2
    client.encrypt(KeyId=key, Plaintext=b"x" * limit, EncryptionAlgorithm=alg)
    with pytest.raises(ClientError, match="ValidationException"):
        client.encrypt(KeyId=key, Plaintext=b"x" * (limit + 1), EncryptionAlgorithm=alg)


def test_decrypt_needs_the_algorithm_and_the_right_ciphertext(kms) -> None:
    client, keys = kms
    blob = client.encrypt(KeyId=keys["rsa2048"], Plaintext=b"k", EncryptionAlgorithm="RSAES_OAEP_SHA_256")[
        "CiphertextBlob"
    ]
    with pytest.raises(ClientError, match="ValidationException"):
        client.decrypt(KeyId=keys["rsa2048"], CiphertextBlob=blob)
    with pytest.raises(ClientError, match="InvalidCiphertextException"):
        client.decrypt(KeyId=keys["rsa3072"], CiphertextBlob=blob, EncryptionAlgorithm="RSAES_OAEP_SHA_256")
    # symmetric keys keep moto's own scheme (KMS's symmetric blobs are opaque too)
    sym = client.encrypt(KeyId=keys["sym"], Plaintext=b"hello")["CiphertextBlob"]
    assert client.decrypt(CiphertextBlob=sym)["Plaintext"] == b"hello"
