"""Helpers of the repository-level tests (Ansible runs, lint, waiting for processes to end)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from testbed_agent.procs import proc_stat

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent


def gone_within(pids: Iterable[int], seconds: float) -> bool:
    """Whether every one of ``pids`` has ended (gone or a zombie) within ``seconds``: a pid reaped
    while its /proc entry is read counts as gone (``proc_stat``)."""
    pids = list(pids)
    end = time.monotonic() + seconds
    while any(proc_stat(p) is not None for p in pids):
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)
    return True


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ansible_playbook(
    *args: str,
    timeout: float = 900,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the real ansible-playbook of the venv from the repository root."""
    full_env = {**os.environ, "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1", **(env or {})}
    return subprocess.run(
        [str(VENV_BIN / "ansible-playbook"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
    )
