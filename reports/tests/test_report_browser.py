"""The HTML report renders in headless Chromium with no console errors and with all its plots; at
1280 px and at a phone's 390 px no element of the page, every section opened, reaches past the
viewport (tables become cards on a phone), and the figures' text renders at 11 px or more."""

from __future__ import annotations

import base64
import json
import os
import re
from pathlib import Path

import pytest
import report_browser
from report_browser import chromium_binary, open_page
from report_support.synth import Machine, write_run

from testbed_reports.build import build


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
    # the headline: one figure per benchmark; per benchmark: a bar chart and an ECDF per plotted
    # metric, the CV bars and the latency percentiles; per metric of the parameter analysis (label,
    # qd and jobs pairwise on the primary metric): one histogram figure of its cells
    alts = re.findall(r'<img class="plot[^"]*" alt="([^"]*)"', html)
    bars = sum(" bar chart " in a for a in alts)
    ecdfs = sum(" ECDF " in a for a in alts)
    cvs = sum(a.endswith(" CV bars") for a in alts)
    pcts = sum(a.endswith(" latency percentiles") for a in alts)
    assert bars == ecdfs >= 2 and cvs == 2 and pcts == 2, alts
    assert expected == 2 + bars + ecdfs + cvs + pcts + 3 and "Analysis over plan parameters" in html

    page = open_page(out / "index.html", widths=(1280, 390))

    assert page.errors == []
    assert page.title == "Benchmark report: browser <check>"
    assert page.images == expected and page.images_loaded == expected
    assert "EVIDENCE MISMATCH" in page.text
    assert "inconclusive" in page.text and "fingerprint" in page.text
    for view in page.views:
        assert view.scroll_width <= view.width, f"horizontal scroll at {view.width} px"
        assert view.headline_overflow == [], view.width
        assert view.overflow == [], (view.width, view.overflow[:20])
        assert view.figures == 2  # one per benchmark's primary metric
        assert "comparisons of primary metrics" in view.headline_text
        assert view.screenshot.startswith(b"\x89PNG")
        assert _smallest_text(view) >= 11, (view.width, _smallest_text(view))


def _smallest_text(view: object, headline: bool = False) -> float:
    """The smallest text of the page's figures as rendered, in CSS px: each SVG text's font size
    times its image's scale; a PNG figure (matplotlib: 10 pt at 80 dpi, 11 px) times its scale."""
    sizes = []
    for alt, scale, src in view.plots:
        if headline and alt.split(":")[0] not in view.headline_text:
            continue
        if src.startswith("data:image/svg+xml;base64,"):
            svg = base64.b64decode(src.split(",", 1)[1]).decode()
            fonts = [float(f) for f in re.findall(r'font-size="([0-9.]+)"', svg)]
            sizes += [min(fonts) * scale] if fonts else []
        else:
            sizes.append(11.1 * scale)
    return min(sizes, default=99.0)


@pytest.mark.integration
def test_the_browser_check_sees_overflow_and_small_text(tmp_path: Path) -> None:
    """The checks above fail on what issue 37 found: a table cut at a phone's right edge and a wide
    figure shrunk to a few pixels of text."""
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="1600" height="200"><text x="5" y="20" '
        'font-size="9">tiny</text></svg>'
    )
    src = "data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode()
    cells = "".join(f"<td>column {k} with a long value</td>" for k in range(12))
    page = tmp_path / "wide.html"
    page.write_text(
        '<!DOCTYPE html><html><head><meta name="viewport" content="width=device-width, initial-scale=1">'
        '<title>t</title><link rel="icon" href="data:,"><style>.scroll { overflow-x: auto; } '
        'img.plot { max-width: 100%; height: auto; }</style></head><body><div id="headline"></div>'
        f'<details><summary>s</summary><div class="scroll"><table><tr>{cells}</tr></table></div>'
        f'<img class="plot" alt="wide" src="{src}"></details></body></html>'
    )
    view = open_page(page, widths=(390,)).views[0]
    assert any(o.startswith("table") for o in view.overflow), view.overflow
    assert _smallest_text(view) < 3


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


