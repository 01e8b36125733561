"""``faas`` workload: drive the FaaS emulator over HTTP and record what the calls measured.

Modes (each call's phase, instance, host and cold-start path go to ``samples.calls``):

* ``warm``: ``warmup`` unmeasured calls, then ``calls`` measured ones; ``first: cold`` records the
  first call apart as ``cold`` (the 30-call protocol: call 1 cold, 2-10 warm-up, 11-30 measured);
* ``cold``: every call forced cold; ``cold_warm``: pairs of a forced cold call and a warm one;
* ``scaling``: ``concurrency`` callers at once, each making ``calls`` calls; ``ladder`` runs
  several levels in turn (phases ``c<N>``), ``level_pause_s`` apart; before each level ``cold``
  retires the function's containers (``container``: hosts keep the code, as a configuration
  change does), or also the hosts (``host``, the default), or nothing (``none``);
* ``retention``: warm ``concurrency`` containers, stay idle ``gaps_s``, see which are still in the
  pool, call again (phases ``gap_<G>s``); each gap from fresh containers, or, with
  ``fresh_per_gap: false``, one sequence where each set warms the next gap's containers;
* ``sets``: ``warmup_sets`` then ``sets`` sets of ``concurrency`` concurrent calls,
  ``set_pause_s`` apart (phases ``warmup<k>``, ``set<k>``); ``memory_sweep`` repeats them per
  memory size after a configuration change, ``batches`` times (phases ``m<MB>.b<k>.set<j>``);
* ``sequence``: one call per ``sequence`` item in order on the warm instance (``{phase, event}``
  or ``{pause_s}``): e.g. a write then a direct-I/O read of the same file; metrics per phase;
* ``ramp``: a continuous load whose concurrency steps through ``steps`` every ``step_s`` seconds
  (a list: several ramps in turn on the same emulator; the first ``warmup_ramps`` unmeasured;
  phases ``r<k>.c<N>``).

``endpoint: auto`` starts a private emulator on 127.0.0.1 with ``profile`` (and ``seed``,
``time_scale``, ``max_concurrency``) for the benchmark; ``endpoint: local`` uses this host's
emulator service ($TESTBED_FAAS_URL, default port 8650). Every call goes through a FaaS driver
(``testbed_agent.faas_drivers``): the emulator's, or - on a host whose ``TESTBED_FAAS_TARGET``
names AWS Lambda, Google Cloud Functions or Azure Functions - that platform's, with the plan
unchanged (a benchmark whose ``profile`` models another platform, whose ``architecture`` is not the
target's, or which needs the emulator itself - ``time_scale``, ``key_service`` - is recorded as
skipped there). ``time_scale`` K runs the emulated
platform's clock K times faster and divides the plan's idle times (gaps, pauses) by K, so a derived
plan with ``faas.time_scale=100`` reruns an hours-long retention study in minutes.
``key_service: true`` starts moto's KMS server on loopback with one key per key spec and gives the
function ``KMS_ENDPOINT_URL`` and ``KMS_KEY_<NAME>``; ``payload_bytes`` puts a random JSON string
of that many bytes (seeded) in every event's ``payload``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import random
import re
import statistics
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from testbed_agent import __version__
from testbed_agent.benchmark import Benchmark
from testbed_agent.faas_drivers import routing
from testbed_agent.faas_drivers.base import Platform
from testbed_agent.params import ParamError, spec
from testbed_agent.results import Outcome, metric
from testbed_agent.workloads.base import RunContext, Workload
from testbed_agent.workloads.faas import estimate as faas_estimate
from testbed_services import launcher
from testbed_services.faas import DEFAULT_PORT
from testbed_services.faas.profiles import load_profile
from testbed_services.kms import KmsConfig, create_keys, local_kms_server, make_client
from testbed_shared.cost import cost_efficiency
from testbed_shared.errors import BenchmarkTimeout, Interrupted, TestbedError, WorkloadError
from testbed_shared.intervals import t_quantile

MODES = ("warm", "cold", "cold_warm", "scaling", "retention", "sets", "sequence", "ramp")
#: the key names a ``key_service`` gets (testbed_services.kms.KEYS), one key each
KMS_KEYS = ("sym", "hmac256", "hmac384", "p256", "p384", "rsa2048", "rsa3072", "rsa4096")
_PHASE = re.compile(r"[A-Za-z0-9_]{1,40}")
DEFAULT_TIMEOUT_S = 1800.0
#: what a record keeps of each call's inspector (the emulator's; a real platform fills some)
_WHERE = ("instance_id", "new_instance", "recycled", "host_id", "host_uptime_s", "host_containers")
_LIFE = ("instance_uptime_s", "instance_keep_alive_s", "host_live_containers", "time_scale")
_TIMES = ("cold_start_kind", "provider_s", "host_s", "container_s", "handler_s", "init_s", "cold_start_s")
_CPU = ("cpu_user_s", "cpu_system_s", "cpu_steal_s", "cpu_throttled_s", "memory_peak_bytes")
SAMPLE_KEYS = (*_WHERE, *_LIFE, *_TIMES, *_CPU, "started_at", "ended_at")


@dataclass(frozen=True)
class FaasParams:
    function: str = spec(pattern=r"[A-Za-z0-9_-]{1,64}")
    mode: str = spec("warm", choices=MODES)
    endpoint: str = spec("auto", pattern=r"auto|local|http://[\x21-\x7e]{1,200}")
    profile: str = spec("aws-lambda", pattern=r"[A-Za-z0-9_.-]{1,64}")
    #: calls per caller; None: 1 in ``scaling`` mode, else 5
    calls: int = spec(None, "int", lo=1, hi=1_000_000)
    concurrency: int = spec(1, "int", lo=1, hi=4096)
    memory_mb: int | None = spec(None, "int", lo=1, hi=1_048_576)
    tmp_mb: int | None = spec(None, "int", lo=1, hi=1_048_576)
    warmup: int = spec(1, "int", lo=0, hi=100_000)
    keep_alive_s: float | None = spec(None, "num", lo=1e-3, hi=86_400)
    function_timeout_s: float | None = spec(None, "num", lo=1e-3, hi=86_400)
    event: dict = field(default_factory=dict, metadata={"kind": "map"})
    env: dict = field(default_factory=dict, metadata={"kind": "map", "pattern": r"[A-Za-z_]\w{0,127}"})
    #: instruction set and runtime id on a real platform (the emulator runs on this machine's CPU
    #: and Python; its record names those)
    architecture: str | None = spec(None, choices=("x86_64", "arm64"))
    runtime: str | None = spec(None, pattern=r"[A-Za-z0-9.|_-]{1,32}")
    gaps_s: tuple[float, ...] = spec((), "nums", lo=0, hi=86_400)
    #: design factors of a study (file size, I/O size, ...): kept in the record for the report's
    #: parameter ANOVA, not used by the run
    factors: dict = field(default_factory=dict, metadata={"kind": "map"})
    #: ``warm``: ``cold`` records the first call apart (phase ``cold``)
    first: str = spec("warm", choices=("warm", "cold"))
    #: ``scaling``: concurrency levels in turn (replaces ``concurrency``), their pause, what is cold
    ladder: tuple[float, ...] = spec((), "nums", lo=1, hi=4096)
    level_pause_s: float = spec(0.0, "num", lo=0, hi=86_400)
    cold: str = spec("host", choices=("host", "container", "none"))
    #: ``retention``: fresh containers per gap, or one sequence of sets
    fresh_per_gap: bool = spec(True, "bool")
    #: ``sets``
    sets: int = spec(0, "int", lo=0, hi=100_000)
    warmup_sets: int = spec(1, "int", lo=0, hi=1000)
    set_pause_s: float = spec(0.0, "num", lo=0, hi=86_400)
    memory_sweep: tuple[float, ...] = spec((), "nums", lo=1, hi=1_048_576)
    batches: int = spec(1, "int", lo=1, hi=10_000)
    #: ``sequence``: [{phase, event} | {pause_s}]
    sequence: tuple[dict, ...] = spec((), "maps")
    #: ``ramp``
    steps: tuple[float, ...] = spec((), "nums", lo=1, hi=4096)
    step_s: tuple[float, ...] = spec((), "nums", lo=0.1, hi=86_400)
    warmup_ramps: int = spec(0, "int", lo=0, hi=100)
    #: emulator options (``endpoint: auto``)
    seed: int | None = spec(None, "int", lo=0, hi=2**31)
    time_scale: float = spec(1.0, "num", lo=1, hi=100_000)
    max_concurrency: int | None = spec(None, "int", lo=1, hi=4096)
    #: a local AWS-KMS-compatible key service for the function, and a random JSON payload
    key_service: bool = spec(False, "bool")
    payload_bytes: int = spec(0, "int", lo=0, hi=1 << 20)

    def __post_init__(self) -> None:
        if self.calls is None:
            object.__setattr__(self, "calls", 1 if self.mode in ("scaling", "ramp") else 5)
        if self.mode == "retention" and not self.gaps_s:
            raise ParamError("params.gaps_s", "retention needs a list of idle gaps in seconds")
        if self.mode == "sets" and self.sets < 1:
            raise ParamError("params.sets", "sets mode needs sets >= 1")
        if self.memory_sweep and self.mode != "sets":
            raise ParamError("params.memory_sweep", "is a sets-mode parameter")
        if self.ladder and self.mode != "scaling":
            raise ParamError("params.ladder", "is a scaling-mode parameter")
        if self.mode == "ramp" and (not self.steps or not self.step_s):
            raise ParamError("params.steps", "ramp needs steps (concurrency levels) and step_s")
        if self.mode == "ramp" and self.warmup_ramps >= len(self.step_s):
            raise ParamError("params.warmup_ramps", "must leave at least one measured ramp in step_s")
        if self.mode == "sequence":
            _check_sequence(self.sequence)
        if self.key_service and self.endpoint not in ("auto", "local"):
            raise ParamError("params.key_service", "the local key service serves emulators on this host only")


def _check_sequence(items: tuple[dict, ...]) -> None:
    if not items:
        raise ParamError("params.sequence", "sequence mode needs a list of {phase, event} or {pause_s}")
    phases = set()
    for i, item in enumerate(items):
        where = f"params.sequence[{i}]"
        if set(item) == {"pause_s"}:
            pause = item["pause_s"]
            if isinstance(pause, bool) or not isinstance(pause, (int, float)) or not 0 <= pause <= 86_400:
                raise ParamError(where, "pause_s must be seconds from 0 to 86400")
            continue
        if set(item) - {"phase", "event"} or "phase" not in item:
            raise ParamError(where, "an item is {phase, event} or {pause_s}")
        phase = item["phase"]
        if not isinstance(phase, str) or not _PHASE.fullmatch(phase) or phase in ("warmup", "measured"):
            raise ParamError(where, "phase must be a name of letters, digits and _ (not warmup or measured)")
        if phase in phases:
            raise ParamError(where, f"phase {phase!r} appears twice")
        phases.add(phase)
        if not isinstance(item.get("event", {}), dict):
            raise ParamError(where, "event must be a mapping")


class FaasWorkload(Workload):
    type = "faas"
    tool = "testbed-faas-emulator"
    Params = FaasParams
    #: the function's own latency (dd's seconds in the I/O study) where it reports one, else the
    #: median round trip
    primary = (r"latency_s", r"round_trip_p50_s")
    default_timeout_s = DEFAULT_TIMEOUT_S

    @classmethod
    def check_environment(cls, bench: Benchmark, params: FaasParams) -> None:
        if params.endpoint == "auto":
            try:
                profile = load_profile(params.profile)
                if params.memory_mb is not None:
                    profile.check_memory(params.memory_mb)
            except TestbedError as exc:
                raise ParamError(
                    "params.profile", exc.message + (f" ({exc.hint})" if exc.hint else "")
                ) from exc

    @classmethod
    def estimate_s(cls, params: FaasParams) -> float:
        """Seconds of one execution: the emulator's start, the calls (from their work: dd bytes,
        calcs levels, concurrent calls sharing this machine's CPUs) and the idle times."""
        return faas_estimate.estimate(params)

    @classmethod
    def primary_metrics(cls, names: Iterable[str]) -> list[str]:
        """``latency_s`` where the function reports it (per phase in a sequence: ``write_latency_s``,
        ``read_latency_s``), else the median round trip."""
        names = sorted(set(names))
        return (
            [n for n in names if n == "latency_s"]
            or [n for n in names if n.endswith("_latency_s") and not n.startswith("direct_")]
            or [n for n in names if n == "round_trip_p50_s"]
        )

    def run(self, ctx: RunContext, params: FaasParams) -> Outcome:
        try:
            return self._run(ctx, params)
        except WorkloadError:
            raise
        except TestbedError as exc:  # emulator unreachable, deployment refused ...
            raise WorkloadError(exc.message, exc.hint) from exc

    def _run(self, ctx: RunContext, p: FaasParams) -> Outcome:
        target = routing.real_target(ctx.options)
        reason = routing.skip_reason(target, p) if target is not None else None
        if target is not None and reason:
            return Outcome(status="skipped", error=reason, params={"platform": target.platform})
        if p.payload_bytes:
            p = _with_payload(p)
        timeout = max(1.0, ctx.remaining())
        with (
            _key_service(ctx, p) as kms_env,
            routing.driver_for(ctx.options, lambda: _endpoint(ctx, p), timeout) as driver,
        ):
            if kms_env:
                p = dataclasses.replace(p, env={**p.env, **kms_env})
            info = driver.info()
            name = f"{p.function}-{ctx.bench.index}"
            routing.check_budget(driver, p, ctx.bench.name)
            deployment = driver.deploy(routing.function_spec(name, p))
            try:
                calls = MODE_RUNNERS[p.mode](ctx, p, driver, name)
                settled = driver.settle(name, [c["call"] for c in calls if "call" in c])
                where = driver.where(info)
            finally:
                driver.finish(name)  # what the benchmark deployed; teardown takes the rest
        return _outcome(ctx, info, deployment, calls, p.mode, where, settled, driver)


