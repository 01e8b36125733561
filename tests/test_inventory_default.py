"""The headline commands as typed, on the default inventory of ansible.cfg (issue 30).

``ansible-playbook run.yml`` runs on localhost only; ``-l sev,tdx`` reaches the Azure matrix without
``-i`` flags and, without credentials, stops at the credentials check with one line naming what is
missing (before any Azure contact); ``-l kvm`` and ``-l hyperv`` reach the lab inventory, whose
documentation addresses are refused with one line.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from repotest import ansible_playbook


def _hosts(*limit: str) -> set[str]:
    res = ansible_playbook("run.yml", *limit, "--list-hosts", timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return {line.strip() for line in res.stdout.splitlines() if re.fullmatch(r" {6}\S+", line)}


def test_bare_run_is_localhost_only() -> None:
    assert _hosts() == {"localhost"}


def test_sev_tdx_reaches_the_azure_matrix() -> None:
    assert _hosts("-l", "sev,tdx") == {"sev-enc-1", "sev-1", "tdx-enc-1", "tdx-1"}


def test_kvm_and_hyperv_reach_the_lab() -> None:
    assert _hosts("-l", "kvm") == {"kvm-snp-1", "kvm-amd-plain-1", "kvm-tdx-1", "kvm-intel-plain-1"}
    assert _hosts("-l", "hyperv") == {"hv-intel-1"}
    assert _hosts("-l", "local") == {"localhost"}


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_", "ANSIBLE_AZURE"))}
    env.pop("TESTBED_AZURE_PYTHON", None)
    return env | {"HOME": str(home), "AZURE_CONFIG_DIR": str(home / ".azure")}


@pytest.mark.integration
def test_sev_tdx_without_credentials_stops_at_the_check(tmp_path: Path) -> None:
    # no HTTPS proxy and no credentials: a request to Azure would fail differently; none is made
    res = ansible_playbook("run.yml", "-l", "sev,tdx", timeout=600, env=_clean_env(tmp_path))
    assert res.returncode != 0
    errors = [line for line in res.stdout.splitlines() if line.startswith("[ERROR]")]
    assert len(errors) == 1, res.stdout[-3000:]
    assert "no Azure credentials: set AZURE_CLIENT_ID, AZURE_SECRET and AZURE_TENANT" in errors[0]
    assert "az login" in errors[0]
    assert "azure.azcollection" not in res.stdout  # no task of the collection ran


@pytest.mark.integration
def test_lab_example_addresses_are_refused() -> None:
    res = ansible_playbook("run.yml", "-l", "hyperv", timeout=300)
    assert res.returncode != 0
    errors = [line for line in res.stdout.splitlines() if line.startswith("[ERROR]")]
    assert errors and "hv-intel-1: the inventory still holds the example address 192.0.2.20" in errors[0]
