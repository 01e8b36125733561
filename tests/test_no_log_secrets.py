"""Issue 12 medium 10: every task that passes a secret to a module has ``no_log: true``."""

from __future__ import annotations

from pathlib import Path

import yaml
from repotest import ROOT


def _tasks(node: object):
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        if any(k in node for k in ("block", "rescue", "always")):
            for k in ("block", "rescue", "always"):
                yield from _tasks(node.get(k) or [])
        yield node


def test_tasks_passing_secret_have_no_log() -> None:
    found = []
    for path in sorted((ROOT / "roles").glob("*/tasks/*.yml")) + sorted((ROOT / "playbooks").glob("*.yml")):
        for task in _tasks(yaml.safe_load(Path(path).read_text()) or []):
            args = [v for v in task.values() if isinstance(v, dict)]
            if any("secret" in a for a in args):
                found.append(path.name)
                assert task.get("no_log") is True, (
                    f"{path}: task {task.get('name')!r} passes secret: without no_log"
                )
    assert found, "the Azure role passes a secret somewhere"