# -- the emulator for the benchmark ---------------------------------------------------------


@contextlib.contextmanager
def _endpoint(ctx: RunContext, p: FaasParams) -> Iterator[str]:
    """The given endpoint, or a private emulator on 127.0.0.1 for ``endpoint: auto``."""
    endpoint = p.endpoint
    if endpoint == "local":
        endpoint = os.environ.get("TESTBED_FAAS_URL", f"http://127.0.0.1:{DEFAULT_PORT}")
    if endpoint != "auto":
        yield endpoint
        return
    ctx.scratch.mkdir(parents=True, exist_ok=True)
    url_file = ctx.scratch / f"faas-{os.getpid()}-{ctx.bench.index}.url"
    options = ["--profile", p.profile, "--time-scale", f"{p.time_scale:g}"]
    if p.seed is not None:
        options += ["--seed", str(p.seed)]
    if p.max_concurrency is not None:
        options += ["--max-concurrency", str(p.max_concurrency)]
    svc = launcher.emulator(
        url_file,
        ctx.scratch / "faas-state",
        *options,
        tracker=ctx.tracker,
        log=ctx.artifact("emulator.log"),
        stop=ctx.stop,
    )
    try:
        yield svc.url
    finally:
        svc.stop(timeout_s=20)
        url_file.unlink(missing_ok=True)


