"""A FaaS target: which platform, where, and the run's tags, deadline and cost cap.

Read from a YAML/JSON file (``target_file.load_target``; the ``faas_platform`` role writes one per
real target and points the agent at it with ``TESTBED_FAAS_TARGET``), e.g.::

    platform: aws-lambda          # emulator, aws-lambda, gcf-gen2, azure-functions (faas_drivers/platforms)
    region: eu-west-1
    architecture: arm64           # x86_64 | arm64 (arm64: Lambda only)
    runtime: python3.12           # the platform's own runtime id (defaults below)
    run_id: 20261126T070758Z      # tag of everything created; teardown removes exactly that
    host: lambda-arm              # inventory host (tag)
    deadline_h: 6                 # everything created is tagged with now + 6 h (the reaper's limit)
    cost_cap_usd: 5               # the run stops before spending more (finite, > 0)
    options: {role_arn: ..., project: ..., subscription_id: ..., url: ...}

Credentials are never in this file: each SDK reads its platform's standard sources.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed_shared.paths import user_cache

TAG_RUN, TAG_DEADLINE, TAG_OWNER, TAG_HOST = (
    "testbed-run",
    "testbed-deadline",
    "testbed-owner",
    "testbed-host",
)
OWNER = "testbed"


@dataclass(frozen=True)
class Target:
    """Where a driver deploys, and the tags, deadline and cost cap of what it creates."""

    platform: str
    region: str = ""
    architecture: str = "x86_64"
    runtime: str = ""
    run_id: str = "adhoc"
    host: str = "local"
    deadline: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC) + dt.timedelta(hours=6))
    cost_cap_usd: float = 5.0
    prefix: str = "tb"
    options: dict[str, Any] = field(default_factory=dict)
    path: str = ""

    @property
    def run_hash(self) -> str:
        """Six hex digits naming this run and host in resource names (names are short on GCF/Azure)."""
        return hashlib.sha256(f"{self.run_id}/{self.host}".encode()).hexdigest()[:6]

    def resource_name(self, name: str, limit: int = 64, lower: bool = False) -> str:
        """The platform name of deployment ``name``: ``<prefix>-<run hash>-<name>``."""
        base = f"{self.prefix}-{self.run_hash}-{name}"
        base = re.sub(r"[^A-Za-z0-9-]", "-", base.lower() if lower else base)
        return base[:limit].rstrip("-")

    def tags(self) -> dict[str, str]:
        """The tags of everything this target creates."""
        return {
            TAG_RUN: self.run_id,
            TAG_DEADLINE: self.deadline.strftime("%Y-%m-%dT%H:%M:%SZ"),
            TAG_OWNER: OWNER,
            TAG_HOST: self.host,
        }

    def journal_path(self) -> Path:
        """The file listing what this run created on this target (for teardown after a kill)."""
        given = self.options.get("journal")
        if given:
            return Path(given)
        base = user_cache() / "testbed-faas" / "platforms"
        return base / f"{self.run_id}-{self.host}-{self.platform}.jsonl"


def label_value(text: str) -> str:
    """A GCP label value: lower case letters, digits, ``_`` and ``-``, at most 63 characters."""
    return re.sub(r"[^a-z0-9_-]", "_", text.lower())[:63]


def dump(target: Target) -> str:
    """The target as JSON (what the role writes, what a test reads back)."""
    doc = {k: v for k, v in dataclasses.asdict(target).items() if k != "path"}
    return json.dumps({**doc, "deadline": target.deadline.strftime("%Y-%m-%dT%H:%M:%SZ")}, indent=1)


def selected(tags: dict[str, str], run: str | None, now: float | None = None) -> bool:
    """Whether a resource's ``tags`` mark it as this toolkit's and of the run whose tag value is
    ``run`` (None: past its deadline at ``now``, an RFC 3339 time or, in GCP labels, epoch seconds)."""
    if tags.get(TAG_OWNER) != OWNER:
        return False
    if run is not None:
        return tags.get(TAG_RUN) == run
    deadline = tags.get(TAG_DEADLINE, "")
    try:
        when = (
            float(deadline)
            if deadline.isdigit()
            else dt.datetime.fromisoformat(deadline.replace("Z", "+00:00")).timestamp()
        )
    except ValueError:
        return False
    return when < (now if now is not None else time.time())
