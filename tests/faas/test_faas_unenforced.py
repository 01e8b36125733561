"""Without cgroups the emulator still serves, says so loudly and marks results limits_enforced=false."""

from __future__ import annotations

from testbed_services.faas.emulator import Emulator
from testbed_services.faas.functions import default_dirs
from testbed_services.faas.profiles import load_profile


def test_no_cgroups_still_serves_but_flags_results(tmp_path):
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
    assert not any(tmp_path.iterdir()), "shutdown removes the emulator's state"
