"""The emulator: deployments, the instance pool on emulated hosts, keep-alive, forced cold starts.

Platform physics come from the profile (workloads/faas/profiles): hosts hold at most
``host.max_containers`` containers and ``host.memory_mb`` of them, start at a drawn age and live a
drawn lifetime, and go once empty for ``host.reclaim_empty_s``; containers live a drawn idle
lifetime; the three cold-start paths (provider: the deployment's package is built; host: a host
without the package fetches it; container: a worker starts from the package on the host) are real
work here, plus the profile's ``cold_start_s`` for what cannot be done physically (an image
transfer to a new VM). A code package is cached by its content, so a configuration change (memory,
timeout) gives container-cold starts on the hosts that hold it, and new code or a new function a
provider-cold one. ``time_scale`` K divides every emulated time (lifetimes, ages, keep-alives,
modelled cold-start seconds) by K, so an hour of idle platform behaviour takes 36 s at K=100;
the inspector reports host and instance times back in platform seconds.
"""

from __future__ import annotations

import hashlib
import math
import os
import random
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed_services.faas import cgroups, environment, idle_fill, inspector, sandbox
from testbed_services.faas.functions import FunctionCode, check_name, find_function
from testbed_services.faas.instance import CallTimeout, Host, Instance, InstanceDied
from testbed_services.faas.logs import LogCollector
from testbed_services.faas.profiles import MIB, Profile
from testbed_services.faas.storage import make_tmp
from testbed_shared.cost import invocation_cost
from testbed_shared.errors import TestbedError
from testbed_shared.paths import workloads_dir


class FaasError(TestbedError):
    """An API error with its HTTP status."""

    def __init__(self, status: int, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.status = status


@dataclass
class Deployment:
    name: str
    code: FunctionCode
    memory_mb: int
    timeout_s: float
    keep_alive_s: float
    tmp_mb: int
    concurrency: int
    env: dict[str, str]
    #: content digest of the code (packages and host copies are cached by it)
    digest: str = ""
    version: int = 1
    #: keep-alive set explicitly (deployment or --keep-alive): every container keeps it; otherwise
    #: each container's idle lifetime is drawn from the profile's retention model
    keep_alive_fixed: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: calls of this version in progress (its code stays until the last one ends)
    users: int = 0
    #: replaced by a newer version or deleted: no new call picks it
    retired: bool = False

    @property
    def code_key(self) -> tuple[str, str]:
        return (self.name, self.digest)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "function": self.code.name,
            "digest": self.digest[:12],
            "memory_mb": self.memory_mb,
            "timeout_s": self.timeout_s,
            "keep_alive_s": self.keep_alive_s,
            "tmp_mb": self.tmp_mb,
            "concurrency": self.concurrency,
            "version": self.version,
            # names only: values may be secrets (whoever holds the token reads /info)
            "env": dict.fromkeys(sorted(self.env), "<redacted>"),
        }


