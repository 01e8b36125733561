"""Test function doing what a hostile or buggy function would: ``op`` picks the action.

read PATH -> its first bytes; write PATH -> write a marker; whoami -> uid/gid; print N -> N bytes to
stdout; nan -> a NaN result; crash -> os._exit; fork N -> N child processes (fork bomb, bounded by
the pids cgroup); fill -> write /tmp until ENOSPC; sleep S -> sleep.
"""

import os
import time


def _fill(event):
    written = 0
    try:
        with open("/tmp/fill", "wb") as fh:
            while True:
                fh.write(b"\0" * (1 << 20))
                fh.flush()
                written += 1 << 20
    except OSError as exc:
        return {"written": written, "errno": exc.errno}


def _fork(event):
    """Start ``n`` short-lived processes (posix_spawn: cheap even when the parent is large)."""
    pids, failed = [], 0
    hold = str(float(event.get("hold_s", 0.5)))
    for _ in range(int(event.get("n", 10))):
        try:
            pids.append(os.posix_spawn("/bin/sleep", ["sleep", hold], {}))
        except OSError:
            failed += 1
    for pid in pids:
        os.waitpid(pid, 0)
    return {"forked": len(pids), "failed": failed}


def handler(event, context):
    op = event.get("op")
    if op == "read":
        with open(event["path"], "rb") as fh:
            return {"data": fh.read(64).hex()}
    if op == "write":
        with open(event["path"], "w") as fh:
            fh.write("written by a function\n")
        return {"wrote": event["path"]}
    if op == "whoami":
        return {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "groups": os.getgroups()}
    if op == "print":
        os.write(1, b"x" * int(event["n"]))
        return {"printed": int(event["n"])}
    if op == "nan":
        return {"value": float("nan")}
    if op == "crash":
        os._exit(3)
    if op == "fork":
        return _fork(event)
    if op == "fill":
        return _fill(event)
    if op == "sleep":
        time.sleep(float(event["s"]))
        return {"slept": event["s"]}
    if op == "env":
        return {"secret": os.environ.get("SECRET")}
    return {"op": op}
