"""S3, the serverless factors study: its research questions' figures rebuilt from the emulator's calls.

Every number comes from the per-call samples of the factors plans (``samples.calls``: phase, round
trip, instance, host, host uptime, cold-start path), as the study's own clients derived theirs from
each response's container and host identity (S3 L139-147):

* RQ-1 (``s3_rq1_*``, phases ``c<N>``): mean time per concurrency level (Figure 3), containers,
  hosts and requests per host (Figure 4), the slowdowns from 1 and from 10 to 100 requests;
* RQ-3: the regression of container-cold time on the containers of its host (Figure 7, R2) over
  RQ-1's calls, and the 3,000 requests at level 9 (``s3_rq3_*``: containers, hosts, runs per
  container and host, the two R2, the most containers on one host);
* RQ-2 (``s3_rq2_level<L>``, phases ``set<k>``): per stress level the mean time (Figure 5) and per
  set the containers, hosts and the standard deviation of requests per container and per host
  (Figure 6), averaged over the sets;
* RQ-4 (``s3_rq4_*``, phases ``gap_<G>s``): per idle gap the containers and hosts recycled and the
  time relative to warm (Figures 8, 9);
* RQ-5 (``s3_rq5_*``, phases ``m<MB>.b<k>.set<j>`` and ``...warmup<j>``): per memory size the cold
  (first set after the configuration change) and warm times and hosts (Figures 10, 11);
* Azure (``s3_azure_*``, phases ``r<k>.c<N>``): mean time per concurrency step (Figure 12) and
  App Service instances per ramp (Figure 13);
* host uptimes over every host the calls saw (S3 L145).

Intervals: faas_helpers.mean_cell for means over calls (or sets), Clopper-Pearson for fractions;
a regression's R2 and a count have none. The emulated platform's absolute times are this
machine's; the paper's ratios (slowdowns, speed-ups) are the comparable figures. Where the
emulator's inputs were fitted to a published number (the 41.8 % recreated after 10 minutes, the
host uptimes, 26 and 12 containers a host, the VM-cold path, Azure's instances; manifest
``fitted``), agreement is by construction: the view prints "fitted" beside it, never "inside".
"""

from __future__ import annotations

import math
import re
import statistics
from collections import defaultdict
from typing import Any

import numpy as np
from scipy import stats as sps

from testbed_reports.study import StudyError
from testbed_reports.study.faas_helpers import Run, line_plot, mean_cell, paper, runs, value_cell
from testbed_reports.study.view import Cell, StudyFigure, StudyTable, StudyView
from testbed_shared.studies import Manifest

PREFIXES = ("s3_rq1_", "s3_rq2_", "s3_rq3_", "s3_rq4_", "s3_rq5_", "s3_azure_")
_LEVEL = re.compile(r"^c(\d+)$")
_SET = re.compile(r"^set(\d+)$")
_GAP = re.compile(r"^gap_(\d+(?:_\d+)?)s$")
_MEM = re.compile(r"^m(\d+)\.b(\d+)\.(set|warmup)(\d+)$")
_RAMP = re.compile(r"^(r|warmup)(\d+)\.c(\d+)$")


def build(ds: Any, manifest: Manifest) -> StudyView:
    """The factors study's figures and numbers from the toolkit's records of its plans."""
    found = runs(ds, PREFIXES)
    if not found:
        raise StudyError(
            "S3: the results hold no records of the factors plans "
            "(benchmarks s3_rq1_* ... s3_rq5_*, s3_azure_*)",
            hint="run workloads/plans/faas-factors-*.yml or derived plans of them",
        )
    view = StudyView(manifest)
    by: dict[str, list[Run]] = defaultdict(list)
    for r in found:
        by[next(p for p in PREFIXES if r.benchmark.startswith(p))].append(r)
    calls = {id(r): [c for c in r.calls() if c.get("status") == 200] for r in found}
    scale = sorted({float(r.params.get("time_scale", 1) or 1) for r in found})
    view.provenance.append(
        f"toolkit records: {len(found)} executions of {len(by)} S3 experiments, "
        f"{sum(len(v) for v in calls.values())} successful calls; "
        f"time scale {', '.join(f'{s:g}' for s in scale)}"
    )
    if any(s != 1 for s in scale):
        view.notes.append(
            "time-scaled runs (a derived plan with faas.time_scale): lifetimes, host ages and modelled "
            "cold-start seconds ran faster by that factor; uptimes are reported in platform seconds"
        )
    sections = (
        ("s3_rq1_", _rq1),
        ("s3_rq3_", _rq3_warm),
        ("s3_rq2_", _rq2),
        ("s3_rq4_", _rq4),
        ("s3_rq5_", _rq5),
        ("s3_azure_", _azure),
    )
    for prefix, fn in sections:
        if by.get(prefix):
            fn(view, by[prefix], calls, manifest)
        else:
            view.notes.append(f"{prefix.rstrip('_').upper()}: no records in these results")
    _uptimes(view, found, calls, manifest)
    return view


