"""S0, crypto with key services on FaaS: Tables V and VI, the per-workload figures and heat maps.

From the records of ``faas-crypto-kms.yml`` (benchmarks ``s0_<workload>_<memory>``): per call the
handler's duration (the key-service round trips included, as CloudWatch's Duration) and the
instance's peak memory, phase ``cold`` (call 1), ``warmup`` (calls 2-10) and ``measured`` (calls
11-30). Per configuration (workload, start type, architecture, language, memory size) the mean
execution time with its interval (faas_helpers.mean_cell) and the mean of the per-call peak memory,
then the paper's cost model (S0 L188-198): mean cost = mean time x cost per ms (memory / 1024 GB x
the GB-second price of the architecture / 1000), requests per second = 1 / mean time, cost
efficiency = requests per second / mean cost. Table V is the fastest configuration per workload and
start type, Table VI the most cost-efficient, both over the configurations the records hold, beside
the paper's row (its time, memory, architecture, language, memory size and cost). The heat maps
(warm speed difference x86_64 vs Arm64 per language and memory size) need records of both
architectures.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np

from testbed_reports import svgplot
from testbed_reports.study import StudyError
from testbed_reports.study.faas_helpers import img, mean_cell, palette, paper, runs, value_cell
from testbed_reports.study.view import Cell, StudyFigure, StudyTable, StudyView
from testbed_shared.studies import Manifest, Published

#: the GB-second prices of the paper's cost column (S0 L124-128: AWS Lambda, us-east-1, 2025-03-06)
PER_GB_SECOND = {"x86_64": 0.0000166667, "arm64": 0.0000133334}
#: Tables V and VI, in the paper's row order
WORKLOADS = (
    ("aes256-decrypt", "AES256 Decrypt"),
    ("aes256-encrypt", "AES256 Encrypt"),
    ("ecc256-sign", "ECC256 Sign"),
    ("ecc256-verify", "ECC256 Verify"),
    ("ecc384-sign", "ECC384 Sign"),
    ("ecc384-verify", "ECC384 Verify"),
    ("rsa2048-decrypt", "RSA2048 Decrypt"),
    ("rsa2048-encrypt", "RSA2048 Encrypt"),
    ("rsa3072-decrypt", "RSA3072 Decrypt"),
    ("rsa3072-encrypt", "RSA3072 Encrypt"),
    ("rsa4096-decrypt", "RSA4096 Decrypt"),
    ("rsa4096-encrypt", "RSA4096 Encrypt"),
    ("sha256", "SHA256"),
    ("sha384", "SHA384"),
)
MIB = 1 << 20


@dataclass
class Config:
    """One configuration's calls of one start type."""

    workload: str
    start: str
    arch: str
    language: str
    memory_mb: int
    times_ms: list[float]
    memory_mb_used: list[float]

    @property
    def mean_ms(self) -> float:
        return float(np.mean(self.times_ms))

    @property
    def cost_per_ms(self) -> float:
        return self.memory_mb / 1024 * PER_GB_SECOND.get(self.arch, PER_GB_SECOND["x86_64"]) / 1000

    @property
    def mean_cost(self) -> float:
        """Equation (1): mean execution time x cost per millisecond."""
        return self.mean_ms * self.cost_per_ms

    @property
    def efficiency(self) -> float:
        """Equations (2) and (3): (1 / mean time in s) / mean cost."""
        return (1000.0 / self.mean_ms) / self.mean_cost if self.mean_ms > 0 else math.nan


