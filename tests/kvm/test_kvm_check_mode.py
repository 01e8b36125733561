"""`run.yml --check` on a lab inventory: the KVM roles' read-only probes run in check mode too.

A probe is a command, script or libvirt listing whose result is registered and that changes
nothing (changed_when: false, or a list_*/get_xml libvirt command). In check mode Ansible skips
commands and scripts, and the next task then reads a result that is not there.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from repotest import ROOT

PROBE_MODULES = {"ansible.builtin.command", "ansible.builtin.script", "ansible.builtin.shell"}
LIBVIRT = {"community.libvirt.virt", "community.libvirt.virt_pool", "community.libvirt.virt_net"}
FILES = sorted((ROOT / "roles/kvm_host/tasks").glob("*.yml")) + sorted(
    (ROOT / "roles/kvm_guest/tasks").glob("*.yml")
)


def _tasks(items: list[dict]) -> Iterator[dict]:
    for task in items or []:
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key) or [])


def _is_probe(task: dict) -> bool:
    if "register" not in task:
        return False
    for module in LIBVIRT:
        if module in task:
            return str(task[module].get("command", "")).startswith(("list_", "get_xml"))
    return any(m in task for m in PROBE_MODULES) and task.get("changed_when") is False


def test_the_probe_rule_finds_probes() -> None:
    assert sum(_is_probe(t) for f in FILES for t in _tasks(yaml.safe_load(f.read_text()))) >= 8


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.parent.name}/{p.name}" for p in FILES])
def test_read_only_probes_run_in_check_mode(path: Path) -> None:
    missing = [
        t["name"]
        for t in _tasks(yaml.safe_load(path.read_text()))
        if _is_probe(t) and t.get("check_mode") is not False
    ]
    assert missing == []
