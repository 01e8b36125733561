"""The suite's leak check (the repository's conftest.py, issue 40 finding 3) and what ends the
agent's children when a test times out.

Each case runs an inner pytest on a small test file, with a copy of the repository's conftest.py
(and, for the timeouts, of agent/tests/conftest.py's ``spawn``), and checks its outcome and what
is left on the machine afterwards."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

LEAKS = """\
import os, subprocess, time
from pathlib import Path
import pytest

@pytest.fixture(scope="session")
def server():
    proc = subprocess.Popen(["sleep", "300"])
    yield proc
    proc.kill()
    proc.wait()

@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    # a wider fixture whose process starts children later, as an emulator starts instances
    go = tmp_path_factory.mktemp("pool") / "go"
    proc = subprocess.Popen(
        ["sh", "-c", f"while [ ! -e {go} ]; do sleep 0.05; done; sleep 300 & wait"], start_new_session=True
    )
    yield go
    os.killpg(proc.pid, 9)
    proc.wait()

def test_uses_a_session_server(server):
    assert server.poll() is None

def test_pool_starts_an_instance(pool):
    pool.touch()
    time.sleep(0.5)

def test_leaves_a_process(tmp_path):
    proc = subprocess.Popen(["sleep", "300"])
    Path(os.environ["LEAK_PID"]).write_text(str(proc.pid))

def test_ends_its_process():
    proc = subprocess.Popen(["sleep", "300"])
    proc.kill()
    proc.wait()

def test_leaves_a_big_file(tmp_path):
    with open(tmp_path / "big.dat", "wb") as fh:
        fh.truncate((1 << 30) + 4096)  # sparse: over 1 GiB without writing it

def test_leaves_a_small_file(tmp_path):
    (tmp_path / "small.dat").write_bytes(b"x" * (1 << 20))

def test_cannot_write_past_the_file_limit(tmp_path):
    import resource
    assert resource.getrlimit(resource.RLIMIT_FSIZE)[0] <= 8 << 30
"""

HANGS = """\
import os, sys, time
from pathlib import Path

PLAN = '''benchmarks:
  - {name: dd_long, type: dd, timeout_s: 300, params: {bs: 1k, count: 2000000000, source: zero,
     conv: "", read: false, filename: /dev/null, allow_device: true}}
'''

def test_hangs_while_the_agent_runs_dd(tmp_path, spawn):
    work = Path(os.environ["WORK"])
    (work / "plan.yml").write_text(PLAN)
    agent = spawn([sys.executable, "-m", "testbed_agent", "run", str(work / "plan.yml"), "--out",
                   str(work / "out" / "r1"), "--host", "h1", "--node-exporter", "", "--scratch",
                   str(work / "scratch")])
    (work / "agent.pid").write_text(str(agent.pid))
    end = time.monotonic() + 60
    while time.monotonic() < end:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
                comm = Path(f"/proc/{pid}/comm").read_text().strip()
            except OSError:
                continue
            if comm == "dd" and int(stat[stat.rfind(")") + 2 :].split()[1]) == agent.pid:
                (work / "dd.pid").write_text(pid)
                # the dd spins until the timeout: at nice 19 it takes only what the other lanes leave
                os.setpriority(os.PRIO_PROCESS, int(pid), 19)
                time.sleep(600)  # pytest-timeout ends this
        time.sleep(0.05)
"""


def inner(tmp_path: Path, files: dict[str, str], *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """pytest on ``files`` (relative paths -> text) in ``tmp_path``, its temporary files in there."""
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            "-rA",
            f"--basetemp={tmp_path / 'bt'}",
            *args,
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **env},
        check=False,
    )


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def gone(pid: int, timeout: float = 60) -> bool:
    end = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    return not alive(pid)


@pytest.mark.slow
def test_the_check_names_leaked_processes_and_big_files(tmp_path: Path) -> None:
    leak_pid = tmp_path / "leak.pid"
    res = inner(
        tmp_path,
        {"conftest.py": (REPO / "conftest.py").read_text(), "test_leaks.py": LEAKS},
        "test_leaks.py",
        LEAK_PID=str(leak_pid),
    )
    out = res.stdout
    outcome = {
        name: status for status, name in re.findall(r"^(PASSED|ERROR|FAILED) test_leaks.py::(\w+)", out, re.M)
    }
    assert outcome.get("test_leaves_a_process") == "ERROR", out
    assert outcome.get("test_leaves_a_big_file") == "ERROR", out
    for ok in ("test_uses_a_session_server", "test_pool_starts_an_instance", "test_ends_its_process",
               "test_leaves_a_small_file", "test_cannot_write_past_the_file_limit"):  # fmt: skip
        assert outcome.get(ok) == "PASSED", (ok, out)
    assert "left 1 process(es) running, now killed" in out and "sleep" in out
    assert "left files over 1 GiB" in out and "big.dat" in out
    assert gone(int(leak_pid.read_text()), timeout=10)  # killed by the check
    assert not list((tmp_path / "bt").rglob("big.dat"))  # removed by the check


@pytest.mark.slow
@pytest.mark.parametrize("method", ["signal", "thread"])
def test_a_test_timeout_ends_the_agent_and_its_dd(tmp_path: Path, method: str) -> None:
    """pytest-timeout's signal method fails the test and runs its teardown (``spawn`` ends the
    agent); the thread method ends the pytest process with ``os._exit`` (no teardown at all): the
    agent gets SIGTERM from ``PR_SET_PDEATHSIG``. Either way the agent ends its dd and exits."""
    work = tmp_path / "work"
    work.mkdir()
    files = {
        "conftest.py": (REPO / "conftest.py").read_text(),
        "sub/conftest.py": (REPO / "agent" / "tests" / "conftest.py").read_text(),
        "sub/test_hang.py": HANGS,
    }
    res = inner(
        tmp_path, files, "sub/test_hang.py", "--timeout=30", f"--timeout-method={method}", WORK=str(work)
    )
    assert "Timeout" in res.stdout + res.stderr, res.stdout + res.stderr
    assert (work / "dd.pid").exists(), "the agent ran its dd when the timeout came"
    dd, agent = int((work / "dd.pid").read_text()), int((work / "agent.pid").read_text())
    assert gone(dd) and gone(agent)
    records = (work / "out" / "r1" / "h1.jsonl").read_text()
    assert '"status": "interrupted"' in records or '"status":"interrupted"' in records


def test_spawned_processes_get_sigterm_when_the_test_process_dies(tmp_path: Path) -> None:
    """``die_with_parent``: what ``spawn`` starts is signalled when its starter exits abruptly."""
    script = (
        "import os, signal, subprocess, sys\n"
        "from testbed_agent.procs import die_with_parent\n"
        "p = subprocess.Popen(['sleep', '300'], preexec_fn=die_with_parent(signal.SIGTERM))\n"
        "print(p.pid, flush=True)\n"
        "os._exit(1)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    pid = int(res.stdout)
    assert gone(pid, timeout=10)
