"""The fork server the rehearsal runs the azure modules through (tests/azure/forkserver.py): a
program run by its client behaves as under .venv/azure's python itself."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import forkserver
import pytest
from repotest import ROOT, gone_within

HERE = Path(__file__).resolve().parent
AZURE_PY = ROOT / ".venv/azure/bin/python"

PROBE = """
import json, os, sys
mods = sorted({m.split(".")[0] for m in sys.modules})
print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "env": os.environ.get("PROBE"),
    "umask": oct(os.umask(0)), "stdin": sys.stdin.read(), "executable": sys.executable,
    "ansible": [m for m in mods if m.startswith("ansible")], "sdk": "azure.mgmt.compute" in sys.modules,
    "path0": sys.path[0]}))
print("to stderr", file=sys.stderr)
sys.exit(int(os.environ.get("PROBE_EXIT", "0")))
"""


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    if not AZURE_PY.exists():
        pytest.fail(".venv/azure is missing: `make test` installs it (make azure-deps)")
    home = tmp_path_factory.mktemp("forkserver")
    sock = home / "s.sock"
    cmd = [str(AZURE_PY), str(HERE / "forkserver.py"), "serve", "--socket", str(sock), "--idle", "600"]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        end = time.monotonic() + 120
        while not sock.exists():
            assert server.poll() is None, server.stdout.read().decode() if server.stdout else ""
            assert time.monotonic() < end, "the fork server did not listen within 120 s"
            time.sleep(0.1)
        yield forkserver.write_client(home / "python", sock, str(AZURE_PY))
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert not sock.exists(), "the server removes its socket when it ends"


def _run(python: Path, *args: str, cwd: Path, stdin: str = "", **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(python), *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
        preexec_fn=lambda: os.umask(0o027),
    )


def test_a_script_sees_its_argv_environment_directory_umask_and_streams(client: Path, tmp_path: Path) -> None:
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    done = _run(client, str(script), "a", "b c", cwd=tmp_path, stdin="in\n", PROBE="x", PROBE_EXIT="3")
    assert done.returncode == 3, done.stderr
    seen = json.loads(done.stdout)
    assert seen["argv"] == [str(script), "a", "b c"]
    assert (seen["cwd"], seen["env"], seen["umask"], seen["stdin"]) == (str(tmp_path), "x", "0o27", "in\n")
    assert seen["executable"] == str(AZURE_PY)
    assert seen["path0"] == str(tmp_path)
    # Ansible's own code and the collection come from the module's payload, never from the preload;
    # the SDK is already imported.
    assert seen["ansible"] == [] and seen["sdk"] is True
    assert done.stderr == "to stderr\n"
    plain = _run(AZURE_PY, str(script), "a", "b c", cwd=tmp_path, stdin="in\n", PROBE="x", PROBE_EXIT="3")
    expected = json.loads(plain.stdout)
    assert {k: seen[k] for k in ("argv", "cwd", "env", "umask", "stdin", "executable", "path0")} == {
        k: expected[k] for k in ("argv", "cwd", "env", "umask", "stdin", "executable", "path0")
    }


def test_a_program_on_stdin_and_its_uncaught_exception_read_as_the_interpreter_prints_them(
    client: Path, tmp_path: Path
) -> None:
    program = "import sys\nprint(sys.argv)\ndef f():\n    raise KeyError('boom')\nf()\n"
    done = _run(client, cwd=tmp_path, stdin=program)
    plain = _run(AZURE_PY, cwd=tmp_path, stdin=program)
    assert (done.returncode, done.stdout) == (plain.returncode, plain.stdout) == (1, "['']\n")
    assert done.stderr == plain.stderr
    assert done.stderr.startswith('Traceback (most recent call last):\n  File "<stdin>", line 5')


def test_killing_the_client_kills_its_program(client: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    script = tmp_path / "sleep.py"
    mark = f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))"
    script.write_text(f"import os, time\n{mark}\ntime.sleep(600)\n")
    proc = subprocess.Popen([str(client), str(script)])
    try:
        end = time.monotonic() + 30
        while not pidfile.exists() or not pidfile.read_text():
            assert time.monotonic() < end
            time.sleep(0.05)
        pid = int(pidfile.read_text())
        assert pid != proc.pid and Path(f"/proc/{pid}").exists()
    finally:
        proc.kill()
        proc.wait(timeout=10)
    assert gone_within([pid], 10), "the program outlived its client"


def test_a_program_killed_by_a_signal_kills_the_client_with_it(client: Path, tmp_path: Path) -> None:
    script = tmp_path / "die.py"
    script.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGTERM)\n")
    assert _run(client, str(script), cwd=tmp_path).returncode == -signal.SIGTERM


def test_without_a_server_or_for_other_options_the_client_runs_the_real_python(
    client: Path, tmp_path: Path
) -> None:
    assert _run(client, "-c", "import sys; print(sys.executable)", cwd=tmp_path).stdout == f"{AZURE_PY}\n"
    orphan = forkserver.write_client(tmp_path / "python", tmp_path / "no-such.sock", str(AZURE_PY))
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    done = _run(orphan, str(script), cwd=tmp_path, PROBE="y")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sdk"] is False and json.loads(done.stdout)["env"] == "y"
