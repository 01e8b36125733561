"""Telemetry around every benchmark: psutil sampling, rusage of the benchmark's processes,
node_exporter counter deltas, and the agent's progress in node_exporter's textfile collector."""

from __future__ import annotations

import resource
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psutil
from prometheus_client import CollectorRegistry, Gauge, write_to_textfile
from prometheus_client.parser import text_string_to_metric_families


class Sampler:
    """Samples system CPU (user/system/iowait/steal) and memory every ``interval`` seconds."""

    def __init__(self, interval: float = 1.0) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples: list[dict[str, float]] = []

    def start(self) -> None:
        psutil.cpu_times_percent(interval=None)  # prime: the next call measures from here
        self._thread = threading.Thread(target=self._loop, name="telemetry", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.samples.append(self._sample())

    @staticmethod
    def _sample() -> dict[str, float]:
        cpu = psutil.cpu_times_percent(interval=None)
        mem = psutil.virtual_memory()
        return {
            "cpu_percent": 100.0 - cpu.idle - getattr(cpu, "iowait", 0.0) - getattr(cpu, "steal", 0.0),
            "user": cpu.user,
            "system": cpu.system,
            "iowait": getattr(cpu, "iowait", 0.0),
            "steal": getattr(cpu, "steal", 0.0),
            "mem_used_bytes": float(mem.total - mem.available),
        }

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread:
            self._thread.join()
        if not self.samples:  # shorter than one interval: one reading over the whole span
            self.samples.append(self._sample())
        n = len(self.samples)

        def mean(key: str) -> float:
            return sum(s[key] for s in self.samples) / n

        return {
            "samples": n,
            "interval_s": self.interval,
            "cpu_percent_mean": mean("cpu_percent"),
            "user_percent_mean": mean("user"),
            "system_percent_mean": mean("system"),
            "iowait_percent_mean": mean("iowait"),
            "steal_percent": mean("steal"),
            "steal_percent_max": max(s["steal"] for s in self.samples),
            "mem_used_bytes_max": max(s["mem_used_bytes"] for s in self.samples),
        }


class ResourceMeter:
    """CPU time of the benchmark's (reaped) child processes and of the agent itself."""

    def __init__(self) -> None:
        self._children = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._self = resource.getrusage(resource.RUSAGE_SELF)
        self._t0 = time.monotonic()

    def stop(self) -> dict[str, float]:
        wall = time.monotonic() - self._t0
        ch = resource.getrusage(resource.RUSAGE_CHILDREN)
        me = resource.getrusage(resource.RUSAGE_SELF)
        child_cpu = (ch.ru_utime - self._children.ru_utime) + (ch.ru_stime - self._children.ru_stime)
        agent_cpu = (me.ru_utime - self._self.ru_utime) + (me.ru_stime - self._self.ru_stime)
        return {
            "wall_s": wall,
            "process_cpu_user_s": ch.ru_utime - self._children.ru_utime,
            "process_cpu_system_s": ch.ru_stime - self._children.ru_stime,
            "process_cpu_percent": 100.0 * child_cpu / wall if wall > 0 else 0.0,
            "process_maxrss_bytes": ch.ru_maxrss * 1024.0,
            "agent_cpu_s": agent_cpu,
            "agent_cpu_percent": 100.0 * agent_cpu / wall if wall > 0 else 0.0,
        }


_NODE_COUNTERS = {
    "node_cpu_seconds_total": "mode",
    "node_disk_read_bytes_total": None,
    "node_disk_written_bytes_total": None,
    "node_disk_reads_completed_total": None,
    "node_disk_writes_completed_total": None,
    "node_context_switches_total": None,
    "node_intr_total": None,
}


def scrape_node_exporter(url: str, timeout: float = 3.0) -> dict[str, float] | None:
    """Counters of interest from node_exporter, summed over CPUs/devices (per mode for CPU)."""
    if not url:
        return None
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - configured URL
            text = resp.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, TimeoutError):
        return None
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name not in _NODE_COUNTERS:
                continue
            by = _NODE_COUNTERS[sample.name]
            key = f"{sample.name}:{sample.labels.get(by, '')}" if by else sample.name
            totals[key] = totals.get(key, 0.0) + sample.value
    return totals


def counter_deltas(
    before: dict[str, float] | None, after: dict[str, float] | None
) -> dict[str, float] | None:
    """after - before for every counter present in both; None when a scrape failed."""
    if before is None or after is None:
        return None
    out = {}
    for key, value in after.items():
        if key in before:
            name = key.replace("node_cpu_seconds_total:", "cpu_seconds_").replace("node_", "")
            out[name.removesuffix("_total")] = value - before[key]
    return out


class ProgressExporter:
    """The agent's progress as node_exporter textfile metrics (testbed_agent_*.prom)."""

    def __init__(self, directory: Path | None, run_id: str, host: str) -> None:
        self.path = directory / "testbed_agent.prom" if directory else None
        self.run_id = run_id
        self.host = host

    def update(self, done: int, total: int, current: str, status: str = "running") -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        reg = CollectorRegistry()
        labels = ["run_id", "host"]
        Gauge("testbed_agent_executions_total", "Executions in the plan", labels, registry=reg).labels(
            self.run_id, self.host
        ).set(total)
        Gauge("testbed_agent_executions_done", "Executions recorded", labels, registry=reg).labels(
            self.run_id, self.host
        ).set(done)
        Gauge(
            "testbed_agent_running", "1 while a plan runs", [*labels, "benchmark", "status"], registry=reg
        ).labels(self.run_id, self.host, current, status).set(1 if status == "running" else 0)
        Gauge("testbed_agent_last_update_seconds", "Unix time of this update", labels, registry=reg).labels(
            self.run_id, self.host
        ).set(time.time())
        write_to_textfile(str(self.path), reg)