# -- RQ-1 and RQ-3 (cold) --------------------------------------------------------------------------


def _by_phase(
    cs: list[dict[str, Any]], pattern: re.Pattern[str]
) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    out: dict[tuple[str, ...], list[dict[str, Any]]] = defaultdict(list)
    for c in cs:
        m = pattern.match(str(c.get("phase", "")))
        if m:
            out[m.groups()].append(c)
    return out


def _pool(cs: list[dict[str, Any]]) -> dict[str, float]:
    """Containers, hosts, requests per host and their spread, most containers on one host."""
    per_host: dict[str, set[str]] = defaultdict(set)
    per_host_req: dict[str, int] = defaultdict(int)
    per_inst: dict[str, int] = defaultdict(int)
    for c in cs:
        per_host[c["host_id"]].add(c["instance_id"])
        per_host_req[c["host_id"]] += 1
        per_inst[c["instance_id"]] += 1
    reqs = list(per_host_req.values())
    inst = list(per_inst.values())
    return {
        "calls": len(cs),
        "containers": len(per_inst),
        "hosts": len(per_host),
        "requests_per_host": statistics.fmean(reqs) if reqs else math.nan,
        "requests_per_container": statistics.fmean(inst) if inst else math.nan,
        "sd_requests_per_host": statistics.stdev(reqs) if len(reqs) > 1 else 0.0,
        "sd_requests_per_container": statistics.stdev(inst) if len(inst) > 1 else 0.0,
        "max_containers_per_host": max((len(v) for v in per_host.values()), default=0),
        "new": sum(1 for c in cs if c.get("new_instance")),
    }


def _rt(cs: list[dict[str, Any]]) -> np.ndarray:
    return np.array([float(c["round_trip_s"]) for c in cs], dtype=float)


def _regression(x: list[float], y: list[float]) -> dict[str, float]:
    if len(x) < 3 or len(set(x)) < 2:
        return {"r2": math.nan, "slope": math.nan, "n": len(x)}
    fit = sps.linregress(x, y)
    return {"r2": float(fit.rvalue**2), "slope": float(fit.slope), "n": len(x)}


