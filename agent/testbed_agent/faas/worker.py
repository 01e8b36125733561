"""One instance's runtime process (started inside its cgroups): mounts its /tmp, loads the function once
(init), then runs ``handler(event, context)`` for each request read from stdin (JSON lines).

Started by the instance manager as ``python -m testbed_agent.faas.worker CONFIG_JSON``; the
function's own stdout/stderr go to the instance log, the protocol uses the original fds.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import sys
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any

CLONE_NEWNS = 0x00020000
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000


class Context:
    """The ``context`` argument, with the attribute names the platforms' Python runtimes use."""

    def __init__(self, cfg: dict[str, Any], request_id: str, timeout_s: float) -> None:
        self.function_name = cfg["function_name"]
        self.function_version = str(cfg.get("version", "1"))
        self.memory_limit_in_mb = int(cfg["memory_mb"])
        self.aws_request_id = request_id
        self.request_id = request_id
        self.tmp_dir = cfg.get("tmp_dir", "/tmp")
        self.key_service = cfg.get("key_service", "")
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def _private_tmp(src: str, keep: list[str]) -> None:
    """New mount namespace in which ``src`` is bind-mounted over /tmp.

    Directories in ``keep`` that live under /tmp (the function code, the toolkit, the venv when
    the checkout itself is under /tmp) are bound back at their own paths, so the function still
    finds them; everything else of the host's /tmp is hidden.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
    _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
    _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
    under_tmp = sorted({os.path.realpath(k) for k in keep if os.path.realpath(k).startswith("/tmp/")})
    held = [(k, os.open(k, os.O_PATH | os.O_DIRECTORY)) for k in under_tmp if os.path.isdir(k)]
    _check(libc.mount(src.encode(), b"/tmp", None, MS_BIND, None), f"bind {src} on /tmp")
    for path, fd in held:
        os.makedirs(path, exist_ok=True)
        _check(
            libc.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, MS_BIND | MS_REC, None),
            f"bind {path} back",
        )
        os.close(fd)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _load_handler(cfg: dict[str, Any]) -> Any:
    path = os.path.join(cfg["code_dir"], cfg["module"] + ".py")
    sys.path.insert(0, cfg["code_dir"])
    spec = importlib.util.spec_from_file_location(cfg["module"], path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[cfg["module"]] = module
    spec.loader.exec_module(module)
    return getattr(module, cfg["handler"])


def main(argv: list[str]) -> int:
    cfg = json.loads(argv[0])
    proto_in = os.fdopen(os.dup(0), "r", buffering=1)
    proto_out = os.fdopen(os.dup(1), "w", buffering=1)
    log = os.open(cfg["log"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    lock = threading.Lock()

    def send(msg: dict[str, Any]) -> None:
        line = json.dumps(msg, default=str)
        with lock:
            proto_out.write(line + "\n")

    t0 = time.perf_counter()
    try:
        if cfg.get("private_tmp"):
            from testbed_agent.paths import workloads_dir

            keep = [cfg["code_dir"], sys.prefix, str(workloads_dir()), *cfg.get("keep_dirs", [])]
            _private_tmp(cfg["tmp_src"], keep)
        os.chdir(cfg["tmp_dir"])
        handler = _load_handler(cfg)
    except BaseException as exc:  # noqa: BLE001 - init errors go back to the emulator
        send({"ready": False, "error": _error(exc)})
        return 1
    send({"ready": True, "init_s": time.perf_counter() - t0, "pid": os.getpid()})

    concurrency = max(1, int(cfg.get("concurrency", 1)))
    pool = ThreadPoolExecutor(max_workers=concurrency) if concurrency > 1 else None
    for line in proto_in:
        if not line.strip():
            continue
        if pool is None:  # one call at a time: run it here, no thread hand-off
            _call(handler, cfg, json.loads(line), send)
        else:
            pool.submit(_call, handler, cfg, json.loads(line), send)
    if pool is not None:
        pool.shutdown(wait=True)
    return 0


def _call(handler: Any, cfg: dict[str, Any], req: dict[str, Any], send: Any) -> None:
    ctx = Context(cfg, req.get("request_id", ""), float(req.get("timeout_s", 60)))
    started = time.time()
    times0 = os.times()
    t0 = time.perf_counter()
    try:
        result = handler(req.get("event"), ctx)
        json.dumps(result)
        msg: dict[str, Any] = {"ok": True, "result": result}
    except BaseException as exc:  # noqa: BLE001 - a function error is a response, not a crash
        msg = {"ok": False, "error": _error(exc)}
    handler_s = time.perf_counter() - t0
    times1 = os.times()
    user = (times1.user + times1.children_user) - (times0.user + times0.children_user)
    system = (times1.system + times1.children_system) - (times0.system + times0.children_system)
    msg.update(
        id=req["id"],
        handler_s=handler_s,
        started=started,
        ended=time.time(),
        proc_user_s=user,
        proc_system_s=system,
    )
    send(msg)


def _error(exc: BaseException) -> dict[str, str]:
    return {
        "type": type(exc).__name__,
        "message": str(exc)[:2000],
        "trace": "".join(traceback.format_exception(exc))[-4000:],
    }


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
