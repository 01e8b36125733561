"""Key-service crypto through a KMS-compatible key service (moto's server on loopback), in all five
languages, each with its own AWS SDK (workloads/crypto/kms)."""

from __future__ import annotations

import shutil
import socket
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from crypto_helpers import CRYPTO, LANGUAGES, TOOLCHAIN

from testbed_agent.plan import Benchmark, ParamError
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.crypto import Crypto
from testbed_agent.workloads.crypto.kms import call_metrics, client_command
from testbed_services.kms import (
    KEYS,
    KmsConfig,
    create_keys,
    local_kms_server,
    make_client,
)
from testbed_shared import errors

pytestmark = pytest.mark.integration

#: every key kind (docs/crypto.md "Key services in every language") and the calls it makes
ENVELOPE_CALLS = {
    "sym": ("generate_data_key", "decrypt"),
    **{f"rsa{bits}": ("encrypt", "decrypt") for bits in (2048, 3072, 4096)},
}
OTHER_CALLS = {
    **{f"rsa{bits}-sign": ("sign", "verify") for bits in (2048, 3072, 4096)},
    "p256": ("sign", "verify"),
    "p384": ("sign", "verify"),
    "hmac256": ("generate_mac", "verify_mac"),
    "hmac384": ("generate_mac", "verify_mac"),
}
ALL_KEYS = [*ENVELOPE_CALLS, *OTHER_CALLS]
#: calls per process: the first (cold) one and one warm one keep 55 processes short
ITERATIONS = 2


def run(tmp_path: Path, **params: object) -> Any:
    b = Benchmark(name="kms-envelope", type="crypto", index=0, line=1, params=params)
    ctx = RunContext(
        bench=b, repetition=0, scratch=tmp_path, artifacts=tmp_path / "art", deadline=time.monotonic() + 600
    )
    return Crypto().run(ctx, Crypto.parse(ctx.bench))


def clients() -> list[str]:
    """All five languages: `make test` builds every client, so a missing toolchain or build fails."""
    missing = []
    for lang in LANGUAGES:
        tool = TOOLCHAIN[lang]
        if tool is not None and shutil.which(tool) is None:
            missing.append(f"{lang}: {tool} toolchain not on PATH")
            continue
        cmd = client_command(lang, CRYPTO)
        if isinstance(cmd, str):
            missing.append(f"{lang}: {cmd}")
    if missing:
        pytest.fail("key-service clients missing - run `make build` (make test does): " + "; ".join(missing))
    return list(LANGUAGES)


def test_config_forms() -> None:
    assert KmsConfig.from_param(True).local
    cfg = KmsConfig.from_param({"endpoint_url": "https://kms.example", "region": "eu-west-1", "key_id": "k"})
    assert not cfg.local and cfg.region == "eu-west-1"
    with pytest.raises(ValueError, match="key_id"):
        KmsConfig.from_param({"endpoint_url": "https://kms.example"})
    with pytest.raises(ValueError, match="unknown"):
        KmsConfig.from_param({"key_id": "k", "secret": "x"})
    for params, field in (
        ({"kms": 3}, "params.kms"),
        ({"kms": True, "kms_keys": ["rsa1024"]}, "params.kms_keys"),
        ({"kms": True, "iterations": 5, "warm_after": 5}, "params.warm_after"),
        ({"kms": True, "languages": ["cobol"]}, "params.languages"),
    ):
        with pytest.raises(ParamError) as err:
            Crypto.parse(Benchmark(name="kms-envelope", type="crypto", index=0, line=1, params=params))
        assert err.value.field == field


def test_cold_and_warm_calls_are_apart() -> None:
    m = call_metrics("go.sym", {"client_init": [5], "decrypt": [900, *range(100, 129)]}, warm_after=10)
    assert m["go.sym.decrypt_rtt_first"]["value"] == pytest.approx(900e-9)
    assert m["go.sym.decrypt_rtt"]["value"] == pytest.approx(118.5e-9)  # median of calls 11-30
    assert m["go.sym.client_init"]["value"] == pytest.approx(5e-9)


def test_local_server_is_loopback_only() -> None:
    with pytest.raises(errors.TestbedError, match="loopback"), local_kms_server(host="0.0.0.0"):
        pass