def _rq1(view: StudyView, rs: list[Run], calls: dict[int, list[dict[str, Any]]], m: Manifest) -> None:
    levels: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for r in rs:
        for (n,), cs in _by_phase(calls[id(r)], _LEVEL).items():
            levels[int(n)] += cs
    if not levels:
        raise StudyError("S3 RQ-1: its records have no calls of concurrency levels (phases c<N>)")
    rows, xs, ys, lo, hi, cont, hosts = [], [], [], [], [], [], []
    points_x, points_y = [], []
    for n in sorted(levels):
        cs = levels[n]
        pool = _pool(cs)
        cell = mean_cell(_rt(cs), None)
        kinds = defaultdict(int)
        for c in cs:
            kinds[str(c.get("cold_start_kind") or "warm")] += 1
        rows.append(
            {
                "Concurrent requests": n,
                "Mean time (s)": cell,
                "Containers": pool["containers"],
                "Hosts": pool["hosts"],
                "Requests per host": pool["requests_per_host"],
                "Cold-start paths": ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())),
            }
        )
        xs.append(n)
        ys.append(cell.rerun or math.nan)
        lo.append(cell.low if cell.low is not None else math.nan)
        hi.append(cell.high if cell.high is not None else math.nan)
        cont.append(pool["containers"])
        hosts.append(pool["hosts"])
        # RQ-3: per host of this level, its containers and its calls' mean cold time
        by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for c in cs:
            if c.get("new_instance"):
                by_host[c["host_id"]].append(c)
        for hcs in by_host.values():
            points_x.append(float(len({c["instance_id"] for c in hcs})))
            points_y.append(float(np.mean(_rt(hcs))))
    mean = {n: float(np.mean(_rt(levels[n]))) for n in levels}
    summary = []
    for pid, a, b in (("rq1.slowdown_1_100", 1, 100), ("rq1.slowdown_10_100", 10, 100)):
        if a in mean and b in mean:
            summary.append(
                {
                    "Figure": f"slowdown {a} -> {b} requests (x)",
                    "Rerun": _ratio_cell(levels[b], levels[a], paper(m, pid)),
                }
            )
    all_calls = [c for cs in levels.values() for c in cs]
    per_request = len({c["instance_id"] for c in all_calls if c.get("new_instance")}) / max(len(all_calls), 1)
    summary += [
        {
            "Figure": "most hosts at one level",
            "Rerun": value_cell(float(max(hosts)), paper(m, "rq1.hosts_max")),
        },
        {
            "Figure": "requests per host (mean over levels)",
            "Rerun": value_cell(
                float(np.mean([r["Requests per host"] for r in rows])), paper(m, "rq1.requests_per_host")
            ),
        },
        {
            "Figure": "new containers per request",
            "Rerun": value_cell(per_request, paper(m, "rq1.containers_per_request")),
        },
    ]
    view.tables.append(
        StudyTable(
            "RQ-1",
            "container-cold scaling at stress level 4, 128 MB (Figures 3 and 4)",
            [
                "Concurrent requests",
                "Mean time (s)",
                "Containers",
                "Hosts",
                "Requests per host",
                "Cold-start paths",
            ],
            rows,
            source="S3 L201-206",
        )
    )
    view.tables.append(
        StudyTable(
            "RQ-1 summary", "the figures the study quotes", ["Figure", "Rerun"], summary, source="S3 L205"
        )
    )
    view.figures.append(
        StudyFigure(
            "Figure 3",
            "container-cold performance vs concurrent requests",
            line_plot(
                {"mean time": (xs, ys)},
                "RQ-1: mean time per level",
                "concurrent requests",
                "s",
                bands={"mean time": (lo, hi)},
            ),
            "S3 L201-205",
        )
    )
    view.figures.append(
        StudyFigure(
            "Figure 4",
            "containers and hosts per level",
            line_plot(
                {"containers": (xs, cont), "hosts": (xs, hosts)},
                "RQ-1: infrastructure",
                "concurrent requests",
                "count",
            ),
            "S3 L205",
        )
    )
    fit = _regression(points_x, points_y)
    view.tables.append(
        StudyTable(
            "RQ-3 (cold)",
            "regression of container-cold time on the containers started on the host (Figure 7)",
            ["Points (host, level)", "Slope (s per container)", "R2"],
            [
                {
                    "Points (host, level)": fit["n"],
                    "Slope (s per container)": fit["slope"],
                    "R2": value_cell(fit["r2"], paper(m, "rq3.r2_cold")),
                }
            ],
            source="S3 L227",
            note=(
                "each point: one host at one concurrency level, its new containers and their mean time; "
                "least squares"
            ),
        )
    )
    view.figures.append(
        StudyFigure(
            "Figure 7",
            "container placement vs container-cold performance",
            line_plot(
                {"hosts": (points_x, points_y)},
                "RQ-3: containers per host",
                "containers on the host",
                "mean cold time (s)",
                points_only=True,
            ),
            "S3 L227",
        )
    )


def _ratio_cell(num: list[dict[str, Any]], den: list[dict[str, Any]], published: Any) -> Cell:
    """Ratio of two mean times with a delta-method 95 % interval."""
    a, b = _rt(num), _rt(den)
    if len(a) == 0 or len(b) == 0 or b.mean() <= 0:
        return Cell(None, paper=published)
    r = float(a.mean() / b.mean())
    if len(a) < 2 or len(b) < 2:
        return Cell(r, paper=published, note="one call on a side: no interval")
    rel = math.sqrt(a.var(ddof=1) / len(a) / a.mean() ** 2 + b.var(ddof=1) / len(b) / b.mean() ** 2)
    return Cell(
        r,
        r * math.exp(-1.96 * rel),
        r * math.exp(1.96 * rel),
        published,
        "ratio of means, delta method on the log scale",
    )


