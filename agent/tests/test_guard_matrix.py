"""Issue 12 critical 3: the guard matrix - colons, custom fio job files, symlinks, sidecars,
``//proc``, devices, FIFOs, sockets, copies - against the real fio and dd."""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from testbed_agent import guard
from testbed_agent.guard import check_target, create_test_file, is_marked
from testbed_agent.plan import Benchmark, ParamError
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.dd import Dd
from testbed_agent.workloads.fio import Fio
from testbed_shared.errors import TargetRefused

FIO = {"size": "1M", "runtime_s": 1, "ramp_s": 0, "ioengine": "psync", "iodepth": 1}
DD = {"bs": "4k", "count": 4, "source": "zero", "pause_s": 0}


def ctx_for(bench: Benchmark, tmp_path: Path) -> RunContext:
    return RunContext(
        bench=bench,
        repetition=0,
        scratch=tmp_path / "scratch",
        artifacts=tmp_path / "art",
        deadline=time.monotonic() + 120,
        stop=threading.Event(),
    )


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    v = tmp_path / "victim.db"
    v.write_bytes(b"precious" * 512)
    return v


def refused(cls: type, params: dict, tmp_path: Path, match: str) -> None:
    bench = Benchmark(f"{cls.type}_4k_randwrite" if cls is Fio else "dd_x", cls.type, 0, 1, params=params)
    with pytest.raises(TargetRefused, match=match):
        cls().run(ctx_for(bench, tmp_path), cls.parse(bench))


def test_fio_colon_in_filename_refused(tmp_path: Path, victim: Path) -> None:
    target = f"{tmp_path}/scratch/a:{victim}"
    bench = Benchmark("fio_4k_randwrite", "fio", 0, 1, params={**FIO, "filename": target})
    with pytest.raises(ParamError, match="separator"):
        Fio.check(bench)
    # the guard at run time refuses it too, should params that bypassed the check carry one
    unchecked = Fio.parse(replace(bench, params=FIO))
    object.__setattr__(unchecked, "filename", target)
    with pytest.raises(TargetRefused, match="':' as a separator"):
        Fio().run(ctx_for(bench, tmp_path), unchecked)
    assert victim.read_bytes() == b"precious" * 512


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("filename={victim}", "'filename'"),
        ("filename=${{FIO_FILENAME}}:{victim}", "'filename'"),
        ("directory={dir}", "'directory'"),
        ("exec_prerun=touch {dir}/x", "'exec_prerun'"),
        ("write_bw_log={dir}/bw", "'write_bw_log'"),
        ("include {victim}", "include line"),
    ],
)
def test_custom_fio_job_naming_files_refused(tmp_path: Path, victim: Path, line: str, match: str) -> None:
    job = tmp_path / "evil.fio"
    body = line.format(victim=victim, dir=tmp_path)
    job.write_text(f"[global]\nfilename=${{FIO_FILENAME}}\nsize=1M\n[evil]\nrw=write\nbs=4k\n{body}\n")
    refused(Fio, {**FIO, "job": str(job)}, tmp_path, match)
    with pytest.raises(ParamError):
        Fio.check(Benchmark("evil", "fio", 0, 1, params={**FIO, "job": str(job)}))
    assert victim.read_bytes() == b"precious" * 512


def test_custom_fio_job_without_filename_refused(tmp_path: Path) -> None:
    job = tmp_path / "noname.fio"
    job.write_text("[noname]\nrw=write\nbs=4k\nsize=1M\n")
    refused(Fio, {**FIO, "job": str(job)}, tmp_path, "without filename")


def test_custom_fio_job_with_the_agents_file_runs(tmp_path: Path) -> None:
    job = tmp_path / "good.fio"
    job.write_text(
        "[global]\nfilename=${FIO_FILENAME}\nsize=${FIO_SIZE}\n[good]\nrw=write\nbs=4k\nruntime=1\n"
    )
    bench = Benchmark("good", "fio", 0, 1, params={**FIO, "job": str(job)})
    Fio.check(bench)
    assert Fio().run(ctx_for(bench, tmp_path), Fio.parse(bench)).metrics["write_bw_bytes"]["value"] > 0


@pytest.mark.parametrize("cls", [Fio, Dd])
def test_stray_sidecar_does_not_mark_a_file(tmp_path: Path, victim: Path, cls: type) -> None:
    Path(f"{victim}.testbed-agent").write_text("created by testbed-agent\n")
    params = {**(FIO if cls is Fio else DD), "filename": str(victim)}
    refused(cls, params, tmp_path, "not created by the agent")
    assert victim.read_bytes() == b"precious" * 512


def test_sidecar_of_another_file_does_not_match(tmp_path: Path, victim: Path, monkeypatch) -> None:
    def no_xattr(*_a, **_k):
        raise OSError(95, "Operation not supported")

    monkeypatch.setattr(os, "setxattr", no_xattr)
    monkeypatch.setattr(os, "getxattr", no_xattr)
    ours = create_test_file(tmp_path / "ours.dat")
    assert is_marked(ours) and Path(f"{ours}.testbed-agent").exists()
    shutil.copy(f"{ours}.testbed-agent", f"{victim}.testbed-agent")
    assert not is_marked(victim)
    with pytest.raises(TargetRefused):
        check_target(victim)


