"""Envelope encryption through a KMS-compatible key service (moto's server on loopback)."""

from __future__ import annotations

import socket
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from testbed_agent import errors
from testbed_agent.kms import Envelope, KmsConfig, envelope, local_kms_server, make_client
from testbed_agent.plan import Benchmark, ParamError
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.crypto import Crypto, resolve

pytestmark = pytest.mark.integration


def run(tmp_path: Path, **params: object) -> object:
    b = Benchmark(name="kms-envelope", type="crypto", index=0, line=1, params=params)
    ctx = RunContext(
        bench=b, repetition=0, scratch=tmp_path, artifacts=tmp_path / "art", deadline=time.monotonic() + 300
    )
    return Crypto().run(ctx)


def test_config_forms() -> None:
    assert KmsConfig.from_param(True).local
    cfg = KmsConfig.from_param({"endpoint_url": "https://kms.example", "region": "eu-west-1", "key_id": "k"})
    assert not cfg.local and cfg.region == "eu-west-1"
    with pytest.raises(ValueError, match="key_id"):
        KmsConfig.from_param({"endpoint_url": "https://kms.example"})
    with pytest.raises(ValueError, match="unknown"):
        KmsConfig.from_param({"key_id": "k", "secret": "x"})
    with pytest.raises(ParamError) as err:
        resolve(Benchmark(name="kms-envelope", type="crypto", index=0, line=1, params={"kms": 3}))
    assert err.value.field == "params.kms"


def test_local_server_is_loopback_only() -> None:
    with pytest.raises(errors.TestbedError, match="loopback"), local_kms_server(host="0.0.0.0"):
        pass


def test_envelope_through_the_embedded_key_service(tmp_path: Path) -> None:
    out = run(tmp_path, kms=True, payload_bytes=4096, payload="json", iterations=3, warmup=1)
    assert out.status == "ok", out.error
    m = out.metrics
    for name in (
        "generate_data_key_rtt",
        "decrypt_rtt",
        "encrypt_rtt",
        "sign_rtt",
        "verify_rtt",
        "generate_mac_rtt",
        "local_encrypt",
        "local_decrypt",
    ):
        assert m[f"kms.{name}"]["value"] > 0 and m[f"kms.{name}"]["unit"] == "s", name
        assert len(out.samples[name]) == 3
    total = m["kms.envelope_encrypt_total"]["value"]
    assert total == pytest.approx(m["kms.generate_data_key_rtt"]["value"] + m["kms.local_encrypt"]["value"])
    assert "127.0.0.1" in out.tool["service"]
    port = urlparse(out.tool["service"].split()[-1]).port
    with pytest.raises(OSError):  # the server is gone with the benchmark
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_a_configured_endpoint_with_existing_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "configured" means: no server of our own, keys given, the default credential chain
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with local_kms_server() as url:
        keys = Envelope.create_keys(make_client(KmsConfig(), url))
        cfg = {
            "endpoint_url": url,
            "region": "us-east-1",
            "key_id": keys.key_id,
            "mac_key_id": keys.mac_key_id,
        }
        out = run(tmp_path, kms=cfg, payload_bytes=1024, iterations=2)
        assert out.status == "ok", out.error
        assert "kms.generate_mac_rtt" in out.metrics and "kms.sign_rtt" not in out.metrics
        with envelope(KmsConfig.from_param(cfg)) as (env, where):
            env.round_trip(b"x" * 100)
            assert url in where and env.timings["decrypt_rtt"]