def _rq3_warm(view: StudyView, rs: list[Run], calls: dict[int, list[dict[str, Any]]], m: Manifest) -> None:
    cs = [c for r in rs for c in calls[id(r)] if str(c.get("phase")) not in ("warmup",)]
    pool = _pool(cs)
    by_host: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for c in cs:
        by_host[c["host_id"]].append(c)
    x = [float(len({c["instance_id"] for c in h})) for h in by_host.values()]
    t = [float(np.mean(_rt(h))) for h in by_host.values()]
    req = [float(len(h)) for h in by_host.values()]
    rows = [
        {"Figure": "containers", "Rerun": value_cell(float(pool["containers"]), paper(m, "rq3.containers"))},
        {"Figure": "hosts", "Rerun": value_cell(float(pool["hosts"]), paper(m, "rq3.hosts"))},
        {
            "Figure": "runs per container",
            "Rerun": value_cell(pool["requests_per_container"], paper(m, "rq3.runs_per_container")),
        },
        {
            "Figure": "runs per host",
            "Rerun": value_cell(pool["requests_per_host"], paper(m, "rq3.runs_per_host")),
        },
        {
            "Figure": "R2, containers per host vs mean time",
            "Rerun": value_cell(_regression(x, t)["r2"], paper(m, "rq3.r2_warm_time")),
        },
        {
            "Figure": "R2, containers per host vs requests per host",
            "Rerun": value_cell(_regression(x, req)["r2"], paper(m, "rq3.r2_requests")),
        },
        {
            "Figure": "most containers on one host (512 MB)",
            "Rerun": value_cell(float(pool["max_containers_per_host"]), paper(m, "rq3.max_containers_512")),
        },
        {"Figure": "mean time (s)", "Rerun": mean_cell(_rt(cs), None)},
    ]
    view.tables.append(
        StudyTable(
            "RQ-3 (warm)",
            "3,000 requests at stress level 9, 512 MB",
            ["Figure", "Rerun"],
            rows,
            source="S3 L231-236",
        )
    )


# -- RQ-2 ----------------------------------------------------------------------------------------


