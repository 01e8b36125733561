"""The HTML report renders in headless Chromium with no console errors and with all its plots."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from report_browser import chromium_binary, open_page

from testbed_reports.build import build
from testbed_reports.synth import Machine, write_run


@pytest.mark.integration
def test_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    chromium_binary()  # fails loudly when chromium is missing (make install provides it)
    machines = [
        Machine("sev-1", "SEV-SNP", ["sev"], factor=1.08, technology="sev-snp", extra_status={2: "failed"}),
        Machine("base-1", "AMD-Baseline", ["amd_baseline"]),
        Machine("tdx-1", "TDX", ["tdx"], technology="none", cpu_model="Intel Xeon"),
    ]
    results = write_run(
        tmp_path / "results", "ui", machines, ["fio_4k_randwrite", "dd_write"], reps=6, seed=2
    )
    pct = {"50.000000": 2000, "99.000000": 9000, "99.900000": 20000}
    for name in ("sev-1", "base-1", "tdx-1"):
        host = results / f"{name}.jsonl"
        lines = [json.loads(x) for x in host.read_text().splitlines()]
        for rec in lines:
            if name == "sev-1":
                rec["samples"] = {"clat_ns_percentiles": {"write": pct}}
            rec["params"] = {"qd": rec["repetition"] % 2, "jobs": rec["repetition"] // 3}  # 2 x 2 crossed
        host.write_text("".join(json.dumps(r) + "\n" for r in lines))
    out = tmp_path / "out"
    build([results], out, name="browser <check>")
    html = (out / "index.html").read_text()
    assert not re.search(r'(src|href)="(https?:)?//', html), "the report must be self-contained"
    expected = len(re.findall(r'<img class="plot', html))
    # the headline: one figure per benchmark; per benchmark: bars, ECDF, CV and the latency
    # percentiles; per metric of the parameter analysis (label, qd and jobs pairwise on the primary
    # metric): one histogram of its cells
    assert expected == 2 + 2 * 4 + 3 and "Analysis over plan parameters" in html

    page = open_page(out / "index.html", widths=(1280, 390))

    assert page.errors == []
    assert page.title == "Benchmark report: browser <check>"
    assert page.images == expected and page.images_loaded == expected
    assert "EVIDENCE MISMATCH" in page.text
    assert "inconclusive" in page.text and "fingerprint" in page.text
    for view in page.views:
        assert view.scroll_width <= view.width, f"horizontal scroll at {view.width} px"
        assert view.headline_overflow == [], view.width
        assert view.figures == 2  # one per benchmark's primary metric
        assert "comparisons of primary metrics" in view.headline_text
        assert view.screenshot.startswith(b"\x89PNG")


@pytest.mark.integration
def test_the_browser_check_sees_console_errors_and_broken_images(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text(
        '<!DOCTYPE html><html><head><title>t</title><link rel="icon" href="data:,"></head><body>'
        '<script>console.error("boom")</script><img src="missing.png"></body></html>'
    )
    result = open_page(page)
    assert any("boom" in e for e in result.errors)
    assert result.images == 1 and result.images_loaded == 0
