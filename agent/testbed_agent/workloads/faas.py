"""``faas`` workload: drive the FaaS emulator over HTTP and record what the calls measured.

Modes: ``warm`` (warm-up call, then ``calls`` warm calls), ``cold`` (every call forced cold),
``cold_warm`` (pairs: a forced cold call, then a warm one), ``scaling`` (``concurrency`` callers
at once, each making ``calls`` calls, from fresh hosts), ``retention`` (warm ``concurrency``
instances, stay idle for a gap of ``gaps_s``, count those still in the pool, call again and count
the recycled calls; each gap from freshly warmed instances).
``endpoint: auto`` starts a private emulator on 127.0.0.1 with ``profile`` for the benchmark;
``endpoint: local`` uses this host's emulator service ($TESTBED_FAAS_URL, default port 8650).
"""

from __future__ import annotations

import contextlib
import os
import statistics
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from testbed_agent import __version__
from testbed_agent.benchmark import Benchmark
from testbed_agent.params import ParamError, spec
from testbed_agent.results import Outcome, metric
from testbed_agent.workloads.base import RunContext, Workload
from testbed_services import launcher
from testbed_services.faas import DEFAULT_PORT
from testbed_services.faas.client import FaasClient
from testbed_services.faas.profiles import load_profile
from testbed_shared.cost import cost_efficiency
from testbed_shared.errors import BenchmarkTimeout, Interrupted, TestbedError, WorkloadError

MODES = ("warm", "cold", "cold_warm", "scaling", "retention")
DEFAULT_TIMEOUT_S = 1800.0


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
    gaps_s: tuple[float, ...] = spec((), "nums", lo=0, hi=86_400)
    #: design factors of a study (file size, I/O size, ...): kept in the record for the report's
    #: parameter ANOVA, not used by the run
    factors: dict = field(default_factory=dict, metadata={"kind": "map"})

    def __post_init__(self) -> None:
        if self.calls is None:
            object.__setattr__(self, "calls", 1 if self.mode == "scaling" else 5)
        if self.mode == "retention" and not self.gaps_s:
            raise ParamError("params.gaps_s", "retention needs a list of idle gaps in seconds")


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
        p = params
        calls = p.calls * (2 if p.mode == "cold_warm" else 1) * (1 if p.mode != "cold" else 3)
        return 10.0 + calls * 0.5 + sum(p.gaps_s)

    @classmethod
    def primary_metrics(cls, names: Iterable[str]) -> list[str]:
        """``latency_s`` where the function reports it, else the median round trip."""
        names = sorted(set(names))
        return [n for n in names if n == "latency_s"] or [n for n in names if n == "round_trip_p50_s"]

    def run(self, ctx: RunContext, params: FaasParams) -> Outcome:
        try:
            return self._run(ctx, params)
        except WorkloadError:
            raise
        except TestbedError as exc:  # emulator unreachable, deployment refused ...
            raise WorkloadError(exc.message, exc.hint) from exc

    def _run(self, ctx: RunContext, p: FaasParams) -> Outcome:
        with _endpoint(ctx, p) as url:
            client = FaasClient(url, timeout_s=max(1.0, ctx.remaining()))
            info = client.info()
            name = f"{p.function}-{ctx.bench.index}"
            fields = {
                "function": p.function,
                "memory_mb": p.memory_mb,
                "tmp_mb": p.tmp_mb,
                "keep_alive_s": p.keep_alive_s,
                "timeout_s": p.function_timeout_s,
                "env": p.env,
            }
            deployment = client.deploy(name, **{k: v for k, v in fields.items() if v is not None})
            mode = p.mode
            modes = {
                "warm": _mode_warm,
                "cold": _mode_cold,
                "cold_warm": _mode_cold_warm,
                "scaling": _mode_scaling,
                "retention": _mode_retention,
            }
            try:
                calls = modes[mode](ctx, p, client, name)
            finally:
                client.close()
        return _outcome(ctx, info, deployment, calls, mode)


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
    svc = launcher.emulator(
        url_file,
        ctx.scratch / "faas-state",
        "--profile",
        p.profile,
        tracker=ctx.tracker,
        log=ctx.artifact("emulator.log"),
        stop=ctx.stop,
    )
    try:
        yield svc.url
    finally:
        svc.stop(timeout_s=20)
        url_file.unlink(missing_ok=True)


