"""The headline commands as typed, on the default inventory of ansible.cfg (issues 30 and 37).

``ansible-playbook run.yml`` runs on localhost only; ``-l sev,tdx`` reaches the Azure matrix without
``-i`` flags; ``-l kvm`` and ``-l hyperv`` reach the lab inventory. Every early stop is one line,
once, with a non-zero exit, before any work (the pre-flight play, playbooks/tasks/preflight.yml,
and its quiet stdout callback, playbooks/callback_plugins/testbed.py): an ``-i`` that names no
inventory, a plan that does not validate, the example lab's documentation addresses (run.yml and
the lab teardowns), Azure without credentials or without an SSH key.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pytest
from repotest import ROOT, ansible_playbook

sys.path.insert(0, str(ROOT / "playbooks" / "filter_plugins"))
from preflight import example_addresses, is_example_address


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


def test_documentation_addresses_are_told_apart() -> None:
    assert all(is_example_address(a) for a in ("192.0.2.10", "198.51.100.7", "203.0.113.255"))
    assert not any(is_example_address(a) for a in ("127.0.0.1", "10.0.0.2", "epyc-kvm-1", "192.0.3.1", ""))
    hostvars = {
        "guest": {"ansible_host": "127.0.0.1", "kvm_guest_host": "host"},
        "host": {"ansible_host": "192.0.2.10"},
        "mine": {"ansible_host": "10.1.1.1"},
        "named": {},
    }
    assert example_addresses(["guest", "host", "mine", "named"], hostvars) == [
        "guest (192.0.2.10)",
        "host (192.0.2.10)",
    ]


def _clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AZURE_", "ANSIBLE_AZURE"))}
    env.pop("TESTBED_AZURE_PYTHON", None)
    return env | {"HOME": str(home), "AZURE_CONFIG_DIR": str(home / ".azure")}


def _one_line_stop(*args: str, env: dict[str, str] | None = None) -> str:
    """Run ansible-playbook; it must exit non-zero having printed exactly one line, an error."""
    res = ansible_playbook(*args, timeout=600, env=env)
    lines = [x for x in (res.stdout + res.stderr).splitlines() if x.strip()]
    assert res.returncode != 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("[ERROR]: "), lines[:80]
    return lines[0]


@pytest.mark.integration
def test_an_inventory_path_that_names_nothing_stops(tmp_path: Path) -> None:
    # a typo of inventory/lab.yml used to warn, match no host and exit 0
    line = _one_line_stop("run.yml", "-i", "inventory/labs.yml")
    assert "inventory/labs.yml" in line


@pytest.mark.integration
def test_a_misspelled_plan_stops_before_any_task() -> None:
    # used to fail after 23 s and 13 tasks (node_exporter, the agent's directories) in a 110-line dump
    line = _one_line_stop("run.yml", "-e", "plan=workloads/plans/quik.yml", "-e", "run_id=preflight-plan")
    assert "workloads/plans/quik.yml: cannot read plan: No such file or directory" in line
    assert "workloads/plans/" in line.split("No such file", 1)[1]  # where the plans are
    assert not (ROOT / "results" / "preflight-plan").exists()


@pytest.mark.integration
def test_a_plan_with_an_error_stops_with_its_line(tmp_path: Path) -> None:
    plan = tmp_path / "typo.yml"
    plan.write_text("name: typo\nbenchmarks:\n  - {name: fio_4k_randread, type: fioo}\n")
    line = _one_line_stop("run.yml", "-e", f"plan={plan}")
    assert f"{plan}:3: field 'type' unknown benchmark type 'fioo'" in line and "known types:" in line


@pytest.mark.integration
def test_sev_tdx_without_credentials_stops_at_the_check(tmp_path: Path) -> None:
    # no HTTPS proxy and no credentials: a request to Azure would fail differently; none is made.
    # It used to print its line twice in about 60 lines and leave out AZURE_SUBSCRIPTION_ID.
    line = _one_line_stop("run.yml", "-l", "sev,tdx", env=_clean_env(tmp_path))
    names = "AZURE_SUBSCRIPTION_ID, AZURE_CLIENT_ID, AZURE_SECRET and AZURE_TENANT"
    assert f"no Azure credentials: set {names}" in line
    assert "az login" in line and "ANSIBLE_AZURE_AUTH_SOURCE=msi" in line


@pytest.mark.integration
def test_half_given_credentials_name_the_missing_half(tmp_path: Path) -> None:
    env = _clean_env(tmp_path) | {"AZURE_CLIENT_ID": "x", "AZURE_SUBSCRIPTION_ID": "y"}
    line = _one_line_stop("run.yml", "-l", "sev", env=env)
    assert "no Azure credentials: set AZURE_SECRET and AZURE_TENANT (" in line


@pytest.mark.integration
def test_a_dry_run_without_an_ssh_key_stops(tmp_path: Path) -> None:
    line = _one_line_stop("run.yml", "-l", "sev,tdx", "--check", env=_clean_env(tmp_path))
    assert "no SSH public key for the Azure machines: ~/.ssh/id_ed25519.pub is missing" in line
    assert "ssh-keygen -t ed25519" in line


@pytest.mark.integration
def test_lab_example_addresses_are_refused_once_for_all_hosts() -> None:
    # used to repeat its line once per host (89 lines for -l kvm,hyperv)
    line = _one_line_stop("run.yml", "-l", "kvm,hyperv")
    assert "the inventory still holds the example address 192.0.2." in line
    for host in ("kvm-snp-1", "kvm-amd-plain-1", "kvm-tdx-1", "kvm-intel-plain-1", "hv-intel-1"):
        assert f"{host} (192.0.2." in line
    assert "for 5 hosts" in line and "docs/kvm.md" in line


@pytest.mark.integration
@pytest.mark.parametrize("playbook", ["playbooks/teardown_kvm.yml", "playbooks/teardown_hyperv.yml"])
def test_lab_teardowns_refuse_the_example_addresses(playbook: str) -> None:
    # teardown_kvm.yml used to try SSH to 192.0.2.10 (rc 4, unreachable)
    line = _one_line_stop("-i", "inventory/lab.yml", playbook)
    assert "the inventory still holds the example address 192.0.2." in line