def build(ds: Any, manifest: Manifest) -> StudyView:
    """Tables V and VI and the figures from the records of faas-crypto-kms.yml."""
    found = runs(ds, ("s0_",))
    if not found:
        raise StudyError(
            "S0: the results hold no records of faas-crypto-kms.yml (benchmarks s0_<workload>_<memory>)",
            hint="run workloads/plans/faas-crypto-kms.yml or a derived plan of it",
        )
    configs = _configs(found)
    missing = [w for w, _ in WORKLOADS if not any(c.workload == w for c in configs)]
    if len(missing) == len(WORKLOADS):
        raise StudyError("S0: the s0_* records have no calls with a handler time (samples.calls)")
    view = StudyView(manifest)
    archs = sorted({c.arch for c in configs})
    langs = sorted({c.language for c in configs})
    mems = sorted({c.memory_mb for c in configs})
    view.provenance.append(
        f"toolkit records: {len(found)} deployments; architectures {', '.join(archs)}; languages "
        f"{', '.join(langs)}; memory sizes {', '.join(map(str, mems))} MB"
    )
    if missing:
        view.notes.append("workloads without records: " + ", ".join(missing))
    view.notes.append(
        "the tables choose among the configurations these records hold; the paper chose among five "
        "languages (six on Azure) and two architectures (workloads/studies/S0/manifest.yml: not here)"
    )
    for table, key, title in (
        ("Table V", "t5", "fastest execution configuration per workload"),
        ("Table VI", "t6", "most cost-efficient configuration per workload"),
    ):
        view.tables.append(_best_table(table, key, title, configs, manifest))
    view.figures += _figures(configs)
    return view


