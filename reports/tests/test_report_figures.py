"""Chart metrics chosen by role, and the figures across benchmarks (fio jobs, pyperformance by vendor)."""

from __future__ import annotations

import base64
import re
from pathlib import Path

from report_helpers import record, write_jsonl

from testbed_reports.build import build
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
    found = re.findall(r'<img class="plot" alt="([^"]*)" src="data:image/svg\+xml;base64,([^"]+)"', html)
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
    bars = svgs["randread bar chart"]
    for metric in ("read_bw_bytes", "read_iops", "read_clat_mean_s"):
        assert f">{metric}</text>" in bars
    iops = svgs["fio IOPS grouped bar chart"]
    assert "fio IOPS across benchmarks" in iops and ">randread read</text>" in iops
    assert ">randwrite write</text>" in iops and iops.count("<rect") >= 4 + 2  # 2 groups x 2 labels
    assert "fio bandwidth across benchmarks" in svgs["fio bandwidth grouped bar chart"]
    amd = svgs["pyperformance amd figure"]
    assert all(f">bench_{k:02d}</text>" in amd for k in range(10))  # all, not 4 of 10
    assert "time / AMD-Base" in amd and ">SEV bench_00: 1.11</title>" in amd
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