@contextlib.contextmanager
def _key_service(ctx: RunContext, p: FaasParams) -> Iterator[dict[str, str]]:
    """The function's environment for a local KMS-compatible key service (empty without one)."""
    if not p.key_service:
        yield {}
        return
    with local_kms_server(tracker=ctx.tracker) as url:
        cfg = KmsConfig()
        keys = create_keys(make_client(cfg, url), list(KMS_KEYS))
        yield {
            "KMS_ENDPOINT_URL": url,
            "AWS_REGION": cfg.region,
            # dummy credentials moto accepts; the server listens on loopback only
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_EC2_METADATA_DISABLED": "true",
            **{f"KMS_KEY_{k.upper()}": v for k, v in keys.items()},
        }


def payload(size: int, seed: int | None) -> str:
    """A random JSON string of exactly ``size`` bytes (ASCII), the same for the same seed."""
    rng = random.Random(seed)  # noqa: S311 - test data, not secrets
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    head = '{"data": "'
    body = "".join(rng.choice(alphabet) for _ in range(max(0, size - len(head) - 2)))
    text = (head + body + '"}')[:size] if size >= len(head) + 2 else "x" * size
    if size >= len(head) + 2:
        json.loads(text)  # well-formed by construction
    return text


def _with_payload(p: FaasParams) -> FaasParams:
    data = payload(p.payload_bytes, p.seed)
    seq = tuple(
        {**it, "event": {**it.get("event", {}), "payload": data}} if "phase" in it else it
        for it in p.sequence
    )
    return dataclasses.replace(p, event={**p.event, "payload": data}, sequence=seq)


