"""Platform profiles (workloads/faas/profiles/*.yml): memory range, CPU share, /tmp, prices, and the
platform's physics: host packing, lifetimes and ages, cold-start paths, scale-out rate.

A profile models one platform in one era (``aws-lambda-2017`` is the Lambda the factors study
measured, ``aws-lambda`` today's); its ``sources:`` block names, per parameter, the documentation
page or the paper's line it follows (``S3 L145``) and how a value was fitted to it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from testbed_services.faas import faas_dir, retention
from testbed_services.faas.retention import Retention
from testbed_shared.cost import PriceTable
from testbed_shared.errors import TestbedError

MIB = 1 << 20


@dataclass(frozen=True)
class Profile:
    """One emulated platform: how memory maps to CPU and /tmp, lifecycle defaults, prices."""

    name: str
    description: str
    memory_min_mb: int
    memory_max_mb: int
    memory_default_mb: int
    memory_step_mb: int
    billing: str
    billing_step_mb: int
    cpu_model: str
    mb_per_vcpu: float
    max_vcpus: float
    tiers: tuple[tuple[int, float], ...]
    fixed_vcpus: float
    tmp_kind: str
    tmp_default_mb: int
    tmp_min_mb: int
    tmp_max_mb: int
    tmp_is_memory_limit: bool
    instance_concurrency: int
    timeout_default_s: float
    timeout_max_s: float
    keep_alive_s: float
    host_memory_mb: int
    price: dict[str, Any] = field(default_factory=dict)
    path: str = ""
    #: idle lifetime of a container and total lifetime of a host (``retention:`` in the profile)
    container_retention: Retention = field(default_factory=Retention)
    host_retention: Retention = field(default_factory=Retention)
    #: age (uptime) of a host when the platform first places a container of ours on it
    host_age: Retention = field(default_factory=lambda: Retention("fixed", value_s=0.0))
    #: most containers one host holds at once (0: only its memory limits it)
    host_max_containers: int = 0
    #: a host with no container for this long is reclaimed (inf: only its lifetime ends it)
    host_reclaim_empty_s: float = math.inf
    #: modelled seconds of the cold-start paths the emulator cannot perform physically (an image
    #: transfer to a new host, a platform's package build), waited out on that path
    cold_start_s: dict[str, float] = field(default_factory=dict)
    #: at most one new host per this many seconds while hosts exist (0: no limit); calls wait
    scale_out_interval_s: float = 0.0
    #: where each parameter comes from (``sources:`` in the profile)
    sources: dict[str, str] = field(default_factory=dict)
    #: price_table's results per memory size (static, asked on every call)
    _price_tables: dict[int, PriceTable] = field(default_factory=dict, init=False, repr=False, compare=False)

    def check_memory(self, memory_mb: int) -> None:
        """Raise unless the platform accepts this memory size."""
        if not self.memory_min_mb <= memory_mb <= self.memory_max_mb:
            raise TestbedError(
                f"{self.name}: memory {memory_mb} MB outside {self.memory_min_mb}-{self.memory_max_mb} MB",
                hint="pick a size the platform offers",
            )
        if self.cpu_model == "tiers" and memory_mb not in {m for m, _ in self.tiers}:
            raise TestbedError(
                f"{self.name}: memory {memory_mb} MB is not a tier",
                hint="tiers: " + ", ".join(str(m) for m, _ in self.tiers),
            )
        if self.memory_step_mb > 1 and memory_mb % self.memory_step_mb:
            raise TestbedError(f"{self.name}: memory must be a multiple of {self.memory_step_mb} MB")

    def vcpus(self, memory_mb: int) -> float:
        """vCPU share the platform gives an instance of this memory size."""
        if self.cpu_model == "proportional":
            return min(memory_mb / self.mb_per_vcpu, self.max_vcpus)
        if self.cpu_model == "tiers":
            for tier_mb, vcpus in self.tiers:
                if memory_mb <= tier_mb:
                    return vcpus
            return self.tiers[-1][1]
        return self.fixed_vcpus

    def tmp_mb(self, memory_mb: int, requested_mb: int | None = None) -> int:
        """Size of an instance's /tmp in MB (in-memory kinds: the memory limit)."""
        if self.tmp_is_memory_limit:
            return memory_mb
        size = requested_mb or self.tmp_default_mb
        if not self.tmp_min_mb <= size <= self.tmp_max_mb:
            raise TestbedError(
                f"{self.name}: /tmp size {size} MB outside {self.tmp_min_mb}-{self.tmp_max_mb} MB"
            )
        return size

    def billed_memory_mb(self, memory_mb: int, peak_bytes: float | None) -> float:
        """Memory the bill counts: configured size, or the observed peak rounded up to the step."""
        if self.billing != "observed" or not peak_bytes:
            return float(memory_mb)
        step = self.billing_step_mb
        return float(max(step, math.ceil(peak_bytes / MIB / step) * step))

    def price_table(self, memory_mb: int) -> PriceTable:
        """Price table for this size; per-vCPU + per-GiB rates become one per-GB-second rate. Built
        once per size (a PriceTable is frozen)."""
        if memory_mb not in self._price_tables:
            self._price_tables[memory_mb] = self._build_price_table(memory_mb)
        return self._price_tables[memory_mb]

    def _build_price_table(self, memory_mb: int) -> PriceTable:
        data = dict(self.price)
        if "per_gb_second" not in data:
            gib = memory_mb / 1024.0
            rate = (
                self.vcpus(memory_mb) * float(data.get("per_vcpu_second", 0.0))
                + gib * float(data.get("per_gib_second", 0.0))
            ) / gib
            data["per_gb_second"] = {"x86_64": rate}
        return PriceTable.from_dict(data)

    def summary(self) -> dict[str, Any]:
        """What /info and results report about the profile."""
        return {
            "name": self.name,
            "description": self.description,
            "path": self.path,
            "memory_mb": [self.memory_min_mb, self.memory_max_mb],
            "cpu_model": self.cpu_model,
            "tmp_kind": self.tmp_kind,
            "instance_concurrency": self.instance_concurrency,
            "keep_alive_s": self.keep_alive_s,
            "host_memory_mb": self.host_memory_mb,
            "host_max_containers": self.host_max_containers or None,
            "host_reclaim_empty_s": (
                self.host_reclaim_empty_s if math.isfinite(self.host_reclaim_empty_s) else None
            ),
            "retention": {
                "container": self.container_retention.describe(),
                "host": self.host_retention.describe(),
                "host_age": self.host_age.describe(),
            },
            "cold_start_s": dict(self.cold_start_s),
            "scale_out_interval_s": self.scale_out_interval_s or None,
        }


