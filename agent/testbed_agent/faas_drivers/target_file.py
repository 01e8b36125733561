"""A FaaS target file (YAML or JSON), read and checked field by field: the platform must be one of
``platforms`` (whose module gives the defaults of region and runtime and the architectures it
offers), the cost cap a finite positive number of dollars. A bad field is one line naming the
file, the field's line and the field.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from pathlib import Path
from typing import Any

import yaml

from testbed_agent.faas_drivers import platforms
from testbed_agent.faas_drivers.ledger import usd_amount
from testbed_agent.faas_drivers.target import Target
from testbed_shared.errors import TestbedError

#: the environment variable naming the host's target file (the faas_platform role sets it)
ENV = "TESTBED_FAAS_TARGET"


def load_target(path: str | Path) -> Target:
    """A target from a YAML or JSON file; a bad one is a one-line error naming the field's line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
        lines = _key_lines(text)
        try:  # JSON as JSON (YAML 1.1 reads 1e-06 as a string), else YAML
            doc = json.loads(text)
        except ValueError:
            doc = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise TestbedError(f"{p}: cannot read the FaaS target: {exc}") from None
    return target_from(doc, str(p), lines)


def _key_lines(text: str) -> dict[str, int]:
    """The line of each top-level key of a YAML (or JSON) mapping."""
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(node, yaml.MappingNode):
        return {}
    return {str(k.value): k.start_mark.line + 1 for k, _ in node.value if isinstance(k, yaml.ScalarNode)}


def target_from_env() -> Target | None:
    """The target named by ``$TESTBED_FAAS_TARGET`` (None when unset)."""
    path = os.environ.get(ENV)
    return load_target(path) if path else None


def target_from(doc: Any, where: str = "<target>", lines: dict[str, int] | None = None) -> Target:
    if not isinstance(doc, dict):
        raise TestbedError(f"{where}: a FaaS target is a mapping (platform, region, ...)")

    def bad(key: str, problem: str) -> TestbedError:
        at = f"{where}:{lines[key]}" if lines and key in lines else where
        return TestbedError(
            f"{at}: field '{key}' {problem}", hint="see docs/faas.md, Running on real platforms"
        )

    known = {"platform", "region", "architecture", "runtime", "run_id", "host", "deadline", "deadline_h"}
    known |= {"cost_cap_usd", "prefix", "options"}
    for key in doc:
        if key not in known:
            raise bad(str(key), f"is unknown (known: {', '.join(sorted(known))})")
    name = doc.get("platform")
    if not isinstance(name, str) or name not in platforms.names():
        raise bad("platform", f"must be one of {', '.join(platforms.names())}, not {name!r}")
    platform = platforms.get(name)
    arch = str(doc.get("architecture") or "x86_64")
    if arch not in platform.architectures:
        raise bad("architecture", f"{arch!r} is not offered by {name} ({', '.join(platform.architectures)})")
    run_id = str(doc.get("run_id") or "adhoc")
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}", run_id):
        raise bad("run_id", f"{run_id!r} is not a plain name (A-Z a-z 0-9 . _ -)")
    cap = doc.get("cost_cap_usd", 5.0)
    if not usd_amount(cap) or cap == 0:
        raise bad("cost_cap_usd", f"must be a finite positive number of US dollars, not {cap!r}")
    options = doc.get("options") or {}
    if not isinstance(options, dict):
        raise bad("options", "must be a mapping")
    prefix = str(doc.get("prefix") or "tb")
    if not re.fullmatch(r"[a-z][a-z0-9]{0,7}", prefix):
        raise bad("prefix", "must be 1-8 lower-case letters and digits, starting with a letter")
    return Target(
        platform=name,
        region=str(doc.get("region") or platform.default_region),
        architecture=arch,
        runtime=str(doc.get("runtime") or platform.default_runtime),
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