@pytest.mark.integration
def test_a_browser_that_prints_no_address_is_ended_and_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first Chromium that hangs before DevTools listens (as one did beside three lanes) is
    killed with its process group after START_S, and a second one on a fresh profile loads the page."""
    real = chromium_binary()
    tries = tmp_path / "tries"
    fake = tmp_path / "chromium"
    fake.write_text(  # each try writes a line: its profile (the --user-data-dir argument)
        f"#!/bin/sh\nfor a; do case $a in --user-data-dir=*) echo ${{a#*=}} >> {tries};; esac; done\n"
        f'[ "$(wc -l < {tries})" -gt 1 ] && exec {real} "$@"\n'
        "echo 'starting, slowly' >&2\nexec sleep 300\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(report_browser, "chromium_binary", lambda: str(fake))
    monkeypatch.setattr(report_browser, "START_S", 3.0)
    page = tmp_path / "ok.html"
    page.write_text('<!DOCTYPE html><html><head><title>t</title><link rel="icon" href="data:,"></head>')
    assert open_page(page).title == "t"
    profiles = tries.read_text().split()
    assert len(profiles) == 2 and len(set(profiles)) == 2  # two tries, each on a fresh profile
    assert not any(Path(p).exists() for p in profiles)  # both removed


#: a real `make run` (reports/tests/data/quick-run/README.md)
QUICK = Path(__file__).parent / "data" / "quick-run"
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "img"


@pytest.mark.integration
def test_the_quick_report_headline_at_1280_px_and_on_a_phone(tmp_path: Path) -> None:
    """The report a person opens first: decisions and one figure per benchmark on the first screen,
    no horizontal scroll at 1280 px nor at 390 px. TESTBED_UPDATE_SCREENSHOTS=1 writes the README's
    screenshots from this very page."""
    out = tmp_path / "quick"
    rep = build([QUICK], out, name="make run (quick plan)", compare_specs=["fio via agent:bare fio"])
    benchmarks = {b for b in rep.descriptives["benchmark"].astype(str) if b != "systeminfo"}
    assert "systeminfo" in set(rep.descriptives["benchmark"])  # a fact: no figure, no comparison
    page = open_page(out / "index.html", widths=(1280, 390))
    assert page.errors == []
    for view in page.views:
        assert view.scroll_width <= view.width, f"horizontal scroll at {view.width} px"
        assert view.headline_overflow == [], (view.width, view.headline_overflow)
        # every section opened: no table cut at the right edge, no element wider than the screen
        assert view.overflow == [], (view.width, view.overflow[:20])
        # the headline figures' labels at 12 px, ticks at 11 px, at their own size on a phone too
        assert _smallest_text(view, headline=True) >= 11, view.width
        assert _smallest_text(view) >= 11, view.width
        assert view.figures == len(benchmarks) == 6
        text = view.headline_text
        assert "1 comparison of primary metrics" in text
        # the headline in words, both values with their unit (issue 37): which arm is faster, or not
        assert re.search(
            r"(SLOWER|FASTER|EQUIVALENT|INCONCLUSIVE)\s+fio_4k_randread · read bandwidth: fio via agent "
            r"[\d.,]+ [kMG]?B/s, bare fio [\d.,]+ [kMG]?B/s: ",
            text,
            re.I,
        )
        assert re.search(r"is \d+\.\d% (slower|faster) \[\d+\.\d, \d+\.\d\]|cannot tell which", text)
        assert "ansible-playbook run.yml -l sev,tdx" in text and "Compare your own machines" in text
        assert "steady" not in text and "e+0" not in text  # no counters, no raw exponents
        if os.environ.get("TESTBED_UPDATE_SCREENSHOTS"):
            SHOTS.mkdir(parents=True, exist_ok=True)
            (SHOTS / f"report-headline-{view.width}.png").write_bytes(view.screenshot)
