"""Without cgroups the emulator still serves, says so loudly and marks results limits_enforced=false.

The emulator runs in this process under the agent's umask 077 (``testbed-agent run`` sets it): the
package copy and the sandbox's mount points must stay readable by the function user anyway (CI
failed here with ``No module named 'random'``: the Python installation under root's home was bound
back beneath a 0700 mount point)."""

from __future__ import annotations

import os

from testbed_services.faas.emulator import Emulator
from testbed_services.faas.functions import default_dirs
from testbed_services.faas.profiles import load_profile


def test_no_cgroups_still_serves_but_flags_results(tmp_path):
    umask = os.umask(0o077)
    emu = Emulator(load_profile("aws-lambda"), tmp_path, function_dirs=default_dirs(), cgroup="none")
    try:
        info = emu.info()
        assert info["limits_enforced"] is False and info["cgroup"] == "none"
        assert any("NOT enforced" in w for w in info["warnings"])
        emu.deploy("c", {"function": "calcs", "memory_mb": 256})
        status, body = emu.invoke("c", {"array_size": 5, "function_calls": 10})
        assert status == 200 and body["result"]["calcs"] == 50
        insp = body["inspector"]
        assert (
            insp["limits_enforced"] is False and insp["cgroup"] == "none" and insp["vcpus_enforced"] is None
        )
    finally:
        emu.shutdown()
        os.umask(umask)
    assert not any(tmp_path.iterdir()), "shutdown removes the emulator's state"
