"""Plan validation by schema (issue 12 item 7): every reproduction is a clean exit-2 error naming
file, line and field through the real ``testbed-agent validate`` entry point; good plans parse."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed_agent.cli import main
from testbed_agent.params import size_bytes
from testbed_agent.plan import ParamError, load_plan
from testbed_agent.workloads import parse_params
from testbed_agent.workloads.dd import DdParams
from testbed_agent.workloads.fio import FioParams

FIO = "  - {name: fio_4k_randread, type: fio, params: {%s}}\n"
DD = "  - {name: dd_write, type: dd, params: {%s}}\n"
FAAS = "  - {name: faas_x, type: faas, params: {function: calcs, %s}}\n"
PYPERF = "  - {name: pyperformance, type: pyperformance, params: {%s}}\n"
BOMB = "".join(
    f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" if i else "  l0: &l0 [lol, lol, lol, lol]\n"
    for i in range(10)
)
LONG = "n" * 300


def _yaml(body: str) -> str:
    return "name: t\nbenchmarks:\n" + body


#: (plan text, suffix, line, field, words of the problem)
CASES = {
    "wait inf": (_yaml("  - {name: systeminfo, wait_s: .inf}\n"), ".yml", 3, "wait_s", "expected a number"),
    "wait 1e308": (_yaml("  - {name: systeminfo, wait_s: 1e308}\n"), ".yml", 3, "wait_s", "<= 604800"),
    "wait nan": (_yaml("  - {name: systeminfo, wait_s: .nan}\n"), ".yml", 3, "wait_s", "expected a number"),
    "timeout nan": (_yaml("  - {name: systeminfo, timeout_s: .NaN}\n"), ".yml", 3, "timeout_s", "number"),
    "timeout 0": (_yaml("  - {name: systeminfo, timeout_s: 0}\n"), ".yml", 3, "timeout_s", "> 0"),
    "defaults timeout inf": (
        "defaults: {timeout_s: .inf}\nbenchmarks:\n  - {name: systeminfo}\n",
        ".yml",
        1,
        "defaults.timeout_s",
        "number",
    ),
    "repetitions 1e11": (
        _yaml("  - {name: systeminfo, repetitions: 1e11}\n"),
        ".yml",
        3,
        "repetitions",
        "whole",
    ),
    "repetitions 1.0e+11": (
        _yaml("  - {name: systeminfo, repetitions: 1.0e+11}\n"),
        ".yml",
        3,
        "repetitions",
        "<=",
    ),
    "repetitions 4300 digits": (
        _yaml("  - {name: systeminfo, repetitions: %s}\n" % ("9" * 4400)),
        ".yml",
        None,
        None,
        "YAML refused",
    ),
    "param 4300 digits": (_yaml(FIO % ("iodepth: " + "7" * 4301)), ".yml", None, None, "YAML refused"),
    "param 2**64": (_yaml(FIO % f"iodepth: {2**64}"), ".yml", 3, "params.iodepth", "out of range"),
    "alias bomb": (
        "name: t\nbombs:\n" + BOMB + "benchmarks: []\n",
        ".yml",
        None,
        None,
        "aliases are expanded",
    ),
    "alias bomb in params": (
        "name: t\nx: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
        + "".join(f"y{i}: &a{i} [{', '.join(['*a' if i == 0 else f'*a{i - 1}'] * 10)}]\n" for i in range(7))
        + "benchmarks:\n  - {name: faas_x, type: faas, params: {function: calcs, event: {b: *a6}}}\n",
        ".yml",
        None,
        None,
        "aliases are expanded",
    ),
    "recursive alias": (
        _yaml("  - &b {name: systeminfo, params: {x: [*b]}}\n"),
        ".yml",
        None,
        None,
        "recursive",
    ),
    "deep nesting": (
        _yaml(FAAS % ("event: " + "[" * 5000 + "]" * 5000)),
        ".yml",
        3,
        None,
        "nested deeper",
    ),
    "deep params": (
        _yaml(FAAS % ("event: " + "{a: " * 20 + "1" + "}" * 20)),
        ".yml",
        3,
        "params.event.a.a.a.a.a.a.a.a",
        "nested deeper than 8",
    ),
    "defaults.params list": (
        "defaults: {params: [1, 2]}\nbenchmarks:\n  - {name: systeminfo}\n",
        ".yml",
        1,
        "defaults.params",
        "must be a mapping",
    ),
    "defaults.params typo": (
        "defaults: {params: {runtim_s: 5}}\nbenchmarks:\n  - {name: fio_4k_randread, type: fio}\n",
        ".yml",
        1,
        "defaults.params.runtim_s",
        "no benchmark",
    ),
    "long name": (_yaml(f"  - {{name: {LONG}, type: sysinfo}}\n"), ".yml", 3, "name", "longer than 160"),
    "long classic name": (f"{LONG},sysinfo,,0,1\n", ".txt", 1, "path_to_benchmark", "longer than"),
    "control char name": (_yaml('  - {name: "a\\u0007b", type: sysinfo}\n'), ".yml", 3, "name", "control"),
    "unknown param (typo)": (_yaml(FIO % "runtime: 5"), ".yml", 3, "params.runtime", "unknown fio parameter"),
    "size 0": (_yaml(FIO % "size: 0"), ".yml", 3, "params.size", ">= 4096"),
    "iodepth -1": (_yaml(FIO % "iodepth: -1"), ".yml", 3, "params.iodepth", ">= 1"),
    "calls -1": (_yaml(FAAS % "calls: -1"), ".yml", 3, "params.calls", ">= 1"),
    "fio filename with colon": (
        _yaml(FIO % "filename: '/tmp/a:/etc/victim'"),
        ".yml",
        3,
        "params.filename",
        "separator",
    ),
    "bs 1kB ambiguous": (_yaml(DD % "bs: 1kB"), ".yml", 3, "params.bs", "ambiguous size"),
    "fio size 1MB ambiguous": (_yaml(FIO % "size: 64MB"), ".yml", 3, "params.size", "ambiguous size"),
    "unicode digits text": (
        "fio_4k_randread,standard,,\u0661\u0660,1\n",
        ".txt",
        1,
        "waittime_in_seconds",
        "number",
    ),
    "fullwidth digits yaml": (
        _yaml("  - {name: systeminfo, repetitions: '\uff13'}\n"),
        ".yml",
        3,
        "repetitions",
        "whole number",
    ),
    "unicode digits size": (_yaml(DD % "bs: '\u0661k'"), ".yml", 3, "params.bs", "not a size"),
    "notebook absolute": (
        _yaml("  - {name: /etc/x.ipynb, type: kaggle_notebook}\n"),
        ".yml",
        3,
        "name",
        "outside",
    ),
    "notebook dotdot": ("../x.ipynb,kaggle_notebook,,0,1\n", ".txt", 1, "name", "leaves"),
    "pyperformance --help": (_yaml(PYPERF % "benchmarks: '--help'"), ".yml", 3, "params.benchmarks", "not a"),
    "pyperformance option in list": (
        _yaml(PYPERF % "benchmarks: [float, --debug-single-value]"),
        ".yml",
        3,
        "params.benchmarks",
        "not a benchmark name",
    ),
    "nan inside params": (_yaml(DD % "pause_s: .nan"), ".yml", 3, "params.pause_s", "finite"),
    "huge plan": (_yaml("  - {name: systeminfo}\n" * 60_000), ".yml", None, None, "larger than"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_reproduction_is_a_clean_error(case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text, suffix, line, field, words = CASES[case]
    plan = tmp_path / f"plan{suffix}"
    plan.write_text(text)
    assert main(["validate", str(plan)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"error: {plan}" + (f":{line}:" if line else ""))
    if field:
        assert f"field '{field}'" in err[0]
    assert words in err[0]
    assert len(err) <= 2 and not any("Traceback" in e for e in err)


def test_good_plans_still_parse(tmp_path: Path) -> None:
    plan = tmp_path / "ok.yml"
    plan.write_text(
        "name: ok\n"
        "defaults: {wait_s: 0.5, repetitions: 2, timeout_s: 600, params: {scale: quick, runtime_s: 3}}\n"
        "benchmarks:\n"
        "  - {name: fio_4k_randwrite, type: fio, params: &io {size: 64M, ramp_s: 1}}\n"
        "  - {name: fio_4k_randread, type: fio, params: {<<: *io, iodepth: 4}}\n"
        "  - {name: dd_w, type: dd, params: {bs: 1KiB, count: 10}}\n"
        "  - {name: SimplePrime.ipynb, type: kaggle_notebook}\n"
        "  - {name: pyperformance, params: {benchmarks: 'float,nbody', mode: fast}}\n"
    )
    p = load_plan(plan)
    _, fio, dd, nb, pyperf = p.benchmarks
    # defaults.params go to the types that take them
    assert fio.params == {"runtime_s": 3, "size": "64M", "ramp_s": 1, "iodepth": 4}
    assert nb.params == {"scale": "quick"} and dd.params == {"bs": "1KiB", "count": 10}
    assert parse_params("pyperformance", pyperf.params).benchmarks == ("float", "nbody")
    assert (fio.repetitions, fio.wait_s, fio.timeout_s) == (2, 0.5, 600.0)


@pytest.mark.parametrize(
    ("text", "expected"), [("1k", 1024), ("1K", 1024), ("1KiB", 1024), ("4m", 4 << 20), (7, 7)]
)
def test_sizes_mean_the_same_bytes_for_fio_and_dd(text: str | int, expected: int) -> None:
    assert size_bytes(text) == expected
    assert DdParams(bs=size_bytes(text)).bs == expected
    assert parse_params("dd", {"bs": text}).bs == expected
    if expected >= 4096:
        assert parse_params("fio", {"size": text}).size == expected == FioParams(size=expected).size


def test_dd_bs_times_count_is_bounded() -> None:
    with pytest.raises(ParamError) as err:
        parse_params("dd", {"bs": "1g", "count": 10**8})
    assert err.value.field == "params.count"


def test_every_shipped_plan_validates() -> None:
    root = Path(__file__).resolve().parents[2] / "workloads" / "plans"
    for plan in sorted(root.iterdir()):
        assert load_plan(plan).benchmarks, plan


def test_run_refuses_a_bad_plan_before_writing_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "bad.yml"
    plan.write_text(_yaml(FIO % "runtime: 5"))
    out = tmp_path / "results" / "r1"
    assert main(["run", str(plan), "--out", str(out), "--no-progress", "--node-exporter", ""]) == 2
    assert "field 'params.runtime' unknown fio parameter" in capsys.readouterr().err
    assert not out.exists()
