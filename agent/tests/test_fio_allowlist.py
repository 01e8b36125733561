"""Issue 26 finding 1: custom fio job files are read by fio's own parser and allowlisted.

The red-team pass ran ``ioengine=exec`` with ``program=/usr/bin/touch`` (the program ran) and
``iomem=mmapshared:FILE`` (a foreign 1 MiB file was overwritten); both were recorded as "fio moved
no data". Each case here runs the real fio through the workload and the runner.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

import pytest

from testbed_agent import fiojob, workloads
from testbed_agent.plan import Benchmark, ParamError
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.fio import Fio, FioParams, job_env
from testbed_shared.errors import TargetRefused

FIO = {"size": "1M", "runtime_s": 1, "ramp_s": 0, "ioengine": "psync", "iodepth": 1}
HEAD = "[global]\nfilename=${FIO_FILENAME}\nsize=${FIO_SIZE}\n[j]\nrw=write\nbs=4k\n"


def ctx_for(bench: Benchmark, tmp_path: Path) -> RunContext:
    return RunContext(
        bench=bench,
        repetition=0,
        scratch=tmp_path / "scratch",
        artifacts=tmp_path / "art",
        deadline=time.monotonic() + 120,
        stop=threading.Event(),
    )


def bench_for(job: Path, **params) -> Benchmark:
    return Benchmark("custom", "fio", 0, 1, params={**FIO, "job": str(job), **params})


@pytest.fixture
def foreign(tmp_path: Path) -> Path:
    f = tmp_path / "foreign.bin"
    f.write_bytes(b"\x5a" * (1 << 20))
    return f


def attempt(tmp_path: Path, body: str, match: str) -> None:
    """The job is refused when the plan is checked and again when it would run."""
    job = tmp_path / "evil.fio"
    job.write_text(HEAD + body)
    with pytest.raises(ParamError, match=match):
        Fio.check(bench_for(job))
    with pytest.raises(TargetRefused, match=match):
        Fio().run(ctx_for(bench_for(job), tmp_path), Fio.parse(bench_for(job)))


def test_exec_engine_runs_no_program(tmp_path: Path) -> None:
    made = tmp_path / "made-by-fio"
    attempt(tmp_path, f"ioengine=exec\nprogram=/usr/bin/touch\narguments={made}\n", "ioengine")
    assert not made.exists()


def test_program_option_alone_refused(tmp_path: Path) -> None:
    attempt(tmp_path, "program=/usr/bin/touch\n", "program")


def test_shared_mapping_of_a_foreign_file_refused(tmp_path: Path, foreign: Path) -> None:
    for opt in ("iomem", "mem"):
        attempt(tmp_path, f"{opt}=mmapshared:{foreign}\n", "'mem'")
    assert foreign.read_bytes() == b"\x5a" * (1 << 20)


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("ioengine=external:/tmp/lib.so", "ioengine"),
        ("ioengine=filedelete", "ioengine"),
        ("ioengine=e4defrag", "ioengine"),
        ("ioscheduler=none", "'ioscheduler'"),
        ("verify_state_save=1", "'verify_state_save'"),
        ("rw=trim", "'rw'"),
        ("unlink=1", "'unlink'"),
        ("nrfiles=4", "'nrfiles'"),
    ],
)
def test_options_off_the_allowlist_refused(tmp_path: Path, line: str, match: str) -> None:
    attempt(tmp_path, line + "\n", match)


def test_include_is_read_as_fio_reads_it(tmp_path: Path) -> None:
    """An included file's options are fio's options: seen through fio's parser, then refused."""
    inc = tmp_path / "inc.fio"
    inc.write_text(f"exec_prerun=/usr/bin/touch\nexec_postrun={tmp_path}/x\n")
    run_env = job_env(FioParams(**FIO), "/t/testfile.dat", 4096)
    job = tmp_path / "inc-job.fio"
    job.write_text(HEAD + f"include {inc}\n")
    with pytest.raises(TargetRefused, match="exec_prerun"):
        fiojob.check_job(str(job), run_env, "/t/testfile.dat", _run)
    assert not (tmp_path / "x").exists()


def test_environment_expansion_is_fios(tmp_path: Path) -> None:
    """``${VAR}`` expands only to the agent's FIO_* variables: HOME is not in fio's environment."""
    job = tmp_path / "env.fio"
    job.write_text("[global]\nfilename=${HOME}/victim\n[j]\nrw=write\nbs=4k\n")
    with pytest.raises(TargetRefused, match="'filename'"):
        fiojob.check_job(str(job), job_env(FioParams(**FIO), "/t/f", 4096), "/t/f", _run)


def test_second_job_with_its_own_file_refused(tmp_path: Path, foreign: Path) -> None:
    attempt(tmp_path, f"[k]\nfilename={foreign}\nrw=write\n", "'filename'")
    assert foreign.read_bytes() == b"\x5a" * (1 << 20)


def test_engine_parameter_outside_the_list_refused() -> None:
    bench = Benchmark("fio_4k_read", "fio", 0, 1, params={**FIO, "ioengine": "exec"})
    with pytest.raises(ParamError, match="allowed I/O engine"):
        Fio.check(bench)


@pytest.mark.parametrize("job", sorted((Path(__file__).parents[2] / "workloads" / "fio").glob("*.fio")))
@pytest.mark.parametrize("engine", ["libaio", "psync", "io_uring"])
def test_shipped_jobs_pass_the_allowlist(job: Path, engine: str) -> None:
    env = job_env(FioParams(**{**FIO, "ioengine": engine}), "/var/tmp/t/testfile.dat", 1 << 20)
    fiojob.check_job(str(job), env, "/var/tmp/t/testfile.dat", _run)


