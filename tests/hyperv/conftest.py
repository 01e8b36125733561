"""Fixtures of the Hyper-V lab tests: the KVM tests' helpers (ansible_playbook) are shared."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "kvm"))
