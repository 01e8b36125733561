"""Issue 26 finding 8: on a machine without the ``testbed-faas`` user, the emulator's first start
creates it before the first function runs, and that first function already runs as it (it used
to run as ``nobody`` until the second start).

The machine's own user database is never touched: the test runs in a private mount namespace
(``unshare -m``) over a copy of /etc, deletes the user there, and starts a real emulator inside."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import TEST_FUNCTIONS, TEST_PROFILE, needs_root

pytestmark = pytest.mark.integration

DRIVER = r"""
import json, pwd, sys, time, subprocess, signal
from pathlib import Path
from testbed_services.faas.client import FaasClient
tmp = Path(sys.argv[1])
try:
    pwd.getpwnam("testbed-faas")
    print(json.dumps({"error": "the user still exists before the start"}))
    sys.exit(0)
except KeyError:
    pass
url_file = tmp / "url"
cmd = [sys.executable, "-m", "testbed_agent", "faas", "serve", "--port", "0", "--url-file", str(url_file),
       "--state-dir", str(tmp / "state"), "--functions-dir", sys.argv[2], "--profile", sys.argv[3]]
log = open(tmp / "serve.log", "w")
proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
try:
    end = time.monotonic() + 60
    while not (url_file.exists() and url_file.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > end:
            raise SystemExit("emulator did not start: " + (tmp / "serve.log").read_text())
        time.sleep(0.05)
    client = FaasClient(url_file.read_text().strip(), timeout_s=120)
    client.deploy("probe", function="probe", memory_mb=256)
    status, body, _ = client.invoke("probe", {"op": "whoami"})
    info = client.request("GET", "/info", None)[1]
    client.close()
    pw = pwd.getpwnam("testbed-faas")
    print(json.dumps({"status": status, "result": body.get("result"), "uid": pw.pw_uid,
                      "gid": pw.pw_gid, "info_user": info.get("emulator", info).get("function_user"),
                      "warnings": info.get("warnings")}))
finally:
    proc.send_signal(signal.SIGTERM)
    proc.wait(60)
"""


def test_first_start_runs_functions_as_testbed_faas(tmp_path: Path) -> None:
    needs_root()
    assert shutil.which("unshare") and shutil.which("userdel")
    etc = tmp_path / "etc"
    script = "\n".join(
        [
            "set -e",
            f"cp -a /etc {etc}",
            f"mount --bind {etc} /etc",
            # -f: another emulator of this machine (another checkout's tests) may be running
            # functions as the user right now (a process of the user stands in for them: plain
            # userdel refuses beside it); only the copy of /etc is changed
            "if getent passwd testbed-faas >/dev/null; then",
            "  setpriv --reuid testbed-faas --regid testbed-faas --clear-groups sleep 60 & busy=$!",
            '  until [ "$(stat -c %u /proc/$busy)" = "$(id -u testbed-faas)" ]; do sleep 0.05; done',
            "  userdel -f testbed-faas",
            "  kill $busy; wait $busy || true",
            "fi",
            f"exec {sys.executable} -c '{DRIVER}' {tmp_path} {TEST_FUNCTIONS} {TEST_PROFILE}",
        ]
    )
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "error" not in doc, doc
    assert doc["status"] == 200, doc
    assert doc["result"]["uid"] == doc["uid"] and doc["result"]["gid"] == doc["gid"], doc
    assert doc["info_user"] == "testbed-faas", doc
    assert not any("could not be created" in w for w in doc["warnings"] or []), doc