def test_plan_with_the_job_refused_by_the_cli(tmp_path: Path) -> None:
    """Through ``testbed-agent run``: exit 2, one line naming file, line and the option; nothing ran."""
    import sys

    made = tmp_path / "made"
    job = tmp_path / "evil.fio"
    job.write_text(HEAD + f"ioengine=exec\nprogram=/usr/bin/touch\narguments={made}\n")
    plan = tmp_path / "p.yml"
    plan.write_text(
        "benchmarks:\n  - {name: custom, type: fio, params: "
        f"{{job: {job}, size: 1M, runtime_s: 1, ramp_s: 0, ioengine: psync, iodepth: 1}}}}\n"
    )
    res = subprocess.run(
        [sys.executable, "-m", "testbed_agent", "run", str(plan), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 2, res.stderr
    first = res.stderr.splitlines()[0]
    assert f"{plan}:2" in first and "params.job" in first and "ioengine" in first, first
    assert "Traceback" not in res.stderr
    assert not made.exists()
    assert "fio" in workloads.registry()


def _run(cmd: list[str], env: dict[str, str]) -> str:
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30, check=True)
    return res.stdout


def test_every_allowed_option_is_justified_in_the_docs() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "io-guard.md").read_text()
    missing = [k for k in fiojob.ALLOWED if f"| `{k}` |" not in doc]
    assert not missing, missing


SECRET = "TOPSECRET-4711"


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A root-only file (0600) whose first line must never reach the user."""
    f = tmp_path / "shadow"
    f.write_text(f"{SECRET}\nsecond line\n")
    f.chmod(0o600)
    return f


#: every spelling fio 3.33's job parser reads as an include (init.c, __parse_jobs_ini: a line that,
#: after leading blanks, starts with "include"; the file name starts one character later, whatever
#: that character is)
INCLUDES = ["include {f}", "include\t{f}", "includeX{f}", "include={f}", "  include {f}", "\tinclude {f}"]


@pytest.mark.parametrize("spelling", INCLUDES, ids=["space", "tab", "X", "equals", "indent", "tab-indent"])
def test_every_include_spelling_is_refused_and_leaks_nothing(
    tmp_path: Path, secret: Path, spelling: str
) -> None:
    """Issue 40 finding 4: only ``include `` was refused; fio read the others, and its complaint
    about the included file's first line ("Bad option <...>") was shown to the user."""
    job = tmp_path / "inc.fio"
    job.write_text(HEAD + spelling.format(f=secret) + "\n")
    env = job_env(FioParams(**FIO), "/t/testfile.dat", 4096)
    fio = subprocess.run(["fio", "--showcmd", str(job)], env=env, capture_output=True, text=True, timeout=30)
    assert SECRET in fio.stdout + fio.stderr  # fio itself reads the file with this spelling
    with pytest.raises(ParamError, match="include") as checked:
        Fio.check(bench_for(job))
    with pytest.raises(TargetRefused, match="include") as ran:
        Fio().run(ctx_for(bench_for(job), tmp_path), Fio.parse(bench_for(job)))
    for exc in (checked.value, ran.value):
        assert SECRET not in str(exc) and str(secret) not in str(exc)


def test_fio_complaints_are_not_echoed(tmp_path: Path) -> None:
    """fio's own refusals quote the job's lines ("Bad option <...>", "option <...> outside of []
    job section"): the agent says what kind of problem fio found, never what it quoted."""
    for body in (HEAD + f"notanoption={SECRET}\n", f"{SECRET}=1\n" + HEAD, HEAD + f"bs={SECRET}\n"):
        job = tmp_path / "bad.fio"
        job.write_text(body)
        with pytest.raises((ParamError, TargetRefused)) as exc:
            Fio.check(bench_for(job))
        assert SECRET not in str(exc.value), str(exc.value)


def test_refused_values_are_not_echoed(tmp_path: Path) -> None:
    """The allowlist names the option it refuses, not the value (a job file may be any file)."""
    attempt(tmp_path, f"rw={SECRET}\n", "'rw'")
    job = tmp_path / "evil.fio"
    with pytest.raises(ParamError) as exc:
        Fio.check(bench_for(job))
    assert SECRET not in str(exc.value)


def test_a_job_checked_once_is_checked_again_when_its_bytes_change(tmp_path: Path, monkeypatch) -> None:
    """A plan loaded again asks fio once per job (``fio._CHECKED``); a job file that changed
    since is a new job, and fio reads it again."""
    from testbed_agent.workloads import fio as fio_module

    asked = []
    real = fio_module._check_run

    def counted(cmd: list[str], env: dict[str, str]) -> str:
        asked.append(cmd)
        return real(cmd, env)

    monkeypatch.setattr(fio_module, "_check_run", counted)
    monkeypatch.setattr(fio_module, "_CHECKED", set())
    job = tmp_path / "j.fio"
    job.write_text(HEAD)
    Fio.check(bench_for(job))
    Fio.check(bench_for(job))
    assert len(asked) == 1, "the same bytes under the same fio: asked once"
    job.write_text(HEAD + "rw=read\n")
    Fio.check(bench_for(job))
    assert len(asked) == 2, "changed bytes: asked again"
    job.write_text(HEAD + "[k]\nfilename=/etc/passwd\n")
    with pytest.raises(ParamError):
        Fio.check(bench_for(job))