def _rq2(view: StudyView, rs: list[Run], calls: dict[int, list[dict[str, Any]]], m: Manifest) -> None:
    rows, xs, ys, cont, hosts = [], [], [], [], []
    per_level: dict[int, list[dict[str, Any]]] = {}
    for r in sorted(rs, key=lambda r: int(r.params.get("event", {}).get("level", 0))):
        level = int(r.params.get("event", {}).get("level", 0))
        sets = _by_phase(calls[id(r)], _SET)
        if not sets:
            continue
        pools = [_pool(cs) for cs in sets.values()]
        every = [c for cs in sets.values() for c in cs]
        per_level[level] = every
        cell = mean_cell(_rt(every), None)
        row = {
            "Stress level": level,
            "Mean time (s)": cell,
            "Containers per set": float(np.mean([p["containers"] for p in pools])),
            "Requests per container": float(np.mean([p["requests_per_container"] for p in pools])),
            "Hosts per set": float(np.mean([p["hosts"] for p in pools])),
            "SD of requests per container": float(np.mean([p["sd_requests_per_container"] for p in pools])),
            "SD of requests per host": float(np.mean([p["sd_requests_per_host"] for p in pools])),
            "Sets": len(pools),
        }
        if level == 1:
            row["Containers per set"] = value_cell(
                row["Containers per set"], paper(m, "rq2.level1.containers")
            )
            row["Requests per container"] = value_cell(
                row["Requests per container"], paper(m, "rq2.level1.requests_per_container")
            )
        rows.append(row)
        xs.append(level)
        ys.append(cell.rerun or math.nan)
        cont.append(float(np.mean([p["containers"] for p in pools])))
        hosts.append(float(np.mean([p["hosts"] for p in pools])))
    if not rows:
        raise StudyError("S3 RQ-2: its records have no measured sets (phases set<k>)")
    cols = [
        "Stress level",
        "Mean time (s)",
        "Containers per set",
        "Requests per container",
        "Hosts per set",
        "SD of requests per container",
        "SD of requests per host",
        "Sets",
    ]
    view.tables.append(
        StudyTable(
            "RQ-2",
            "warm load balancing per stress level, 128 MB, sets of 100 (Figures 5 and 6)",
            cols,
            rows,
            source="S3 L218-223",
        )
    )
    summary = []
    if 1 in per_level and 9 in per_level:
        summary.append(
            {
                "Figure": "slowdown level 1 -> 9 (x)",
                "Rerun": _ratio_cell(per_level[9], per_level[1], paper(m, "rq2.slowdown_1_9")),
            }
        )
    if hosts:
        summary.append(
            {"Figure": "fewest hosts per set", "Rerun": value_cell(min(hosts), paper(m, "rq2.hosts_min"))}
        )
        summary.append(
            {"Figure": "most hosts per set", "Rerun": value_cell(max(hosts), paper(m, "rq2.hosts_max"))}
        )
    view.tables.append(
        StudyTable(
            "RQ-2 summary", "the figures the study quotes", ["Figure", "Rerun"], summary, source="S3 L218-223"
        )
    )
    view.figures.append(
        StudyFigure(
            "Figure 5",
            "stress level vs performance",
            line_plot({"mean time": (xs, ys)}, "RQ-2: mean time", "stress level", "s"),
            "S3 L218",
        )
    )
    view.figures.append(
        StudyFigure(
            "Figure 6",
            "containers and hosts per set vs stress level",
            line_plot(
                {"containers": (xs, cont), "hosts": (xs, hosts)},
                "RQ-2: infrastructure",
                "stress level",
                "per set",
            ),
            "S3 L223",
        )
    )


# -- RQ-4 ----------------------------------------------------------------------------------------


def _rq4(view: StudyView, rs: list[Run], calls: dict[int, list[dict[str, Any]]], m: Manifest) -> None:
    rows, xs, times, recycled, host_rec = [], [], [], [], []
    for r in rs:
        cs = calls[id(r)]
        order = list(dict.fromkeys(str(c.get("phase")) for c in cs))
        seen_hosts: set[str] = set()
        seen_inst: set[str] = set()
        gap_sets = []
        for ph in order:
            batch = [c for c in cs if str(c.get("phase")) == ph]
            gm = _GAP.match(ph)
            if gm:
                gap = float(gm.group(1).replace("_", "."))
                gap_sets.append((gap, batch, set(seen_hosts), set(seen_inst)))
            seen_hosts |= {c["host_id"] for c in batch}
            seen_inst |= {c["instance_id"] for c in batch}
        if not gap_sets:
            continue
        warm = gap_sets[0][1]
        for gap, batch, hosts_before, _ in gap_sets:
            reused = sum(1 for c in batch if not c.get("new_instance"))
            n = len(batch)
            lo, hi = _clopper(n - reused, n)
            hosts = {c["host_id"] for c in batch}
            hrec = len(hosts & hosts_before) / len(hosts) if hosts else math.nan
            ratio = _ratio_cell(batch, warm, paper(m, f"rq4.slowdown.{int(gap)}"))
            rec_cell = Cell(
                (n - reused) / n if n else None,
                lo,
                hi,
                paper(m, "rq4.recreated_10min") if int(gap) == 600 else None,
                f"Clopper-Pearson, n={n}",
            )
            if int(gap) == 2400:
                rec_cell = Cell((n - reused) / n if n else None, lo, hi, None, f"Clopper-Pearson, n={n}")
            rows.append(
                {
                    "Idle gap (min)": round(gap / 60, 3),
                    "Containers recreated": rec_cell,
                    "Containers recycled": reused / n if n else math.nan,
                    "Hosts recycled": value_cell(
                        hrec, paper(m, "rq4.recycled_40min") if int(gap) == 2400 else None
                    ),
                    "Mean time (s)": mean_cell(
                        _rt(batch),
                        paper(m, "rq4.warm_time") if gap == gap_sets[0][0] else None,
                        note=f"a mixture: {n - reused} container-cold, {reused} warm calls"
                        if 0 < reused < n
                        else "",
                    ),
                    "Time vs warm (x)": ratio,
                }
            )
            xs.append(gap / 60)
            times.append(float(np.mean(_rt(batch))))
            recycled.append(100 * reused / n if n else math.nan)
            host_rec.append(100 * hrec)
    if not rows:
        raise StudyError("S3 RQ-4: its records have no sets after idle gaps (phases gap_<G>s)")
    view.tables.append(
        StudyTable(
            "RQ-4",
            "retention: sets of 100 requests after idle gaps, level 4, 128 MB (Figures 8 and 9)",
            [
                "Idle gap (min)",
                "Containers recreated",
                "Containers recycled",
                "Hosts recycled",
                "Mean time (s)",
                "Time vs warm (x)",
            ],
            rows,
            source="S3 L242-246",
            note=(
                "warm = the set after the shortest gap; a host is recycled when the calls before the gap "
                "used it; a set's mean time is the study's mean of a mixture of container-cold and warm "
                "calls (the recreated share says how many were cold; at 100 calls its interval covers "
                "about 91 %, reports/tests/test_study_intervals.py)"
            ),
        )
    )
    view.figures.append(
        StudyFigure(
            "Figure 8",
            "performance and recycled containers vs idle time",
            line_plot({"mean time (s)": (xs, times)}, "RQ-4: time after idle", "idle minutes", "s")
            + line_plot(
                {"containers recycled (%)": (xs, recycled)}, "RQ-4: recycled containers", "idle minutes", "%"
            ),
            "S3 L246",
        )
    )
    view.figures.append(
        StudyFigure(
            "Figure 9",
            "recycled hosts vs idle time",
            line_plot({"hosts recycled (%)": (xs, host_rec)}, "RQ-4: recycled hosts", "idle minutes", "%"),
            "S3 L244",
        )
    )