# -- modes: each returns the list of calls (one dict per call) -------------------------------


def _call(driver: Platform, name: str, event: Any, phase: str) -> dict[str, Any]:
    c = driver.invoke(name, event)
    return {
        "phase": phase,
        "status": c.status,
        "round_trip_s": c.round_trip_s,
        "ok": c.ok,
        "error": c.error if not c.ok else None,
        "result": c.result,
        "inspector": c.inspector,
        "billing": c.billing,
        "platform": c.platform,
        "call": c,
    }


def _mode_warm(ctx: RunContext, p: FaasParams, driver: Platform, name: str) -> list[dict[str, Any]]:
    event, out = p.event, []
    if p.first == "cold":
        out.append(_call(driver, name, event, "cold"))
    for _ in range(p.warmup):
        out.append(_call(driver, name, event, "warmup"))
    for _ in range(p.calls):
        _check_stop(ctx)
        out.append(_call(driver, name, event, "measured"))
    return out


def _mode_cold(ctx: RunContext, p: FaasParams, driver: Platform, name: str) -> list[dict[str, Any]]:
    """Each call forced cold (``cold``), or each forced cold call followed by a warm one (``cold_warm``)."""
    out: list[dict[str, Any]] = []
    for _ in range(p.calls):
        _check_stop(ctx)
        driver.cold(name)
        phases = ("measured",) if p.mode == "cold" else ("cold", "warm")
        out += [_call(driver, name, p.event, phase) for phase in phases]
    return out


def _parallel(
    driver: Platform, name: str, event: Any, callers: int, per_caller: int, phase: str
) -> list[dict[str, Any]]:
    def worker(_: int) -> list[dict[str, Any]]:  # the drivers are thread-safe
        try:
            return [_call(driver, name, event, phase) for _ in range(per_caller)]
        finally:
            driver.release_thread()

    with ThreadPoolExecutor(max_workers=callers) as pool:
        return [c for batch in pool.map(worker, range(callers)) for c in batch]


