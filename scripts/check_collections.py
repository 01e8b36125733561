"""Check that the Ansible collections pinned in requirements.yml are the ones installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml


def main() -> int:
    root = Path(__file__).resolve().parent.parent
    wanted = yaml.safe_load((root / "requirements.yml").read_text())["collections"]
    out = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-galaxy"), "collection", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
    ).stdout
    installed: dict[str, str] = {}
    for colls in json.loads(out).values():
        for name, info in colls.items():
            installed.setdefault(name, info.get("version", "?"))
    bad = [
        f"{c['name']} {installed.get(c['name'], 'missing')} (want {c['version']})"
        for c in wanted
        if installed.get(c["name"]) != c["version"]
    ]
    if bad:
        print("requirements.yml: collections differ: " + "; ".join(bad), file=sys.stderr)
        print("hint: ansible-galaxy collection install -r requirements.yml -p collections/", file=sys.stderr)
        return 1
    print(f">> collections: {len(wanted)} pinned collections present")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
