"""Per-call measurements inside a deployed function, for platforms without Lambda's REPORT line
(Google Cloud Functions, Azure Functions). Standard library only; packaged beside the function.

``load()`` imports the function's handler (named in ``testbed_shim.json``) and times it: the
function's init. ``call(event, request_id)`` runs ``handler(event, context)`` once and returns the
envelope the drivers read: ``{"result", "error", "testbed": {...}}`` where ``testbed`` holds this
instance's id, whether the call was the instance's first (``cold``), the init seconds (first call
only), the handler's seconds, the process's CPU seconds and peak RSS, and the wall-clock times.
"""

import json
import os
import resource
import sys
import time
import traceback
import uuid

_HERE = os.path.dirname(os.path.abspath(__file__))
_STATE = {"instance": uuid.uuid4().hex[:12], "calls": 0, "init_s": 0.0, "handler": None, "config": {}}
_STARTED = time.time()


class Context:
    """The ``context`` argument with the attribute names the handlers use on Lambda."""

    def __init__(self, request_id, timeout_s, memory_mb):
        self.function_name = _STATE["config"].get("function", "")
        self.function_version = os.environ.get("K_REVISION", "$LATEST")
        self.memory_limit_in_mb = memory_mb
        self.aws_request_id = request_id
        self.request_id = request_id
        self.tmp_dir = "/tmp"
        self._deadline = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self):
        return max(0, int((self._deadline - time.monotonic()) * 1000))


def load():
    """Import the handler once per instance (the init the first call reports)."""
    if _STATE["handler"] is None:
        t0 = time.perf_counter()
        with open(os.path.join(_HERE, "testbed_shim.json"), encoding="utf-8") as fh:
            config = json.load(fh)
        if _HERE not in sys.path:
            sys.path.insert(0, _HERE)
        module = __import__(config["module"])
        _STATE["handler"] = getattr(module, config["handler"])
        _STATE["config"] = config
        _STATE["init_s"] = time.perf_counter() - t0
    return _STATE["handler"]


def _memory_mb():
    for name in ("TESTBED_MEMORY_MB", "FUNCTION_MEMORY_MB"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0


def call(event, request_id="", timeout_s=60.0):
    """Run the handler once; the envelope (JSON-ready) and whether the handler raised."""
    handler = load()
    cold = _STATE["calls"] == 0
    _STATE["calls"] += 1
    request_id = request_id or uuid.uuid4().hex
    ctx = Context(request_id, float(timeout_s), _memory_mb())
    started = time.time()
    times0 = os.times()
    t0 = time.perf_counter()
    error = None
    try:
        result = handler(event, ctx)
        json.dumps(result, allow_nan=False)
    except Exception as exc:  # noqa: BLE001 - a function error is part of the answer
        result = None
        error = {
            "type": type(exc).__name__,
            "message": str(exc)[:2000],
            "trace": "".join(traceback.format_exception(exc))[-4000:],
        }
    handler_s = time.perf_counter() - t0
    times1 = os.times()
    testbed = {
        "instance_id": _STATE["instance"],
        "request_id": request_id,
        "cold": cold,
        "init_s": _STATE["init_s"] if cold else 0.0,
        "instance_uptime_s": time.time() - _STARTED,
        "instance_invocations": _STATE["calls"],
        "handler_s": handler_s,
        "cpu_user_s": (times1.user + times1.children_user) - (times0.user + times0.children_user),
        "cpu_system_s": (times1.system + times1.children_system) - (times0.system + times0.children_system),
        "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "started": started,
        "ended": time.time(),
    }
    return {"result": result, "error": error, "testbed": testbed}, error is not None
