"""Run ``dd`` under the instance's /tmp and return its raw summary.

Event: ``{"args": ["if=/dev/urandom", "of=f", "bs=1M", "count=64", "conv=fsync"], "cleanup": false}``,
or ``{"command": "if=/dev/urandom of=/tmp/file1 bs=512 count=19"}`` (the operands as one string, the
request body of the serverless I/O thesis's own function: S1 L1102, lambda-dd/app.mjs), or several
runs in order (e.g. write, then read back with O_DIRECT) in one call:
``{"steps": [{"name": "write", "args": [...]}, {"name": "read", "args": [...]}], "cleanup": true}``;
each step's throughput is returned as ``<name>_bytes_per_s``, and dd's elapsed seconds of the
measured step (``"measure": true``, else the last) as ``latency_s``.
Relative ``if=``/``of=`` paths are inside the temp directory; absolute ones must be inside it too,
or /dev/zero, /dev/urandom, /dev/null; ``/tmp/...`` names the instance's temp directory wherever it
is (it is /tmp itself in a confined emulator instance and on the platforms). A failing dd (e.g.
/tmp full) raises with dd's message.
Deployable unchanged: ``handler(event, context)``, standard library + coreutils dd.
"""

import os
import re
import shlex
import subprocess
import tempfile

DEVICES = ("/dev/zero", "/dev/urandom", "/dev/null")
SUMMARY = re.compile(r"(\d+) bytes .*copied, ([0-9.e+-]+) s")


def _operand(arg, tmp):
    key, sep, value = arg.partition("=")
    if key in ("if", "of") and sep:
        if value == "/tmp" or value.startswith("/tmp/"):
            value = os.path.join(tmp, value[len("/tmp/") :])
        path = value if os.path.isabs(value) else os.path.join(tmp, value)
        real = os.path.realpath(path)
        if real not in DEVICES and os.path.commonpath([real, os.path.realpath(tmp)]) != os.path.realpath(tmp):
            raise ValueError(f"dd {key}= must be inside {tmp} or one of {', '.join(DEVICES)}: {value}")
        return f"{key}={path}"
    if key not in ("bs", "ibs", "obs", "count", "skip", "seek", "conv", "iflag", "oflag", "status"):
        raise ValueError(f"dd operand not allowed: {arg}")
    return arg


def _dd(args, tmp):
    proc = subprocess.run(["dd", *args], capture_output=True, text=True, cwd=tmp, check=False)
    summary = proc.stderr.strip()
    if proc.returncode != 0:
        raise OSError(f"dd failed ({proc.returncode}): {summary.splitlines()[0] if summary else ''}")
    match = SUMMARY.search(summary)
    nbytes, secs = (int(match.group(1)), float(match.group(2))) if match else (0, 0.0)
    return {
        "summary": summary,
        "bytes": nbytes,
        "seconds": secs,
        "bytes_per_s": nbytes / secs if secs > 0 else 0.0,
    }


def handler(event, context):
    event = event or {}
    tmp = tempfile.gettempdir()
    if "command" in event:
        steps = [{"name": "dd", "args": shlex.split(str(event["command"]))}]
    else:
        steps = event.get("steps") or [{"name": "dd", "args": event.get("args", [])}]
    runs = [
        (str(s.get("name", f"step{i}")), [_operand(str(a), tmp) for a in s.get("args", [])])
        for i, s in enumerate(steps)
    ]
    out = {"tmp": tmp, "steps": {}}
    try:
        for name, args in runs:
            res = _dd(args, tmp)
            out["steps"][name] = res
            out[f"{name}_bytes_per_s"] = res["bytes_per_s"]
    finally:
        if event.get("cleanup"):
            for _, args in runs:
                for a in args:
                    if a.startswith("of=") and not a[3:].startswith("/dev/") and os.path.exists(a[3:]):
                        os.unlink(a[3:])
    if len(runs) == 1:
        out.update(out["steps"][runs[0][0]])
    # the measured step (``measure: true``, else the last): dd's own elapsed seconds = the latency
    measured = next((i for i, s in enumerate(steps) if s.get("measure")), len(runs) - 1)
    out["latency_s"] = out["steps"][runs[measured][0]]["seconds"]
    return out
