"""Azure Functions (Python v2 programming model) app of a testbed function: one HTTP function,
``testbed`` (route ``api/testbed``, function-key auth). POST the event as JSON; the answer is the
shim's envelope (HTTP 500 when the handler raised). Deployed as ``function_app.py``."""

import json
import os

import azure.functions as func
import testbed_shim

testbed_shim.load()  # init at instance start, as on Lambda

app = func.FunctionApp(http_auth_level=func.AuthLevel.FUNCTION)


@app.route(route="testbed", methods=["POST"])
def testbed(req: func.HttpRequest) -> func.HttpResponse:
    try:
        event = req.get_json()
    except ValueError:
        event = {}
    rid = req.headers.get("x-testbed-request-id", "")
    timeout = float(os.environ.get("TESTBED_TIMEOUT_S", "300"))
    envelope, failed = testbed_shim.call(event, rid, timeout)
    return func.HttpResponse(
        json.dumps(envelope), status_code=500 if failed else 200, mimetype="application/json"
    )
