"""Google Cloud Functions (2nd gen) entry point of a testbed function: an HTTP function of the
Functions Framework (``--entry-point testbed_entry``). POST the event as JSON; the answer is the
shim's envelope (HTTP 500 when the handler raised). Deployed as ``main.py``."""

import json
import os

import functions_framework
import testbed_shim

testbed_shim.load()  # init at instance start, as on Lambda


@functions_framework.http
def testbed_entry(request):
    event = request.get_json(silent=True)
    trace = request.headers.get("X-Cloud-Trace-Context", "").split("/")[0]
    timeout = float(os.environ.get("TESTBED_TIMEOUT_S", "60"))
    envelope, failed = testbed_shim.call({} if event is None else event, trace, timeout)
    return (json.dumps(envelope), 500 if failed else 200, {"Content-Type": "application/json"})
