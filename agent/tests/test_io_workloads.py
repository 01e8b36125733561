"""fio and dd for real on small test files; parsers of every dd wording; the target guard."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from agenttest import agent

from testbed_agent.guard import check_target, create_test_file
from testbed_agent.plan import Benchmark
from testbed_agent.workloads.base import RunContext
from testbed_agent.workloads.dd import Dd, parse_summary
from testbed_agent.workloads.fio import Fio, job_name
from testbed_shared.errors import TargetRefused


def ctx_for(bench: Benchmark, tmp_path: Path, timeout: float = 120) -> RunContext:
    return RunContext(
        bench=bench,
        repetition=0,
        scratch=tmp_path / "scratch",
        artifacts=tmp_path / "art",
        deadline=time.monotonic() + timeout,
        stop=threading.Event(),
    )


@pytest.mark.parametrize(
    ("line", "nbytes", "secs", "rate"),
    [
        ("1048576 bytes (1.0 MB) copied, 0.00267 s, 393 MB/s", 1048576, 0.00267, 393e6),
        ("1048576 bytes (1.0 MB, 1.0 MiB) copied, 0.00261 s, 402 MB/s", 1048576, 0.00261, 402e6),
        ("1073741824 bytes (1.1 GB, 1.0 GiB) copied, 4.71 s, 228 MB/s", 1073741824, 4.71, 228e6),
        ("512 bytes copied, 0.000123 s, 4.2 MB/s", 512, 0.000123, 4.2e6),
        ("1 byte copied, 5.1e-05 s, 19.6 kB/s", 1, 5.1e-05, 19.6e3),
        ("0 bytes copied, 4.2e-05 s, 0.0 kB/s", 0, 4.2e-05, 0.0),
        ("10240 bytes (10 kB) copied, 0.000182 s, 56.3 MB/s", 10240, 0.000182, 56.3e6),
    ],
)
def test_dd_summary_of_every_coreutils_wording(line: str, nbytes: int, secs: float, rate: float) -> None:
    text = f"8+0 records in\n8+0 records out\n{line}\n"
    s = parse_summary(text)
    assert s["bytes"] == nbytes and s["seconds"] == pytest.approx(secs)
    assert s["reported_rate_bytes_per_second"] == pytest.approx(rate)
    if nbytes:
        assert s["bytes_per_second"] == pytest.approx(nbytes / secs)


def test_dd_real_write_pause_read(tmp_path: Path) -> None:
    bench = Benchmark(
        "dd_w_r",
        "dd",
        0,
        1,
        params={
            "bs": "64k",
            "count": 64,
            "source": "zero",
            "oflag": "direct",
            "iflag": "direct",
            "pause_s": 0.1,
        },
    )
    Dd.check(bench)
    out = Dd().run(ctx_for(bench, tmp_path), Dd.parse(bench))
    assert out.metrics["write_bytes"]["value"] == 64 * 65536
    assert out.metrics["read_bytes"]["value"] == 64 * 65536
    assert out.metrics["write_bw_bytes"]["unit"] == "B/s" and out.metrics["read_seconds"]["better"] == "lower"
    raw = (tmp_path / "art" / out.artifacts[0]).read_text()
    assert "oflag=direct" in raw and "iflag=direct" in raw
    # the same numbers come back from the raw output through `testbed-agent parse dd`
    res = agent("parse", "dd", str(tmp_path / "art" / out.artifacts[0]))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["metrics"]["read_bytes"]["value"] == 64 * 65536


@pytest.mark.parametrize(
    ("name", "job"),
    [
        ("fio_4k_randomwrite", "fio_4k_randwrite"),
        ("fio_1m_sequentialread", "fio_1m_read"),
        ("fio_64k_seqwrite", "fio_64k_write"),
        ("fio_4k_randread", "fio_4k_randread"),
    ],
)
def test_fio_classic_names(name: str, job: str) -> None:
    assert job_name(name) == job


def test_twelve_classic_job_files_exist() -> None:
    jobs = sorted(p.stem for p in (Path(__file__).resolve().parents[2] / "workloads" / "fio").glob("*.fio"))
    assert jobs == sorted(
        f"fio_{bs}_{rw}" for bs in ("4k", "64k", "1m") for rw in ("read", "write", "randread", "randwrite")
    )


def test_fio_real_run_is_parsed(tmp_path: Path, fio_available: None) -> None:
    bench = Benchmark(
        "fio_4k_randwrite",
        "fio",
        0,
        1,
        params={"size": "8M", "runtime_s": 1, "ramp_s": 0, "ioengine": "psync", "iodepth": 1},
    )
    Fio.check(bench)
    out = Fio().run(ctx_for(bench, tmp_path), Fio.parse(bench))
    m = out.metrics
    assert m["write_bw_bytes"]["value"] > 0 and m["write_iops"]["value"] > 0
    assert m["write_clat_mean_s"]["unit"] == "s" and "write_clat_p99_s" in m
    assert "read_bw_bytes" not in m
    assert out.tool["name"] == "fio" and out.tool["version"]
    target = Path(out.params["target"])
    assert target.stat().st_size == 8 * 1024 * 1024  # laid out before the measured job
    raw = tmp_path / "art" / out.artifacts[0]
    res = agent("parse", "fio", str(raw))
    assert json.loads(res.stdout)["metrics"]["write_iops"]["value"] == pytest.approx(m["write_iops"]["value"])


def test_fio_refuses_block_device(tmp_path: Path) -> None:
    devices = [d for d in ("/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/loop0") if os.path.exists(d)]
    assert devices, "a block device to point at"
    bench = Benchmark("fio_4k_randwrite", "fio", 0, 1, params={"filename": devices[0], "size": "1M"})
    with pytest.raises(TargetRefused, match="refusing to write to device"):
        Fio().run(ctx_for(bench, tmp_path), Fio.parse(bench))


def test_fio_refuses_dev_vda_path_even_if_absent(tmp_path: Path) -> None:
    with pytest.raises(TargetRefused):
        check_target(Path("/dev/vda"))


def test_io_refuses_existing_foreign_file(tmp_path: Path) -> None:
    foreign = tmp_path / "precious.db"
    foreign.write_text("do not touch")
    for cls, name, extra in ((Fio, "fio_4k_randwrite", {"size": "1M"}), (Dd, "dd_x", {"count": 1})):
        bench = Benchmark(name, cls.type, 0, 1, params={"filename": str(foreign), **extra})
        with pytest.raises(TargetRefused, match="not created by the agent"):
            cls().run(ctx_for(bench, tmp_path), cls.parse(bench))
    assert foreign.read_text() == "do not touch"


def test_allow_device_lets_an_existing_file_through(tmp_path: Path) -> None:
    target = tmp_path / "mine.dat"
    target.write_bytes(b"\0" * 4096)
    bench = Benchmark(
        "dd_x",
        "dd",
        0,
        1,
        params={
            "filename": str(target),
            "bs": "4k",
            "count": 4,
            "source": "zero",
            "read": False,
            "allow_device": True,
        },
    )
    out = Dd().run(ctx_for(bench, tmp_path), Dd.parse(bench))
    assert out.metrics["write_bytes"]["value"] == 16384


def test_agent_created_files_are_reusable(tmp_path: Path) -> None:
    target = create_test_file(tmp_path / "t.dat")
    assert check_target(target) == target


def test_pseudo_filesystems_refused() -> None:
    with pytest.raises(TargetRefused):
        check_target(Path("/proc/sys/vm/drop_caches"), allow_device=True)
