"""Plan parsing: the classic text form exactly as written, YAML, and errors naming file/line/field."""

from __future__ import annotations

from pathlib import Path

import pytest
from agenttest import agent

from testbed_agent.plan import load_plan
from testbed_shared.errors import PlanError

CLASSIC = """\
# benchmark plan
systeminfo,standard,,0,1
  fio_4k_randomwrite ,standard,, 10 ,1
fio_1m_sequentialread,standard,,10,1   # trailing comment

SimplePrime.ipynb,kaggle_notebook,,20,5
dd_write_1g_128k,standard
pyperformance , standard , , , 2
"""


def test_classic_text_form_with_odd_spacing(tmp_path: Path) -> None:
    p = tmp_path / "benchmark-plan.txt"
    p.write_text(CLASSIC)
    plan = load_plan(p, known_types={"sysinfo", "fio", "kaggle_notebook", "dd", "pyperformance"})
    got = [(b.name, b.type, b.wait_s, b.repetitions, b.line) for b in plan.benchmarks]
    assert got == [
        ("systeminfo", "sysinfo", 0.0, 1, 2),
        ("fio_4k_randomwrite", "fio", 10.0, 1, 3),
        ("fio_1m_sequentialread", "fio", 10.0, 1, 4),
        ("SimplePrime.ipynb", "kaggle_notebook", 20.0, 5, 6),
        ("dd_write_1g_128k", "dd", 0.0, 1, 7),
        ("pyperformance", "pyperformance", 0.0, 2, 8),
    ]
    assert plan.form == "text" and len(plan.sha256) == 64
    assert plan.executions == 11


@pytest.mark.parametrize(
    ("line", "field", "problem"),
    [
        ("fio_4k_randread,standard,,ten,1", "waittime_in_seconds", "expected a number"),
        ("fio_4k_randread,standard,,10,0", "num_executions", "must be >= 1"),
        ("fio_4k_randread,standard,,10,1.5", "num_executions", "expected a whole number"),
        ("fio_4k_randread,standard,,-3,1", "waittime_in_seconds", "must be >= 0"),
        (",standard,,10,1", "path_to_benchmark", "is empty"),
        ("x.bin,warp_drive,,1,1", "type", "unknown benchmark type"),
    ],
)
def test_bad_text_line_names_file_line_field(tmp_path: Path, line: str, field: str, problem: str) -> None:
    p = tmp_path / "plan.txt"
    p.write_text("systeminfo,standard,,0,1\n# comment\n" + line + "\n")
    with pytest.raises(PlanError) as err:
        load_plan(p)
    assert err.value.line == 3
    assert err.value.field == field
    assert problem in err.value.problem
    assert str(err.value).startswith(f"{p}:3: field '{field}'")


def test_too_many_fields(tmp_path: Path) -> None:
    p = tmp_path / "plan.txt"
    p.write_text("systeminfo,standard,,0,1,extra\n")
    with pytest.raises(PlanError, match="6 fields"):
        load_plan(p)


def test_yaml_form_with_defaults_and_params(write_plan) -> None:
    p = write_plan("""\
name: standard
defaults: {wait_s: 10, repetitions: 2}
benchmarks:
  - {name: fio_4k_randread, type: fio}
  - {name: dd_write_1g_128k, type: dd, params: {bs: 128k, count: 8000, source: urandom}}
  - {name: systeminfo, type: standard, repetitions: 1, wait_s: 0}
""")
    plan = load_plan(p)
    assert plan.name == "standard" and plan.form == "yaml"
    fio, dd, si = plan.benchmarks
    assert (fio.wait_s, fio.repetitions, fio.line) == (10.0, 2, 4)
    assert dd.params == {"bs": "128k", "count": 8000, "source": "urandom"}
    assert si.type == "sysinfo" and si.repetitions == 1 and si.wait_s == 0.0


@pytest.mark.parametrize(
    ("body", "line", "field"),
    [
        ("  - {name: fio_4k_randread, type: fio, repetitions: zero}\n", 4, "repetitions"),
        ("  - {name: dd_x, type: dd, params: {bs: 128q}}\n", 4, "params.bs"),
        ("  - {name: dd_x, type: dd, params: {source: random}}\n", 4, "params.source"),
        ("  - {name: fio_4k_randread, type: fio, colour: red}\n", 4, "colour"),
        ("  - name: fio_9k_read\n    type: fio\n", 4, "name"),
        (
            "  - {name: fio_4k_randread, type: fio, params: {size: 1G, runtime_s: fast}}\n",
            4,
            "params.runtime_s",
        ),
    ],
)
def test_bad_yaml_names_file_line_field(write_plan, body: str, line: int, field: str) -> None:
    p = write_plan("name: x\nbenchmarks:\n  - {name: systeminfo, type: sysinfo}\n" + body)
    with pytest.raises(PlanError) as err:
        load_plan(p)
    assert (err.value.path, err.value.line, err.value.field) == (str(p), line, field)


def test_invalid_yaml_reports_line(write_plan) -> None:
    p = write_plan("benchmarks:\n  - {name: a, type: fio\n  - b\n")
    with pytest.raises(PlanError) as err:
        load_plan(p)
    assert err.value.line is not None and "invalid YAML" in err.value.problem


def test_bad_plan_runs_nothing(tmp_path: Path) -> None:
    p = tmp_path / "plan.txt"
    p.write_text("systeminfo,standard,,0,1\nfio_4k_randread,standard,,abc,1\n")
    out = tmp_path / "results" / "r1"
    res = agent("run", str(p), "--out", str(out), "--node-exporter", "")
    assert res.returncode == 2
    assert (
        res.stderr.splitlines()[0]
        == f"error: {p}:2: field 'waittime_in_seconds' expected a number, got 'abc'"
    )
    assert "Traceback" not in res.stderr
    assert not out.exists()


def test_validate_cli(tmp_path: Path) -> None:
    repo = Path(__file__).resolve().parents[2]
    for plan in ("quick.yml", "standard.txt"):
        res = agent("validate", str(repo / "workloads" / "plans" / plan))
        assert res.returncode == 0, res.stderr
        assert ": ok (" in res.stdout