def _clopper(k: int, n: int) -> tuple[float | None, float | None]:
    if n == 0:
        return None, None
    lo = 0.0 if k == 0 else float(sps.beta.ppf(0.025, k, n - k + 1))
    hi = 1.0 if k == n else float(sps.beta.ppf(0.975, k + 1, n - k))
    return lo, hi


# -- RQ-5 ----------------------------------------------------------------------------------------


def _rq5(view: StudyView, rs: list[Run], calls: dict[int, list[dict[str, Any]]], m: Manifest) -> None:
    cold: dict[int, list[dict[str, Any]]] = defaultdict(list)
    warm: dict[int, list[dict[str, Any]]] = defaultdict(list)
    cold_sets: dict[int, list[list[dict[str, Any]]]] = defaultdict(list)
    warm_sets: dict[int, list[list[dict[str, Any]]]] = defaultdict(list)
    for r in rs:
        for (mem, _batch, kind, _k), cs in _by_phase(calls[id(r)], _MEM).items():
            (cold if kind == "warmup" else warm)[int(mem)] += cs
            (cold_sets if kind == "warmup" else warm_sets)[int(mem)].append(cs)
    if not warm:
        raise StudyError("S3 RQ-5: its records have no sets per memory size (phases m<MB>.b<k>.set<j>)")
    rows, xs, yc, yw, hc, hw = [], [], [], [], [], []
    for mem in sorted(warm):
        wc, cc = mean_cell(_rt(warm[mem]), None), mean_cell(_rt(cold[mem]), None)
        wh = float(np.mean([_pool(s)["hosts"] for s in warm_sets[mem]]))
        ch = float(np.mean([_pool(s)["hosts"] for s in cold_sets[mem]])) if cold_sets[mem] else math.nan
        rpw = float(np.mean([_pool(s)["requests_per_host"] for s in warm_sets[mem]]))
        rpc = (
            float(np.mean([_pool(s)["requests_per_host"] for s in cold_sets[mem]]))
            if cold_sets[mem]
            else math.nan
        )
        rows.append(
            {
                "Memory (MB)": mem,
                "Cold mean time (s)": cc,
                "Warm mean time (s)": wc,
                "Hosts per cold set": ch,
                "Hosts per warm set": wh,
                "Requests per host, cold": value_cell(
                    rpc, paper(m, "rq5.requests_per_host_cold_128") if mem == 128 else None
                ),
                "Requests per host, warm": value_cell(
                    rpw, paper(m, "rq5.requests_per_host_warm_128") if mem == 128 else None
                ),
            }
        )
        xs.append(mem)
        yc.append(cc.rerun or math.nan)
        yw.append(wc.rerun or math.nan)
        hc.append(ch)
        hw.append(wh)
    cols = [
        "Memory (MB)",
        "Cold mean time (s)",
        "Warm mean time (s)",
        "Hosts per cold set",
        "Hosts per warm set",
        "Requests per host, cold",
        "Requests per host, warm",
    ]
    view.tables.append(
        StudyTable(
            "RQ-5",
            "memory reservation size, level 4, sets of 100 (Figures 10 and 11)",
            cols,
            rows,
            source="S3 L260-269",
        )
    )
    lo_mem, hi_mem = min(warm), max(warm)
    summary = []
    if lo_mem != hi_mem:
        summary.append(
            {
                "Figure": f"cold speed-up {lo_mem} -> {hi_mem} MB (x)",
                "Rerun": _ratio_cell(
                    cold[lo_mem],
                    cold[hi_mem],
                    paper(m, "rq5.cold_speedup_128_1536") if (lo_mem, hi_mem) == (128, 1536) else None,
                ),
            }
        )
        summary.append(
            {
                "Figure": f"warm speed-up {lo_mem} -> {hi_mem} MB (x)",
                "Rerun": _ratio_cell(
                    warm[lo_mem],
                    warm[hi_mem],
                    paper(m, "rq5.warm_speedup_128_1536") if (lo_mem, hi_mem) == (128, 1536) else None,
                ),
            }
        )
        plateau = _plateau(xs, yw)
        summary.append(
            {
                "Figure": "smallest size within 5 % of the best warm time (MB)",
                "Rerun": value_cell(plateau, paper(m, "rq5.warm_plateau_mb")),
            }
        )
    every = [c for cs in warm.values() for c in cs] + [c for cs in cold.values() for c in cs]
    summary.append(
        {
            "Figure": "runs per container (all sets)",
            "Rerun": value_cell(_pool(every)["requests_per_container"], paper(m, "rq5.runs_per_container")),
        }
    )
    view.tables.append(
        StudyTable(
            "RQ-5 summary", "the figures the study quotes", ["Figure", "Rerun"], summary, source="S3 L265-269"
        )
    )
    view.figures.append(
        StudyFigure(
            "Figure 10",
            "memory reservation size vs performance",
            line_plot({"cold": (xs, yc), "warm": (xs, yw)}, "RQ-5: mean time", "memory (MB)", "s"),
            "S3 L265",
        )
    )
    view.figures.append(
        StudyFigure(
            "Figure 11",
            "memory reservation size vs hosts",
            line_plot(
                {"cold sets": (xs, hc), "warm sets": (xs, hw)}, "RQ-5: hosts per set", "memory (MB)", "hosts"
            ),
            "S3 L267-269",
        )
    )


