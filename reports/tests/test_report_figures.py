"""Chart metrics chosen by role, the figures across benchmarks (fio jobs, pyperformance by vendor), and
what a person reads in the detail sections (issue 37): human units and no scientific notation, a
table and its plot writing a metric alike, facts as facts, crypto CPU use apart from the results,
and a heat map coloured by certainty."""

from __future__ import annotations

import base64
import re
from pathlib import Path

import pandas as pd
import pytest
from report_helpers import record, write_jsonl

from testbed_reports import display
from testbed_reports.build import _certain, _heat, build
from testbed_reports.figures import plot_metrics, quantity_kind

FIO_UNITS = {"bw_bytes": ("B/s", "higher"), "iops": ("1/s", "higher")}
FIO_LAT = ("clat_mean_s", "clat_p50_s", "clat_p99_s", "clat_p99_9_s", "lat_mean_s", "slat_mean_s")


def fio_metrics(direction: str, scale: float) -> dict:
    out = {}
    for name, (unit, better) in FIO_UNITS.items():
        out[f"{direction}_{name}"] = {"value": 1e6 * scale, "unit": unit, "better": better}
    for k, name in enumerate(FIO_LAT):
        out[f"{direction}_{name}"] = {"value": 1e-4 * (k + 1) / scale, "unit": "s", "better": "lower"}
    return out


def _svgs(html: str) -> dict[str, str]:
    """alt text -> decoded SVG of every embedded SVG image."""
    found = re.findall(r'<img class="plot[^"]*" alt="([^"]*)" src="data:image/svg\+xml;base64,([^"]+)"', html)
    return {alt: base64.b64decode(data).decode() for alt, data in found}


def _records() -> list[dict]:
    out = []
    for label, groups, scale in (("SEV", ["sev"], 0.9), ("AMD-Base", ["amd_baseline"], 1.0)):
        for rep in range(3):
            common = {"label": label, "host": f"h-{label}", "groups": groups, "repetition": rep}
            for bench, direction in (("randread", "read"), ("randwrite", "write")):
                out.append(
                    record(benchmark=bench, type="fio", metrics=fio_metrics(direction, scale), **common)
                )
            pyperf = {
                f"bench_{k:02d}": {"value": 0.01 * (k + 1) / scale, "unit": "s", "better": "lower"}
                for k in range(10)
            }
            out.append(record(benchmark="pyperformance", type="pyperformance", metrics=pyperf, **common))
    tdx = {"label": "TDX", "host": "h-tdx", "groups": ["tdx"]}
    for rep in range(3):
        metrics = {f"bench_{k:02d}": {"value": 0.02, "unit": "s", "better": "lower"} for k in range(10)}
        out.append(
            record(benchmark="pyperformance", type="pyperformance", metrics=metrics, repetition=rep, **tdx)
        )
    return out


def test_quantity_kinds() -> None:
    assert quantity_kind("read_bw_bytes", "B/s") == "bandwidth"
    assert quantity_kind("write_iops", "1/s") == "iops"
    assert quantity_kind("read_clat_p99_s", "s") == "latency"
    assert quantity_kind("go.encrypt.cpu_percent", "%") is None


def test_fio_charts_plot_bandwidth_iops_and_latency() -> None:
    metrics = ["read_bw_bytes", *[f"read_{n}" for n in FIO_LAT], "read_iops"]
    units = {m: "s" for m in metrics} | {"read_bw_bytes": "B/s", "read_iops": "1/s"}
    shown = plot_metrics(metrics, units, ["read_bw_bytes"])
    assert shown[:3] == ["read_bw_bytes", "read_iops", "read_clat_mean_s"]
    both = [f"{d}_{n}" for d in ("read", "write") for n in ("bw_bytes", "iops", *FIO_LAT)]
    units = {m: "B/s" if "bw" in m else "1/s" if "iops" in m else "s" for m in both}
    shown = plot_metrics(both, units, ["read_bw_bytes", "write_bw_bytes"])
    assert shown == [
        "read_bw_bytes",
        "write_bw_bytes",
        "read_iops",
        "write_iops",
        "read_clat_mean_s",
        "write_clat_mean_s",
    ]