def _mode_scaling(ctx: RunContext, p: FaasParams, driver: Platform, name: str) -> list[dict[str, Any]]:
    """``concurrency`` callers (or each level of ``ladder`` in turn), cold as ``cold`` says:
    ``host`` fresh hosts, ``container`` the function's containers retired (hosts keep the code:
    a configuration change), ``none`` as the last level left them."""
    out: list[dict[str, Any]] = []
    for _ in range(p.warmup if p.ladder else 0):
        out.append(_call(driver, name, p.event, "warmup"))
    levels = [int(x) for x in p.ladder] or [p.concurrency]
    for i, n in enumerate(levels):
        _check_stop(ctx)
        if i:
            ctx.sleep(p.level_pause_s / p.time_scale)
        if p.cold == "host":
            driver.cold(None, "host")
        elif p.cold == "container":
            driver.cold(name)
        out += _parallel(driver, name, p.event, n, p.calls, f"c{n}" if p.ladder else "measured")
    return out


def _mode_retention(ctx: RunContext, p: FaasParams, driver: Platform, name: str) -> list[dict[str, Any]]:
    """Per idle gap, from fresh containers (the study's separate runs): warm ``concurrency`` of
    them, stay idle for the gap, look which are still in the pool (without calling them), call
    again. Each gap's retained share samples the survival of drawn idle lifetimes, independently
    of the other gaps."""
    event, n = p.event, p.concurrency
    out: list[dict[str, Any]] = []
    if not p.fresh_per_gap:  # the study's one sequence: each set warms the containers of the next gap
        start = time.monotonic()
        warm = _parallel(driver, name, event, n, 1, "warmup")
        out += warm
        for gap in p.gaps_s:
            _check_stop(ctx)
            ctx.sleep(float(gap) / p.time_scale)
            out.append(_observe(driver, gap, warm, start))
            start = time.monotonic()
            warm = _parallel(driver, name, event, n, 1, f"gap_{_num(gap)}s")
            out += warm
        return out
    for gap in p.gaps_s:
        _check_stop(ctx)
        driver.cold(name)
        start = time.monotonic()
        warm = _parallel(driver, name, event, n, 1, "warmup")
        ctx.sleep(float(gap) / p.time_scale)
        out += [*warm, _observe(driver, gap, warm, start)]
        out += _parallel(driver, name, event, n, 1, f"gap_{_num(gap)}s")
    return out


def _observe(driver: Platform, gap: float, warm: list[dict[str, Any]], start: float) -> dict[str, Any]:
    """The warmed containers in the emulator's pool after the gap: idle seconds and whether each is
    still usable (listed, within its idle lifetime, on a live host; the reaper lags up to 0.1 s).
    ``max_idle_s`` (since the warm-up started) bounds the idle time of those no longer listed.
    A real platform shows no pool: no containers are observed there (only the recycled calls)."""
    max_idle = time.monotonic() - start
    info = driver.info()
    pool = {i["id"]: i for i in info.get("instances", [])}
    seen = []
    warmed = [c["inspector"].get("instance_id") for c in warm if c["ok"]] if "instances" in info else []
    for iid in dict.fromkeys(warmed):
        inst = pool.get(iid)
        keep = inst.get("keep_alive_s") if inst else None
        alive = inst is not None and not inst.get("host_expired") and (keep is None or inst["idle_s"] <= keep)
        seen.append({"instance_id": iid, "idle_s": inst["idle_s"] if inst else None, "retained": alive})
    return {
        "observation": True,
        "phase": f"gap_{_num(gap)}s",
        "gap_s": gap,
        "max_idle_s": max_idle,
        "containers": seen,
    }


def _mode_sets(ctx: RunContext, p: FaasParams, driver: Platform, name: str) -> list[dict[str, Any]]:
    """``warmup_sets`` + ``sets`` sets of ``concurrency`` concurrent calls, ``set_pause_s`` apart;
    with ``memory_sweep``, per batch each memory size in turn after a configuration change (the
    function redeployed with that memory: its containers retired, the hosts keep the code)."""
    out: list[dict[str, Any]] = []
    sizes = [int(m) for m in p.memory_sweep] or [None]
    first = True
    for batch in range(p.batches if p.memory_sweep else 1):
        for mem in sizes:
            prefix = f"m{mem}.b{batch}." if mem is not None else ""
            if mem is not None:
                _redeploy(driver, name, p, mem)
            for kind, count in (("warmup", p.warmup_sets), ("set", p.sets)):
                for k in range(count):
                    _check_stop(ctx)
                    if not first:
                        ctx.sleep(p.set_pause_s / p.time_scale)
                    first = False
                    out += _parallel(driver, name, p.event, p.concurrency, 1, f"{prefix}{kind}{k}")
    return out


def _redeploy(driver: Platform, name: str, p: FaasParams, memory_mb: int) -> None:
    """The function's configuration changed to ``memory_mb`` (its containers retired)."""
    driver.deploy(routing.function_spec(name, dataclasses.replace(p, memory_mb=memory_mb)))