# -- modes: each returns the list of calls (one dict per call) -------------------------------


def _call(client: FaasClient, name: str, event: Any, phase: str) -> dict[str, Any]:
    status, body, rtt = client.invoke(name, event)
    insp = body.get("inspector") or {}
    err = body.get("error") or {}
    return {
        "phase": phase,
        "status": status,
        "round_trip_s": rtt,
        "ok": status == 200,
        "error": f"{err.get('type')}: {err.get('message')}" if status != 200 else None,
        "result": body.get("result"),
        "inspector": insp,
        "billing": body.get("billing") or {},
    }


def _mode_warm(ctx: RunContext, p: FaasParams, client: FaasClient, name: str) -> list[dict[str, Any]]:
    event, out = p.event, []
    for _ in range(p.warmup):
        out.append(_call(client, name, event, "warmup"))
    for _ in range(p.calls):
        _check_stop(ctx)
        out.append(_call(client, name, event, "measured"))
    return out


def _mode_cold(ctx: RunContext, p: FaasParams, client: FaasClient, name: str) -> list[dict[str, Any]]:
    event, out = p.event, []
    for _ in range(p.calls):
        _check_stop(ctx)
        client.cold(name)
        out.append(_call(client, name, event, "measured"))
    return out


def _mode_cold_warm(ctx: RunContext, p: FaasParams, client: FaasClient, name: str) -> list[dict[str, Any]]:
    event, out = p.event, []
    for _ in range(p.calls):
        _check_stop(ctx)
        client.cold(name)
        out.append(_call(client, name, event, "cold"))
        out.append(_call(client, name, event, "warm"))
    return out


def _parallel(
    client: FaasClient, name: str, event: Any, callers: int, per_caller: int, phase: str
) -> list[dict[str, Any]]:
    def worker(_: int) -> list[dict[str, Any]]:
        own = FaasClient(client.url, client.timeout_s)
        try:
            return [_call(own, name, event, phase) for _ in range(per_caller)]
        finally:
            own.close()

    with ThreadPoolExecutor(max_workers=callers) as pool:
        return [c for batch in pool.map(worker, range(callers)) for c in batch]


def _mode_scaling(ctx: RunContext, p: FaasParams, client: FaasClient, name: str) -> list[dict[str, Any]]:
    client.cold(None, "host")
    return _parallel(client, name, p.event, p.concurrency, p.calls, "measured")


def _mode_retention(ctx: RunContext, p: FaasParams, client: FaasClient, name: str) -> list[dict[str, Any]]:
    """Per idle gap, from fresh containers (the study's separate runs): warm ``concurrency`` of
    them, stay idle for the gap, look which are still in the pool (without calling them), call
    again. Each gap's retained share samples the survival of drawn idle lifetimes, independently
    of the other gaps."""
    event, n = p.event, p.concurrency
    out: list[dict[str, Any]] = []
    for gap in p.gaps_s:
        _check_stop(ctx)
        client.cold(name)
        start = time.monotonic()
        warm = _parallel(client, name, event, n, 1, "warmup")
        ctx.sleep(float(gap))
        out += [*warm, _observe(client, gap, warm, start)]
        out += _parallel(client, name, event, n, 1, f"gap_{_num(gap)}s")
    return out


def _observe(client: FaasClient, gap: float, warm: list[dict[str, Any]], start: float) -> dict[str, Any]:
    """The warmed containers in the emulator's pool after the gap: idle seconds and whether each is
    still usable (listed, within its idle lifetime, on a live host; the reaper lags up to 0.1 s).
    ``max_idle_s`` (since the warm-up started) bounds the idle time of those no longer listed."""
    max_idle = time.monotonic() - start
    pool = {i["id"]: i for i in client.info()["instances"]}
    seen = []
    for iid in dict.fromkeys(c["inspector"]["instance_id"] for c in warm if c["ok"]):
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


