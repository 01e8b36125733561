"""Start a real swtpm on loopback for the tests and the Azure rehearsal, without port races.

The tpm2-tss ``swtpm`` TCTI expects the TPM's command channel at ``port`` and its control channel
at ``port + 1``. A port picked free and handed to swtpm can be taken before swtpm binds it (CI
failed that way: the control port of a free command port was not checked). Here the control
socket is bound and listening in this process and handed to swtpm by file descriptor (swtpm's
``--ctrl fd=`` takes a listening socket; its ``--server fd=`` takes a connected one, so the
command port is still bound by swtpm). If swtpm exits before it answers (its command port was
taken meanwhile), it is started again on a new pair.
"""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

#: how long a started swtpm may take to answer TPM2_GetRandom (a loaded 2-core CI machine)
ANSWER_S = 30.0


def _control_socket() -> tuple[socket.socket, int]:
    """A listening socket at ``port + 1`` whose ``port`` was free when looked at; returns both."""
    for _ in range(100):
        ctrl = socket.socket()
        ctrl.bind(("127.0.0.1", 0))
        port = ctrl.getsockname()[1] - 1
        try:
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", port))
        except OSError:
            ctrl.close()
            continue
        ctrl.listen(8)
        return ctrl, port
    raise RuntimeError("no two free neighbouring ports on 127.0.0.1 for swtpm")


def answers(tcti: str) -> tuple[bool, str]:
    """Whether the TPM behind ``tcti`` answers TPM2_GetRandom; returns (ok, tpm2-tools' stderr)."""
    done = subprocess.run(
        ["tpm2_getrandom", "4"],
        env={"TPM2TOOLS_TCTI": tcti, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        timeout=30,
        check=False,
    )
    return done.returncode == 0, done.stderr.decode(errors="replace")[-300:]


def start_swtpm(state: Path, log: Path | None = None, tries: int = 5) -> tuple[subprocess.Popen, str]:
    """Start ``swtpm socket --tpm2`` with its state in ``state`` and wait until it answers.

    Returns the process and its TCTI string (``swtpm:host=127.0.0.1,port=N``). swtpm's stderr goes
    to ``log`` (appended) or is dropped. Raises RuntimeError naming the last error when no start in
    ``tries`` answered within :data:`ANSWER_S` seconds."""
    last = ""
    for _ in range(tries):
        ctrl, port = _control_socket()
        err = log.open("a") if log is not None else subprocess.DEVNULL
        try:
            proc = subprocess.Popen(
                [
                    "swtpm",
                    "socket",
                    "--tpm2",
                    "--tpmstate",
                    f"dir={state}",
                    "--server",
                    f"type=tcp,port={port},bindaddr=127.0.0.1",
                    "--ctrl",
                    f"type=tcp,fd={ctrl.fileno()}",
                    "--flags",
                    "not-need-init,startup-clear",
                ],
                stdout=subprocess.DEVNULL,
                stderr=err,
                pass_fds=(ctrl.fileno(),),
            )
        finally:
            ctrl.close()
            if log is not None:
                err.close()
        tcti = f"swtpm:host=127.0.0.1,port={port}"
        deadline = time.monotonic() + ANSWER_S
        while proc.poll() is None and time.monotonic() < deadline:
            ok, last = answers(tcti)
            if ok:
                return proc, tcti
            time.sleep(0.1)
        if proc.poll() is None:
            proc.terminate()
            proc.wait(10)
        last = f"swtpm exited with {proc.returncode} ({last.strip() or 'no answer'})"
    raise RuntimeError(f"swtpm did not answer in {tries} starts: {last}")