def _configs(found: list[Any]) -> list[Config]:
    acc: dict[tuple[str, str, str, str, int], tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for r in found:
        f = r.params.get("factors") or {}
        workload = str(f.get("workload") or (r.params.get("event") or {}).get("workload", ""))
        arch = str(f.get("arch", "x86_64")).lower()
        lang = str(f.get("language", "python")).lower()
        mem = int(r.params.get("memory_mb", 0))
        for c in r.calls():
            if c.get("status") != 200 or c.get("handler_s") is None:
                continue
            start = {"cold": "cold", "measured": "warm"}.get(str(c.get("phase")))
            if start is None:
                continue
            times, memory = acc[(workload, start, arch, lang, mem)]
            times.append(1000 * float(c["handler_s"]))
            if c.get("memory_peak_bytes"):
                memory.append(float(c["memory_peak_bytes"]) / MIB)
    return [Config(w, s, a, lang, m, t, mu) for (w, s, a, lang, m), (t, mu) in acc.items() if t]


def _best_table(table: str, key: str, title: str, configs: list[Config], m: Manifest) -> StudyTable:
    rows = []
    for workload, name in WORKLOADS:
        for start in ("cold", "warm"):
            cands = [c for c in configs if c.workload == workload and c.start == start]
            pub = paper(m, f"{key}.{workload}.{start}")
            if not cands:
                rows.append(
                    {
                        "Workload": name,
                        "Start type": start.capitalize(),
                        "Mean execution time (ms)": Cell(None, paper=pub),
                    }
                )
                continue
            best = (
                min(cands, key=lambda c: c.mean_ms) if key == "t5" else max(cands, key=lambda c: c.efficiency)
            )
            extra = pub.extra if pub else {}
            rows.append(
                {
                    "Workload": name,
                    "Start type": start.capitalize(),
                    "Mean execution time (ms)": mean_cell(np.asarray(best.times_ms), pub),
                    "Max mean memory consumption (MB)": value_cell(
                        float(np.mean(best.memory_mb_used)) if best.memory_mb_used else None,
                        _aside(pub, "max_memory_mb", extra),
                        "mean of the calls' peak memory of the instance cgroup",
                    ),
                    "Architecture": best.arch,
                    "Programming language": best.language,
                    "Memory size (MB)": value_cell(
                        float(best.memory_mb), _aside(pub, "memory_size_mb", extra)
                    ),
                    "Mean cost (USD)": value_cell(best.mean_cost, _aside(pub, "cost_usd", extra)),
                    "Paper's configuration": _paper_config(extra) if pub else "",
                    "Configurations compared": len(cands),
                }
            )
    return StudyTable(
        table,
        title,
        [
            "Workload",
            "Start type",
            "Mean execution time (ms)",
            "Max mean memory consumption (MB)",
            "Architecture",
            "Programming language",
            "Memory size (MB)",
            "Mean cost (USD)",
            "Paper's configuration",
            "Configurations compared",
        ],
        rows,
        source="S0 L212-242" if key == "t5" else "S0 L246-276",
        note=(
            "mean cost = mean time x memory/1024 x GB-s price/1000 (S0 L190); cost efficiency = "
            "(1/mean time) / mean cost (S0 L192-198); cold: the first call of each deployment"
        ),
    )


def _paper_config(extra: dict[str, Any]) -> str:
    return f"{extra.get('arch', '')} {extra.get('language', '')} {extra.get('memory_size_mb', '')} MB"


def _aside(pub: Published | None, field: str, extra: dict[str, Any]) -> Published | None:
    """A published row's other column as a value of its own (same line)."""
    if pub is None or field not in extra:
        return None
    return Published(f"{pub.id}.{field}", pub.source, extra[field], table=pub.table)


def _figures(configs: list[Config]) -> list[StudyFigure]:
    figs = []
    by_workload: dict[str, list[Config]] = defaultdict(list)
    for c in configs:
        by_workload[c.workload].append(c)
    for workload, name in WORKLOADS:
        cs = by_workload.get(workload)
        if not cs:
            continue
        time_bars: dict[tuple[str, str], tuple[float, float, float]] = {}
        mem_bars: dict[tuple[str, str], tuple[float, float, float]] = {}
        for c in sorted(cs, key=lambda c: (c.memory_mb, c.start, c.language, c.arch)):
            label = f"{c.language} {c.arch} {c.start}"
            t = mean_cell(np.asarray(c.times_ms), None)
            time_bars[(f"{c.memory_mb} MB", label)] = (
                t.rerun or math.nan,
                t.low or math.nan,
                t.high or math.nan,
            )
            if c.memory_mb_used:
                mu = mean_cell(np.asarray(c.memory_mb_used), None)
                mem_bars[(f"{c.memory_mb} MB", label)] = (
                    mu.rerun or math.nan,
                    mu.low or math.nan,
                    mu.high or math.nan,
                )
        pal = palette(lab for _, lab in time_bars)
        body = img(
            svgplot.grouped_bars(
                time_bars,
                pal,
                f"{name}: mean execution time (ms)",
                "cold and warm, mean with 95 % CI (Cox-t hull)",
            ),
            name,
        )
        if mem_bars:
            body += img(
                svgplot.grouped_bars(mem_bars, pal, f"{name}: mean of max memory (MB)", "per memory size"),
                name,
            )
        body += _heat_map(name, cs)
        figs.append(
            StudyFigure(
                f"{name} (a-c)",
                f"{name}: time and memory by memory size; x86_64 vs Arm64",
                body,
                "S0 L298-315",
            )
        )
    return figs


def _heat_map(name: str, cs: list[Config]) -> str:
    """Warm speed difference (%) x86_64 vs Arm64 per language and memory size, as an HTML table."""
    warm = {(c.language, c.memory_mb, c.arch): c.mean_ms for c in cs if c.start == "warm"}
    if not any(a == "arm64" for _, _, a in warm) or not any(a == "x86_64" for _, _, a in warm):
        return (
            f"<p><em>{name} heat map (warm speed difference x86_64 vs Arm64): not here - the records hold "
            "one architecture; Arm64 records (a real Lambda run, issue 29) fill it.</em></p>"
        )
    langs = sorted({lang for lang, _, _ in warm})
    mems = sorted({mem for _, mem, _ in warm})
    cells = ["<table><tr><th>language</th>" + "".join(f"<th>{m} MB</th>" for m in mems) + "</tr>"]
    for lang in langs:
        tds = []
        for mem in mems:
            x, a = warm.get((lang, mem, "x86_64")), warm.get((lang, mem, "arm64"))
            tds.append(f"<td>{100 * (a - x) / x:+.1f} %</td>" if x and a else "<td></td>")
        cells.append(f"<tr><td>{lang}</td>{''.join(tds)}</tr>")
    cells.append("</table><p>(Arm64 - x86_64) / x86_64 of the warm mean time: positive = x86_64 faster</p>")
    return "".join(cells)