def _plateau(xs: list[int], ys: list[float]) -> float:
    best = min(ys)
    return float(next(x for x, y in zip(xs, ys, strict=True) if y <= 1.05 * best))


# -- Azure ---------------------------------------------------------------------------------------


def _azure(view: StudyView, rs: list[Run], calls: dict[int, list[dict[str, Any]]], m: Manifest) -> None:
    series: dict[str, tuple[list[float], list[float]]] = {}
    rows, inst_rows = [], []
    for r in rs:
        steps = r.params.get("step_s")
        durations = steps if isinstance(steps, list) else [steps]
        for (kind, k, n), cs in sorted(
            _by_phase(calls[id(r)], _RAMP).items(), key=lambda kv: (kv[0][0], int(kv[0][1]), int(kv[0][2]))
        ):
            if kind != "r":
                continue
            name = f"{r.benchmark.removeprefix('s3_azure_')} ramp {k}"
            xs, ys = series.setdefault(name, ([], []))
            xs.append(int(n))
            ys.append(float(np.mean(_rt(cs))))
        for (kind, k), cs in _group_ramps(calls[id(r)]).items():
            if kind != "r":
                continue
            idx = int(k)
            step = durations[min(idx, len(durations) - 1)] if durations and durations[0] is not None else None
            inst_rows.append(
                {
                    "Run": r.benchmark,
                    "Ramp": idx,
                    "Step (s)": step,
                    "App Service instances": _pool(cs)["hosts"],
                    "Calls": len(cs),
                }
            )
    for name, (xs, ys) in series.items():
        flat = [y for x, y in zip(xs, ys, strict=True) if x <= 50]
        rows.append(
            {
                "Ramp": name,
                "Steps": len(xs),
                "Mean time at <= 50 (s)": float(np.mean(flat)) if flat else math.nan,
                "Mean time at 200 (s)": ys[xs.index(200)] if 200 in xs else math.nan,
            }
        )
    view.tables.append(
        StudyTable(
            "Azure (Figure 12)",
            "mean time per concurrency step",
            ["Ramp", "Steps", "Mean time at <= 50 (s)", "Mean time at 200 (s)"],
            rows,
            source="S3 L276",
        )
    )
    cold = [r for r in inst_rows if "cold" in r["Run"]]
    warm = [r for r in inst_rows if "warm" in r["Run"]]
    if cold:
        inst_rows.append(
            {
                "Run": "cold ramp: most instances",
                "App Service instances": value_cell(
                    float(max(r["App Service instances"] for r in cold)), paper(m, "azure.cold.hosts_max")
                ),
            }
        )
    base = next((r for r in warm if r["Step (s)"] == 6), None)
    for step, pid in ((15, "azure.warm.instances_5min_vs_2min"), (30, "azure.warm.instances_10min_vs_2min")):
        other = next((r for r in warm if r["Step (s)"] == step), None)
        if base and other and base["App Service instances"]:
            inst_rows.append(
                {
                    "Run": f"warm: instances {step}-s steps / 6-s steps",
                    "App Service instances": value_cell(
                        other["App Service instances"] / base["App Service instances"], paper(m, pid)
                    ),
                }
            )
    view.tables.append(
        StudyTable(
            "Azure (Figure 13)",
            "App Service instances per ramp",
            ["Run", "Ramp", "Step (s)", "App Service instances", "Calls"],
            inst_rows,
            source="S3 L276-281",
        )
    )
    view.figures.append(
        StudyFigure(
            "Figure 12",
            "Azure Functions: mean time vs concurrent runs",
            line_plot(series, "Azure: mean time per step", "concurrent runs", "s", logx=True),
            "S3 L276",
        )
    )


