"""roles/faas_emulator and playbooks/provision_faas.yml: syntax, no-op on the local inventory, and
the systemd unit's command line started for real."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest
import yaml

from testbed_services import launcher
from testbed_services.faas.client import FaasClient

ROOT = Path(__file__).resolve().parents[2]
ROLE = ROOT / "roles" / "faas_emulator"
PLAYBOOK = shutil.which("ansible-playbook", path=str(Path(sys.executable).parent)) or "ansible-playbook"


def _render(**overrides: object) -> str:
    defaults = yaml.safe_load((ROLE / "defaults/main.yml").read_text())
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    template = env.from_string((ROLE / "templates/testbed-faas.service.j2").read_text())
    python = f"{defaults['faas_emulator_agent_dir']}/venv/bin/python"
    return template.render({**defaults, **overrides, "faas_emulator_python": python, "ansible_managed": "x"})


def test_unit_delegates_cgroups_and_passes_options():
    unit = _render(faas_emulator_profile="gcf-gen2", faas_emulator_keep_alive_s=30)
    assert "Delegate=yes" in unit and "KillMode=mixed" in unit
    exec_start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    argv = shlex.split(exec_start.removeprefix("ExecStart="))
    assert argv[0] == "/opt/testbed-agent/venv/bin/python"
    assert argv[1:5] == ["-m", "testbed_agent", "faas", "serve"]
    assert argv[argv.index("--profile") + 1] == "gcf-gen2" and argv[argv.index("--keep-alive") + 1] == "30"
    assert "--keep-alive" not in _render()


@pytest.mark.integration
def test_unit_command_line_really_serves(tmp_path):
    exec_start = next(
        line
        for line in _render(faas_emulator_profile="gcf-gen2").splitlines()
        if line.startswith("ExecStart=")
    )
    argv = shlex.split(exec_start.removeprefix("ExecStart="))
    argv[0] = sys.executable
    argv[argv.index("--port") + 1] = "0"
    argv[argv.index("--state-dir") + 1] = str(tmp_path / "state")
    url_file = tmp_path / "url"
    svc = launcher.start(
        [*argv, "--url-file", str(url_file)], name="emulator of the unit", ready=launcher.url_file(url_file)
    )
    try:
        info = FaasClient(svc.url).info()
        assert info["profile"]["name"] == "gcf-gen2" and info["max_concurrency"] == 100
    finally:
        assert svc.stop(timeout_s=30) == 0


@pytest.mark.integration
def test_playbook_is_a_quick_noop_without_faas_hosts():
    cmd = [PLAYBOOK, "-i", str(ROOT / "inventory/local.yml"), str(ROOT / "playbooks/provision_faas.yml")]
    syntax = subprocess.run([*cmd, "--syntax-check"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert syntax.returncode == 0, syntax.stderr + syntax.stdout
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert run.returncode == 0, run.stderr + run.stdout
    assert "no hosts matched" in (run.stdout + run.stderr)
