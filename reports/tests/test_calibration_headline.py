"""Calibration of the headline (issue 27 item 7): only primary metrics count; secondary decisions sit
under their benchmark, unadjusted. Null reports with one benchmark of 25 metrics (1 primary), one
machine a label; seeded, through describe -> diagnostics -> compare -> headline."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from report_helpers import record, write_jsonl
from report_support.calibration import headline_setting

from testbed_reports.build import build

pytestmark = pytest.mark.slow


def test_null_reports_rarely_show_a_slower_or_faster_in_the_headline() -> None:
    """71 % of such reports showed one, all from secondary metrics."""
    sets = 40
    res = headline_setting(sets, seed=51)
    print(f"\n{res}")
    assert res.rates["reports with slower/faster in the headline"].value <= 0.05 + 3 * math.sqrt(
        0.0475 / sets
    )
    sec = res.rates["secondary slower/faster (listed, unadjusted)"]  # unadjusted: about 5 % each
    assert abs(sec.value - 0.05) <= 3 * math.sqrt(0.0475 / sec.total)


def test_headline_in_the_html_counts_primary_metrics_only(tmp_path: Path) -> None:
    recs = []
    for lab, host in (("A", "ha"), ("B", "hb")):
        for r, k in enumerate((0, 3, 1, 5, 2, 4)):  # spread without a trend (a trend withholds)
            rec = record(label=lab, host=host, groups=[], type="fio", benchmark="fio_x", repetition=r)
            rec["metrics"] = {
                "write_bw_bytes": {"value": 1e8 * (1 + 0.001 * k), "unit": "B/s", "better": "higher"}
            }
            rec["metrics"]["extra"] = {
                "value": (2.0 if lab == "A" else 1.0) + 0.01 * k,
                "unit": "s",
                "better": "lower",
            }
            recs.append(rec)
    write_jsonl(tmp_path / "r" / "x.jsonl", recs)
    rep = build([tmp_path / "r"], tmp_path / "out", compare_specs=["A:B"])
    cmp = rep.comparisons.set_index("metric")
    assert cmp.loc["extra", "decision"] == "slower" and not cmp.loc["extra", "adjusted"]
    assert cmp.loc["write_bw_bytes", "decision"] == "equivalent"
    html = (tmp_path / "out" / "index.html").read_text()
    head = html.split('id="overview"')[1].split("</table>")[0]
    counts = {  # 1 primary: 0 slower, 0 faster, 1 equivalent, 0 inconclusive
        k: f'<td data-label="{k}">{v}</td>'
        for k, v in (
            ("primary metrics", 1),
            ("slower", 0),
            ("faster", 0),
            ("equivalent", 1),
            ("inconclusive", 0),
        )
    }
    assert "".join(counts.values()) in head
    assert "(secondary, unadjusted) fio_x extra: A machine ha 2.0" in html
