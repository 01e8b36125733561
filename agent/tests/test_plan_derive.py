"""``testbed-agent plan derive`` and ``plan show --set``: a published plan rerun smaller, as a
derived plan of its own (same benchmarks, names and data sets; overrides named in its header)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from testbed_agent.cli import main
from testbed_agent.plan import load_plan
from testbed_agent.plan_derive import derive, derived_plan, parse_override
from testbed_agent.plan_show import expand
from testbed_shared.errors import PlanError

ROOT = Path(__file__).resolve().parents[2]
PLANS = ROOT / "workloads/plans"
STUDY = PLANS / "cc-datascience-study.txt"
#: a rehearsal of the study: everything it runs, small
SHORT = [
    "wait_s=0",
    "fio.runtime_s=1",
    "fio.ramp_s=0",
    "fio.size=8M",
    "notebook.scale=quick",
    "pyperformance.benchmarks=[float]",
    "pyperformance.mode=fast",
]


def _rows(plan_rows: list) -> list[dict]:
    return [dataclasses.asdict(r) for r in plan_rows]


@pytest.mark.parametrize(
    "name", ["cc-datascience-study.txt", "quick.yml", "crypto-hypervisor.yml", "faas-io.yml"]
)
def test_no_override_derives_the_same_executions(name: str) -> None:
    source = load_plan(PLANS / name)
    derived = derived_plan(PLANS / name, [])
    assert derived.name == source.name and derived.sha256 != source.sha256
    assert _rows(expand(derived)) == _rows(expand(source))
    assert [b.datasets for b in derived.benchmarks] == [b.datasets for b in source.benchmarks]
    assert [b.adaptive for b in derived.benchmarks] == [b.adaptive for b in source.benchmarks]


def test_overrides_change_only_what_they_name() -> None:
    source = load_plan(STUDY)
    derived = derived_plan(STUDY, SHORT)
    assert derived.name == "cc-datascience-study.derived"
    assert [(b.name, b.type, b.datasets) for b in derived.benchmarks] == [
        (b.name, b.type, b.datasets) for b in source.benchmarks
    ]
    by_type = {b.type: b for b in derived.benchmarks}
    # the study pack's parameters of the text plan's names (S2 manifest, realize), then the overrides
    was = {b.type: b.params for b in source.benchmarks}
    assert by_type["fio"].params == {**was["fio"], "runtime_s": 1, "ramp_s": 0, "size": "8M"}
    assert by_type["kaggle_notebook"].params == {"scale": "quick"}
    assert by_type["pyperformance"].params == {"benchmarks": ["float"], "mode": "fast"}
    assert by_type["sysinfo"].params == {}
    assert {b.wait_s for b in derived.benchmarks} == {0.0}
    assert sum(r.estimated_s for r in expand(derived)) < sum(r.estimated_s for r in expand(source)) / 1.5


def test_later_overrides_win_and_fields_take_adaptive_repetitions() -> None:
    plan = derived_plan(
        PLANS / "quick.yml",
        ["fio.repetitions=2", "fio.repetitions={min: 2, max: 6, target_ci_percent: 5}", "dd.timeout_s=60"],
    )
    fio = [b for b in plan.benchmarks if b.type == "fio"]
    assert {(b.repetitions, b.adaptive.max, b.adaptive.target_ci_percent) for b in fio} == {(6, 6, 5)}
    assert [b.timeout_s for b in plan.benchmarks if b.type == "dd"] == [60.0]


def test_the_header_names_source_sha_and_overrides(tmp_path: Path) -> None:
    out = tmp_path / "plans" / "short.yml"
    assert main(["plan", "derive", str(STUDY), *(f"--set={s}" for s in SHORT), "-o", str(out)]) == 0
    text = out.read_text()
    head = [line for line in text.splitlines() if line.startswith("#")]
    assert f"sha256 {load_plan(STUDY).sha256}" in head[0] and str(STUDY) in head[0]
    assert head[1 : 1 + len(SHORT)] == [f"#   --set {s}" for s in SHORT]
    assert load_plan(out).executions == load_plan(STUDY).executions
    assert not list(out.parent.glob(".short.yml.*"))  # written through a rename, nothing left behind


def test_plan_show_set_prints_the_derived_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "show", str(STUDY), "--json", "--set", "notebook.scale=quick"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    notebooks = [r for r in lines if r.get("type") == "kaggle_notebook"]
    # the study's 11 notebooks, SimplePrime x5, movie x2, energy x3 (S2 L348-368)
    assert len(notebooks) == 18 and all(r["params"] == {"scale": "quick"} for r in notebooks)
    assert lines[-1]["summary"]["plan"] == "cc-datascience-study.derived"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("notebook.scale=fast", "must be one of 'quick', 'standard', 'large'"),
        ("fio.bogus=1", "bogus"),
        ("dd.bs=1k", "no benchmark of type 'dd'"),
        ("scale=quick", "a parameter needs its workload type"),
        ("wait_s=-1", "must be >= 0"),
        ("repetitions=0", "must be >= 1"),
        ("fio.size=[", "value is not YAML"),
        ("no-equals-sign", "expected [TYPE.]KEY=VALUE"),
        (".scale=quick", "not a field or parameter name"),
    ],
)
def test_bad_overrides_are_one_line_errors_naming_the_override(
    override: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(PlanError) as err:
        derive(STUDY, [override])
    assert err.value.path.startswith(f"--set {override}") and message in str(err.value)
    assert main(["plan", "derive", str(STUDY), "--set", override]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and printed.err.startswith(f"error: --set {override}")


def test_a_bad_value_names_the_source_line_of_the_benchmark() -> None:
    with pytest.raises(PlanError, match=r"benchmark at .*cc-datascience-study\.txt:\d+\)"):
        derive(STUDY, ["notebook.seed=-3"])


def test_parse_override_reads_yaml_values() -> None:
    assert parse_override("pyperformance.benchmarks=[float, nbody]").value == ["float", "nbody"]
    assert parse_override("notebook.parameters={rows: 10}").value == {"rows": 10}
    o = parse_override("pyperf.mode=fast")
    assert (o.type, o.key, o.value) == ("pyperformance", "mode", "fast")
    assert parse_override("wait_s=1.5").type is None


# -- issue 26 finding 2: -o never replaces a special file, never writes through a link ----------


def _derive_to(out: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["plan", "derive", str(STUDY), "--set=wait_s=0", "-o", out])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("kind", ["fifo", "chardev", "symlink", "directory"])
def test_derive_out_leaves_special_files_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    import os
    import stat

    target = tmp_path / "out.yml"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "chardev":
        os.mknod(target, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null of our own (root)
    elif kind == "symlink":
        target.symlink_to(victim)
    else:
        target.mkdir()
    before = os.lstat(target)
    code, err = _derive_to(str(target), capsys)
    after = os.lstat(target)
    assert code == 2 and len(err.strip().splitlines()) <= 2 and "Traceback" not in err, err
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino
    assert victim.read_text() == "precious\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.yml")]


@pytest.mark.parametrize(
    ("out", "match"),
    [
        ("", "empty"),
        ("/proc/self/derived.yml", "pseudo-filesystem"),
        ("/sys/kernel/derived.yml", "pseudo-filesystem"),
        ("/dev/null", "character device"),
        ("/dev/testbed-derived.yml", "pseudo-filesystem"),
    ],
)
def test_derive_out_bad_paths_are_one_line_errors(
    out: str, match: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    null_before = os.lstat("/dev/null")
    code, err = _derive_to(out, capsys)
    assert code == 2 and "Traceback" not in err and match in err.splitlines()[0], err
    assert os.lstat("/dev/null").st_ino == null_before.st_ino
    assert not os.path.exists("/dev/testbed-derived.yml")


def test_procfs_mounted_elsewhere_is_refused_by_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A procfs mounted under a user directory is still procfs (filesystem type, not path prefix)."""
    import subprocess

    mnt = tmp_path / "p"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "proc", "proc", str(mnt)], check=False).returncode != 0:
        pytest.fail("cannot mount procfs here (the test runs as root)")
    try:
        code, err = _derive_to(str(mnt / "sys" / "x.yml"), capsys)
        assert code == 2 and "pseudo-filesystem (proc)" in err, err
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_derive_out_over_a_regular_file_replaces_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "again.yml"
    target.write_text("old\n")
    code, _ = _derive_to(str(target), capsys)
    assert code == 0 and target.read_text().startswith("#")


@pytest.mark.parametrize("name", ["derived", "derived.txt", "derived.json"])
def test_derive_out_without_a_yaml_name_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    """Issue 40 finding 8: ``-o name`` without ``.yml`` wrote the file, then failed to read it back
    (a name without .yml/.yaml is the classic text form). Checked first: nothing written."""
    out = tmp_path / name
    code, err = _derive_to(str(out), capsys)
    assert code == 2 and ".yml" in err.splitlines()[0] and "Traceback" not in err, err
    assert not out.exists() and list(tmp_path.iterdir()) == []
