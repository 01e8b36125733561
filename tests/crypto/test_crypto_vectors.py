"""Every implementation passes every shared vector; a corrupted vector is rejected."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from crypto_helpers import CRYPTO, LANGUAGES, VECTORS, load_vectors, run_program, write_vectors

ALL_ALGS = {
    "aes-gcm",
    "aes-ctr",
    "aes-cbc",
    "3des-cbc",
    "cast128-cbc",
    "blowfish-cbc",
    "twofish-cbc",
    "hmac-sha256",
    "hmac-sha384",
    "ecdsa-p256",
    "ecdsa-p384",
    "rsa-oaep",
    "rsa-raw",
}
#: algorithms only the Python program implements (S4's textbook RSA: docs/crypto.md)
PYTHON_ONLY = {"rsa-raw"}


def test_vector_file_covers_every_algorithm_and_key_size() -> None:
    from testbed_agent.workloads.crypto import ALGS

    vectors = load_vectors()["vectors"]
    assert {v["alg"] for v in vectors} == ALL_ALGS == set(ALGS)
    for alg, (sizes, _ops) in ALGS.items():
        if alg.startswith(("hmac", "ecdsa")):
            continue
        assert {v["key_bits"] for v in vectors if v["alg"] == alg} == set(sizes), alg
    ids = [v["id"] for v in vectors]
    assert len(ids) == len(set(ids))


def test_published_answers_are_in_the_file() -> None:
    by_id = {v["id"]: v for v in load_vectors()["vectors"]}
    # Eric Young's Blowfish answer for the zero key and block, the 64-bit key of S4 (S4 L308)
    assert by_id["blowfish-cbc-64-eay-zero"]["ciphertext"].startswith("4ef997456198dd78")
    # a textbook RSA key of each size S4 used (S4 L189-215): n = p q, d inverts e
    for bits in (64, 256, 1024, 1536, 2048):
        v = by_id[f"rsa-raw-{bits}"]
        n, e, d, p, q = (int(v[f"rsa_{k}"], 16) for k in "nedpq")
        assert n == p * q and n.bit_length() == bits and pow(pow(7, e, n), d, n) == 7
    assert by_id["aes-cbc-fips197-c1"]["ciphertext"].startswith("69c4e0d86a7b0430d8cdb78070b4c55a")
    assert by_id["twofish-cbc-paper-zero"]["ciphertext"].startswith("9f589f5cf6122c32b6bfec2f2ae8c35a")
    assert by_id["hmac-sha256-rfc4231-2"]["mac"].startswith("5bdcc146bf60754e6a042426089575c7")


def _generate(tmp_path: Path, vectors: dict | None = None) -> subprocess.CompletedProcess:
    """The generator run on a copy of vectors.json (or of ``vectors``) in ``tmp_path``."""
    if vectors is None:
        shutil.copy(VECTORS, tmp_path / "vectors.json")
    else:
        (tmp_path / "vectors.json").write_text(json.dumps(vectors, indent=1) + "\n")
    gen = tmp_path / "generate.py"
    shutil.copy(CRYPTO / "vectors" / "generate.py", gen)
    return subprocess.run([sys.executable, str(gen)], capture_output=True, text=True, timeout=120)


def test_generator_leaves_the_published_file_as_it_is(tmp_path: Path) -> None:
    """make crypto-vectors on the tracked file changes no byte and does not even rewrite it: the
    ECDSA signatures and OAEP wrapped keys already published are verified and kept (issue 37)."""
    res = _generate(tmp_path)
    assert res.returncode == 0, res.stderr
    before = (tmp_path / "vectors.json").stat().st_mtime_ns
    assert (tmp_path / "vectors.json").read_bytes() == VECTORS.read_bytes()
    assert "unchanged" in res.stdout
    assert _generate_again(tmp_path).returncode == 0
    assert (tmp_path / "vectors.json").stat().st_mtime_ns == before


def _generate_again(tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(tmp_path / "generate.py")], capture_output=True, text=True, timeout=120
    )


def test_a_new_ecdsa_key_signs_deterministically(tmp_path: Path) -> None:
    """Without a published signature, RFC 6979: two runs give the same signature, and it verifies."""
    doc = load_vectors()
    for v in doc["vectors"]:
        if v["alg"] == "ecdsa-p256":
            del v["signature"]
    assert _generate(tmp_path, doc).returncode == 0
    first = (tmp_path / "vectors.json").read_bytes()
    assert _generate_again(tmp_path).returncode == 0
    assert (tmp_path / "vectors.json").read_bytes() == first
    code, out = run_program("python", "check", "--vectors", str(tmp_path / "vectors.json"))
    assert code == 0 and all(r["ok"] for r in out["results"])


@pytest.mark.parametrize(("vid", "field"), [("ecdsa-p384-1", "signature"), ("rsa-oaep-3072", "wrapped_key")])
def test_a_published_output_that_does_not_verify_stops_the_generator(
    tmp_path: Path, vid: str, field: str
) -> None:
    doc = load_vectors()
    v = next(x for x in doc["vectors"] if x["id"] == vid)
    v[field] = v[field][:-2] + ("00" if not v[field].endswith("00") else "01")
    res = _generate(tmp_path, doc)
    assert res.returncode != 0 and vid in res.stderr, res.stderr
    assert json.loads((tmp_path / "vectors.json").read_text()) == doc  # nothing written


@pytest.mark.parametrize("lang", LANGUAGES)
def test_all_vectors_pass(lang: str) -> None:
    """Every vector passes in every language, but for the algorithms a language does not implement
    (rsa-raw outside Python), which it lists as unsupported with the reason."""
    code, out = run_program(lang, "check", "--vectors", str(VECTORS))
    failed = [r for r in out["results"] if not r["ok"]]
    assert code == 0 and not failed, failed
    vectors = load_vectors()["vectors"]
    elsewhere = set() if lang == "python" else {v["id"] for v in vectors if v["alg"] in PYTHON_ONLY}
    assert {u["id"] for u in out["unsupported"]} == elsewhere
    assert all("not implemented" in u["reason"] for u in out["unsupported"])
    assert out["passed"] == len(vectors) - len(elsewhere)


def _corrupt(vectors: list[dict]) -> tuple[list[dict], set[str]]:
    """Flip one hex digit in one vector of each kind; return the vectors and the corrupted ids."""
    out = copy.deepcopy(vectors)
    targets = {
        "aes-gcm-256-100b": "ciphertext",
        "blowfish-cbc-448-100b": "ciphertext",
        "hmac-sha384-4096b": "mac",
        "ecdsa-p256-1": "signature",
        "rsa-oaep-2048": "wrapped_key",
        "twofish-cbc-256-stream32": "ciphertext",
    }
    for v in out:
        field = targets.get(v["id"])
        if field:
            s = v[field]
            i = len(s) // 2
            v[field] = s[:i] + ("0" if s[i] != "0" else "1") + s[i + 1 :]
    return out, set(targets)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_corrupted_vector_fails(lang: str, tmp_path: Path) -> None:
    vectors, bad = _corrupt(load_vectors()["vectors"])
    path = write_vectors(tmp_path / "corrupt.json", vectors)
    code, out = run_program(lang, "check", "--vectors", str(path))
    assert code == 3
    assert {r["id"] for r in out["results"] if not r["ok"]} == bad
    # and `run` refuses to time an algorithm whose vector is wrong
    code, out = run_program(
        lang,
        "run",
        "--alg",
        "aes-gcm",
        "--key-bits",
        "256",
        "--payload-bytes",
        "64",
        "--iterations",
        "1",
        "--vectors",
        str(path),
    )
    assert code == 3 and "aes-gcm-256-100b" in out["error"]


@pytest.mark.slow
def test_signatures_and_wrapped_keys_verify_across_languages(tmp_path: Path) -> None:
    # both curves and one RSA size keep this at 25 program runs (the other sizes run the same code)
    ids = ("ecdsa-p256-1", "ecdsa-p384-1", "rsa-oaep-2048")
    asym = [v for v in load_vectors()["vectors"] if v["id"] in ids]
    produced: dict[str, list[dict]] = {}
    for lang in LANGUAGES:
        code, out = run_program(lang, "check", "--vectors", str(write_vectors(tmp_path / "asym.json", asym)))
        assert code == 0, out
        mine = copy.deepcopy(asym)
        made = {r["id"]: r["produced"] for r in out["results"]}
        for v in mine:
            v.update(made[v["id"]])  # this language's signature / wrapped key replaces the reference
        produced[lang] = mine
    for maker, vectors in produced.items():
        path = write_vectors(tmp_path / f"from-{maker}.json", vectors)
        for checker in LANGUAGES:
            if checker == maker:
                continue
            code, out = run_program(checker, "check", "--vectors", str(path))
            failed = [r for r in out["results"] if not r["ok"]]
            assert code == 0 and not failed, f"{checker} rejects what {maker} made: {failed}"


def test_usage_errors_and_unknown_algorithms(tmp_path: Path) -> None:
    for lang in LANGUAGES:
        code, out = run_program(lang, "run", "--alg", "rot13", "--iterations", "1", "--vectors", str(VECTORS))
        assert code == 2 and "error" in out, lang
        code, out = run_program(
            lang,
            "run",
            "--alg",
            "aes-gcm",
            "--key-bits",
            "100",
            "--payload-bytes",
            "1",
            "--iterations",
            "1",
            "--vectors",
            str(VECTORS),
        )
        assert code == 2 and "key_bits" in out["error"], lang