def _group_ramps(cs: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for c in cs:
        mt = _RAMP.match(str(c.get("phase", "")))
        if mt:
            out[(mt.group(1), mt.group(2))].append(c)
    return out


# -- host uptimes ----------------------------------------------------------------------------------


def _uptimes(view: StudyView, rs: list[Run], calls: dict[int, list[dict[str, Any]]], m: Manifest) -> None:
    first: dict[str, float] = {}
    for r in rs:
        if not str(r.params.get("profile", "")).startswith("aws"):
            continue
        for c in calls[id(r)]:
            if c.get("host_id") and c.get("host_uptime_s") is not None and c["host_id"] not in first:
                first[c["host_id"]] = float(c["host_uptime_s"])
    if not first:
        return
    v = np.array(list(first.values()))
    view.tables.append(
        StudyTable(
            "Host uptimes",
            "uptime of each emulated Lambda host when the calls first saw it",
            ["Hosts", "Minimum (s)", "Maximum (s)", "Mean (s)"],
            [
                {
                    "Hosts": value_cell(float(len(v)), paper(m, "host.count")),
                    "Minimum (s)": value_cell(float(v.min()), paper(m, "host.uptime_min")),
                    "Maximum (s)": value_cell(float(v.max()), paper(m, "host.uptime_max")),
                    "Mean (s)": mean_cell(v, paper(m, "host.uptime_mean")),
                }
            ],
            source="S3 L145",
            note=(
                "the profile's host ages are fitted to the study's 91 hosts "
                "(workloads/faas/profiles/aws-lambda-2017.yml)"
            ),
        )
    )