class Emulator:
    """Thread-safe core behind the HTTP API."""

    def __init__(
        self,
        profile: Profile,
        state_dir: Path,
        *,
        function_dirs: list[Path],
        keep_alive_s: float | None = None,
        max_concurrency: int = 100,
        cgroup: str = "auto",
        key_service: str = "",
        seed: int | None = None,
        cpu_boost: bool = False,
        fill_idle_cpus: bool = False,
        time_scale: float = 1.0,
    ) -> None:
        if not (math.isfinite(time_scale) and time_scale >= 1):
            raise TestbedError(f"time scale must be a finite number >= 1, not {time_scale}")
        self.profile = profile
        self.time_scale = float(time_scale)
        self.rng = random.Random(seed)  # noqa: S311 - emulated lifetimes, not secrets
        self._container_ret = profile.container_retention.scaled(self.time_scale)
        self._host_ret = profile.host_retention.scaled(self.time_scale)
        self._host_age = profile.host_age.scaled(self.time_scale)
        self._packages: dict[tuple[str, str], Path] = {}
        #: calls in progress per code version (a package is kept while one runs)
        self._calls_of: Counter[tuple[str, str]] = Counter()
        self._package_locks: dict[tuple[str, str], threading.Lock] = {}
        self._last_scale_out = -math.inf
        self._keep_fixed = keep_alive_s is not None or profile.container_retention.model == "never"
        self.id = uuid.uuid4().hex[:8]
        self.state_dir = state_dir / f"emu-{self.id}"
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.function_dirs = function_dirs
        # real seconds; given (profile, --keep-alive, deployments) in platform seconds
        self.keep_alive_s = (profile.keep_alive_s if keep_alive_s is None else keep_alive_s) / self.time_scale
        self.max_concurrency = max_concurrency
        self.key_service = key_service
        self.backend = cgroups.detect(self.id, cgroup) if cgroup != "none" else cgroups.Backend("disabled")
        (self.state_dir / "pid").write_text(str(os.getpid()))
        self.reclaimed = self._reclaim_stale(state_dir)
        self.mount_tmp = os.geteuid() == 0 and shutil.which("mount") is not None
        #: the empty file systems disk /tmp images are copied from (one per size, made on first use)
        self.tmp_images = self.state_dir / "tmp-images"
        self.limits_enforced = self.backend.enforced and self.mount_tmp
        self.run_as = sandbox.function_user()
        self.cpu_boost = cpu_boost and cgroups.boost(self.backend)
        self.fill = self._start_fill() if fill_idle_cpus else None
        self.logs = LogCollector()
        self.ncpu = os.cpu_count() or 1
        self.deployments: dict[str, Deployment] = {}
        self.instances: list[Instance] = []
        self.hosts: list[Host] = []
        self.inflight = 0
        self.started = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reaper = threading.Thread(target=self._reap, name="keep-alive", daemon=True)
        self._reaper.start()

    def _start_fill(self) -> idle_fill.IdleFill:
        """The fillers of ``--fill-idle-cpus`` (:mod:`idle_fill`); an error if they cannot run."""
        try:
            return idle_fill.IdleFill(self.backend, self.id)
        except OSError as exc:
            self.backend.cleanup()
            shutil.rmtree(self.state_dir, ignore_errors=True)
            why = exc.strerror or str(exc)
            raise TestbedError(
                f"--fill-idle-cpus: cannot start the fillers ({why})",
                hint="it needs root and a cgroup backend (--cgroup auto, v1 or v2)",
            ) from None

    def _reclaim_stale(self, state_dir: Path) -> int:
        """Clean up after emulators that died without shutting down (SIGKILL, power loss):
        kill their instances, unmount their /tmp mounts, remove their cgroups and files."""
        count = 0
        for d in state_dir.glob("emu-*"):
            pid_text = (d / "pid").read_text().strip() if (d / "pid").is_file() else ""
            if d == self.state_dir or (pid_text.isdigit() and _alive(int(pid_text))):
                continue
            self.backend.reclaim(d.name.removeprefix("emu-"))
            idle_fill.reclaim(self.backend, d.name.removeprefix("emu-"))
            for point in sorted(_mounts_under(d), key=len, reverse=True):
                subprocess.run(["umount", "-l", point], capture_output=True, check=False)  # noqa: S603 - the emulator's own cleanup (umount), inside the launcher-tracked service
            shutil.rmtree(d, ignore_errors=True)
            count += 1
        return count

    # -- status --------------------------------------------------------------------------

    def warnings(self) -> list[str]:
        out = []
        if not self.backend.enforced:
            out.append(
                f"CPU and memory limits NOT enforced ({self.backend.reason}); "
                "results are marked limits_enforced=false"
            )
        if not self.mount_tmp:
            out.append(
                "/tmp size NOT enforced (needs root to mount); results are marked limits_enforced=false"
            )
        if self.run_as is None:
            out.append("functions NOT confined: they run as the emulator's user, with its view of the files")
        elif self.run_as[2] != sandbox.USER:
            why = sandbox.CREATE_ERROR[0] or "unknown reason"
            out.append(f"functions run as {self.run_as[2]}: user {sandbox.USER} could not be created ({why})")
        return out

    def info(self) -> dict[str, Any]:
        with self._lock:
            return {
                "emulator_id": self.id,
                "profile": self.profile.summary(),
                "limits_enforced": self.limits_enforced,
                "cgroup": self.backend.version,
                "warnings": self.warnings(),
                "cpu_model": inspector.cpu_model(),
                "host_cpus": self.ncpu,
                "keep_alive_s": self.keep_alive_s,
                "time_scale": self.time_scale,
                "max_concurrency": self.max_concurrency,
                "function_user": self.run_as[2] if self.run_as else None,
                "cpu_boost": self.cpu_boost,
                "fill_idle_cpus": self.fill.cpus if self.fill else 0,
                "inflight": self.inflight,
                "uptime_s": time.monotonic() - self.started,
                "functions": {n: d.describe() for n, d in self.deployments.items()},
                "hosts": [self._describe_host(h) for h in self.hosts],
                "instances": [self._describe(i) for i in self.instances],
            }

    @staticmethod
    def _describe_host(h: Host) -> dict[str, Any]:
        return {
            "id": h.id,
            "uptime_s": h.uptime_s(),
            "lifetime_s": h.lifetime_s if math.isfinite(h.lifetime_s) else None,
            "used_mb": h.used_mb,
            "capacity_mb": h.capacity_mb,
            "containers": h.containers,
            "live_containers": h.live,
            "requests": h.requests,
        }

    def _describe(self, inst: Instance) -> dict[str, Any]:
        return {
            "id": inst.id,
            "function": inst.deployment.name,
            "version": inst.deployment.version,
            "host_id": inst.host.id,
            "inflight": inst.inflight,
            "invocations": inst.invocations,
            "idle_s": time.monotonic() - inst.last_used,
            "keep_alive_s": inst.keep_alive_s if math.isfinite(inst.keep_alive_s) else None,
            "host_expired": inst.host.expired(),
            "uptime_s": time.monotonic() - inst.created,
            "log_bytes": inst.log.total,
            "log_truncated_bytes": inst.log.truncated,
        }

    def logs_of(self, name: str) -> dict[str, Any]:
        """The kept output tail of each live instance of function ``name``."""
        with self._lock:
            if name not in self.deployments:
                raise FaasError(404, f"no function '{name}'")
            return {i.id: i.log.text() for i in self.instances if i.deployment.name == name}

    # -- deployments ---------------------------------------------------------------------

    def deploy(
        self, name: str, spec: dict[str, Any], *, create: bool = False, update: bool = False
    ) -> dict[str, Any]:
        """Create or update a function (``create`` only: 409 if it exists; ``update`` only: 404 if
        it does not); an update retires its instances (the next call is cold; calls in progress
        end on the old version)."""
        if not isinstance(spec, dict):
            raise FaasError(400, f"deployment of {str(name)[:80]!r} must be a JSON object")
        try:
            dep = self._deployment(check_name(name, "deployment name"), spec)
        except (TypeError, ValueError, OverflowError) as exc:
            raise FaasError(400, f"bad deployment of {name}: {exc}") from exc
        except TestbedError as exc:
            raise FaasError(400, exc.message, exc.hint) from exc
        with self._lock:
            old = self.deployments.get(name)
            if old is not None and create:
                raise FaasError(409, f"function {name} already exists")
            if old is None and update:
                raise FaasError(404, f"no function '{name}'")
            if old is not None:
                dep.version = old.version + 1
                old.retired = True
            self.deployments[name] = dep
        self.cold(name)
        if old is not None:
            self._release(old)
        return dep.describe()

    def _release(self, dep: Deployment) -> None:
        """Remove a retired version's package and its copies on the hosts once no call of it is in
        progress and no live version shares its code (the last call out removes them)."""
        with self._lock:
            if not dep.retired or dep.users or self._code_in_use(dep.code_key):
                return
            package = self._packages.pop(dep.code_key, None)
            copies = [h.code.pop(dep.code_key, None) for h in self.hosts]
        if package is not None:
            package.unlink(missing_ok=True)
        for path in filter(None, copies):
            shutil.rmtree(path, ignore_errors=True)

    def _code_in_use(self, key: tuple[str, str]) -> bool:
        """Whether a deployed version or a call in progress uses code ``key`` (caller holds the lock)."""
        return key in self._calls_of or any(d.code_key == key for d in self.deployments.values())

    def _deployment(self, name: str, spec: dict[str, Any]) -> Deployment:
        """A deployment from its spec: a field given is checked as given (0 is refused, never
        replaced by the default); only a missing field (or null) takes the profile's default."""
        p = self.profile
        keep = spec.get("keep_alive_s")
        keep = spec.get("keep_alive_s")
        # given in platform seconds; kept in the emulator's (time-scaled) seconds
        keep_alive = self.keep_alive_s if keep is None else _number(keep, "keep_alive_s") / self.time_scale
        concurrency = _given_int(spec, "concurrency", p.instance_concurrency)
        if keep_alive < 0:
            raise ValueError("keep_alive_s must be >= 0")
        if not 1 <= concurrency <= MAX_INSTANCE_CONCURRENCY:
            raise ValueError(f"concurrency must be 1 to {MAX_INSTANCE_CONCURRENCY}, not {concurrency}")
        memory = _given_int(spec, "memory_mb", p.memory_default_mb)
        p.check_memory(memory)
        timeout = (
            _number(spec["timeout_s"], "timeout_s")
            if spec.get("timeout_s") is not None
            else p.timeout_default_s
        )
        if not 0 < timeout <= p.timeout_max_s:
            raise TestbedError(f"{p.name}: timeout {timeout} s outside (0, {p.timeout_max_s}] s")
        tmp = spec.get("tmp_mb")
        if tmp is not None and _given_int(spec, "tmp_mb", 0) < 1:
            raise ValueError(f"tmp_mb must be >= 1, not {tmp}")
        tmp_mb = p.tmp_mb(memory, None if tmp is None else _given_int(spec, "tmp_mb", 0))
        function = spec.get("function") or name
        if not isinstance(function, str):
            raise ValueError("function must be a name")
        env = spec.get("env") or {}
        if not isinstance(env, dict) or not all(isinstance(v, (str, int, float, bool)) for v in env.values()):
            raise ValueError("env must be an object of strings")
        environment.check({str(k): str(v) for k, v in env.items()})
        code = find_function(function, self.function_dirs)
        return Deployment(
            name=name,
            code=code,
            memory_mb=memory,
            timeout_s=timeout,
            keep_alive_s=keep_alive,
            tmp_mb=tmp_mb,
            concurrency=concurrency,
            env={str(k): str(v) for k, v in env.items()},
            digest=_code_digest(code.code_dir),
            keep_alive_fixed=keep is not None or self._keep_fixed,
        )

    def delete(self, name: str) -> None:
        """Remove a function: no new call starts; calls in progress end on it."""
        with self._lock:
            dep = self.deployments.pop(name, None)
            if dep is None:
                raise FaasError(404, f"no function '{name}'")
            dep.retired = True
        self.cold(name)
        self._release(dep)

    def cold(self, name: str | None = None, scope: str = "function", *, drain: bool = True) -> dict[str, Any]:
        """Retire instances (of one function, or all); ``host`` also starts fresh emulated hosts.
        An instance in the middle of a call leaves the pool at once and is retired when its calls
        end (``drain``; without it, as at shutdown, it is killed now)."""
        if scope not in ("function", "host"):
            raise FaasError(400, f"scope must be function or host, not {scope!r}")
        with self._lock:
            victims = [
                i for i in self.instances if name is None or scope == "host" or i.deployment.name == name
            ]
            if scope == "host":
                dropped, self.hosts = self.hosts, []
            for inst in victims:
                self._detach(inst)
            now = [i for i in victims if not drain or i.inflight == 0]
        _retire_all(now)
        if scope == "host":
            for host in dropped:
                if host.directory is not None:
                    shutil.rmtree(host.directory, ignore_errors=True)
        return {"retired": len(victims), "scope": scope, "hosts": [h.id for h in self.hosts]}

    # -- invocation ----------------------------------------------------------------------

    def invoke(self, name: str, event: Any) -> tuple[int, dict[str, Any]]:
        """Run one call; returns (HTTP status, response with the inspector block)."""
        received = time.perf_counter()
        with self._lock:
            dep = self.deployments.get(name)
            if dep is None:
                raise FaasError(404, f"no function '{name}'", hint="deploy it first (PUT /functions/NAME)")
            if self.inflight >= self.max_concurrency:
                raise FaasError(
                    429,
                    f"too many concurrent calls (max {self.max_concurrency})",
                    hint="raise --max-concurrency or slow down",
                )
            self.inflight += 1
            # the call holds its version: a redeploy or delete now leaves it (and its code) to end
            dep.users += 1
            self._calls_of[dep.code_key] += 1
            inst = self._pick(dep)
        try:
            deadline = time.monotonic() + dep.timeout_s
            while inst is None:  # the platform adds hosts at its scale-out rate: the call waits
                if time.monotonic() > deadline:
                    raise FaasError(504, f"no capacity for {name} within its timeout (scale-out rate)")
                time.sleep(0.01)
                with self._lock:
                    inst = self._pick(dep)
            return self._invoke(dep, inst, event, received)
        finally:
            with self._lock:
                self.inflight -= 1
                dep.users -= 1
                self._calls_of[dep.code_key] -= 1
                if self._calls_of[dep.code_key] <= 0:
                    del self._calls_of[dep.code_key]
            self._release(dep)

    def _pick(self, dep: Deployment) -> Instance | Host | None:
        """A warm instance with a free slot (most recently used first), else a host with room for a
        new one (first fit over the live hosts: memory and the profile's container cap), else a new
        host with a drawn age and lifetime; None while the profile's scale-out rate holds new hosts
        back (the caller waits)."""
        now = time.monotonic()
        warm = [i for i in self.instances if i.deployment is dep and _usable(i, now)]
        if warm:
            inst = max(warm, key=lambda i: i.last_used)
            inst.inflight += 1
            inst.host.requests += 1
            return inst
        cap = self.profile.host_max_containers
        host = next(
            (
                h
                for h in self.hosts
                if h.capacity_mb - h.used_mb >= dep.memory_mb
                and not h.expired()
                and (not cap or h.live < cap)
            ),
            None,
        )
        if host is None:
            interval = self.profile.scale_out_interval_s / self.time_scale
            throttled = now - self._last_scale_out < interval
            if interval and throttled and any(not h.expired() for h in self.hosts):
                return None
            host = Host(
                capacity_mb=max(self.profile.host_memory_mb, dep.memory_mb),
                lifetime_s=self._host_ret.draw(self.rng),
                age_s=self._host_age.draw(self.rng),
            )
            self._last_scale_out = now
            self.hosts.append(host)
        host.used_mb += dep.memory_mb
        host.containers += 1
        host.live += 1
        host.empty_since = None
        host.requests += 1
        return host

    def _invoke(
        self, dep: Deployment, picked: Instance | Host, event: Any, received: float
    ) -> tuple[int, dict]:
        new = isinstance(picked, Host)
        if isinstance(picked, Host):
            try:
                inst = self._start(dep, picked)
            except Exception as exc:
                with self._lock:
                    picked.used_mb -= dep.memory_mb
                    _leave(picked)
                raise FaasError(500, f"cannot start an instance of {dep.name}: {exc}") from exc
        else:
            inst = picked
        request_id = uuid.uuid4().hex
        before, steal0 = inst.cgroup.stats(full=False), inspector.steal_s()
        status, body = 200, {}
        try:
            msg = inst.call(event, dep.timeout_s, request_id)
            if msg.get("ok"):
                body = {"status": "ok", "result": msg.get("result"), "error": None}
            else:
                err = msg.get("error") or {}
                status, body = (
                    500,
                    {
                        "status": "error",
                        "result": None,
                        "error": {
                            "type": "FunctionError",
                            "exception": err.get("type"),
                            "message": err.get("message"),
                            "trace": err.get("trace"),
                        },
                    },
                )
        except InstanceDied:
            msg = {}
            stats = inst.cgroup.stats()
            if stats.oom_kills or inst.exit_code in (-9, 137):
                kind = "MemoryLimitExceeded" if stats.oom_kills else "InstanceKilled"
                text = (
                    f"instance killed: memory limit of {dep.memory_mb} MB exceeded (OOM kill in its cgroup)"
                    if kind == "MemoryLimitExceeded"
                    else "instance killed by SIGKILL"
                )
            else:
                kind, text = "InstanceExited", f"instance exited with code {inst.exit_code}"
            status, body = 502, {"status": "error", "result": None, "error": {"type": kind, "message": text}}
        except CallTimeout as exc:
            msg = {}
            status, body = (
                504,
                {"status": "error", "result": None, "error": {"type": "Timeout", "message": str(exc)}},
            )
        after, steal1 = inst.cgroup.stats(), inspector.steal_s()
        done = time.perf_counter()
        with self._lock:
            inst.inflight -= 1
            inst.invocations += 1
            inst.last_used = time.monotonic()
            broken = status in (502, 504) or not inst.alive()
            if broken or dep.retired:  # a redeployed or deleted version's instance serves no more
                self._detach(inst)
            ended = broken or (inst.retired and inst.inflight == 0)
        if ended:
            inst.retire()
        handler_s = float(msg.get("handler_s", 0.0))
        body["inspector"] = self._inspect(
            dep, inst, new, msg, before, after, steal1 - steal0, handler_s, done - received
        )
        body["billing"] = self._bill(dep, inst, new, handler_s, after.memory_peak_bytes)
        return status, body

    def _modelled(self, path: str) -> None:
        """Wait out the profile's modelled seconds of a cold-start path (time-scaled)."""
        seconds = self.profile.cold_start_s.get(path, 0.0) / self.time_scale
        if seconds > 0:
            self._stop.wait(seconds)

    def _package(self, dep: Deployment) -> tuple[Path, bool, float]:
        """Provider path: build the code package once per content (package, whether this start
        took the provider path, seconds spent here)."""
        key = dep.code_key
        with self._lock:
            lock = self._package_locks.setdefault(key, threading.Lock())
            built = key in self._packages
        t0 = time.perf_counter()
        with lock:
            if key not in self._packages:
                path = self.state_dir / "packages" / f"{dep.name}-{dep.digest[:12]}.tar.gz"
                path.parent.mkdir(exist_ok=True)
                with tarfile.open(path, "w:gz") as tar:
                    tar.add(dep.code.code_dir, arcname=".", filter=_no_cache)
                self._modelled("provider")
                with self._lock:
                    self._packages[key] = path
            package = self._packages[key]
        return package, not built, 0.0 if built else time.perf_counter() - t0

    def _fetch(self, dep: Deployment, host: Host, package: Path) -> tuple[Path, bool, float]:
        """Host path: boot the host's directory and unpack the package there once per content.
        Returns (code directory, whether this start waited for the host path, seconds spent)."""
        key = dep.code_key
        fetched = key in host.code
        t0 = time.perf_counter()
        with host.lock:
            if host.directory is None:
                host.directory = self.state_dir / "hosts" / host.id
                host.directory.mkdir(parents=True)
            if key not in host.code:
                target = host.directory / f"{dep.name}-{dep.digest[:12]}"
                with tarfile.open(package) as tar:
                    tar.extractall(target, filter=_unpack_filter)  # noqa: S202 - our own package, through tarfile's data filter
                target.chmod(0o755)
                self._modelled("host")
                host.code[key] = target
            return host.code[key], not fetched, 0.0 if fetched else time.perf_counter() - t0

    def _start(self, dep: Deployment, host: Host) -> Instance:
        t0 = time.perf_counter()
        package, provider_path, provider_s = self._package(dep)
        code_dir, host_path, host_s = self._fetch(dep, host, package)
        t1 = time.perf_counter()
        iid = "i-" + uuid.uuid4().hex[:12]
        directory = self.state_dir / iid
        directory.mkdir(parents=True)
        cg = self.backend.create(iid)
        # make_tmp mounts it (enforced) exactly when mount_tmp, or fails
        tmp_path, private_tmp = directory / "tmp", self.mount_tmp
        try:
            cg.set_limits(min(self.profile.vcpus(dep.memory_mb), self.ncpu), dep.memory_mb * MIB)
            facts = {
                "HOME": "/tmp" if private_tmp else str(tmp_path),
                "TESTBED_FAAS_FUNCTION": dep.name,
                "TESTBED_FAAS_MEMORY_MB": str(dep.memory_mb),
                "TESTBED_FAAS_PROFILE": self.profile.name,
                "TESTBED_FAAS_INSTANCE": iid,
                "TESTBED_FAAS_HOST": host.id,
                # functions run from a package copy: toolkit files outside it are found here
                "TESTBED_WORKLOADS_DIR": str(workloads_dir()),
            }
            inst = Instance(
                iid=iid,
                deployment=dep,
                host=host,
                cgroup=cg,
                tmp_path=tmp_path,
                private_tmp=private_tmp,
                directory=directory,
                facts=facts,
                key_service=self.key_service,
                logs=self.logs,
                run_as=self.run_as,
                code_dir=code_dir,
            )
        except Exception:
            cg.remove()
            raise
        inst.inflight = 1
        try:
            # the /tmp is made (image copy, loop mount: 20-60 ms) while the worker's interpreter starts; the
            # worker enters its sandbox only on the start message begin() sends once it is ready
            tmp = make_tmp(
                tmp_path, self.profile.tmp_kind, dep.tmp_mb, mount=self.mount_tmp, templates=self.tmp_images
            )
            inst.begin(tmp)
            inst.wait_ready()
            self._modelled("container")
        except Exception:
            inst.retire()
            raise
        done = time.perf_counter()
        inst.cold_start_s = done - t0
        inst.cold_costs = {"provider_s": provider_s, "host_s": host_s, "container_s": done - t1}
        inst.cold_kind = "provider" if provider_path else "host" if host_path else "container"
        with self._lock:
            if not dep.keep_alive_fixed:
                inst.keep_alive_s = self._container_ret.draw(self.rng)
            self.instances.append(inst)
        return inst

    def _detach(self, inst: Instance) -> None:
        """Take an instance out of the pool (caller holds the lock and retires it after)."""
        if inst in self.instances:
            self.instances.remove(inst)
            inst.host.used_mb -= inst.deployment.memory_mb
            _leave(inst.host)
        inst.retired = True

    def _inspect(
        self,
        dep: Deployment,
        inst: Instance,
        new: bool,
        msg: dict[str, Any],
        before: Any,
        after: Any,
        steal: float,
        handler_s: float,
        total_s: float,
    ) -> dict[str, Any]:
        enforced_cg = self.backend.enforced
        # max(0, ...): the cgroup's user/system split is sampled, only their sum is exact
        if enforced_cg:
            user = max(0.0, after.cpu_user_s - before.cpu_user_s)
            system = max(0.0, after.cpu_system_s - before.cpu_system_s)
        else:
            user, system = msg.get("proc_user_s", 0.0), msg.get("proc_system_s", 0.0)
        started, ended = msg.get("started"), msg.get("ended")
        k = self.time_scale
        return {
            "instance_id": inst.id,
            "new_instance": new,
            "function": dep.name,
            "version": dep.version,
            "profile": self.profile.name,
            "host_id": inst.host.id,
            "host_uptime_s": inst.host.uptime_s() * k,
            "instance_uptime_s": (time.monotonic() - inst.created) * k,
            "instance_invocations": inst.invocations,
            "cpu_model": inspector.cpu_model(),
            "vcpus": self.profile.vcpus(dep.memory_mb),
            "vcpus_enforced": min(self.profile.vcpus(dep.memory_mb), self.ncpu) if enforced_cg else None,
            "cpu_user_s": user,
            "cpu_system_s": system,
            "cpu_steal_s": steal,
            "cpu_throttled_s": after.throttled_s - before.throttled_s,
            "cpu_periods": after.nr_periods - before.nr_periods,
            "cpu_periods_throttled": after.nr_throttled - before.nr_throttled,
            "cpu_period_s": cgroups.PERIOD_US / 1e6 if enforced_cg else None,
            "memory_limit_bytes": dep.memory_mb * MIB,
            "memory_peak_bytes": after.memory_peak_bytes or None,
            "started_at": inspector.rfc3339(started) if started else None,
            "ended_at": inspector.rfc3339(ended) if ended else None,
            "init_s": inst.init_s if new else 0.0,
            "cold_start_s": inst.cold_start_s if new else 0.0,
            "cold_start_kind": inst.cold_kind if new else None,
            **({k: v if new else 0.0 for k, v in inst.cold_costs.items()}),
            "recycled": not new,
            "host_containers": inst.host.containers,
            "host_live_containers": inst.host.live,
            "host_requests": inst.host.requests,
            "instance_keep_alive_s": inst.keep_alive_s * k if math.isfinite(inst.keep_alive_s) else None,
            "time_scale": k,
            "handler_s": handler_s,
            "emulator_s": max(0.0, total_s - handler_s),
            "tmp": inst.tmp.info(),
            "limits_enforced": self.limits_enforced,
            "cgroup": self.backend.version,
        }

    def _bill(
        self, dep: Deployment, inst: Instance, new: bool, handler_s: float, peak: int
    ) -> dict[str, Any]:
        """Billed duration (handler, plus init on a cold start), GB-seconds and price."""
        duration = handler_s + (inst.init_s if new else 0.0)
        memory = self.profile.billed_memory_mb(dep.memory_mb, peak)
        cost = invocation_cost(memory, duration, self.profile.price_table(dep.memory_mb))
        return {
            "duration_s": duration,
            "memory_mb": memory,
            "gb_seconds": cost["gb_seconds"],
            "price": cost["price"],
            "currency": self.profile.price.get("currency", "USD"),
        }

    # -- lifecycle -----------------------------------------------------------------------

    def _reap(self) -> None:
        while not self._stop.wait(0.1):
            now = time.monotonic()
            with self._lock:
                idle = [
                    i
                    for i in self.instances
                    if i.inflight == 0
                    and (now - i.last_used > i.keep_alive_s or not i.alive() or i.host.expired())
                ]
                for inst in idle:
                    self._detach(inst)
                # used_mb counts starting instances too: a host is gone only when nothing is on it;
                # an expired one then, a live one once it has been empty for reclaim_empty_s
                empty_for = self.profile.host_reclaim_empty_s / self.time_scale
                gone = [
                    h
                    for h in self.hosts
                    if h.used_mb <= 0
                    and (h.expired() or (h.empty_since is not None and now - h.empty_since > empty_for))
                ]
                self.hosts = [h for h in self.hosts if h not in gone]
            _retire_all(idle)
            for host in gone:
                if host.directory is not None:
                    shutil.rmtree(host.directory, ignore_errors=True)

    def shutdown(self) -> None:
        """Retire every instance and remove the emulator's cgroups and state."""
        self._stop.set()
        self._reaper.join(timeout=2)
        self.cold(None, "host", drain=False)
        if self.fill is not None:
            self.fill.stop()
        self.backend.cleanup()
        self.logs.close()
        shutil.rmtree(self.state_dir, ignore_errors=True)