def _mode_sequence(ctx: RunContext, p: FaasParams, driver: Platform, name: str) -> list[dict[str, Any]]:
    """One call per item, in order (the same warm instance serves them): e.g. a write, a pause,
    then a direct-I/O read of the file the write left in the instance's /tmp."""
    out: list[dict[str, Any]] = []
    for item in p.sequence:
        _check_stop(ctx)
        if "pause_s" in item:
            ctx.sleep(float(item["pause_s"]) / p.time_scale)
            continue
        out.append(_call(driver, name, {**p.event, **item.get("event", {})}, item["phase"]))
    return out


def _mode_ramp(ctx: RunContext, p: FaasParams, driver: Platform, name: str) -> list[dict[str, Any]]:
    """A continuous load: for each ramp (one per ``step_s``), the concurrency steps through ``steps``,
    ``step_s`` seconds each; every caller calls again as soon as its call returns."""
    out: list[dict[str, Any]] = []
    top = int(max(p.steps))
    for r, duration in enumerate(p.step_s):
        kind = "warmup" if r < p.warmup_ramps else "r"
        for n in (int(x) for x in p.steps):
            _check_stop(ctx)
            end = time.monotonic() + duration
            phase = f"{kind}{r}.c{n}"

            def worker(_: int, end: float = end, phase: str = phase) -> list[dict[str, Any]]:
                got: list[dict[str, Any]] = []
                try:
                    while time.monotonic() < end and not ctx.stop.is_set():
                        got.append(_call(driver, name, p.event, phase))
                        if driver.dry_run:
                            break  # a dry run shows each caller's call once, not the load
                finally:
                    driver.release_thread()
                return got

            with ThreadPoolExecutor(max_workers=min(n, top)) as pool:
                out += [c for batch in pool.map(worker, range(n)) for c in batch]
    return out


MODE_RUNNERS = {
    "warm": _mode_warm,
    "cold": _mode_cold,
    "cold_warm": _mode_cold,
    "scaling": _mode_scaling,
    "retention": _mode_retention,
    "sets": _mode_sets,
    "sequence": _mode_sequence,
    "ramp": _mode_ramp,
}


def _check_stop(ctx: RunContext) -> None:
    if ctx.stop.is_set():
        raise Interrupted("interrupted between calls")
    if ctx.remaining() <= 0:
        raise BenchmarkTimeout("FaaS benchmark ran past its timeout")


def _num(x: float) -> str:
    return f"{x:g}".replace(".", "_")


# -- metrics -----------------------------------------------------------------------------------


def _add(
    m: dict[str, dict[str, Any]], key: str, values: list[Any], unit: str = "s", better: str = "lower"
) -> None:
    """The mean of the values the calls reported as metric ``key`` (a real platform does not report
    everything: None is left out, and no values add no metric)."""
    known = [v for v in values if v is not None]
    if known:
        m[key] = metric(_mean(known), unit, better)


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else 0.0


def _outcome(
    ctx: RunContext,
    info: dict[str, Any],
    deployment: dict[str, Any],
    calls: list[dict[str, Any]],
    mode: str,
    where: dict[str, Any],
    settled: dict[str, Any],
    driver: Platform,
) -> Outcome:
    observed = [c for c in calls if c.get("observation")]
    calls = [c for c in calls if not c.get("observation")]
    # warm mode's first cold call is reported apart (cold_*); cold_warm measures its cold calls
    apart = {"cold"} if mode == "warm" else set()
    measured = [c for c in calls if not _is_warmup(c["phase"]) and c["phase"] not in apart] or calls
    ok = [c for c in measured if c["ok"]]
    if not ok:
        raise WorkloadError(f"every call failed; first error: {measured[0]['error']}")
    m: dict[str, dict[str, Any]] = {}

    ins = [c["inspector"] for c in ok]
    _add(m, "round_trip_s", [c["round_trip_s"] for c in ok])
    m["round_trip_p50_s"] = metric(_quantile([c["round_trip_s"] for c in ok], 0.5), "s", "lower")
    m["round_trip_p99_s"] = metric(_quantile([c["round_trip_s"] for c in ok], 0.99), "s", "lower")
    _add(m, "handler_s", [i.get("handler_s") for i in ins])
    _add(m, driver.overhead_metric, [c["round_trip_s"] - c["inspector"].get("handler_s", 0.0) for c in ok])
    _add(m, "cpu_user_s", [i.get("cpu_user_s") for i in ins])
    _add(m, "cpu_system_s", [i.get("cpu_system_s") for i in ins])
    _add(m, "cpu_throttled_s", [i.get("cpu_throttled_s") for i in ins])
    _add(
        m,
        "memory_peak_bytes",
        [i["memory_peak_bytes"] for i in ins if i.get("memory_peak_bytes")],
        "B",
        "lower",
    )
    cold = [i for i in ins if i.get("new_instance")]
    _add(m, "cold_start_s", [i.get("cold_start_s") for i in cold])
    _add(m, "init_s", [i.get("init_s") for i in cold])
    m["cold_fraction"] = metric(len(cold) / len(ins), "1", "lower")
    m["error_fraction"] = metric((len(measured) - len(ok)) / len(measured), "1", "lower")
    bills = [c["billing"] for c in ok if c["billing"]]
    _add(m, "gb_seconds", [b["gb_seconds"] for b in bills], "GB*s", "lower")
    _add(m, "price_per_call", [b["price"] for b in bills], bills[0]["currency"] if bills else "USD", "lower")
    if bills:
        m["calls_per_currency_unit"] = metric(
            cost_efficiency(1.0, _mean([b["price"] for b in bills])), f"1/{bills[0]['currency']}", "higher"
        )
    # a sequence's calls are different operations: their figures are per phase (_phase_metrics)
    results = [c["result"] for c in ok if isinstance(c["result"], dict) and mode != "sequence"]
    keys = sorted({k for r in results for k in r if k.endswith("bytes_per_s")})
    for key, unit, better in [(k, "B/s", "higher") for k in keys] + [
        ("calcs_per_s", "1/s", "higher"),
        ("key_fetch_s", "s", "lower"),
        ("latency_s", "s", "lower"),
        ("iops", "1/s", "higher"),
        ("bw_bytes", "B/s", "higher"),
    ]:
        _add(m, key, [r[key] for r in results if isinstance(r.get(key), (int, float))], unit, better)
    _mode_metrics(m, ok, measured, observed, mode, calls)
    samples, tool = _samples(info, deployment, calls, observed, settled, driver)
    errors = [c["error"] for c in measured if not c["ok"]]
    return Outcome(
        metrics=m,
        samples=samples,
        tool=tool,
        params=where,
        error=f"{len(errors)} of {len(measured)} calls failed; first: {errors[0]}" if errors else None,
    )


