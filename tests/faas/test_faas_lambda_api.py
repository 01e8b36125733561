"""The emulator's AWS Lambda API, driven by boto3 over HTTP as against Lambda (endpoint_url only):
the issue's example, the function lifecycle, Lambda's REPORT line and its validation and errors."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from testbed_services.faas import credentials, package
from testbed_services.faas.functions import default_dirs, find_function

from .conftest import TEST_FUNCTIONS

pytestmark = pytest.mark.integration

ROLE = "arn:aws:iam::123456789012:role/testbed-test"
#: Lambda's REPORT line: tab-separated fields and a trailing tab (Init Duration on cold calls only)
REPORT = re.compile(
    r"REPORT RequestId: (?P<rid>[0-9a-f-]{36})\tDuration: (?P<d>\d+\.\d{2}) ms\t"
    r"Billed Duration: (?P<b>\d+) ms\tMemory Size: (?P<m>\d+) MB\t"
    r"(?:Max Memory Used: (?P<u>\d+) MB\t)?(?:Init Duration: (?P<i>\d+\.\d{2}) ms\t)?\n$"
)


def _client(url: str, validate: bool = True):
    """boto3's Lambda client of the emulator at ``url`` with the credentials it issued."""
    return boto3.client(
        "lambda",
        endpoint_url=url,
        region_name="eu-west-1",
        **credentials.find(url).boto3(),
        config=Config(parameter_validation=validate, retries={"max_attempts": 1}),
    )


def _log(resp) -> str:
    return base64.b64decode(resp["LogResult"]).decode()


def _zip(name: str) -> bytes:
    return package.package(find_function(name, [TEST_FUNCTIONS, *default_dirs()]))


