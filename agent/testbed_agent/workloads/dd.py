"""``dd``: the serverless I/O study's shapes - write from /dev/urandom or /dev/zero (buffered or
``oflag=direct``), pause, read back with ``iflag=direct``; ``LC_ALL=C``."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed_agent.benchmark import Benchmark
from testbed_agent.guard import OpenTarget, check_target, open_target
from testbed_agent.params import ParamError, spec
from testbed_agent.results import Outcome, metric
from testbed_agent.workloads.base import RunContext, Workload
from testbed_shared.errors import TargetRefused, WorkloadError

_FLAGS = ("", "direct", "dsync", "sync", "nocache")
#: sequential write + read-back throughput assumed for the duration estimate, B/s
DISK_BPS = 200e6


@dataclass(frozen=True)
class DdParams:
    bs: int = spec("128k", "size", lo=1, hi=2**30)
    count: int = spec(8000, "int", lo=1, hi=2**40)
    source: str = spec("urandom", choices=("urandom", "zero"))
    oflag: str = spec("", choices=_FLAGS)
    iflag: str = spec("direct", choices=_FLAGS)
    conv: str = spec("fdatasync", choices=("", "fdatasync", "fsync"))
    read: bool = spec(True, "bool")
    pause_s: float = spec(1.0, "num", lo=0, hi=3600)
    allow_device: bool = spec(False, "bool")
    filename: str | None = spec(None, pattern=r"[^\x00-\x1f]+")

    def __post_init__(self) -> None:
        if self.bs * self.count > 2**50:
            raise ParamError("params.count", f"bs x count is {self.bs * self.count} bytes, more than 1 PiB")


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


class Dd(Workload):
    type = "dd"
    tool = "dd"
    parse_kind = "dd"
    name_prefixes = ("dd_",)
    Params = DdParams
    #: dd's own latency (seconds per run)
    primary = (r"(read|write)_seconds",)
    default_timeout_s = 1800.0

    @classmethod
    def check_environment(cls, bench: Benchmark, params: DdParams) -> None:
        """A plan's ``filename`` is judged as the run will judge it (guard.check_target)."""
        if params.filename:
            try:
                check_target(params.filename, params.allow_device)
            except TargetRefused as exc:
                raise ParamError("params.filename", exc.message) from None

    @classmethod
    def estimate_s(cls, params: DdParams) -> float:
        p = params
        return p.bs * p.count * (2 if p.read else 1) / DISK_BPS + p.pause_s + 1

    def run(self, ctx: RunContext, params: DdParams) -> Outcome:
        p = params
        target = Path(p.filename) if p.filename else ctx.scratch / "dd" / "testfile.dat"
        # the agent opens the target itself (no links, beneath its scratch, type and mark checked on
        # the descriptor) and dd gets that descriptor as /proc/self/fd/N: nothing to swap
        with open_target(target, p.allow_device) as t:
            return self._run(ctx, p, t)

    def _run(self, ctx: RunContext, p: DdParams, t: OpenTarget) -> Outcome:
        env = {**os.environ, "LC_ALL": "C"}
        bs = str(p.bs)
        write = ["dd", f"if=/dev/{p.source}", f"of={t.proc_path}", f"bs={bs}", f"count={p.count}"]
        if p.oflag:
            write.append(f"oflag={p.oflag}")
        if p.conv:
            write.append(f"conv={p.conv}")
        raw = ctx.artifact("dd.txt")
        res = ctx.exec(write, env=env, pass_fds=(t.fd,))
        log = [f"# {t.proc_path} is {t.path}", f"$ {' '.join(write)}", res.stderr.strip()]
        w = parse_summary(res.stderr)
        metrics = _metrics("write", w)
        samples: dict[str, Any] = {"write": w}
        if p.read:
            ctx.sleep(float(p.pause_s))
            read = ["dd", f"if={t.proc_path}", "of=/dev/null", f"bs={bs}", f"count={p.count}"]
            if p.iflag:
                read.append(f"iflag={p.iflag}")
            res = ctx.exec(read, env=env, pass_fds=(t.fd,))
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
            params={"target": str(t.path), "bytes": p.bs * p.count},
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
