"""What a study view prints beside a rebuilt value (issue 39): "paper" only beside a number the paper
prints, "derived VALUE = FORMULA" beside one the view computes from them, "fitted" (never
"inside") where the rerun's inputs were fitted to the number, no verdict where the manifest says
it is not comparable; a stated range and a roughly given value compare as the range they stand
for; every cell names its estimand."""

from __future__ import annotations

import pytest

from testbed_reports.study import summary
from testbed_reports.study.rerun import derived, eq1, eq1_span, rounded_span
from testbed_reports.study.view import Cell, StudyTable, StudyView, render_md
from testbed_shared.studies import Published, manifest


def P(value, **extra) -> Published:  # a Published as the manifest gives it
    return Published("x", "S4 L221", value, extra=extra)


def test_printed_derived_fitted_and_not_comparable_values_are_labelled_apart() -> None:
    printed = Cell(24.2, 24.1, 24.3, P(24.2), estimand="mean")
    assert printed.paper_label == "paper 24.2" and printed.verdict == "inside"
    d = derived(
        "t5.eq1", "S4 L221", eq1(24.2, 20.5), "eq. 1 of the paper's averages", span=eq1_span(P(24.2), P(20.5))
    )
    c = Cell(18.0, paper=d)
    assert c.paper_label.startswith("derived 18.05 [17.") and c.paper_label.endswith(
        "= eq. 1 of the paper's averages"
    )
    assert c.verdict == "equal"  # 18.0 lies in the range the rounded 24.2 and 20.5 allow
    fitted = Cell(0.42, 0.32, 0.52, P(0.418, fitted="the retention model"))
    assert fitted.contains is None and fitted.verdict == "fitted: the retention model"
    other = Cell(3.3, 3.2, 3.4, P(3.5, not_comparable="another experiment"))
    assert other.contains is None and other.matches is None and other.verdict.startswith("not comparable")
    own = Cell(5000.0, paper=P(2619), withheld="a statistic of the rerun's own sample")
    assert own.matches is None and own.verdict.startswith("not compared")


def test_ranges_and_rough_values_compare_as_what_they_stand_for() -> None:
    assert Cell(27.9, 27.6, 28.2, P([25, 30])).verdict == "inside"
    assert Cell(38.7, 38.2, 39.1, P([25, 30])).verdict == "outside"
    assert Cell(8.5, 8.2, 8.8, P(7, approx=1.4)).verdict == "inside"  # ~7 stands for [5.0, 9.8]
    assert Cell(10.2, 9.9, 10.5, P(7, approx=1.4)).verdict == "outside"
    assert rounded_span(lambda a, b: a - b, P(24.2), P(20.5)) == (pytest.approx(3.6), pytest.approx(3.8))


def test_the_markdown_and_the_summary_say_which() -> None:
    m = manifest("S4")
    rows = [
        {"v": Cell(24.2, 24.1, 24.3, P(24.2), estimand="geometric mean")},
        {"v": Cell(18.0, paper=derived("d", "S4 L221", 18.05, "eq. 1 of the paper's averages"))},
        {"v": Cell(3.3, 3.2, 3.4, P(3.5, not_comparable="another experiment"))},
        {"v": Cell(0.42, 0.3, 0.5, P(0.418, fitted="the retention model"))},
    ]
    view = StudyView(m, tables=[StudyTable("T", "t", ["v"], rows)])
    text = render_md(view)
    assert "24.2 [24.1, 24.3] geometric mean \\| paper 24.2 (inside)" in text  # "|" escaped in a table
    assert "\\| derived 18.05 = eq. 1 of the paper's averages (differs)" in text
    assert "(not comparable: another experiment)" in text and "(fitted: the retention model)" in text
    assert "published values" in text and "not comparable with a rerun" in text
    assert summary(view) == (
        "1 of 1 published values inside the rerun's interval, 0 of 1 without an interval equal to the "
        "printed value; no verdict: 1 not comparable, 1 fitted"
    )
