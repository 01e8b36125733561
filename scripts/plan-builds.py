"""The make targets a plan needs built (crypto programs of the languages it runs), one a line.

    python scripts/plan-builds.py PLAN       # e.g. "crypto-go" for the quick plan

Reads the plan through ``testbed-agent plan show --json`` (the expanded executions with their
resolved crypto cells), so what is built is what will run. Python needs no build.
"""

from __future__ import annotations

import json
import subprocess
import sys

BUILT = ("go", "rust", "java", "node")


def targets(lines: list[dict]) -> list[str]:
    """Make targets of the crypto languages (and key-service clients) the executions use."""
    out: set[str] = set()
    for ex in lines:
        if ex.get("type") != "crypto":
            continue
        langs = (ex.get("cells") or {}).get("languages") or ex.get("params", {}).get("languages") or []
        kms = bool(ex.get("params", {}).get("kms"))
        for lang in langs:
            if lang in BUILT:
                out.add(f"crypto-{lang}")
                if kms:
                    out.add(f"crypto-kms-{lang}")
    return sorted(out)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    res = subprocess.run(
        [sys.executable, "-m", "testbed_agent", "plan", "show", argv[0], "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if res.returncode != 0:
        sys.stderr.write(res.stderr)
        return res.returncode
    lines = [json.loads(x) for x in res.stdout.splitlines() if x.strip().startswith("{")]
    print("\n".join(targets(lines)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