def _usable(inst: Instance, now: float) -> bool:
    """A warm instance can take a call: a free slot, alive, within its idle lifetime, on a live host.
    (The reaper reclaims expired ones every 0.1 s; until then they count as gone already.)"""
    return (
        not inst.retired
        and inst.inflight < inst.deployment.concurrency
        and (inst.inflight > 0 or now - inst.last_used <= inst.keep_alive_s)
        and not inst.host.expired()
        and inst.alive()
    )


def _leave(host: Host) -> None:
    """One container fewer on ``host`` (caller holds the emulator's lock)."""
    host.live -= 1
    if host.live <= 0:
        host.live = 0
        host.empty_since = time.monotonic()


def _code_digest(code_dir: Path) -> str:
    """Content digest of a function's code directory (file names and bytes, caches left out)."""
    h = hashlib.sha256()
    for path in sorted(code_dir.rglob("*")):
        rel = path.relative_to(code_dir).as_posix()
        if "__pycache__" in rel or rel.endswith(".pyc") or not path.is_file():
            continue
        h.update(rel.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _retire_all(instances: list[Instance]) -> None:
    """Retire instances, several at a time (each waits for its processes to die)."""
    if len(instances) == 1:
        instances[0].retire()
    elif instances:
        with ThreadPoolExecutor(max_workers=min(8, len(instances))) as pool:
            list(pool.map(Instance.retire, instances))


def _no_cache(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """The package holds no byte code, and everything in it is readable by the function user
    (directories and executables 0755, other files 0644) whatever the checkout's modes."""
    if "__pycache__" in info.name or info.name.endswith(".pyc"):
        return None
    info.mode = 0o755 if info.isdir() or info.mode & 0o100 else 0o644
    return info


def _unpack_filter(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo:
    """tarfile's ``data`` filter, but directories keep the package's 0755 (``data`` leaves them to
    the umask, and an in-process emulator may run under the agent's 077)."""
    member = tarfile.data_filter(member, dest)
    return member.replace(mode=0o755, deep=False) if member.isdir() else member


#: calls one instance may serve at once (platforms allow up to 1000: Cloud Run / GCF 2nd gen)
MAX_INSTANCE_CONCURRENCY = 1000


def _given_int(spec: dict[str, Any], field: str, default: int) -> int:
    """``spec[field]`` as an integer (a whole finite number), or ``default`` when it is missing."""
    value = spec.get(field)
    if value is None:
        return int(default)
    number = _number(value, field)
    if number != int(number):
        raise ValueError(f"{field} must be a whole number, not {value}")
    return int(number)


def _number(value: object, field: str) -> float:
    """A finite number (bool, NaN, Infinity and strings are refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{field} must be a number, not {type(value).__name__}")
    if not math.isfinite(value):
        raise ValueError(f"{field} must be finite, not {value}")
    return float(value)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _mounts_under(d: Path) -> list[str]:
    prefix = str(d.resolve()) + "/"
    with open("/proc/self/mountinfo") as fh:
        points = [line.split()[4] for line in fh]
    return [p for p in points if p.startswith(prefix)]


def log(msg: str) -> None:
    print(f"faas: {msg}", file=sys.stderr, flush=True)