def test_copied_file_with_xattr_is_not_marked(tmp_path: Path) -> None:
    ours = create_test_file(tmp_path / "ours.dat")
    copy = tmp_path / "copy.dat"
    shutil.copy2(ours, copy)  # copies the user.testbed_agent xattr too
    assert is_marked(ours) and not is_marked(copy)


@pytest.mark.parametrize("cls", [Fio, Dd])
def test_symlink_target_refused(tmp_path: Path, victim: Path, cls: type) -> None:
    link = tmp_path / "link.dat"
    link.symlink_to(victim)
    refused(cls, {**(FIO if cls is Fio else DD), "filename": str(link)}, tmp_path, "symbolic link")
    assert victim.read_bytes() == b"precious" * 512


def test_symlink_to_own_file_refused(tmp_path: Path) -> None:
    ours = create_test_file(tmp_path / "ours.dat")
    link = tmp_path / "link.dat"
    link.symlink_to(ours)
    with pytest.raises(TargetRefused, match="symbolic link"):
        check_target(link)


@pytest.mark.parametrize(
    "path", ["//proc/self/comm", "///sys/kernel/x", "/tmp/../proc/self/comm", "/proc", "//sys"]
)
def test_pseudo_filesystems_after_normalisation(path: str) -> None:
    with pytest.raises(TargetRefused, match="pseudo-filesystem"):
        check_target(Path(path), allow_device=True)


def test_directory_symlink_into_proc_refused(tmp_path: Path) -> None:
    (tmp_path / "p").symlink_to("/proc/self")
    with pytest.raises(TargetRefused, match="symbolic link"):  # no link is followed (issue 40)
        check_target(tmp_path / "p" / "comm", allow_device=True)


def test_devices_need_allow_device() -> None:
    with pytest.raises(TargetRefused, match="device /dev/null"):
        check_target(Path("/dev/null"))
    assert check_target(Path("/dev/null"), allow_device=True) == Path("/dev/null")
    with pytest.raises(TargetRefused, match="under /dev"):  # devtmpfs, by filesystem type
        check_target(Path("/dev/testbed-guard-x"))
    # /dev/shm is tmpfs (a RAM filesystem like /tmp), judged by its type, not by its /dev prefix
    assert check_target(Path("/dev/shm/testbed-guard-x")) == Path("/dev/shm/testbed-guard-x")


def test_fifo_socket_directory_refused_even_when_allowed(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        for p in (fifo, sock_path, tmp_path):
            with pytest.raises(TargetRefused, match="not a regular file"):
                check_target(p, allow_device=True)


def test_dd_through_fifo_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    refused(Dd, {**DD, "filename": str(fifo), "allow_device": True}, tmp_path, "not a regular file")


def test_interrupted_layout_leaves_no_foreign_file(tmp_path: Path) -> None:
    """A kill during the layout leaves only a marked staging file; the next run lays out again."""
    target = tmp_path / "scratch" / "fio" / "testfile.dat"
    with guard.open_target(target) as t:  # what a killed layout leaves: a marked staging file
        staging = guard.open_staging(t)
        os.write(staging.fd, b"\0" * 4096)
        staging.close()
    target.unlink()
    staged = staging.path
    bench = Benchmark("fio_4k_randwrite", "fio", 0, 1, params=FIO)
    out = Fio().run(ctx_for(bench, tmp_path), Fio.parse(bench))
    assert out.metrics["write_bw_bytes"]["value"] > 0
    assert is_marked(target) and not staged.exists()
    assert sorted(p.name for p in target.parent.iterdir()) == ["testfile.dat"]


def test_a_directory_removed_during_the_layout_is_a_clean_refusal(tmp_path: Path) -> None:
    """Another process removes the target's directory between the open and the layout (CI saw it
    in the directory race): staging and installing refuse with TargetRefused, not a traceback,
    and no descriptor is left open."""
    target = tmp_path / "data" / "sub" / "testfile.dat"
    fds = len(os.listdir("/proc/self/fd"))
    with guard.open_target(target) as t:
        shutil.rmtree(target.parent)
        with pytest.raises(TargetRefused, match="changed while the agent was laying"):
            guard.open_staging(t)
    with guard.open_target(target) as t:
        staged = guard.open_staging(t)
        shutil.rmtree(target.parent)
        with pytest.raises(TargetRefused, match="changed while the agent was laying"):
            guard.install_staging(staged, t)
        staged.close()
    assert len(os.listdir("/proc/self/fd")) == fds


def test_marks_survive_the_layout(tmp_path: Path) -> None:
    bench = Benchmark("fio_4k_randwrite", "fio", 0, 1, params=FIO)
    out = Fio().run(ctx_for(bench, tmp_path), Fio.parse(bench))
    target = Path(out.params["target"])
    assert is_marked(target) and target.stat().st_size == 1024 * 1024
    assert guard.check_target(target) == target
