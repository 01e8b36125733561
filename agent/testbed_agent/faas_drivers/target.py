"""A FaaS target: which platform, where, and the run's tags, deadline and cost cap.

Read from a YAML/JSON file (the ``faas_platform`` role writes one per real target and points the
agent at it with ``TESTBED_FAAS_TARGET``), e.g.::

    platform: aws-lambda          # emulator | aws-lambda | gcf-gen2 | azure-functions
    region: eu-west-1
    architecture: arm64           # x86_64 | arm64 (arm64: Lambda only)
    runtime: python3.12           # the platform's own runtime id (defaults below)
    run_id: 20261126T070758Z      # tag of everything created; teardown removes exactly that
    host: lambda-arm              # inventory host (tag)
    deadline_h: 6                 # everything created is tagged with now + 6 h (the reaper's limit)
    cost_cap_usd: 5               # the run stops before spending more
    options: {role_arn: ..., project: ..., subscription_id: ..., url: ...}

Credentials are never in this file: each SDK reads its platform's standard sources.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from testbed_services.faas import faas_dir
from testbed_shared.errors import TestbedError

PLATFORMS = ("emulator", "aws-lambda", "gcf-gen2", "azure-functions")
#: per platform: default region, runtime and the architectures it offers
DEFAULTS: dict[str, dict[str, Any]] = {
    "emulator": {
        "region": "local",
        "runtime": "",
        "arch": ("x86_64", "arm64"),
    },
    "aws-lambda": {
        "region": "us-east-1",
        "runtime": "python3.12",
        "arch": ("x86_64", "arm64"),
    },
    "gcf-gen2": {
        "region": "us-central1",
        "runtime": "python312",
        "arch": ("x86_64",),
    },
    "azure-functions": {
        "region": "westeurope",
        "runtime": "3.11",
        "arch": ("x86_64",),
    },
}
ENV = "TESTBED_FAAS_TARGET"
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
    def models(self) -> tuple[str, ...]:
        """The emulator profiles (in ``workloads/faas/profiles``) that model this platform."""
        from testbed_agent.faas_drivers.pricing import platform_of  # noqa: PLC0415 - pricing reads the faas dir

        names = sorted(f.stem for f in (faas_dir() / "profiles").glob("*.yml"))
        return tuple(n for n in names if platform_of(n) == self.platform)

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
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "testbed-faas" / "platforms"
        return base / f"{self.run_id}-{self.host}-{self.platform}.jsonl"


def label_value(text: str) -> str:
    """A GCP label value: lower case letters, digits, ``_`` and ``-``, at most 63 characters."""
    return re.sub(r"[^a-z0-9_-]", "_", text.lower())[:63]


def load_target(path: str | Path) -> Target:
    """A target from a YAML or JSON file; a bad one is a one-line error naming the field."""
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise TestbedError(f"{p}: cannot read the FaaS target: {exc}") from None
    return target_from(doc, str(p))


def target_from_env() -> Target | None:
    """The target named by ``$TESTBED_FAAS_TARGET`` (None when unset)."""
    path = os.environ.get(ENV)
    return load_target(path) if path else None


def target_from(doc: Any, where: str = "<target>") -> Target:
    if not isinstance(doc, dict):
        raise TestbedError(f"{where}: a FaaS target is a mapping (platform, region, ...)")

    def bad(key: str, problem: str) -> TestbedError:
        return TestbedError(
            f"{where}: field '{key}' {problem}", hint="see docs/faas.md, Running on real platforms"
        )

    known = {"platform", "region", "architecture", "runtime", "run_id", "host", "deadline", "deadline_h"}
    known |= {"cost_cap_usd", "prefix", "options"}
    for key in doc:
        if key not in known:
            raise bad(str(key), f"is unknown (known: {', '.join(sorted(known))})")
    platform = doc.get("platform")
    if platform not in PLATFORMS:
        raise bad("platform", f"must be one of {', '.join(PLATFORMS)}, not {platform!r}")
    d = DEFAULTS[platform]
    arch = str(doc.get("architecture") or "x86_64")
    if arch not in d["arch"]:
        raise bad("architecture", f"{arch!r} is not offered by {platform} ({', '.join(d['arch'])})")
    run_id = str(doc.get("run_id") or "adhoc")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", run_id):
        raise bad("run_id", f"{run_id!r} is not a plain name (A-Z a-z 0-9 . _ -)")
    cap = doc.get("cost_cap_usd", 5.0)
    if isinstance(cap, bool) or not isinstance(cap, (int, float)) or cap < 0:
        raise bad("cost_cap_usd", "must be a number >= 0 (US dollars)")
    options = doc.get("options") or {}
    if not isinstance(options, dict):
        raise bad("options", "must be a mapping")
    prefix = str(doc.get("prefix") or "tb")
    if not re.fullmatch(r"[a-z][a-z0-9]{0,7}", prefix):
        raise bad("prefix", "must be 1-8 lower-case letters and digits, starting with a letter")
    return Target(
        platform=platform,
        region=str(doc.get("region") or d["region"]),
        architecture=arch,
        runtime=str(doc.get("runtime") or d["runtime"]),
        run_id=run_id,
        host=str(doc.get("host") or "local"),
        deadline=_deadline(doc, bad),
        cost_cap_usd=float(cap),
        prefix=prefix,
        options=options,
        path=where,
    )


def _deadline(doc: dict[str, Any], bad: Any) -> dt.datetime:
    if doc.get("deadline"):
        try:
            when = dt.datetime.fromisoformat(str(doc["deadline"]).replace("Z", "+00:00"))
        except ValueError:
            raise bad("deadline", "must be an RFC 3339 time, e.g. 2026-11-26T18:00:00Z") from None
        return when if when.tzinfo else when.replace(tzinfo=dt.UTC)
    hours = doc.get("deadline_h", 6)
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not 0 < hours <= 168:
        raise bad("deadline_h", "must be hours in (0, 168]")
    return dt.datetime.now(dt.UTC) + dt.timedelta(hours=float(hours))


def dump(target: Target) -> str:
    """The target as JSON (what the role writes, what a test reads back)."""
    return json.dumps(
        {
            "platform": target.platform,
            "region": target.region,
            "architecture": target.architecture,
            "runtime": target.runtime,
            "run_id": target.run_id,
            "host": target.host,
            "deadline": target.deadline.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "cost_cap_usd": target.cost_cap_usd,
            "prefix": target.prefix,
            "options": target.options,
        },
        indent=1,
    )