def profiles_dir() -> Path:
    return faas_dir() / "profiles"


def available(directory: Path | None = None) -> list[str]:
    """Names of the profiles in a directory."""
    d = directory or profiles_dir()
    return sorted(p.stem for p in d.glob("*.yml"))


def load_profile(name_or_path: str | Path, directory: Path | None = None) -> Profile:
    """Load a profile by name (from the profiles directory) or from a YAML file path."""
    p = Path(name_or_path)
    if p.suffix not in (".yml", ".yaml"):
        p = (directory or profiles_dir()) / f"{name_or_path}.yml"
    if not p.is_file():
        raise TestbedError(
            f"unknown FaaS profile '{name_or_path}'", hint="profiles: " + ", ".join(available(directory))
        )
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
        return _from_doc(doc, str(p))
    except (yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
        raise TestbedError(
            f"{p}: invalid FaaS profile: {exc}", hint="compare with workloads/faas/profiles"
        ) from exc


def _from_doc(doc: dict[str, Any], path: str) -> Profile:
    mem, cpu, tmp = doc["memory"], doc["cpu"], doc["tmp"]
    timeout = doc.get("timeout_s") or {}
    tiers = tuple((int(t["memory_mb"]), float(t["vcpus"])) for t in cpu.get("tiers") or ())
    if cpu["model"] not in ("proportional", "tiers", "fixed"):
        raise ValueError(f"cpu.model must be proportional, tiers or fixed, not {cpu['model']!r}")
    if tmp["kind"] not in ("disk", "memory"):
        raise ValueError(f"tmp.kind must be disk or memory, not {tmp['kind']!r}")
    price = dict(doc.get("price") or {})
    keep = doc.get("retention") or {}
    if not isinstance(keep, dict):
        raise ValueError("retention must be a mapping with container and host")
    if "per_gb_second" not in price and "per_vcpu_second" not in price:
        raise ValueError("price needs per_gb_second or per_vcpu_second + per_gib_second")
    host = doc.get("host") or {}
    cold = doc.get("cold_start_s") or {}
    if not isinstance(cold, dict) or set(cold) - {"provider", "host", "container"}:
        raise ValueError("cold_start_s maps provider, host, container to seconds")
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in cold.values()):
        raise ValueError("cold_start_s values must be seconds >= 0")
    sources = doc.get("sources") or {}
    if not isinstance(sources, dict) or not all(isinstance(v, str) for v in sources.values()):
        raise ValueError("sources maps parameter names to citations")
    age = keep.get("host_age")
    return Profile(
        name=str(doc["name"]),
        description=str(doc.get("description", "")),
        memory_min_mb=int(mem["min_mb"]),
        memory_max_mb=int(mem["max_mb"]),
        memory_default_mb=int(mem.get("default_mb", mem["min_mb"])),
        memory_step_mb=int(mem.get("step_mb", 1)),
        billing=str(mem.get("billing", "configured")),
        billing_step_mb=int(mem.get("billing_step_mb", 1)),
        cpu_model=str(cpu["model"]),
        mb_per_vcpu=float(cpu.get("mb_per_vcpu", 1769)),
        max_vcpus=float(cpu.get("max_vcpus", 1)),
        tiers=tiers,
        fixed_vcpus=float(cpu.get("vcpus", 1.0)),
        tmp_kind=str(tmp["kind"]),
        tmp_default_mb=int(tmp.get("default_mb", 512)),
        tmp_min_mb=int(tmp.get("min_mb", 1)),
        tmp_max_mb=int(tmp.get("max_mb", 1 << 20)),
        tmp_is_memory_limit=tmp.get("size") == "memory_limit",
        instance_concurrency=int(doc.get("instance_concurrency", 1)),
        timeout_default_s=float(timeout.get("default", 60)),
        timeout_max_s=float(timeout.get("max", 900)),
        keep_alive_s=float(doc.get("keep_alive_s", 600)),
        host_memory_mb=int(host.get("memory_mb", 8192)),
        host_max_containers=int(host.get("max_containers", 0)),
        host_reclaim_empty_s=float(host.get("reclaim_empty_s", math.inf)),
        price=price,
        path=path,
        container_retention=retention.parse(
            (doc.get("retention") or {}).get("container"), "retention.container"
        ),
        host_retention=retention.parse((doc.get("retention") or {}).get("host"), "retention.host"),
        host_age=(
            Retention("fixed", value_s=0.0) if age is None else retention.parse(age, "retention.host_age")
        ),
        cold_start_s={str(k): float(v) for k, v in cold.items()},
        scale_out_interval_s=float((doc.get("scale_out") or {}).get("interval_s", 0.0)),
        sources={str(k): v for k, v in sources.items()},
    )