def test_every_language_and_key_kind_is_covered() -> None:
    assert set(LANGUAGES) == {"python", "go", "rust", "java", "node"}
    assert sorted(ALL_KEYS) == sorted(KEYS), "the test covers every key kind of testbed_services.kms"


def test_a_missing_client_fails_not_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    real = client_command
    monkeypatch.setattr(
        sys.modules[__name__],
        "client_command",
        lambda lang, root: "not built" if lang == "java" else real(lang, root),
    )
    with pytest.raises(pytest.fail.Exception, match="java: not built"):
        clients()
    monkeypatch.setitem(TOOLCHAIN, "rust", "no-such-cargo-toolchain")
    with pytest.raises(pytest.fail.Exception, match="rust: no-such-cargo-toolchain toolchain not on PATH"):
        clients()


def check_cell(m: dict[str, Any], samples: dict[str, Any], lang: str, key: str) -> None:
    """One language x key: cold and warm round trips per call, local crypto apart from them."""
    calls = {**ENVELOPE_CALLS, **OTHER_CALLS}[key]
    cell = f"{lang}.{key}"
    for call in calls:
        for suffix in ("_rtt", "_rtt_first"):
            name = f"{cell}.{call}{suffix}"
            assert name in m, f"{name} missing"
            assert m[name]["value"] > 0 and m[name]["unit"] == "s", name
        assert len(samples[cell][call]) == ITERATIONS, f"{cell}.{call}"
    local = [f"{cell}.local_encrypt", f"{cell}.local_decrypt"]
    if key not in ENVELOPE_CALLS:
        assert not any(n in m for n in local), f"{cell}: no local crypto on a sign/MAC key"
        return
    for name in local:
        assert m[name]["value"] > 0 and m[name]["unit"] == "s", name
        assert len(samples[cell][name.rsplit(".", 1)[1]]) == ITERATIONS, name
    total = m[f"{cell}.envelope_encrypt_total"]["value"]
    assert total == pytest.approx(m[f"{cell}.{calls[0]}_rtt"]["value"] + m[local[0]]["value"])


@pytest.mark.slow
def test_key_service_crypto_in_every_language(tmp_path: Path) -> None:
    langs = clients()
    out = run(
        tmp_path, kms=True, languages=langs, kms_keys=ALL_KEYS, payload_bytes=4096, iterations=ITERATIONS
    )
    assert out.status == "ok", out.error
    cells = {(c["language"], c["key"]): c["status"] for c in out.samples["cells"]}
    assert cells == {(lang, k): "ok" for lang in langs for k in ALL_KEYS}
    for lang in langs:
        for key in ALL_KEYS:
            check_cell(out.metrics, out.samples, lang, key)
    assert sorted(out.tool["implementations"]) == sorted(LANGUAGES), "every language ran"
    port = urlparse(out.params["service"].split()[-1]).port
    with pytest.raises(OSError):  # the server is gone with the benchmark
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


@pytest.mark.slow
def test_a_configured_endpoint_with_existing_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "configured" means: no server of our own, keys given, the default credential chain
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with local_kms_server() as url:
        keys = create_keys(make_client(KmsConfig(), url), ["sym", "hmac256"])
        cfg = {
            "endpoint_url": url,
            "region": "us-east-1",
            "key_id": keys["sym"],
            "mac_key_id": keys["hmac256"],
        }
        out = run(tmp_path, kms=cfg, languages=["python"], kms_keys=["sym", "hmac256", "p256"], iterations=2)
        assert out.status == "ok", out.error
        assert "python.hmac256.generate_mac_rtt" in out.metrics and "python.p256.sign_rtt" not in out.metrics
        skipped = [c for c in out.samples["cells"] if c["status"] == "skipped"]
        assert [c["key"] for c in skipped] == ["p256"] and "no key id" in skipped[0]["reason"]
        assert url in out.params["service"]


def test_every_key_kind_is_known() -> None:
    assert {usage for _, usage in KEYS.values()} == {"ENCRYPT_DECRYPT", "SIGN_VERIFY", "GENERATE_VERIFY_MAC"}
    assert {spec for spec, _ in KEYS.values()} >= {
        "RSA_2048",
        "RSA_3072",
        "RSA_4096",
        "ECC_NIST_P256",
        "ECC_NIST_P384",
        "HMAC_256",
        "HMAC_384",
    }