def _samples(
    info: dict[str, Any],
    deployment: dict[str, Any],
    calls: list[dict[str, Any]],
    observed: list[dict[str, Any]],
    settled: dict[str, Any],
    driver: Platform,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The record's samples and tool: per-call figures, and the emulator's or the target's state."""
    state, tool = driver.samples(info)
    samples = {"calls": [_sample(c) for c in calls], "deployment": deployment, **state}
    tool = {**tool, "version": __version__}
    if settled:
        samples["platform"] = settled
    if observed:
        samples["retention"] = observed
    return samples, tool


def _mode_metrics(
    m: dict[str, dict[str, Any]],
    ok: list[dict[str, Any]],
    measured: list[dict[str, Any]],
    observed: list[dict[str, Any]],
    mode: str,
    calls: list[dict[str, Any]],
) -> None:
    """The metrics a mode adds: cold and warm apart, per phase, pool and retention figures."""

    if mode == "cold_warm":
        for phase in ("cold", "warm"):
            _add(m, f"{phase}_round_trip_s", [c["round_trip_s"] for c in ok if c["phase"] == phase])
            _add(
                m, f"{phase}_handler_s", [c["inspector"].get("handler_s") for c in ok if c["phase"] == phase]
            )
    if mode == "warm":  # first: cold - the first call apart (the other metrics are the measured calls)
        first = [c for c in calls if c["phase"] == "cold" and c["ok"]]
        _add(m, "cold_handler_s", [c["inspector"].get("handler_s") for c in first])
        _add(m, "cold_round_trip_s", [c["round_trip_s"] for c in first])
    if mode == "sequence":
        _phase_metrics(m, ok)
    if mode in ("scaling", "retention", "sets", "ramp"):
        _pool_metrics(m, ok)
    if mode == "retention":
        _retention_metrics(m, measured, observed)
    m |= _host_regression(ok)


def _is_warmup(phase: str) -> bool:
    """Unmeasured calls: ``warmup``, ``warmup<k>``, ``m<MB>.b<k>.warmup<j>`` (RQ-5's cold sets are
    measured apart by the report from the samples), ``warmup<k>.c<N>``."""
    return phase == "warmup" or phase.startswith("warmup") or ".warmup" in phase


def _phase_metrics(m: dict[str, dict[str, Any]], ok: list[dict[str, Any]]) -> None:
    """Per phase of a sequence: the function's own latency (dd's seconds), handler and round trip."""
    for phase in dict.fromkeys(c["phase"] for c in ok):
        batch = [c for c in ok if c["phase"] == phase]
        lat = [
            c["result"]["latency_s"]
            for c in batch
            if isinstance(c["result"], dict) and "latency_s" in c["result"]
        ]
        if lat:
            m[f"{phase}_latency_s"] = metric(_mean(lat), "s", "lower")
        handler = [c["inspector"]["handler_s"] for c in batch if c["inspector"].get("handler_s") is not None]
        if handler:
            m[f"{phase}_handler_s"] = metric(_mean(handler), "s", "lower")
        m[f"{phase}_round_trip_s"] = metric(_mean([c["round_trip_s"] for c in batch]), "s", "lower")


def _retention_metrics(
    m: dict[str, dict[str, Any]], measured: list[dict[str, Any]], observed: list[dict[str, Any]]
) -> None:
    """The retention curve, one point per gap: ``retained_fraction_gap_<G>s`` = share of the warmed
    containers still usable after G s idle (the survival of their idle lifetimes);
    ``recycled_fraction_gap_<G>s`` = share of the calls after the gap served by a container that
    already existed (the study's; several calls can reuse one survivor)."""
    for obs in observed:
        if obs["containers"]:
            share = sum(c["retained"] for c in obs["containers"]) / len(obs["containers"])
            m[f"retained_fraction_{obs['phase']}"] = metric(share, "1", "higher")
    for phase in dict.fromkeys(c["phase"] for c in measured):
        batch = [c for c in measured if c["phase"] == phase and c["ok"]]
        if batch:
            m[f"recycled_fraction_{phase}"] = metric(
                sum(not c["inspector"].get("new_instance") for c in batch) / len(batch), "1", "higher"
            )


def ols(x: list[float], y: list[float]) -> dict[str, float]:
    """Least-squares line y = a + b x: slope b, its standard error and 95 % confidence interval
    (t with n - 2 degrees of freedom, from the one interval core). ``x`` has two distinct values
    at least, and three points."""
    n, mx, my = len(x), statistics.fmean(x), statistics.fmean(y)
    sxx = sum((a - mx) ** 2 for a in x)
    slope = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True)) / sxx
    residual = sum((b - my - slope * (a - mx)) ** 2 for a, b in zip(x, y, strict=True))
    se = math.sqrt(residual / (n - 2) / sxx)
    half = float(t_quantile(0.975, n - 2)) * se
    return {"slope": slope, "se": se, "ci_low": slope - half, "ci_high": slope + half, "n": n}


