"""Run one named step of a make target with progress: its output as it comes, and while it is
silent for 10 s a line with the time spent and an estimate of what is left.

    python3 scripts/step.py NAME [--estimate SECONDS] -- COMMAND [ARG...]
    python3 scripts/step.py --summary NAME...      # "NAME 1m02s, NAME 3s, total 1m05s"

The estimate is this step's duration on the last successful run on this machine
(``.cache/steps.json``), else ``--estimate``; a step that outlives it says "longer than the last
run". Durations of this invocation are kept for ``--summary``. Exit status: the command's.
Standard library only (it runs before the venv exists).
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the durations of the last successful run per step (TESTBED_STEPS_FILE moves it, for the tests)
STORE = Path(os.environ.get("TESTBED_STEPS_FILE") or ROOT / ".cache" / "steps.json")
#: seconds of silence before a progress line (TESTBED_STEP_HEARTBEAT_S, for the tests)
HEARTBEAT_S = float(os.environ.get("TESTBED_STEP_HEARTBEAT_S") or 10.0)


def dur(s: float) -> str:
    s = max(0, round(s))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _load() -> dict:
    try:
        return json.loads(STORE.read_text())
    except (OSError, ValueError):
        return {}


def _save(data: dict) -> None:
    STORE.parent.mkdir(parents=True, exist_ok=True)
    tmp = STORE.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, STORE)


def run(name: str, estimate: float | None, cmd: list[str]) -> int:
    data = _load()
    last = data.get("last", {}).get(name)
    guess = float(last) if last else estimate
    basis = "last run" if last else "typical"
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
    sel = selectors.DefaultSelector()
    if proc.stdout is None:  # pragma: no cover - stdout=PIPE always gives one
        raise RuntimeError("no pipe from the step's command")
    sel.register(proc.stdout, selectors.EVENT_READ)
    quiet_since = start
    buf = b""
    while True:
        events = sel.select(timeout=1.0)
        now = time.monotonic()
        if events:
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                sys.stdout.buffer.write(line + b"\n")
            sys.stdout.flush()
            quiet_since = now
        elif now - quiet_since >= HEARTBEAT_S:
            spent = now - start
            if guess:
                left = guess - spent
                tail = (
                    f"about {dur(left)} left ({basis} {dur(guess)})"
                    if left > 0
                    else (f"longer than the {basis} ({dur(guess)})")
                )
            else:
                tail = "no estimate yet (first run on this machine)"
            print(f"   .. {name}: {dur(spent)} so far, {tail}", flush=True)
            quiet_since = now
    if buf:
        sys.stdout.buffer.write(buf + b"\n")
        sys.stdout.flush()
    rc = proc.wait()
    spent = time.monotonic() - start
    data = _load()
    if rc == 0:
        data.setdefault("last", {})[name] = round(spent, 1)
    data.setdefault("session", {})[name] = round(spent, 1)
    _save(data)
    return rc


def summary(names: list[str]) -> str:
    got = _load().get("session", {})
    parts = [f"{n} {dur(got[n])}" for n in names if n in got]
    total = sum(got[n] for n in names if n in got)
    return ", ".join(parts) + f", total {dur(total)}"


def main(argv: list[str]) -> int:
    if "--summary" in argv:
        print(summary([a for a in argv if a != "--summary"]))
        return 0
    if "--reset" in argv:
        data = _load()
        data["session"] = {}
        _save(data)
        return 0
    if "--" not in argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    cut = argv.index("--")
    ap = argparse.ArgumentParser(prog="step.py")
    ap.add_argument("name")
    ap.add_argument("--estimate", type=float, default=None)
    args = ap.parse_args(argv[:cut])
    if not argv[cut + 1 :]:
        ap.error("no command after --")
    return run(args.name, args.estimate, argv[cut + 1 :])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