def _check_stop(ctx: RunContext) -> None:
    if ctx.stop.is_set():
        raise Interrupted("interrupted between calls")
    if ctx.remaining() <= 0:
        raise BenchmarkTimeout("FaaS benchmark ran past its timeout")


def _num(x: float) -> str:
    return f"{x:g}".replace(".", "_")


# -- metrics -----------------------------------------------------------------------------------


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _quantile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else 0.0


def _outcome(
    ctx: RunContext, info: dict[str, Any], deployment: dict[str, Any], calls: list[dict[str, Any]], mode: str
) -> Outcome:
    observed = [c for c in calls if c.get("observation")]
    calls = [c for c in calls if not c.get("observation")]
    measured = [c for c in calls if c["phase"] != "warmup"] or calls
    ok = [c for c in measured if c["ok"]]
    if not ok:
        raise WorkloadError(f"every call failed; first error: {measured[0]['error']}")
    m: dict[str, dict[str, Any]] = {}

    def add(key: str, values: list[float], unit: str, better: str) -> None:
        if values:
            m[key] = metric(_mean(values), unit, better)

    ins = [c["inspector"] for c in ok]
    add("round_trip_s", [c["round_trip_s"] for c in ok], "s", "lower")
    m["round_trip_p50_s"] = metric(_quantile([c["round_trip_s"] for c in ok], 0.5), "s", "lower")
    m["round_trip_p99_s"] = metric(_quantile([c["round_trip_s"] for c in ok], 0.99), "s", "lower")
    add("handler_s", [i["handler_s"] for i in ins], "s", "lower")
    add("emulator_overhead_s", [c["round_trip_s"] - c["inspector"]["handler_s"] for c in ok], "s", "lower")
    add("cpu_user_s", [i["cpu_user_s"] for i in ins], "s", "lower")
    add("cpu_system_s", [i["cpu_system_s"] for i in ins], "s", "lower")
    add("cpu_throttled_s", [i["cpu_throttled_s"] for i in ins], "s", "lower")
    add(
        "memory_peak_bytes", [i["memory_peak_bytes"] for i in ins if i.get("memory_peak_bytes")], "B", "lower"
    )
    cold = [i for i in ins if i["new_instance"]]
    add("cold_start_s", [i["cold_start_s"] for i in cold], "s", "lower")
    add("init_s", [i["init_s"] for i in cold], "s", "lower")
    m["cold_fraction"] = metric(len(cold) / len(ins), "1", "lower")
    m["error_fraction"] = metric((len(measured) - len(ok)) / len(measured), "1", "lower")
    bills = [c["billing"] for c in ok if c["billing"]]
    add("gb_seconds", [b["gb_seconds"] for b in bills], "GB*s", "lower")
    add("price_per_call", [b["price"] for b in bills], bills[0]["currency"] if bills else "USD", "lower")
    if bills:
        m["calls_per_currency_unit"] = metric(
            cost_efficiency(1.0, _mean([b["price"] for b in bills])), f"1/{bills[0]['currency']}", "higher"
        )
    results = [c["result"] for c in ok if isinstance(c["result"], dict)]
    keys = sorted({k for r in results for k in r if k.endswith("bytes_per_s")})
    for key, unit, better in [(k, "B/s", "higher") for k in keys] + [
        ("calcs_per_s", "1/s", "higher"),
        ("key_fetch_s", "s", "lower"),
        ("latency_s", "s", "lower"),
        ("iops", "1/s", "higher"),
        ("bw_bytes", "B/s", "higher"),
    ]:
        add(key, [r[key] for r in results if isinstance(r.get(key), (int, float))], unit, better)
    if mode == "cold_warm":
        for phase in ("cold", "warm"):
            add(f"{phase}_round_trip_s", [c["round_trip_s"] for c in ok if c["phase"] == phase], "s", "lower")
            add(
                f"{phase}_handler_s",
                [c["inspector"]["handler_s"] for c in ok if c["phase"] == phase],
                "s",
                "lower",
            )
    if mode in ("scaling", "retention"):
        _pool_metrics(m, ok)
    if mode == "retention":
        _retention_metrics(m, measured, observed)
    m |= _host_regression(ok)
    samples = {
        "calls": [_sample(c) for c in calls],
        "emulator": _emulator_summary(info),
        "deployment": deployment,
    }
    if observed:
        samples["retention"] = observed
    errors = [c["error"] for c in measured if not c["ok"]]
    return Outcome(
        metrics=m,
        samples=samples,
        tool={"name": "testbed-faas-emulator", "version": _version(), "profile": info["profile"]["name"]},
        params={
            "limits_enforced": info["limits_enforced"],
            "platform": info["profile"]["name"],
            "cgroup": info["cgroup"],
        },
        error=f"{len(errors)} of {len(measured)} calls failed; first: {errors[0]}" if errors else None,
    )


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
                sum(not c["inspector"]["new_instance"] for c in batch) / len(batch), "1", "higher"
            )


