"""``dd``: the serverless I/O study's shapes - write from /dev/urandom or /dev/zero (buffered or
``oflag=direct``), pause, read back with ``iflag=direct``; ``LC_ALL=C``."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from testbed_agent.guard import check_target, create_test_file
from testbed_agent.plan import Benchmark, ParamError
from testbed_agent.results import Outcome, metric
from testbed_agent.workloads import register
from testbed_agent.workloads.base import RunContext, Workload, require
from testbed_shared.errors import WorkloadError
from testbed_shared.units import parse_size

DEFAULTS: dict[str, Any] = {
    "bs": "128k",
    "count": 8000,
    "source": "urandom",
    "oflag": "",
    "conv": "fdatasync",
    "read": True,
    "iflag": "direct",
    "pause_s": 1.0,
}
_FLAGS = {"", "direct", "dsync", "sync", "nocache"}
_CONVS = {"", "fdatasync", "fsync"}

# "N bytes (X kB) copied, S s, R kB/s" (old) and "N bytes (X kB, Y KiB) copied, S s, R MB/s" (new);
# also "1 byte copied" and "0 bytes copied" without the parenthesis.
SUMMARY_RE = re.compile(
    r"^(?P<bytes>\d+) bytes? (?:\((?P<human>[^)]*)\) )?copied, (?P<secs>[0-9.eE+-]+) s, "
    r"(?P<rate>[0-9.]+|inf|Infinity|-nan|nan) ?(?P<unit>[kKMGTPE]?i?B)/s\s*$",
    re.M,
)
_RATE_UNITS = {
    "B": 1,
    "kB": 1e3,
    "KB": 1e3,
    "MB": 1e6,
    "GB": 1e9,
    "TB": 1e12,
    "PB": 1e15,
    "EB": 1e18,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
    "TiB": 1024**4,
}


def parse_summary(text: str) -> dict[str, Any]:
    """Bytes, seconds and bytes per second of dd's last summary line (any coreutils version)."""
    matches = list(SUMMARY_RE.finditer(text))
    if not matches:
        raise WorkloadError("dd printed no summary line")
    m = matches[-1]
    nbytes, secs = int(m["bytes"]), float(m["secs"])
    try:
        reported = float(m["rate"]) * _RATE_UNITS[m["unit"]]
    except (ValueError, KeyError):
        reported = None
    return {
        "bytes": nbytes,
        "seconds": secs,
        "bytes_per_second": nbytes / secs if secs > 0 else None,
        "reported_rate_bytes_per_second": reported,
        "line": m.group(0).strip(),
    }


@register
class Dd(Workload):
    type = "dd"
    tool = "dd"
    parse_kind = "dd"

    @classmethod
    def check(cls, bench: Benchmark) -> None:
        p = bench.params
        try:
            parse_size(p.get("bs", DEFAULTS["bs"]))
        except ValueError as exc:
            raise ParamError("params.bs", str(exc)) from None
        if require(p, "count", int, default=DEFAULTS["count"]) < 1:
            raise ParamError("params.count", "must be >= 1")
        require(p, "source", str, default=DEFAULTS["source"], choices=("urandom", "zero"))
        require(p, "oflag", str, default="-", choices=(*_FLAGS, "-"))
        require(p, "iflag", str, default="-", choices=(*_FLAGS, "-"))
        require(p, "conv", str, default="-", choices=(*_CONVS, "-"))
        require(p, "read", bool, default=True)
        require(p, "pause_s", (int, float), default=1.0)
        require(p, "allow_device", bool, default=False)
        if "filename" in p:
            require(p, "filename", str)

    @classmethod
    def timeout_s(cls, bench: Benchmark) -> float:
        return bench.timeout_s or 1800.0

    def run(self, ctx: RunContext) -> Outcome:
        p = {**DEFAULTS, **ctx.params}
        allow = bool(p.get("allow_device", False))
        target = Path(p["filename"]) if p.get("filename") else ctx.scratch / "dd" / "testfile.dat"
        target = check_target(target, allow)
        if not target.exists() or target.is_file():
            target = create_test_file(target, allow)
        env = {**os.environ, "LC_ALL": "C"}
        bs = str(p["bs"])
        write = ["dd", f"if=/dev/{p['source']}", f"of={target}", f"bs={bs}", f"count={p['count']}"]
        if p["oflag"]:
            write.append(f"oflag={p['oflag']}")
        if p["conv"]:
            write.append(f"conv={p['conv']}")
        raw = ctx.artifact("dd.txt")
        res = ctx.exec(write, env=env)
        log = [f"$ {' '.join(write)}", res.stderr.strip()]
        w = parse_summary(res.stderr)
        metrics = _metrics("write", w)
        samples: dict[str, Any] = {"write": w}
        if p["read"]:
            ctx.sleep(float(p["pause_s"]))
            read = ["dd", f"if={target}", "of=/dev/null", f"bs={bs}", f"count={p['count']}"]
            if p["iflag"]:
                read.append(f"iflag={p['iflag']}")
            res = ctx.exec(read, env=env)
            log += [f"$ {' '.join(read)}", res.stderr.strip()]
            r = parse_summary(res.stderr)
            metrics.update(_metrics("read", r))
            samples["read"] = r
        raw.write_text("\n".join(log) + "\n")
        version = ctx.exec(["dd", "--version"], env=env).stdout.splitlines()[0]
        return Outcome(
            metrics=metrics,
            samples=samples,
            artifacts=[raw.name],
            tool={"name": "dd", "version": version.split()[-1]},
            params={"target": str(target), "bytes": parse_size(bs) * int(p["count"])},
        )

    @staticmethod
    def parse_file(path: Path) -> dict[str, Any]:
        """Metrics of a file holding dd output: one summary (write) or two (write, then read)."""
        text = Path(path).read_text()
        found = [parse_summary(m.group(0)) for m in SUMMARY_RE.finditer(text)]
        if not found:
            raise WorkloadError(f"{path}: no dd summary line")
        metrics: dict[str, Any] = {}
        for direction, summary in zip(("write", "read"), found, strict=False):
            metrics.update(_metrics(direction, summary))
        return {"metrics": metrics, "samples": {"summaries": found}, "tool": {"name": "dd"}}


def _metrics(direction: str, s: dict[str, Any]) -> dict[str, Any]:
    out = {
        f"{direction}_bytes": metric(s["bytes"], "B", "higher"),
        f"{direction}_seconds": metric(s["seconds"], "s", "lower"),
    }
    if s["bytes_per_second"] is not None:
        out[f"{direction}_bw_bytes"] = metric(s["bytes_per_second"], "B/s", "higher")
    return out
