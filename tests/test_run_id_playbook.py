"""Issue 12 critical 1: run_plan.yml refuses a run id that is not a plain name before the agent runs."""

from __future__ import annotations

import pytest
from repotest import ansible_playbook


@pytest.mark.integration
@pytest.mark.parametrize("bad", ["..", "../../etc"])
def test_run_plan_refuses_path_like_run_id(bad: str) -> None:
    res = ansible_playbook(
        "playbooks/run_plan.yml", "-e", f"run_id={bad}", "-e", "agent_command=/bin/false", timeout=300
    )
    assert res.returncode != 0
    assert "is not a valid name" in res.stdout, res.stdout[-2000:]
    assert "Run the agent" not in res.stdout
