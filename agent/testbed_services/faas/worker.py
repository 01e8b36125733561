"""One instance's runtime process (started inside its cgroups): enters its sandbox (own mount
namespace, private /tmp, read-only host, unprivileged user), applies the deployment's environment,
loads the function once (init), then runs ``handler(event, context)`` for each request read from
stdin (JSON lines).

Started by the instance manager as ``python -I -m testbed_services.faas.worker CONFIG_JSON`` with a
fixed environment (testbed_services.faas.environment); the first stdin line carries the
deployment's variables and the key service's address, applied only after the privilege drop. The
function's own stdout/stderr go to fd 2 (a pipe whose tail the emulator keeps), the protocol uses
the original stdin/stdout.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import sys
import threading
import time

# Every cold start pays this module's imports before the function's init: what only a concurrent
# instance (concurrent.futures) or an error (traceback) needs is imported there, and typing only
# for the checker (the three were ~20 ms of each start on a loaded 2-CPU machine).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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
    # the worker runs isolated (python -I): the function's libraries come from the configuration
    sys.path[0:0] = cfg.get("python_path", [])
    # the mount points the sandbox makes (root's home, /tmp) must be traversable by the function user
    # whatever umask the emulator inherited (an in-process emulator under the agent's 077)
    os.umask(0o022)
    proto_in = os.fdopen(os.dup(0), "r", buffering=1)
    proto_out = os.fdopen(os.dup(1), "w", buffering=1)
    # the function's stdout and stderr both go to fd 2: a pipe the emulator keeps a bounded tail of
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    lock = threading.Lock()

    def send(msg: dict[str, Any]) -> None:
        line = json.dumps(msg, default=str, allow_nan=False)
        with lock:
            proto_out.write(line + "\n")

    t0 = time.perf_counter()
    waited = 0.0
    try:
        from testbed_services.faas import sandbox  # noqa: PLC0415 - inside the worker's start: an import error is reported to the emulator, not a crash
        from testbed_shared.paths import workloads_dir  # noqa: PLC0415 - inside the worker's start: an import error is reported to the emulator, not a crash

        # the deployment's variables and the key service's address: the first line on stdin, sent
        # once the instance's /tmp is made (the emulator makes it while this interpreter starts);
        # nothing before this line touches the sandbox's sources, and the wait is not init time
        w0 = time.perf_counter()
        init = json.loads(proto_in.readline() or "null")
        waited = time.perf_counter() - w0
        if not isinstance(init, dict) or not isinstance(init.get("env"), dict):
            raise RuntimeError("the emulator sent no start message")
        cfg["key_service"] = str(init.get("key_service") or "")
        python = [sys.prefix, sys.base_prefix, sys.exec_prefix, *(p for p in sys.path if os.path.isdir(p))]
        keep = [*python, str(workloads_dir()), *cfg.get("keep_dirs", [])]
        sandbox.enter(cfg, keep)
        # only now, as the function user: nothing of the deployment reached a privileged process
        os.environ.update({str(k): str(v) for k, v in init["env"].items()})
        os.chdir(cfg["tmp_dir"])
        handler = _load_handler(cfg)
    except BaseException as exc:  # noqa: BLE001 - init errors go back to the emulator
        send({"ready": False, "error": _error(exc)})
        return 1
    send({"ready": True, "init_s": time.perf_counter() - t0 - waited, "pid": os.getpid()})

    concurrency = max(1, int(cfg.get("concurrency", 1)))
    pool = None
    if concurrency > 1:
        from concurrent.futures import ThreadPoolExecutor  # noqa: PLC0415 - only a concurrent instance needs it, after its init (see the imports above)

        pool = ThreadPoolExecutor(max_workers=concurrency)
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
        json.dumps(result, allow_nan=False)  # JSON has no NaN/Infinity: such a result is an error
        msg: dict[str, Any] = {"ok": True, "result": result}
    except BaseException as exc:  # noqa: BLE001 - a function error is a response, not a crash
        msg = {"ok": False, "error": _error(exc)}
    handler_s = time.perf_counter() - t0
    with contextlib.suppress(OSError, ValueError):  # the call's output is in the log pipe before its answer
        sys.stdout.flush()
        sys.stderr.flush()
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
    import traceback  # noqa: PLC0415 - only an error needs it (see the imports above)

    return {
        "type": type(exc).__name__,
        "message": str(exc)[:2000],
        "trace": "".join(traceback.format_exception(exc))[-4000:],
    }


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