def ols(x: list[float], y: list[float]) -> dict[str, float] | None:
    """Least-squares line y = a + b x (scipy's linregress): slope b, its standard error and 95 %
    confidence interval. None where scipy is not installed (it comes with the agent's notebooks
    extra; the agent's core has no numerical library)."""
    try:
        from scipy import stats  # noqa: PLC0415 - scipy comes with the notebooks extra; without it the regression is left out
    except ImportError:
        return None
    n = len(x)  # >= 3, with two distinct x at least
    fit = stats.linregress(x, y)
    half = float(stats.t.ppf(0.975, n - 2)) * float(fit.stderr)
    slope = float(fit.slope)
    return {"slope": slope, "se": float(fit.stderr), "ci_low": slope - half, "ci_high": slope + half, "n": n}


def _host_regression(ok: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Latency vs containers on the call's host (the factors study's regression): the OLS slope of
    handler and round-trip seconds per host container, with its standard error and 95 % CI, when
    the calls saw more than one distinct ``host_containers``."""
    x = [c["inspector"].get("host_containers") for c in ok]
    if None in x or len(set(x)) < 2 or len(x) < 3:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for name, y in (
        ("handler_s", [c["inspector"]["handler_s"] for c in ok]),
        ("round_trip_s", [c["round_trip_s"] for c in ok]),
    ):
        fit = ols(x, y)
        if fit is None:
            return {}
        key = f"{name}_per_host_container"
        out[key] = metric(fit["slope"], "s", "lower")
        out |= {f"{key}_{q}": metric(fit[q], "s", "lower") for q in ("se", "ci_low", "ci_high")}
    return out


def _pool_metrics(m: dict[str, dict[str, Any]], ok: list[dict[str, Any]]) -> None:
    per_instance: dict[str, int] = {}
    for c in ok:
        iid = c["inspector"]["instance_id"]
        per_instance[iid] = per_instance.get(iid, 0) + 1
    counts = list(per_instance.values())
    m["instances_used"] = metric(len(counts), "1", "lower")
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
    keep = (
        "instance_id",
        "new_instance",
        "recycled",
        "host_id",
        "host_uptime_s",
        "host_containers",
        "instance_uptime_s",
        "instance_keep_alive_s",
        "cold_start_kind",
        "provider_s",
        "host_s",
        "container_s",
        "handler_s",
        "init_s",
        "cold_start_s",
        "cpu_user_s",
        "cpu_system_s",
        "cpu_steal_s",
        "cpu_throttled_s",
        "memory_peak_bytes",
        "started_at",
        "ended_at",
    )
    return {
        "phase": c["phase"],
        "status": c["status"],
        "round_trip_s": c["round_trip_s"],
        "error": c["error"],
        **{k: i.get(k) for k in keep},
        "price": c["billing"].get("price"),
    }


def _emulator_summary(info: dict[str, Any]) -> dict[str, Any]:
    return {
        k: info.get(k)
        for k in (
            "emulator_id",
            "profile",
            "limits_enforced",
            "cgroup",
            "warnings",
            "cpu_model",
            "host_cpus",
            "keep_alive_s",
        )
    }


def _version() -> str:
    return __version__
