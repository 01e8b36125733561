"""The local stand-ins the real-platform drivers are rehearsed against, as context managers.

- ``aws_env``: the emulator's Lambda API for Lambda, moto's server for IAM and CloudWatch Logs,
  reached through botocore's standard endpoint settings (AWS_ENDPOINT_URL_<SERVICE>);
- ``gcp_standin``: tests/gcp/standin/server.py (Google's token endpoint, Cloud Functions v2,
  Storage, Logging and the functions' URLs) behind HTTPS_PROXY with its CA;
- ``azure_standin``: tests/azure/arm/server.py (Entra ID, ARM with Microsoft.Web and Storage, Kudu,
  the function front, Azure Monitor metrics), run with .venv/azure's Python.
Each yields what the test needs and leaves nothing running.
"""

from __future__ import annotations

import json
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from testbed_services import launcher

ROOT = Path(__file__).resolve().parents[2]
AZURE_PY = ROOT / ".venv/azure/bin/python"
NO_PROXY = "127.0.0.1,localhost"


def _start(cmd: list[str], work: Path, what: str) -> tuple[launcher.Service, dict[str, Any]]:
    """A stand-in started by the toolkit's launcher; ready once it wrote its endpoint.json."""
    endpoint = work / "endpoint.json"

    def ready() -> str | None:
        return json.loads(endpoint.read_text())["proxy"] if endpoint.exists() else None

    svc = launcher.start(cmd, name=what, ready=ready, log=work / "standin.log", timeout_s=60)
    return svc, json.loads(endpoint.read_text())


def stats(endpoint: dict[str, Any]) -> dict[str, Any]:
    """The stand-in's request counts (its plain-HTTP control path)."""
    with urllib.request.urlopen(f"{endpoint['proxy']}/_rehearsal/stats", timeout=10) as resp:
        return json.load(resp)


@contextmanager
def gcp_standin(work: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    work.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, str(ROOT / "tests/gcp/standin/server.py"), "--dir", str(work)]
    svc, endpoint = _start(cmd, work, "the Google Cloud stand-in")
    try:
        monkeypatch.setenv("HTTPS_PROXY", endpoint["proxy"])
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", endpoint["ca"])
        monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", endpoint["credentials"])
        monkeypatch.setenv("NO_PROXY", NO_PROXY)
        yield endpoint
    finally:
        svc.stop(timeout_s=30)


@contextmanager
def azure_standin(work: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    if not AZURE_PY.exists():
        pytest.fail(".venv/azure is missing: `make test` installs it (make azure-deps)")
    work.mkdir(parents=True, exist_ok=True)
    cmd = [str(AZURE_PY), str(ROOT / "tests/azure/arm/server.py"), "--dir", str(work)]
    svc, endpoint = _start([*cmd, "--functions-python", sys.executable], work, "the ARM stand-in")
    try:
        for key, value in {
            "HTTPS_PROXY": endpoint["proxy"],
            "REQUESTS_CA_BUNDLE": endpoint["ca"],
            "AZURE_CLIENT_ID": endpoint["client_id"],
            "AZURE_CLIENT_SECRET": endpoint["secret"],
            "AZURE_TENANT_ID": endpoint["tenant"],
            "AZURE_SUBSCRIPTION_ID": endpoint["subscription_id"],
            "NO_PROXY": NO_PROXY,
        }.items():
            monkeypatch.setenv(key, value)
        yield endpoint
    finally:
        svc.stop(timeout_s=30)


@contextmanager
def aws_env(emulator_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Lambda at the emulator, IAM and Logs at a moto server; yields moto's URL. The credentials
    are the ones the emulator issued (its Lambda API checks them; moto takes any)."""
    from testbed_services.faas.credentials import find

    issued = find(emulator_url)
    monkeypatch.setenv("MOTO_IAM_LOAD_MANAGED_POLICIES", "true")  # AWSLambdaBasicExecutionRole exists
    svc = launcher.moto_server()
    moto = svc.url
    try:
        for key, value in {
            "AWS_ENDPOINT_URL_LAMBDA": emulator_url,
            "AWS_ENDPOINT_URL_IAM": moto,
            "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS": moto,
            "AWS_ACCESS_KEY_ID": issued.access_key_id,
            "AWS_SECRET_ACCESS_KEY": issued.secret_access_key,
            "AWS_DEFAULT_REGION": "eu-west-1",
            "NO_PROXY": NO_PROXY,
        }.items():
            monkeypatch.setenv(key, value)
        monkeypatch.delenv("AWS_PROFILE", raising=False)
        yield moto
    finally:
        svc.stop()


def target(platform: str, work: Path, **options: Any) -> Any:
    """A target of ``platform`` whose journal lives in ``work``."""
    from testbed_agent.faas_drivers import target_from

    doc = {
        "platform": platform,
        "run_id": options.pop("run_id", "rehearsal-1"),
        "host": options.pop("host", "h1"),
        "cost_cap_usd": options.pop("cost_cap_usd", 5.0),
        "options": {"journal": str(work / f"{platform}.journal.jsonl"), **options},
    }
    if platform == "aws-lambda":
        doc["region"] = "eu-west-1"
    elif platform == "gcf-gen2":
        doc["region"] = "europe-west1"
    return target_from(doc)