def test_report_has_fio_and_pyperformance_figures(tmp_path: Path) -> None:
    write_jsonl(tmp_path / "r" / "h.jsonl", _records())
    build([tmp_path / "r"], tmp_path / "out")
    svgs = _svgs((tmp_path / "out" / "index.html").read_text())
    for metric in ("read_bw_bytes", "read_iops", "read_clat_mean_s"):
        assert f">{metric}</text>" in svgs[f"randread bar chart {metric}"]  # one figure per metric
    iops = svgs["fio IOPS grouped bar chart"]
    assert "fio IOPS across benchmarks" in iops and ">randread read</text>" in iops
    assert ">randwrite write</text>" in iops and iops.count("<rect") >= 4 + 2  # 2 groups x 2 labels
    assert "fio bandwidth across benchmarks" in svgs["fio bandwidth grouped bar chart"]
    amd = svgs["pyperformance amd figure"]
    assert all(f">bench_{k:02d}</text>" in amd for k in range(10))  # all, not 4 of 10
    assert "time / AMD-Base" in amd and ">SEV bench_00: 1.11 [" in amd
    assert "time / TDX" in svgs["pyperformance intel figure"]


def test_long_pyperformance_series_is_split_into_parts(tmp_path: Path) -> None:
    """pyperformance's default group (~60 benchmarks) gives figures of at most 20 benchmarks each."""
    records = []
    for label, groups in (("SEV", ["sev"]), ("AMD-Base", ["amd_baseline"])):
        for rep in range(2):
            metrics = {
                f"b{k:02d}": {"value": 0.01 * (k + 1), "unit": "s", "better": "lower"} for k in range(45)
            }
            common = {"label": label, "host": f"h-{label}", "groups": groups, "repetition": rep}
            records.append(record(benchmark="pyperformance", type="pyperformance", metrics=metrics, **common))
    write_jsonl(tmp_path / "r" / "h.jsonl", records)
    build([tmp_path / "r"], tmp_path / "out")
    svgs = _svgs((tmp_path / "out" / "index.html").read_text())
    parts = [svgs[f"pyperformance amd figure (part {k}/3)"] for k in (1, 2, 3)]
    shown = [set(re.findall(r">(b\d\d)</text>", svg)) for svg in parts]
    assert [len(s) for s in shown] == [20, 20, 5] and set().union(*shown) == {f"b{k:02d}" for k in range(45)}
    widths = [float(re.search(r'<svg[^>]* width="([0-9.]+)"', svg).group(1)) for svg in parts]
    assert max(widths) <= 1000, widths


# --- what a person reads (issue 37) -------------------------------------------------------------

QUICK = Path(__file__).parent / "data" / "quick-run"
EXPONENT = re.compile(r"\d[eE][+-]?\d")


