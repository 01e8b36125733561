"""``fio``: the 12 classic jobs (4k/64k/1m x seq/rand x read/write), direct I/O, JSON output."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from testbed_agent import fiojob
from testbed_agent.benchmark import Benchmark
from testbed_agent.guard import (
    SIDECAR,
    OpenTarget,
    check_target,
    install_staging,
    is_marked_fd,
    open_staging,
    open_target,
    remove_stale_staging_fd,
)
from testbed_agent.params import ParamError, spec
from testbed_agent.results import Outcome, metric
from testbed_agent.workloads.base import RunContext, Workload
from testbed_shared.errors import TargetRefused, WorkloadError
from testbed_shared.paths import workloads_dir

#: sequential throughput assumed for the layout of the test file (duration estimate), B/s
DISK_BPS = 200e6
PERCENTILES = ("50.000000", "90.000000", "99.000000", "99.900000")
_ALIASES = (("sequential", ""), ("seq", ""), ("random", "rand"))


def job_name(name: str) -> str:
    """Canonical job of a plan name: fio_4k_randomwrite -> fio_4k_randwrite."""
    m = re.fullmatch(r"fio_(\w+?)_(\w+)", Path(name).stem)
    if not m:
        return Path(name).stem
    rw = m.group(2).lower()
    for old, new in _ALIASES:
        if rw.startswith(old):
            rw = new + rw[len(old) :]
            break
    return f"fio_{m.group(1).lower()}_{rw}"


@dataclass(frozen=True)
class FioParams:
    job: str | None = spec(None, pattern=r"[^\x00-\x1f:]+")
    size: int = spec("1G", "size", lo=4096, hi=2**50)
    runtime_s: int = spec(60, "int", lo=1, hi=86_400)
    ramp_s: int = spec(2, "int", lo=0, hi=3600)
    #: an engine name (which engines exist depends on fio's build: an unknown one fails at run time)
    ioengine: str = spec("libaio", pattern=r"[a-z][a-z0-9_]{0,31}")
    iodepth: int = spec(16, "int", lo=1, hi=65_536)
    allow_device: bool = spec(False, "bool")
    filename: str | None = spec(None, pattern=r"[^\x00-\x1f\\]+")

    def __post_init__(self) -> None:
        # fio reads ':' as a list of files: a name with one could write elsewhere
        if self.filename is not None and ":" in self.filename:
            raise ParamError("params.filename", "fio reads ':' as a separator between files")


def job_file(bench: Benchmark, p: FioParams) -> Path:
    """The job file of a benchmark: ``params.job`` (a relative path is under workloads/, e.g. a
    study pack's ``studies/S2/fio/...``), else the classic job its name says."""
    if p.job:
        return Path(p.job) if Path(p.job).is_absolute() else workloads_dir() / p.job
    return workloads_dir() / "fio" / f"{job_name(bench.name)}.fio"


def job_env(p: FioParams, target: str, size: int) -> dict[str, str]:
    """The whole environment fio runs with: ``${VAR}`` in a job expands only to these."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LC_ALL": "C",
        "FIO_FILENAME": target,
        "FIO_SIZE": str(size),
        "FIO_IOENGINE": str(p.ioengine),
        "FIO_IODEPTH": str(p.iodepth),
        "FIO_RUNTIME": str(p.runtime_s),
        "FIO_RAMP": str(p.ramp_s),
    }


#: job files fio accepted in this process while a plan was checked: (fio's path and file
#: identity, the job's SHA-256, the environment). A plan loaded again (``plan show``, ``derive``,
#: the tests) asks fio once per distinct job. Only the check is skipped: the run asks fio again
#: (``_showcmd``) and uses what it answers then.
_CHECKED: set[tuple[Any, ...]] = set()
_CHECKED_MAX = 1024


def _check_key(fio: str, text: bytes, env: dict[str, str]) -> tuple[Any, ...]:
    st = os.stat(fio)
    digest = hashlib.sha256(text).hexdigest()
    return (fio, st.st_ino, st.st_size, st.st_mtime_ns, digest, *sorted(env.items()))


def _check_run(cmd: list[str], env: dict[str, str]) -> str:
    """fio --showcmd while a plan is checked (no run yet: bounded, nothing to track)."""
    try:
        res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30, check=False)  # noqa: S603 - fio --showcmd while a plan is checked: no run exists yet, bounded (30 s)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TargetRefused(f"fio could not read the job file: {exc}") from None
    if res.returncode != 0:
        raise TargetRefused(f"fio refused the job file: {fiojob.fio_complaint(res.stderr or res.stdout)}")
    return res.stdout


def _showcmd(ctx: RunContext, cmd: list[str], env: dict[str, str]) -> str:
    res = ctx.exec(cmd, env=env, check=False)
    if res.returncode != 0:
        raise TargetRefused(f"fio refused the job file: {fiojob.fio_complaint(res.stderr or res.stdout)}")
    return res.stdout


class Fio(Workload):
    type = "fio"
    tool = "fio"
    parse_kind = "fio"
    name_prefixes = ("fio_",)
    Params = FioParams
    #: bandwidth per direction
    primary = (r"(read|write|trim)_bw_bytes",)

    @classmethod
    def check_environment(cls, bench: Benchmark, params: FioParams) -> None:
        p = params
        job = job_file(bench, p)
        if not job.is_file():
            raise ParamError("name" if p.job is None else "params.job", f"no fio job file {job}")
        if p.ioengine not in fiojob.ENGINES:
            raise ParamError(
                "params.ioengine", f"not an allowed I/O engine (allowed: {', '.join(fiojob.ENGINES)})"
            )
        if p.filename:  # judged as the run will judge it
            try:
                check_target(p.filename, p.allow_device)
            except TargetRefused as exc:
                raise ParamError("params.filename", exc.message) from None
        if p.job is not None:
            try:
                text = job.read_bytes()
                fiojob.check_job_text(text, str(job))
                fio = shutil.which("fio")
                if fio:
                    placeholder = "/var/tmp/testbed-agent/check/testfile.dat"
                    env = job_env(p, placeholder, 4096)
                    key = _check_key(fio, text, env)
                    if key not in _CHECKED:
                        fiojob.check_job(str(job), env, placeholder, _check_run)
                        if job.read_bytes() == text and len(_CHECKED) < _CHECKED_MAX:
                            _CHECKED.add(key)  # the bytes fio read are the bytes hashed
            except TargetRefused as exc:
                raise ParamError("params.job", exc.message) from None

    @classmethod
    def default_timeout(cls, params: FioParams) -> float:
        return float(params.runtime_s + params.ramp_s) * 2 + 600

    @classmethod
    def estimate_s(cls, params: FioParams) -> float:
        p = params
        return p.runtime_s + p.ramp_s + 2 * p.size / DISK_BPS / 10 + 2

    def run(self, ctx: RunContext, params: FioParams) -> Outcome:
        p = params
        target = Path(p.filename) if p.filename else ctx.scratch / "fio" / "testfile.dat"
        job = job_file(ctx.bench, p)
        fiojob.check_job_text(job.read_bytes(), str(job))
        # the agent opens the target itself (no links, beneath its scratch, type and mark checked on
        # the descriptor) and fio gets /proc/self/fd/N: a name swapped afterwards redirects nothing
        with open_target(fiojob.check_filename(Path(target)), p.allow_device) as t:
            env = job_env(p, t.proc_path, p.size)
            # fio's own parser decides what the job means, checked before anything is laid out or
            # run; the run then uses the checked options, not the job file (no second reading)
            args = fiojob.check_job(str(job), env, t.proc_path, lambda cmd, e: _showcmd(ctx, cmd, e))
            self._layout(ctx, t, p.size)
            out = ctx.artifact("fio.json")
            cmd = ["fio", "--output-format=json", f"--output={out}", *args]
            ctx.exec(cmd, env=env, cwd=ctx.artifacts, pass_fds=(t.fd,))
            parsed = self.parse_file(out)
            return Outcome(
                metrics=parsed["metrics"],
                samples=parsed["samples"],
                tool=parsed["tool"],
                artifacts=[out.name],
                params={"size_bytes": p.size, "target": str(t.path)},
            )

    @staticmethod
    def _layout(ctx: RunContext, t: OpenTarget, size: int) -> None:
        """Lay the target out fully once, so writes do not measure allocation.

        The layout is written to a marked staging file beside the target (opened beneath the same
        directory descriptor) and moved over it atomically; the target's descriptor then refers to
        the laid-out file. A kill during the layout leaves only a marked staging file, removed by
        the next run. Nothing is laid out on a device or over a file that is already large enough
        (one of the agent's, or a foreign one the plan allows)."""
        st = os.fstat(t.fd)
        if t.device or st.st_size >= size or not is_marked_fd(t.fd, t.dir_fd, t.name):
            return
        remove_stale_staging_fd(t)
        staged = open_staging(t)
        try:
            # at its full size already, fio writes it over instead of unlinking and recreating it
            # (which it cannot do through /proc/self/fd/N, and which would leave an unmarked file)
            os.ftruncate(staged.fd, size)
            ctx.exec(
                [
                    "fio",
                    "--name=layout",
                    f"--filename={staged.proc_path}",
                    f"--size={size}",
                    "--rw=write",
                    f"--bs={'1M' if size >= 1 << 20 else '4k'}",  # fio refuses a size below bs
                    "--direct=1",
                    "--ioengine=psync",
                    "--end_fsync=1",
                    "--output-format=json",
                    f"--output={ctx.artifact('layout.json')}",
                ],
                cwd=ctx.artifacts,
                pass_fds=(staged.fd,),
            )
            install_staging(staged, t)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(staged.name, dir_fd=staged.dir_fd)
            with contextlib.suppress(OSError):
                os.unlink(staged.name + SIDECAR, dir_fd=staged.dir_fd)
            staged.close()
            raise

    @staticmethod
    def parse_file(path: Path) -> dict[str, Any]:
        return parse_fio_json(Path(path).read_text())


def parse_fio_json(text: str) -> dict[str, Any]:
    """Bandwidth, IOPS and clat/lat/slat mean and percentiles of fio's JSON (group reporting)."""
    start = text.find("{")
    if start < 0:
        raise WorkloadError("fio output holds no JSON")
    try:
        doc = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise WorkloadError(f"fio JSON unreadable: {exc}") from None
    jobs = doc.get("jobs") or []
    if not jobs:
        raise WorkloadError("fio JSON has no jobs")
    job = jobs[0]
    if job.get("error"):
        raise WorkloadError(f"fio job error {job['error']}")
    metrics: dict[str, Any] = {}
    samples: dict[str, Any] = {}
    for direction in ("read", "write", "trim"):
        d = job.get(direction) or {}
        if not d.get("io_bytes"):
            continue
        metrics[f"{direction}_bw_bytes"] = metric(d["bw_bytes"], "B/s", "higher")
        metrics[f"{direction}_iops"] = metric(d["iops"], "1/s", "higher")
        for kind in ("clat", "lat", "slat"):
            stats = d.get(f"{kind}_ns") or {}
            if stats.get("N", 0) or stats.get("mean"):
                metrics[f"{direction}_{kind}_mean_s"] = metric(stats["mean"] / 1e9, "s", "lower")
        pct = (d.get("clat_ns") or {}).get("percentile") or {}
        for key in PERCENTILES:
            if key in pct:
                label = key.rstrip("0").rstrip(".").replace(".", "_")
                metrics[f"{direction}_clat_p{label}_s"] = metric(pct[key] / 1e9, "s", "lower")
        samples[f"{direction}_clat_ns_percentiles"] = pct
        samples[f"{direction}_io_bytes"] = d["io_bytes"]
        samples[f"{direction}_runtime_ms"] = d.get("runtime")
    if not metrics:
        raise WorkloadError("fio moved no data")
    samples["usr_cpu_percent"] = job.get("usr_cpu")
    samples["sys_cpu_percent"] = job.get("sys_cpu")
    return {
        "metrics": metrics,
        "samples": samples,
        "tool": {"name": "fio", "version": str(doc.get("fio version", "")).removeprefix("fio-")},
    }
