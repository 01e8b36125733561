"""Run one ``fio`` job in the instance's /tmp; return fio's JSON and the headline figures.

Event: ``{"rw": "randread", "bs": "4k", "size": "16m", "runtime_s": 5, "direct": 1,
"ioengine": "psync", "iodepth": 1}``. Needs the fio binary (bundle it on the real platforms).
"""

import json
import subprocess
import tempfile

RW = ("read", "write", "randread", "randwrite", "readwrite", "randrw")


def handler(event, context):
    event = event or {}
    rw = str(event.get("rw", "randread"))
    if rw not in RW:
        raise ValueError(f"rw must be one of {', '.join(RW)}")
    tmp = tempfile.gettempdir()
    cmd = [
        "fio",
        "--name=faas",
        f"--directory={tmp}",
        f"--rw={rw}",
        f"--bs={event.get('bs', '4k')}",
        f"--size={event.get('size', '16m')}",
        f"--ioengine={event.get('ioengine', 'psync')}",
        f"--iodepth={int(event.get('iodepth', 1))}",
        f"--direct={int(event.get('direct', 1))}",
        "--output-format=json",
        "--unlink=1",
    ]
    if event.get("runtime_s"):
        cmd += ["--time_based", f"--runtime={int(event['runtime_s'])}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise OSError(f"fio failed ({proc.returncode}): {proc.stderr.strip()[:300]}")
    out = json.loads(proc.stdout[proc.stdout.index("{") :])
    job = out["jobs"][0]
    side = job["write"] if "write" in rw else job["read"]
    return {
        "bw_bytes": side["bw_bytes"],
        "iops": side["iops"],
        "clat_mean_ns": side.get("clat_ns", {}).get("mean"),
        "fio_version": out.get("fio version"),
        "fio": out,
    }