@pytest.fixture(scope="module")
def quick(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("quick") / "report"
    rep = build([QUICK], out, name="make run (quick plan)", compare_specs=["fio via agent:bare fio"])
    return out, rep


def _text_nodes(html: str) -> list[str]:
    """What a person sees of a page: its text, hover titles, and the text of its SVG figures."""
    body = re.sub(r"<style>.*?</style>", "", html, flags=re.S)
    seen = re.findall(r'title="([^"]*)"', body)
    seen += [svg_text for svg in _svgs(html).values() for svg_text in re.findall(r">([^<>]+)</", svg)]
    seen += re.findall(r">([^<>]+)<", re.sub(r'src="data:[^"]*"', "", body))
    return seen


def test_numbers_are_never_in_scientific_notation(quick: tuple[Path, object]) -> None:
    """The plots said 4.50e+09 B/s and 7.50e-06 s, hover titles 2.77e-05 s (issue 37)."""
    out, _ = quick
    html = (out / "index.html").read_text()
    assert [t for t in _text_nodes(html) if EXPONENT.search(t)] == []
    assert not EXPONENT.search((out / "summary.md").read_text())


def test_number_formats() -> None:
    assert display.number(1.23e-5) == "0.0000123" and display.number(12345678.9) == "12,345,679"
    assert display.human(4.5e9, "B/s") == "4.50 GB/s" and display.human(7.5e-6, "s") == "7.50 µs"
    assert display.human(2.0, "1") == "2" and display.short(95.0) == "95" and display.short(0.05) == "0.05"
    assert display.p_value(1e-9) == "< 0.001" and display.p_value(0.0123) == "0.012"
    assert (
        display.exact(2.7748346519e-05) == "0.000027748346519"
        and display.exact(1.5e21) == "1500000000000000000000"
    )


def test_a_table_and_its_plot_write_a_metric_alike(quick: tuple[Path, object]) -> None:
    """The table showed read_clat_mean_s in ms where the plot was in s: now each metric's figure and
    its table rows share a unit and write the same numbers (one formatter)."""
    out, _ = quick
    html = (out / "index.html").read_text()
    svgs = _svgs(html)
    section = html[html.index("<h2>fio_4k_randread</h2>") :]
    section = section[: section.index("</section>")]
    for metric in ("read_bw_bytes", "read_clat_mean_s", "read_iops"):
        svg = svgs[f"fio_4k_randread bar chart {metric}"]
        unit = re.search(r"95% CI \[([^\]]+)\]", svg).group(1)
        values = re.findall(r'text-anchor="end"[^>]*>([0-9.,]+ \[[0-9.,]+, [0-9.,]+\])</text>', svg)
        assert len(values) == 3, svg  # Local, bare fio, fio via agent
        for text in values:
            centre, span = text.split(" ", 1)
            assert f"{centre} {unit} (" in section and f"{span} {unit}" in section, (metric, text, unit)


def test_facts_are_shown_as_facts(quick: tuple[Path, object]) -> None:
    """systeminfo's logical_cpus and memory_total_bytes were primary metrics, 'higher is better',
    with a weak-test note; they are facts of the machine, never compared."""
    out, rep = quick
    assert not (rep.comparisons["benchmark"] == "systeminfo").any()
    html = (out / "index.html").read_text()
    section = html[html.index("<h2>systeminfo</h2>") :]
    section = section[: section.index("</section>")]
    assert "Local: logical CPUs 2, memory total 25.3 GB" in section
    assert "higher" not in section and "CV %" not in section and "<table" not in section


def test_crypto_cpu_use_is_apart_from_the_results(quick: tuple[Path, object]) -> None:
    out, _ = quick
    html = (out / "index.html").read_text()
    section = html[html.index("<h2>aes-256-gcm</h2>") :]
    section = section[: section.index("</section>")]
    results, cpu = section.split("CPU use while it ran", 1)
    cpu_metrics = re.compile(r"\.(cpu_percent|system_cpu_percent|cpu_s_per_op|cpu_s_per_gb)<")
    assert not cpu_metrics.search(results) and len(cpu_metrics.findall(cpu)) == 16  # 4 cells x 4
    assert "go.encrypt.throughput" in results
    shares = re.findall(r"system_cpu_percent<.*?data-label=\"95% CI\">([^<]*)<", cpu, re.S)
    assert len(shares) == 4 and all("[100, 100] %" in s for s in shares), shares


def test_the_heat_map_colours_what_is_certain() -> None:
    """The noisiest number (p99 -25.7 % [-61, +42]) was painted in the darkest colour; now a cell is
    coloured by its interval's end nearest zero, so an interval that holds zero stays white."""
    rows = [
        ("p99", -25.7, -61.0, 42.0, "inconclusive", False),
        ("bw", 4.0, 1.0, 7.0, "slower", True),
        ("lat", -12.0, -20.0, -5.0, "faster", False),
        ("iops", 0.3, -1.0, 1.5, "equivalent", False),
    ]
    cmp = pd.DataFrame(
        [
            {
                "comparison": "A vs B",
                "benchmark": "fio",
                "metric": m,
                "overhead_percent": v,
                "overhead_ci_low": lo,
                "overhead_ci_high": hi,
                "decision": dec,
                "primary": prim,
                "scope": "machines",
                "verdict": f"{m} verdict",
            }
            for m, v, lo, hi, dec, prim in rows
        ]
    )
    heat = _heat(cmp)
    cells = {r["name"].split(" · ")[1].split(" ")[0]: r["cells"][0] for r in heat["rows"]}
    assert cells["p99"]["color"] == "#fff" and cells["p99"]["text"] == "-25.7 [-61.0, +42.0]"
    assert cells["iops"]["color"] == "#e1ecf8"
    assert heat["lim"] == pytest.approx(4.8)  # the 95th percentile of the sure ends (1 and 5)
    red, green = cells["bw"]["color"], cells["lat"]["color"]
    assert red not in ("#fff", "#e1ecf8") and green not in ("#fff", "#e1ecf8") and red != green
    assert cells["bw"]["text"].startswith("+4.0†")
    assert _certain(-61.0, 42.0) == 0.0 and _certain(1.0, 7.0) == 1.0 and _certain(-20.0, -5.0) == -5.0