def _host_regression(ok: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Latency vs containers on the call's host (the factors study's regression): the OLS slope of
    handler and round-trip seconds per host container, with its standard error and 95 % CI, when
    the calls saw more than one distinct ``host_containers``."""
    x = [c["inspector"].get("host_containers") for c in ok]
    if None in x or len(set(x)) < 2 or len(x) < 3:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for name, y in (
        ("handler_s", [c["inspector"].get("handler_s", 0.0) for c in ok]),
        ("round_trip_s", [c["round_trip_s"] for c in ok]),
    ):
        fit = ols(x, y)
        key = f"{name}_per_host_container"
        out[key] = metric(fit["slope"], "s", "lower")
        out |= {f"{key}_{q}": metric(fit[q], "s", "lower") for q in ("se", "ci_low", "ci_high")}
    return out


def _pool_metrics(m: dict[str, dict[str, Any]], ok: list[dict[str, Any]]) -> None:
    if any(c["inspector"].get("instance_id") is None for c in ok):
        return  # Lambda names no instance in its answer: no pool figures there
    per_instance: dict[str, int] = {}
    for c in ok:
        iid = c["inspector"]["instance_id"]
        per_instance[iid] = per_instance.get(iid, 0) + 1
    counts = list(per_instance.values())
    m["instances_used"] = metric(len(counts), "1", "lower")
    if any(c["inspector"].get("host_id") is None for c in ok):
        return  # hosts are the emulator's; real platforms do not show theirs
    m["hosts_used"] = metric(len({c["inspector"]["host_id"] for c in ok}), "1", "lower")
    m["requests_per_instance_mean"] = metric(_mean(counts), "1", "higher")
    m["requests_per_instance_sd"] = metric(statistics.stdev(counts) if len(counts) > 1 else 0.0, "1", "lower")
    per_host: dict[str, set[str]] = {}
    requests: dict[str, int] = {}
    for c in ok:
        host = c["inspector"]["host_id"]
        per_host.setdefault(host, set()).add(c["inspector"]["instance_id"])
        requests[host] = requests.get(host, 0) + 1
    containers = [len(v) for v in per_host.values()]
    m["containers_per_host_mean"] = metric(_mean(containers), "1", "higher")
    m["requests_per_host_mean"] = metric(_mean(list(requests.values())), "1", "higher")
    sd = statistics.stdev(requests.values()) if len(requests) > 1 else 0.0
    m["requests_per_host_sd"] = metric(sd, "1", "lower")


def _sample(c: dict[str, Any]) -> dict[str, Any]:
    i = c["inspector"]
    out = {
        "phase": c["phase"],
        "status": c["status"],
        "round_trip_s": c["round_trip_s"],
        "error": c["error"],
        **{k: i.get(k) for k in SAMPLE_KEYS},
        "price": c["billing"].get("price"),
    }
    if c.get("platform"):  # the platform's own figures of the call (REPORT line, request log)
        out["platform"] = {k: v for k, v in c["platform"].items() if k != "report"}
    return out