def test_issue_example_cli_deploy_then_boto3_invoke(served):
    env = {**os.environ, "TESTBED_FAAS_URL": served.url}
    deploy = [sys.executable, "-m", "testbed_agent", "faas", "deploy", "calcs", "--memory", "128"]
    done = subprocess.run(deploy, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    lam = _client(served.url)
    first = lam.invoke(FunctionName="calcs", LogType="Tail", Payload=json.dumps({"level": 2}))
    assert first["StatusCode"] == 200 and "FunctionError" not in first
    assert json.loads(first["Payload"].read())["calcs"] == 2000
    log = _log(first)
    assert log.startswith("START RequestId: ") and "END RequestId: " in log
    report = REPORT.search(log)
    assert report is not None, log
    assert report["m"] == "128" and report["i"] is not None  # the first call starts an instance
    assert int(report["b"]) >= float(report["d"])  # billed: rounded up, init included on a cold call
    second = lam.invoke(FunctionName="calcs", LogType="Tail")
    warm = REPORT.search(_log(second))
    assert warm is not None and warm["i"] is None
    config = lam.get_function(FunctionName="calcs")["Configuration"]
    assert (
        config["MemorySize"] == 128 and config["State"] == "Active" and config["Handler"] == "handler.handler"
    )
    assert first["ResponseMetadata"]["HTTPHeaders"]["x-testbed-emulator"] == "test-small"
    lam.delete_function(FunctionName="calcs")


def test_lifecycle_create_update_delete_with_waiters_and_tags(served):
    lam = _client(served.url)
    created = lam.create_function(
        FunctionName="life",
        Runtime="python3.12",
        Role=ROLE,
        Handler="handler.handler",
        Code={"ZipFile": _zip("probe")},
        MemorySize=256,
        Timeout=10,
        Architectures=["arm64"],
        Environment={"Variables": {"SECRET": "s1"}},
        Tags={"testbed-run": "r-life", "testbed-deadline": "2099-01-01T00:00:00Z"},
    )
    assert created["State"] == "Pending" and created["MemorySize"] == 256 and created["Timeout"] == 10
    lam.get_waiter("function_active_v2").wait(FunctionName="life", WaiterConfig={"Delay": 1})
    arn = created["FunctionArn"]
    assert arn == "arn:aws:lambda:eu-west-1:123456789012:function:life"
    assert lam.list_tags(Resource=arn)["Tags"]["testbed-run"] == "r-life"
    out = lam.invoke(FunctionName=arn, Payload=json.dumps({"op": "env"}), LogType="Tail")
    assert json.loads(out["Payload"].read()) == {"secret": "s1"}
    assert REPORT.search(_log(out))["i"] is not None
    warm = lam.invoke(FunctionName="life", Payload=json.dumps({"op": "print", "n": 5}), LogType="Tail")
    assert "xxxxx" in _log(warm) and REPORT.search(_log(warm))["i"] is None  # the function's output
    updated = lam.update_function_configuration(
        FunctionName="life", MemorySize=512, Timeout=20, Environment={"Variables": {"SECRET": "s2"}}
    )
    assert updated["LastUpdateStatus"] == "InProgress" and updated["MemorySize"] == 512
    lam.get_waiter("function_updated_v2").wait(FunctionName="life", WaiterConfig={"Delay": 1})
    after = lam.invoke(FunctionName="life", Payload=json.dumps({"op": "env"}), LogType="Tail")
    assert json.loads(after["Payload"].read()) == {"secret": "s2"}
    assert REPORT.search(_log(after))["i"] is not None  # an update retires the instances: cold again
    assert REPORT.search(_log(after))["m"] == "512"
    config = lam.get_function_configuration(FunctionName="life")
    assert config["Architectures"] == ["arm64"]
    assert config["Environment"]["Variables"] == {"SECRET": "<redacted>"}  # values never shown
    location = lam.get_function(FunctionName="life")["Code"]["Location"]
    with urllib.request.urlopen(location, timeout=10) as resp:  # the package as deployed
        assert resp.read() == _zip("probe")
    lam.tag_resource(Resource=arn, Tags={"extra": "1"})
    lam.untag_resource(Resource=arn, TagKeys=["extra"])
    assert set(lam.list_tags(Resource=arn)["Tags"]) == {"testbed-run", "testbed-deadline"}
    assert "life" in [f["FunctionName"] for f in lam.list_functions()["Functions"]]
    assert lam.invoke(FunctionName="life", InvocationType="DryRun")["StatusCode"] == 204
    lam.delete_function(FunctionName="life")
    with pytest.raises(ClientError) as err:
        lam.get_function(FunctionName="life")
    assert err.value.response["Error"]["Code"] == "ResourceNotFoundException"
    assert err.value.response["ResponseMetadata"]["HTTPStatusCode"] == 404


def test_function_errors_come_back_as_lambda_sends_them(served):
    lam = _client(served.url)
    lam.create_function(
        FunctionName="errs",
        Runtime="python3.12",
        Role=ROLE,
        Handler="handler.handler",
        Code={"ZipFile": _zip("probe")},
        Timeout=1,
    )
    failed = lam.invoke(FunctionName="errs", Payload=json.dumps({"op": "read", "path": "/nonexistent"}))
    assert failed["StatusCode"] == 200 and failed["FunctionError"] == "Unhandled"
    body = json.loads(failed["Payload"].read())
    assert body["errorType"] == "FileNotFoundError" and "nonexistent" in body["errorMessage"]
    slow = lam.invoke(FunctionName="errs", Payload=json.dumps({"op": "sleep", "s": 5}), LogType="Tail")
    assert slow["FunctionError"] == "Unhandled"
    assert "Task timed out after 1.00 seconds" in json.loads(slow["Payload"].read())["errorMessage"]
    assert REPORT.search(_log(slow)) is not None
    lam.update_function_configuration(FunctionName="errs", Handler="nomodule.handler")
    missing = lam.invoke(FunctionName="errs")
    assert json.loads(missing["Payload"].read())["errorType"] == "Runtime.ImportModuleError"
    lam.delete_function(FunctionName="errs")


def _error(call, **kwargs) -> tuple[int, str, str]:
    with pytest.raises(ClientError) as err:
        call(**kwargs)
    r = err.value.response
    return r["ResponseMetadata"]["HTTPStatusCode"], r["Error"]["Code"], r["Error"]["Message"]


def test_requests_are_validated_as_lambda_validates_them(served):
    lam = _client(served.url, validate=False)  # no client-side checks: the emulator's own
    base = {
        "Runtime": "python3.12",
        "Role": ROLE,
        "Handler": "handler.handler",
        "Code": {"ZipFile": _zip("calcs")},
    }
    status, code, message = _error(lam.create_function, FunctionName="v", MemorySize=64, Timeout=0, **base)
    assert (status, code) == (400, "ValidationException")
    assert message.startswith("2 validation errors detected: ")
    assert (
        "Value '64' at 'memorySize' failed to satisfy constraint: "
        "Member must have value greater than or equal to 128" in message
    )
    assert "at 'timeout'" in message
    status, code, message = _error(
        lam.create_function, FunctionName="v", Environment={"Variables": {"X": "1"}}, **base
    )
    assert code == "ValidationException" and "'environment.variables.key'" in message
    assert _error(lam.create_function, FunctionName="v", **{**base, "Runtime": "python3.7"})[1] == (
        "InvalidParameterValueException"
    )
    status, code, message = _error(
        lam.create_function,
        FunctionName="v",
        **{**base, "Code": {"ZipFile": package.build_zip({"x.py": b"1"})}},
    )
    assert code == "InvalidParameterValueException" and "package of none" in message
    assert (
        _error(
            lam.create_function,
            FunctionName="v",
            Layers=["arn:aws:lambda:eu-west-1:123456789012:layer:x:1"],
            **base,
        )[1]
        == "InvalidParameterValueException"
    )
    # a memory size the emulated platform's profile does not offer (test-small: up to 2048 MB)
    assert _error(lam.create_function, FunctionName="v", MemorySize=4096, **base)[:2] == (
        400,
        "InvalidParameterValueException",
    )
    lam.create_function(FunctionName="dup", **base)
    assert _error(lam.create_function, FunctionName="dup", **base)[:2] == (409, "ResourceConflictException")
    for payload in (b"{not json", b'{"x": NaN}', b'{"x": 1e999}'):
        assert _error(lam.invoke, FunctionName="dup", Payload=payload)[1] == "InvalidRequestContentException"
    assert _error(lam.invoke, FunctionName="dup", Qualifier="7")[1] == "ResourceNotFoundException"
    lam.delete_function(FunctionName="dup")
    unsigned = urllib.request.Request(f"{served.url}/2015-03-31/functions/", method="GET")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(unsigned, timeout=10)
    assert err.value.code == 403
    assert err.value.headers["x-amzn-ErrorType"] == "MissingAuthenticationTokenException"
    assert _error(lam.get_account_settings)[:2] == (501, "NotImplemented")


# -- issue 40: the Lambda API authenticates its callers (SigV4 against issued credentials) -------


def _signed(url: str, method: str, path: str, body: bytes, access: str, secret: str, when=None):
    """A request signed by botocore's own SigV4 signer (at ``when``, default now), sent as is;
    (status, headers, parsed body)."""
    import datetime as dt
    from unittest import mock

    import botocore.auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    req = AWSRequest(method=method, url=url + path, data=body, headers={"Content-Type": "application/json"})
    now = when or dt.datetime.now(dt.UTC).replace(tzinfo=None)
    with mock.patch.object(botocore.auth, "get_current_datetime", lambda: now):
        botocore.auth.SigV4Auth(Credentials(access, secret), "lambda", "eu-west-1").add_auth(req)
    return _send(url, method, path, body, dict(req.headers.items()))


def _send(url: str, method: str, path: str, body: bytes, headers: dict):
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, json.loads(data) if data else None
    finally:
        conn.close()


def test_forged_and_wrong_signatures_are_refused_as_aws_refuses_them(served):
    """A made-up ``Credential=X/...`` header, the right key with a wrong secret, a signature made
    10 minutes ago (or ahead), a body changed after signing, a session token we never issued: each
    is refused with AWS's status, ``x-amzn-ErrorType`` and JSON body; boto3 with the credentials the
    emulator issued at start works."""
    creds = credentials.find(served.url)
    body = b"{}"
    path = "/2015-03-31/functions/"
    day = time.strftime("%Y%m%d", time.gmtime())
    forged = {
        "Authorization": f"AWS4-HMAC-SHA256 Credential=X/{day}/us-east-1/lambda/aws4_request, "
        f"SignedHeaders=host;x-amz-date, Signature={'0' * 64}",
        "X-Amz-Date": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
    }
    status, headers, doc = _send(served.url, "GET", path, b"", forged)
    assert (status, headers["x-amzn-errortype"]) == (403, "UnrecognizedClientException")
    assert doc == {"message": "The security token included in the request is invalid."}

    status, headers, doc = _signed(served.url, "GET", path, b"", creds.access_key_id, "not-the-secret")
    assert (status, headers["x-amzn-errortype"]) == (403, "InvalidSignatureException")
    assert doc["message"].startswith("The request signature we calculated does not match")

    import datetime as dt

    for minutes, words in ((-10, "Signature expired: "), (10, "Signature not yet current: ")):
        then = dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(minutes=minutes)
        status, headers, doc = _signed(
            served.url, "GET", path, b"", creds.access_key_id, creds.secret_access_key, when=then
        )
        assert (status, headers["x-amzn-errortype"]) == (403, "InvalidSignatureException"), doc
        assert doc["message"].startswith(words) and "5 min." in doc["message"], doc

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    good = AWSRequest(method="POST", url=served.url + "/2015-03-31/functions/x/invocations", data=body)
    SigV4Auth(Credentials(creds.access_key_id, creds.secret_access_key), "lambda", "eu-west-1").add_auth(good)
    status, headers, doc = _send(
        served.url, "POST", "/2015-03-31/functions/x/invocations", b'{"a": 1}', dict(good.headers.items())
    )
    assert (status, headers["x-amzn-errortype"]) == (403, "InvalidSignatureException"), doc

    token = Credentials(creds.access_key_id, creds.secret_access_key, "session-token-we-never-issued")
    tokened = AWSRequest(method="GET", url=served.url + path)
    SigV4Auth(token, "lambda", "eu-west-1").add_auth(tokened)
    status, headers, doc = _send(served.url, "GET", path, b"", dict(tokened.headers.items()))
    assert (status, headers["x-amzn-errortype"]) == (403, "UnrecognizedClientException"), doc

    status, headers, doc = _send(served.url, "GET", path, b"", {"Authorization": "AWS4-HMAC-SHA256 garbage"})
    assert status in (400, 403) and headers["x-amzn-errortype"] == "IncompleteSignatureException", doc

    assert "Functions" in _client(served.url).list_functions()  # the issued credentials work
    other = boto3.client(
        "lambda",
        endpoint_url=served.url,
        region_name="eu-west-1",
        aws_access_key_id="AKIDTESTBED",
        aws_secret_access_key="not-checked",
        config=Config(retries={"max_attempts": 1}),
    )
    assert _error(other.list_functions)[:2] == (403, "UnrecognizedClientException")


def test_reserved_and_loader_variables_refused_as_lambda_refuses_them(served):
    lam = _client(served.url)
    base = {
        "Runtime": "python3.12",
        "Role": ROLE,
        "Handler": "handler.handler",
        "Code": {"ZipFile": _zip("calcs")},
    }
    status, code, message = _error(
        lam.create_function,
        FunctionName="resv",
        Environment={"Variables": {"AWS_REGION": "x", "OK_NAME": "1", "AWS_ACCESS_KEY_ID": "y"}},
        **base,
    )
    assert (status, code) == (400, "InvalidParameterValueException")
    assert message == (
        "Lambda was unable to configure your environment variables because the environment variables you "
        "have provided contains reserved keys that are currently not supported for modification. Reserved "
        "keys used in this request: AWS_REGION, AWS_ACCESS_KEY_ID"
    )
    for env in ({"LD_PRELOAD": "/tmp/x.so"}, {"PYTHONPATH": "/tmp"}, {"PATH": "/tmp"}):
        status, code, message = _error(
            lam.create_function, FunctionName="resv", Environment={"Variables": env}, **base
        )
        assert (status, code) == (400, "InvalidParameterValueException") and next(iter(env)) in message
    assert "resv" not in [f["FunctionName"] for f in lam.list_functions()["Functions"]]


def test_list_and_get_function_redact_environment_values(served):
    lam = _client(served.url)
    lam.create_function(
        FunctionName="redact",
        Runtime="python3.12",
        Role=ROLE,
        Handler="handler.handler",
        Code={"ZipFile": _zip("probe")},
        Environment={"Variables": {"SECRET": "hunter2-in-lambda"}},
    )
    try:
        listed = [f for f in lam.list_functions()["Functions"] if f["FunctionName"] == "redact"]
        got = lam.get_function(FunctionName="redact")["Configuration"]
        conf = lam.get_function_configuration(FunctionName="redact")
        for shown in (listed[0], got, conf):
            assert shown["Environment"] == {"Variables": {"SECRET": "<redacted>"}}
        out = lam.invoke(FunctionName="redact", Payload=json.dumps({"op": "env"}))
        assert json.loads(out["Payload"].read()) == {"secret": "hunter2-in-lambda"}
    finally:
        lam.delete_function(FunctionName="redact")


def test_credentials_command_prints_what_boto3_needs(served):
    """``testbed-agent faas credentials`` prints export lines; boto3 configured by them alone (the
    endpoint too, AWS_ENDPOINT_URL_LAMBDA) reaches the emulator."""
    done = subprocess.run(
        [sys.executable, "-m", "testbed_agent", "faas", "credentials", "--url", served.url],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    exported = dict(line.removeprefix("export ").split("=", 1) for line in done.stdout.splitlines())
    assert set(exported) == {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_LAMBDA"}
    script = "import boto3; print(type(boto3.client('lambda', region_name='eu-west-1').list_functions()))"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")} | exported
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0 and out.stdout.strip() == "<class 'dict'>", out.stderr[-2000:]
