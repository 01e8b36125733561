"""The AWS Lambda API (2015-03-31, REST-JSON) on the emulator, on the paths boto3 uses.

CreateFunction (zip), GetFunction, GetFunctionConfiguration, UpdateFunctionConfiguration,
UpdateFunctionCode, DeleteFunction, ListFunctions, Invoke (RequestResponse, Event, DryRun; with
``LogType=Tail`` the last 4 KB of the call's log, base64, ending in Lambda's ``REPORT`` line),
TagResource, UntagResource, ListTags. Requests are read and validated against botocore's own
service model (the shapes, required members, lengths, ranges, patterns and enums Lambda declares),
and errors come back as Lambda sends them (status, ``x-amzn-ErrorType``, ``{"Type", "message"}``),
so boto3 with ``endpoint_url`` pointed here behaves as against Lambda.

Callers are authenticated as Lambda authenticates them: every request must be SigV4-signed with
the access key the emulator issued at start (testbed_services.faas.credentials, checked by
testbed_services.faas.sigv4 with botocore's own signer); others are refused with AWS's error shapes.
Environment variable names Lambda reserves are refused with Lambda's message.

What differs, on purpose:
- Code: a CreateFunction zip must be the package of a function the emulator knows (its files equal
  to ``package.files(function)`` of one under its function directories); other code
  is refused (InvalidParameterValueException). The emulator never runs uploaded code. An upload is
  spooled to a file and inflated entry by entry into digests (testbed_services.faas.package);
  at most ``--max-uploads`` are processed at once, the rest get TooManyRequestsException.
- There is no IAM: the one issued access key may do everything; the execution role is not checked.
- Loader, interpreter and search-path variables (``LD_*``, ``PYTHON*``, ``PATH``...) are refused in
  ``Environment`` (InvalidParameterValueException), and responses show environment values as
  ``<redacted>`` (a read-modify-write of ``Environment`` must send the real values again).
- CreateFunction answers ``State: Pending`` as Lambda does; the deployment is synchronous, so the
  next read already says ``Active`` (and ``LastUpdateStatus: Successful`` after an update).
- Architectures: what was asked is configured and reported; the code runs on this machine's CPU
  (header ``X-Testbed-Machine``). Every response carries ``X-Testbed-Emulator: <profile>``.
- Features the emulator does not model (VPC, layers, file systems, SnapStart, KMS, images, S3 code,
  published versions and aliases) are refused with InvalidParameterValueException, not ignored.
Functions deployed through the emulator's own API (``testbed-agent faas deploy``) are Lambda
functions here too, with the default role, runtime and handler.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import functools
import hashlib
import hmac
import json
import math
import platform
import re
import secrets
import select
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode

import regex

from testbed_services.faas import environment, package, sigv4
from testbed_services.faas.credentials import Credentials
from testbed_services.faas.emulator import Emulator, FaasError
from testbed_services.faas.functions import FunctionCode, find_function
from testbed_services.faas.profiles import MIB
from testbed_shared.cost import billed_seconds
from testbed_shared.errors import TestbedError

ACCOUNT = "123456789012"
DEFAULT_ROLE = f"arn:aws:iam::{ACCOUNT}:role/testbed-emulator"
#: operations served; every other operation of the model answers 501
OPERATIONS = (
    "CreateFunction",
    "GetFunction",
    "GetFunctionConfiguration",
    "UpdateFunctionConfiguration",
    "UpdateFunctionCode",
    "DeleteFunction",
    "ListFunctions",
    "Invoke",
    "TagResource",
    "UntagResource",
    "ListTags",
)
#: runtimes Lambda no longer accepts for creating or updating functions
DEPRECATED_RUNTIMES = ("python2.7", "python3.6", "python3.7", "python3.8")
#: members the emulator implements per operation (others must be absent or at their default)
SUPPORTED = {
    "CreateFunction": {
        "FunctionName",
        "Runtime",
        "Role",
        "Handler",
        "Code",
        "Description",
        "Timeout",
        "MemorySize",
        "Publish",
        "PackageType",
        "Environment",
        "Tags",
        "Architectures",
        "EphemeralStorage",
        "TracingConfig",
        "LoggingConfig",
    },
    "UpdateFunctionConfiguration": {
        "FunctionName",
        "Role",
        "Handler",
        "Description",
        "Timeout",
        "MemorySize",
        "Environment",
        "Runtime",
        "TracingConfig",
        "RevisionId",
        "EphemeralStorage",
        "LoggingConfig",
    },
    "UpdateFunctionCode": {"FunctionName", "ZipFile", "Architectures", "Publish", "DryRun", "RevisionId"},
}
#: "not used" values of members the emulator accepts but does not model
NEUTRAL: dict[str, Any] = {
    "Publish": False,
    "DryRun": False,
    "PackageType": "Zip",
    "TracingConfig": {"Mode": "PassThrough"},
}
LOG_TAIL_BYTES = 4096
MAX_PAYLOAD = 6 * 1024 * 1024
PREFIXES = ("/2015-03-31/", "/2017-03-31/", "/2016-08-19/")


class LambdaError(Exception):
    """An error as Lambda returns it (``kind`` None: AWS's front door, whose body has no Type)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        kind: str | None = "User",
        extra: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}")
        self.status, self.code, self.message, self.kind = status, code, message, kind
        self.extra, self.headers = extra or {}, headers or {}

    def response(self) -> tuple[int, dict[str, str], bytes]:
        doc = {**self.extra, **({"Type": self.kind} if self.kind else {}), "message": self.message}
        headers = {"x-amzn-ErrorType": self.code, "Content-Type": "application/json", **self.headers}
        return self.status, headers, json.dumps(doc).encode()


def throttled() -> LambdaError:
    """Lambda's answer when too many uploads are in progress (boto3 retries it with backoff)."""
    return LambdaError(
        429,
        "TooManyRequestsException",
        "Rate exceeded",
        extra={"Reason": "CallerRateLimitExceeded"},
        headers={"Retry-After": "1"},
    )


#: operations that upload code (their bodies hold a zip): limited in number at once
UPLOADS = ("CreateFunction", "UpdateFunctionCode")
#: how long GetFunction's Code.Location stays valid (Lambda: 10 minutes)
LOCATION_TTL_S = 600
#: Lambda's answer to a zip it cannot read
UNZIP_FAILED = "Could not unzip uploaded file. Please check your file, then try to upload again."


@dataclass
class LambdaFunction:
    """What Lambda knows about a function beyond the emulator's deployment."""

    name: str
    runtime: str
    role: str
    handler: str
    description: str = ""
    architectures: list[str] = field(default_factory=lambda: ["x86_64"])
    tags: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    code_sha256: str = ""
    code_size: int = 0
    log_format: str = "Text"
    log_group: str = ""
    revision: str = field(default_factory=lambda: str(uuid.uuid4()))
    modified: str = ""
    version: int = 0
    fresh: bool = True
    updating: bool = False


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "+0000"


def _machine() -> str:
    m = platform.machine().lower()
    return {"amd64": "x86_64", "aarch64": "arm64"}.get(m, m)


def _camel(name: str) -> str:
    return name[:1].lower() + name[1:]


class Validator:
    """Lambda's input validation from the botocore shapes: every violation in one message."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def check(self, value: Any, shape: Any, path: str) -> None:
        if shape.type_name == "structure":
            self._structure(value, shape, path)
        elif shape.type_name == "list":
            self._list(value, shape, path)
        elif shape.type_name == "map":
            self._map(value, shape, path)
        elif shape.type_name == "string":
            self._string(value, shape, path)
        elif shape.type_name in ("integer", "long"):
            self._number(value, shape, path, int)
        elif shape.type_name in ("float", "double"):
            self._number(value, shape, path, (int, float))
        elif shape.type_name == "boolean":
            if not isinstance(value, bool):
                self._fail(value, path, "Member must be a boolean")
        elif shape.type_name == "blob" and not isinstance(value, (bytes, str)):
            self._fail(value, path, "Member must be a blob")

    def _fail(self, value: Any, path: str, rule: str) -> None:
        shown = "null" if value is None else str(value)[:200]
        self.errors.append(f"Value '{shown}' at '{path}' failed to satisfy constraint: {rule}")

    def _structure(self, value: Any, shape: Any, path: str) -> None:
        if not isinstance(value, dict):
            self._fail(value, path, "Member must be an object")
            return
        for name in shape.required_members:
            if value.get(name) is None:
                self._fail(None, _join(path, name), "Member must not be null")
        for name, item in value.items():
            if name in shape.members and item is not None:
                self.check(item, shape.members[name], _join(path, name))

    def _list(self, value: Any, shape: Any, path: str) -> None:
        if not isinstance(value, list):
            self._fail(value, path, "Member must be a list")
            return
        self._length(value, shape, path)
        for i, item in enumerate(value):
            self.check(item, shape.member, f"{path}.{i + 1}.member" if path else str(i))

    def _map(self, value: Any, shape: Any, path: str) -> None:
        if not isinstance(value, dict):
            self._fail(value, path, "Member must be a map")
            return
        self._length(value, shape, path)
        for k, item in value.items():
            self.check(k, shape.key, f"{path}.key")
            self.check(item, shape.value, f"{path}.{k}")

    def _string(self, value: Any, shape: Any, path: str) -> None:
        if not isinstance(value, str):
            self._fail(value, path, "Member must be a string")
            return
        self._length(value, shape, path)
        if shape.enum and value not in shape.enum:
            self._fail(value, path, f"Member must satisfy enum value set: [{', '.join(shape.enum)}]")
        pattern = shape.metadata.get("pattern")
        if pattern and not _pattern(pattern).fullmatch(value):
            self._fail(value, path, f"Member must satisfy regular expression pattern: {pattern}")

    def _number(self, value: Any, shape: Any, path: str, kind: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, kind):
            self._fail(value, path, "Member must be a number")
            return
        lo, hi = shape.metadata.get("min"), shape.metadata.get("max")
        if lo is not None and value < lo:
            self._fail(value, path, f"Member must have value greater than or equal to {lo}")
        if hi is not None and value > hi:
            self._fail(value, path, f"Member must have value less than or equal to {hi}")

    def _length(self, value: Any, shape: Any, path: str) -> None:
        lo, hi = shape.metadata.get("min"), shape.metadata.get("max")
        if lo is not None and len(value) < lo:
            self._fail(value, path, f"Member must have length greater than or equal to {lo}")
        if hi is not None and len(value) > hi:
            self._fail(value, path, f"Member must have length less than or equal to {hi}")

    def raise_if_any(self) -> None:
        if self.errors:
            n = len(self.errors)
            raise LambdaError(
                400,
                "ValidationException",
                f"{n} validation error{'s' if n > 1 else ''} detected: " + "; ".join(self.errors),
            )


@functools.lru_cache(maxsize=256)
def _pattern(text: str) -> Any:
    """A model pattern compiled by ``regex`` (the models use Java classes such as ``\\p{L}``)."""
    return regex.compile(text, regex.DOTALL)


def _join(path: str, name: str) -> str:
    return f"{path}.{_camel(name)}" if path else _camel(name)


class LambdaApi:
    """The Lambda front of one :class:`Emulator` (thread-safe)."""

    def __init__(self, emulator: Emulator, base_url: str, creds: Credentials) -> None:
        import botocore.session  # noqa: PLC0415 - its model loads on the first Lambda request, not at every start

        self.emu = emulator
        self.base_url = base_url
        self.creds = creds
        self._location_key = secrets.token_bytes(32)
        self.model = botocore.session.get_session().get_service_model("lambda")
        self.routes = [(op, *_route(self.model.operation_model(op).http)) for op in OPERATIONS]
        self.others = [
            (name, *_route(self.model.operation_model(name).http))
            for name in self.model.operation_names
            if name not in OPERATIONS
        ]
        self.functions: dict[str, LambdaFunction] = {}
        self.counts: dict[str, int] = {}
        self._lock = threading.Lock()

    @staticmethod
    def owns(path: str) -> bool:
        """Whether a request path is a Lambda API path."""
        return path.startswith(PREFIXES)

    # -- request plumbing ------------------------------------------------------------------

    def authenticate(self, items: list[tuple[str, str]]) -> sigv4.Signed:
        """The request's signature parts, checked as far as its headers allow (issuer, scope, time):
        what runs before its body is read. Raises LambdaError as AWS answers."""
        try:
            signed = sigv4.parse(items)
            sigv4.precheck(signed, items, self.creds.access_key_id, dt.datetime.now(dt.UTC))
        except sigv4.AuthError as err:
            raise LambdaError(err.status, err.code, err.message, kind=None) from None
        return signed

    def operation(self, method: str, path: str) -> str | None:
        """The operation a request is for (None when none): known before its body is read."""
        return next((op for op, verb, route in self.routes if verb == method and route.fullmatch(path)), None)

    def refusal(self, err: LambdaError) -> tuple[int, dict[str, str], bytes]:
        """An error answered before the request reached :meth:`handle`, with Lambda's headers."""
        status, headers, body = err.response()
        return status, self._headers(str(uuid.uuid4()), headers), body

    def _headers(self, request_id: str, headers: dict[str, str]) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            "x-amzn-RequestId": request_id,
            "X-Testbed-Emulator": self.emu.profile.name,
            "X-Testbed-Machine": _machine(),
            **headers,
        }

    def handle(
        self, method: str, target: str, items: list[tuple[str, str]], raw: bytes, signed: sigv4.Signed
    ) -> tuple[int, dict[str, str], bytes]:
        """Serve one request whose headers :meth:`authenticate` passed; returns (status, headers,
        body). The signature is verified over the whole request first."""
        path, _, query = target.partition("?")
        request_id = str(uuid.uuid4())
        headers = dict(items)
        try:
            try:
                sigv4.verify(signed, method, target, items, raw, self.creds.secret_access_key)
            except sigv4.AuthError as err:
                raise LambdaError(err.status, err.code, err.message, kind=None) from None
            region = signed.region
            op, groups = self._find(method, path)
            with self._lock:
                self.counts[op] = self.counts.get(op, 0) + 1
            params = self._parse(op, groups, parse_qs(query, keep_blank_values=True), headers, raw)
            status, out_headers, body = getattr(self, "_" + _snake(op))(params, region, request_id)
        except LambdaError as err:
            status, out_headers, body = err.response()
        except (FaasError, TestbedError) as err:
            status, out_headers, body = _from_faas(err).response()
        except Exception as exc:  # noqa: BLE001 - answer every request as Lambda would (500)
            err = LambdaError(500, "ServiceException", f"{type(exc).__name__}: {exc}", kind="Service")
            status, out_headers, body = err.response()
        return status, self._headers(request_id, out_headers), body

    def _find(self, method: str, path: str) -> tuple[str, dict[str, str]]:
        for op, verb, route in self.routes:
            found = route.fullmatch(path)
            if found and verb == method:
                return op, {k: unquote(v) for k, v in found.groupdict().items()}
        for op, verb, route in self.others:
            if verb == method and route.fullmatch(path):
                raise LambdaError(501, "NotImplemented", f"{op} is not served by the testbed emulator")
        raise LambdaError(404, "UnknownOperationException", f"no Lambda operation {method} {path}")

    def _parse(
        self,
        op: str,
        groups: dict[str, str],
        query: dict[str, list[str]],
        headers: dict[str, str],
        raw: bytes,
    ) -> dict[str, Any]:
        shape = self.model.operation_model(op).input_shape
        params: dict[str, Any] = {}
        payload = shape.serialization.get("payload")
        lower = {k.lower(): v for k, v in headers.items()}
        for name, member in shape.members.items():
            loc, wire = member.serialization.get("location"), member.serialization.get("name", name)
            if loc == "uri" and wire in groups:
                params[name] = groups[wire]
            elif loc == "querystring" and wire in query:
                values = query[wire]
                params[name] = values if member.type_name == "list" else _typed(values[0], member)
            elif loc == "header" and wire.lower() in lower:
                params[name] = lower[wire.lower()]
        if payload:
            if len(raw) > MAX_PAYLOAD:
                raise LambdaError(
                    413, "RequestTooLargeException", f"Request must be smaller than {MAX_PAYLOAD} bytes"
                )
            params[payload] = raw
        elif raw.strip():
            body = _json_object(raw)
            for name, value in body.items():
                if name in shape.members and not shape.members[name].serialization.get("location"):
                    params[name] = value
        v = Validator()
        v.check(params, shape, "")
        v.raise_if_any()
        _check_supported(op, params)
        return params

    # -- helpers ---------------------------------------------------------------------------

    def _arn(self, region: str, name: str) -> str:
        return f"arn:aws:lambda:{region}:{ACCOUNT}:function:{name}"

    def _name(self, ref: str) -> str:
        """The function name of a name, partial ARN or ARN (qualifier $LATEST only)."""
        m = re.fullmatch(
            r"(?:arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:\d{12}:function:|\d{12}:function:)?"
            r"([^:]+)(?::(.+))?",
            ref,
        )
        if not m:
            raise LambdaError(404, "ResourceNotFoundException", f"Function not found: {ref}")
        if m.group(2) not in (None, "$LATEST"):
            raise LambdaError(
                404, "ResourceNotFoundException", f"Function not found: {ref} (only $LATEST is served)"
            )
        return m.group(1)

    def _function(self, name: str, region: str) -> tuple[LambdaFunction, dict[str, Any]]:
        """The Lambda view and the emulator's deployment of ``name`` (404 if none)."""
        with self.emu._lock:
            dep = self.emu.deployments.get(name)
            described = dep.describe() if dep else None
            code = dep.code if dep else None
        with self._lock:
            if described is None or code is None:
                self.functions.pop(name, None)
                raise LambdaError(
                    404, "ResourceNotFoundException", f"Function not found: {self._arn(region, name)}"
                )
            fn = self.functions.get(name)
            if fn is None:  # deployed through the emulator's own API
                fn = self._native(name, code, described)
                self.functions[name] = fn
            fn.version = described["version"]
            return fn, described

    def _native(self, name: str, code: FunctionCode, described: dict[str, Any]) -> LambdaFunction:
        data = package.package(code)
        return LambdaFunction(
            name=name,
            runtime=f"python{sys.version_info.major}.{sys.version_info.minor}",
            role=DEFAULT_ROLE,
            handler=f"{code.module}.{code.handler}",
            architectures=[_machine()],
            code_sha256=base64.b64encode(hashlib.sha256(data).digest()).decode(),
            code_size=len(data),
            log_group=f"/aws/lambda/{name}",
            modified=_now(),
            version=described["version"],
            fresh=False,
        )

    def _configuration(self, fn: LambdaFunction, dep: dict[str, Any], region: str) -> dict[str, Any]:
        state = "Pending" if fn.fresh else "Active"
        out = {
            "FunctionName": fn.name,
            "FunctionArn": self._arn(region, fn.name),
            "Runtime": fn.runtime,
            "Role": fn.role,
            "Handler": fn.handler,
            "CodeSize": fn.code_size,
            "Description": fn.description,
            "Timeout": math.ceil(dep["timeout_s"]),
            "MemorySize": dep["memory_mb"],
            "LastModified": fn.modified,
            "CodeSha256": fn.code_sha256,
            "Version": "$LATEST",
            "TracingConfig": {"Mode": "PassThrough"},
            "RevisionId": fn.revision,
            "State": state,
            "LastUpdateStatus": "InProgress" if fn.updating else "Successful",
            "PackageType": "Zip",
            "Architectures": list(fn.architectures),
            "EphemeralStorage": {"Size": dep["tmp_mb"]},
            "SnapStart": {"ApplyOn": "None", "OptimizationStatus": "Off"},
            "LoggingConfig": {
                "LogFormat": fn.log_format,
                "LogGroup": fn.log_group or f"/aws/lambda/{fn.name}",
            },
        }
        if state == "Pending":
            out["StateReason"] = "The function is being created."
            out["StateReasonCode"] = "Creating"
        if fn.env:
            # names only, as /info: values may be secrets (the function itself gets them)
            out["Environment"] = {"Variables": dict.fromkeys(fn.env, "<redacted>")}
        fn.fresh = fn.updating = False  # the deployment is synchronous: the next read sees it done
        return out

    def _code_of(self, zip_b64: Any) -> tuple[FunctionCode, str, int]:
        """The known function an uploaded zip is the package of, with the zip's SHA-256 (base64) and
        size. The zip is decoded into a temporary file (in chunks) and read entry by entry."""
        with tempfile.TemporaryFile(dir=self.emu.state_dir) as spool:
            try:
                sha, size = _spool_base64(zip_b64, spool)
            except (binascii.Error, ValueError):
                raise LambdaError(
                    400, "InvalidParameterValueException", "Code.ZipFile is not base64"
                ) from None
            if size > package.MAX_ZIP_BYTES:
                raise LambdaError(
                    400,
                    "InvalidParameterValueException",
                    f"zip of {size} bytes over the {package.MAX_ZIP_BYTES}-byte direct-upload limit",
                )
            spool.seek(0)
            try:
                content = package.read_zip(spool)
            except package.CorruptZip as exc:
                raise LambdaError(400, "InvalidParameterValueException", f"{UNZIP_FAILED} ({exc})") from None
            except ValueError as exc:
                raise LambdaError(400, "InvalidParameterValueException", str(exc)) from None
        known = []
        for base in self.emu.function_dirs:
            if base.is_dir():
                for d in sorted(base.iterdir()):
                    if d.is_dir():
                        try:
                            known.append(find_function(d.name, self.emu.function_dirs))
                        except TestbedError:
                            continue
        code = package.match(content, known)
        if code is None:
            shown = base64.b64decode(sha).hex()[:16]
            raise LambdaError(
                400,
                "InvalidParameterValueException",
                f"the testbed emulator runs only the functions under its function directories; this zip "
                f"(sha256 {shown}...) is the package of none of them ({', '.join(c.name for c in known)})",
            )
        return code, sha, size

    def _environment(self, params: dict[str, Any], default: dict[str, str]) -> dict[str, str]:
        """The function's variables of a request (``default`` when it has no Environment), refused
        as Lambda refuses reserved names and as the emulator refuses loader variables."""
        if "Environment" not in params:
            return dict(default)
        env = {str(k): str(v) for k, v in (params["Environment"].get("Variables") or {}).items()}
        taken = environment.reserved(env)
        if taken:
            raise LambdaError(
                400,
                "InvalidParameterValueException",
                "Lambda was unable to configure your environment variables because the environment "
                "variables you have provided contains reserved keys that are currently not supported for "
                f"modification. Reserved keys used in this request: {', '.join(taken)}",
            )
        try:
            environment.check(env)
        except ValueError as exc:
            raise LambdaError(
                400, "InvalidParameterValueException", f"{exc} (not supported by the testbed emulator)"
            ) from None
        return env

    @staticmethod
    def _runtime(runtime: str | None) -> None:
        if runtime is None:
            return
        if runtime in DEPRECATED_RUNTIMES:
            raise LambdaError(
                400,
                "InvalidParameterValueException",
                f"The runtime parameter of {runtime} is no longer supported for creating or updating "
                "AWS Lambda functions. We recommend you use a supported runtime while creating or "
                "updating functions.",
            )
        if not runtime.startswith("python3."):
            raise LambdaError(
                400,
                "InvalidParameterValueException",
                f"runtime {runtime}: the testbed emulator runs Python only",
            )

    def _spec(self, params: dict[str, Any], code: str, env: dict[str, str]) -> dict[str, Any]:
        spec: dict[str, Any] = {"function": code, "env": env}
        if "MemorySize" in params:
            spec["memory_mb"] = params["MemorySize"]
        if "Timeout" in params:
            spec["timeout_s"] = params["Timeout"]
        if "EphemeralStorage" in params:
            spec["tmp_mb"] = params["EphemeralStorage"]["Size"]
        return spec

    # -- operations ------------------------------------------------------------------------

    def _create_function(self, p: dict[str, Any], region: str, rid: str) -> tuple[int, dict, bytes]:
        name = p["FunctionName"]
        if ":" in name:
            raise LambdaError(
                400, "InvalidParameterValueException", "FunctionName must be a name, not an ARN"
            )
        code = p["Code"]
        if code.get("S3Bucket") or code.get("ImageUri"):
            raise LambdaError(
                400, "InvalidParameterValueException", "Code: the testbed emulator takes ZipFile only"
            )
        if not code.get("ZipFile"):
            raise LambdaError(
                400, "InvalidParameterValueException", "Code.ZipFile is required (PackageType Zip)"
            )
        if not p.get("Runtime") or not p.get("Handler"):
            raise LambdaError(
                400, "InvalidParameterValueException", "Runtime and Handler are required for a Zip package"
            )
        self._runtime(p.get("Runtime"))
        with self.emu._lock:
            exists = name in self.emu.deployments
        if exists:
            raise LambdaError(409, "ResourceConflictException", f"Function already exist: {name}")
        env = self._environment(p, {})
        fn_code, sha, size = self._code_of(code["ZipFile"])
        try:
            described = self.emu.deploy(name, self._spec(p, fn_code.name, env), create=True)
        except FaasError as exc:
            if exc.status == 409:  # created meanwhile by another request
                raise LambdaError(
                    409, "ResourceConflictException", f"Function already exist: {name}"
                ) from None
            raise
        logging = p.get("LoggingConfig") or {}
        fn = LambdaFunction(
            name=name,
            runtime=p["Runtime"],
            role=p["Role"],
            handler=p["Handler"],
            description=p.get("Description", ""),
            architectures=list(p.get("Architectures") or ["x86_64"]),
            tags=dict(p.get("Tags") or {}),
            env=env,
            code_sha256=sha,
            code_size=size,
            log_format=logging.get("LogFormat", "Text"),
            log_group=logging.get("LogGroup", f"/aws/lambda/{name}"),
            modified=_now(),
            version=described["version"],
        )
        with self._lock:
            self.functions[name] = fn
        return 201, {}, _json(self._configuration(fn, described, region))

    def _get_function(self, p: dict[str, Any], region: str, rid: str) -> tuple[int, dict, bytes]:
        fn, dep = self._function(self._name(p["FunctionName"]), region)
        out: dict[str, Any] = {
            "Configuration": self._configuration(fn, dep, region),
            "Code": {"RepositoryType": "S3", "Location": self._location(fn.name)},
        }
        if fn.tags:
            out["Tags"] = dict(fn.tags)
        return 200, {}, _json(out)

    def _get_function_configuration(
        self, p: dict[str, Any], region: str, rid: str
    ) -> tuple[int, dict, bytes]:
        fn, dep = self._function(self._name(p["FunctionName"]), region)
        return 200, {}, _json(self._configuration(fn, dep, region))

    def _update_function_configuration(
        self, p: dict[str, Any], region: str, rid: str
    ) -> tuple[int, dict, bytes]:
        fn, dep = self._function(self._name(p["FunctionName"]), region)
        if p.get("RevisionId") not in (None, fn.revision):
            raise LambdaError(
                412,
                "PreconditionFailedException",
                "The Revision Id provided does not match the latest Revision Id.",
            )
        self._runtime(p.get("Runtime"))
        env = self._environment(p, fn.env)
        spec = {
            "memory_mb": dep["memory_mb"],
            "timeout_s": dep["timeout_s"],
            "tmp_mb": dep["tmp_mb"],
            **self._spec(p, dep["function"], env),
        }
        # an update retires the instances (next call is cold); a function deleted meanwhile is 404
        described = self.emu.deploy(fn.name, spec, update=True)
        with self._lock:
            fn.env = env
            for key, attr in (("Role", "role"), ("Handler", "handler"), ("Description", "description")):
                if key in p:
                    setattr(fn, attr, p[key])
            if "Runtime" in p:
                fn.runtime = p["Runtime"]
            if "LoggingConfig" in p:
                fn.log_format = p["LoggingConfig"].get("LogFormat", fn.log_format)
                fn.log_group = p["LoggingConfig"].get("LogGroup", fn.log_group)
            fn.version, fn.revision, fn.modified, fn.updating = (
                described["version"],
                str(uuid.uuid4()),
                _now(),
                True,
            )
        return 200, {}, _json(self._configuration(fn, described, region))

    def _update_function_code(self, p: dict[str, Any], region: str, rid: str) -> tuple[int, dict, bytes]:
        fn, dep = self._function(self._name(p["FunctionName"]), region)
        if not p.get("ZipFile"):
            raise LambdaError(400, "InvalidParameterValueException", "ZipFile is required")
        fn_code, sha, size = self._code_of(p["ZipFile"])
        spec = {k: dep[k] for k in ("memory_mb", "timeout_s", "tmp_mb")} | {
            "function": fn_code.name,
            "env": fn.env,
        }
        described = self.emu.deploy(fn.name, spec, update=True)
        with self._lock:
            if p.get("Architectures"):
                fn.architectures = list(p["Architectures"])
            fn.code_sha256, fn.code_size = sha, size
            fn.version, fn.revision, fn.modified, fn.updating = (
                described["version"],
                str(uuid.uuid4()),
                _now(),
                True,
            )
        return 200, {}, _json(self._configuration(fn, described, region))

    def _delete_function(self, p: dict[str, Any], region: str, rid: str) -> tuple[int, dict, bytes]:
        name = self._name(p["FunctionName"])
        self._function(name, region)
        self.emu.delete(name)
        with self._lock:
            self.functions.pop(name, None)
        return 204, {}, b""

    def _list_functions(self, p: dict[str, Any], region: str, rid: str) -> tuple[int, dict, bytes]:
        with self.emu._lock:
            names = sorted(self.emu.deployments)
        start = names.index(p["Marker"]) if p.get("Marker") in names else 0
        size = int(p.get("MaxItems") or 50)
        out = []
        for name in names[start : start + size]:
            try:
                fn, dep = self._function(name, region)
            except LambdaError:
                continue
            out.append(self._configuration(fn, dep, region))
        body: dict[str, Any] = {"Functions": out}
        if start + size < len(names):
            body["NextMarker"] = names[start + size]
        return 200, {}, _json(body)

    def _resource(self, arn: str, region: str) -> LambdaFunction:
        if not arn.startswith("arn:"):
            raise LambdaError(400, "ValidationException", f"Resource must be a function ARN, not {arn!r}")
        return self._function(self._name(arn), region)[0]

    def _tag_resource(self, p: dict[str, Any], region: str, rid: str) -> tuple[int, dict, bytes]:
        fn = self._resource(p["Resource"], region)
        with self._lock:
            fn.tags.update(p["Tags"])
        return 204, {}, b""

    def _untag_resource(self, p: dict[str, Any], region: str, rid: str) -> tuple[int, dict, bytes]:
        fn = self._resource(p["Resource"], region)
        with self._lock:
            for key in p["TagKeys"]:
                fn.tags.pop(key, None)
        return 204, {}, b""

    def _list_tags(self, p: dict[str, Any], region: str, rid: str) -> tuple[int, dict, bytes]:
        fn = self._resource(p["Resource"], region)
        return 200, {}, _json({"Tags": dict(fn.tags)})

    def _invoke(self, p: dict[str, Any], region: str, rid: str) -> tuple[int, dict, bytes]:
        name = self._name(p["FunctionName"])
        if p.get("Qualifier") not in (None, "$LATEST"):
            raise LambdaError(
                404,
                "ResourceNotFoundException",
                f"Function not found: {self._arn(region, name)}:{p['Qualifier']}",
            )
        fn, _ = self._function(name, region)
        raw = p.get("Payload") or b""
        try:
            event = _strict_json(raw) if raw.strip() else {}
        except (ValueError, RecursionError) as exc:
            raise LambdaError(
                400, "InvalidRequestContentException", f"Could not parse request body into json: {exc}"
            ) from None
        kind = p.get("InvocationType") or "RequestResponse"
        if kind == "DryRun":
            return 204, {"X-Amz-Executed-Version": "$LATEST"}, b""
        expected = self._handler_of(name)
        if kind == "Event":
            threading.Thread(target=self._call, args=(fn, name, event, rid, expected), daemon=True).start()
            return 202, {}, b""
        status, payload, error, log = self._call(fn, name, event, rid, expected)
        headers = {"X-Amz-Executed-Version": "$LATEST", "Content-Type": "application/json"}
        if error:
            headers["X-Amz-Function-Error"] = error
        if p.get("LogType") == "Tail":
            headers["X-Amz-Log-Result"] = base64.b64encode(log.encode()[-LOG_TAIL_BYTES:]).decode()
        return status, headers, payload

    def _handler_of(self, name: str) -> str:
        with self.emu._lock:
            dep = self.emu.deployments.get(name)
            if dep is None:  # deleted since the request found it
                raise LambdaError(404, "ResourceNotFoundException", f"Function not found: {name}")
            return f"{dep.code.module}.{dep.code.handler}"

    def _call(
        self, fn: LambdaFunction, name: str, event: Any, rid: str, expected: str
    ) -> tuple[int, bytes, str | None, str]:
        """Run one call; (HTTP status, payload, X-Amz-Function-Error or None, log text)."""
        start = f"START RequestId: {rid} Version: $LATEST\n"
        if fn.handler != expected:
            module = fn.handler.rsplit(".", 1)[0]
            err = {
                "errorMessage": f"Unable to import module '{module}': No module named '{module}'",
                "errorType": "Runtime.ImportModuleError",
                "requestId": rid,
                "stackTrace": [],
            }
            text = f"{start}[ERROR] Runtime.ImportModuleError: {err['errorMessage']}\nEND RequestId: {rid}\n"
            return 200, _json(err), "Unhandled", text + self._report(rid, fn, None, None)
        with self.emu._lock:
            offsets = {i.id: i.log.total for i in self.emu.instances if i.deployment.name == name}
        try:
            status, body = self.emu.invoke(name, event)
        except FaasError as exc:
            if exc.status == 429:
                raise LambdaError(429, "TooManyRequestsException", "Rate Exceeded.") from None
            if exc.status == 404:
                raise LambdaError(404, "ResourceNotFoundException", f"Function not found: {name}") from None
            raise LambdaError(500, "ServiceException", exc.message, kind="Service") from None
        inspector, billing = body.get("inspector") or {}, body.get("billing") or {}
        output = self._output(inspector.get("instance_id"), offsets)
        error = None
        if status == 200:
            payload = _json(body.get("result"))
        else:
            error = "Unhandled"
            payload, line = _function_error(status, body.get("error") or {}, rid)
            output += line
        text = f"{start}{output}END RequestId: {rid}\n" + self._report(rid, fn, inspector, billing)
        return 200, payload, error, text

    def _output(self, instance_id: str | None, offsets: dict[str, int]) -> str:
        """What the instance printed during this call (as far as its log ring still holds it)."""
        with self.emu._lock:
            inst = next((i for i in self.emu.instances if i.id == instance_id), None)
        if inst is None:
            return ""
        fd = inst.proc.stderr.fileno() if inst.proc.stderr else -1
        end = time.monotonic() + 0.05
        with_data = fd >= 0
        while with_data and time.monotonic() < end:  # let the log collector drain the pipe first
            try:
                with_data = bool(select.select([fd], [], [], 0)[0])
            except (OSError, ValueError):
                break
            if with_data:
                time.sleep(0.002)
        text = inst.log.since(offsets.get(inst.id, 0))
        return text if not text or text.endswith("\n") else text + "\n"

    def _report(
        self, rid: str, fn: LambdaFunction, inspector: dict[str, Any] | None, billing: dict[str, Any] | None
    ) -> str:
        """Lambda's REPORT line (tab-separated fields, a trailing tab)."""
        with self.emu._lock:
            dep = self.emu.deployments.get(fn.name)
            memory = dep.memory_mb if dep else 0
            table = self.emu.profile.price_table(memory) if dep else None
        inspector, billing = inspector or {}, billing or {}
        duration = float(inspector.get("handler_s") or 0.0)
        init = float(inspector.get("init_s") or 0.0) if inspector.get("new_instance") else 0.0
        billed_s = float(billing.get("duration_s", duration + init))
        billed = round(billed_seconds(billed_s, table) * 1000) if table else math.ceil(billed_s * 1000)
        fields = [
            f"REPORT RequestId: {rid}",
            f"Duration: {duration * 1000:.2f} ms",
            f"Billed Duration: {billed} ms",
            f"Memory Size: {memory} MB",
        ]
        peak = inspector.get("memory_peak_bytes")
        if peak:
            fields.append(f"Max Memory Used: {math.ceil(peak / MIB)} MB")
        if inspector.get("new_instance"):
            fields.append(f"Init Duration: {init * 1000:.2f} ms")
        return "\t".join(fields) + "\t\n"

    def _location(self, name: str) -> str:
        """GetFunction's Code.Location: the package's URL, signed and valid for 10 minutes (as
        Lambda's presigned S3 URL), so a plain HTTP GET fetches it."""
        expires = int(time.time()) + LOCATION_TTL_S
        query = urlencode({"X-Testbed-Expires": expires, "X-Testbed-Signature": self._sign(name, expires)})
        return f"{self.base_url}/_lambda/packages/{quote(name)}.zip?{query}"

    def _sign(self, name: str, expires: int) -> str:
        return hmac.new(self._location_key, f"{name}\n{expires}".encode(), hashlib.sha256).hexdigest()

    def location_valid(self, name: str, query: str) -> bool:
        """Whether a package request carries a signature of :meth:`_location` still valid."""
        q = parse_qs(query)
        expires, signature = q.get("X-Testbed-Expires", [""])[0], q.get("X-Testbed-Signature", [""])[0]
        if not expires.isdigit() or not 0 <= int(expires) - time.time() <= LOCATION_TTL_S:
            return False
        return hmac.compare_digest(self._sign(name, int(expires)).encode(), signature.encode())

    def package_zip(self, name: str) -> bytes | None:
        """The package of a deployed function (GetFunction's Code.Location)."""
        with self.emu._lock:
            dep = self.emu.deployments.get(name)
            code = dep.code if dep else None
        return package.package(code) if code else None

    def stats(self) -> dict[str, int]:
        with self._lock:
            return dict(self.counts)


def _route(http: dict[str, Any]) -> tuple[str, re.Pattern[str]]:
    uri = http["requestUri"].split("?", 1)[0]
    pattern = re.sub(r"\{(\w+)\+\}", r"(?P<\1>.+)", uri)
    pattern = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern)
    return http["method"], re.compile(pattern.rstrip("/") + "/?")


def _snake(op: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()


def _strict_json(raw: bytes) -> Any:
    """JSON as Lambda reads it: no NaN/Infinity, no number beyond the float range."""

    def constant(name: str) -> None:
        raise ValueError(f"{name} is not a JSON number")

    def finite(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise ValueError(f"number {text[:40]} is out of range")
        return value

    return json.loads(raw, parse_constant=constant, parse_float=finite)


def _json_object(raw: bytes) -> dict[str, Any]:
    try:
        body = _strict_json(raw)
    except (ValueError, RecursionError) as exc:
        raise LambdaError(
            400, "InvalidRequestContentException", f"Could not parse request body into json: {exc}"
        ) from None
    if not isinstance(body, dict):
        raise LambdaError(400, "InvalidRequestContentException", "request body must be a JSON object")
    return body


def _check_supported(op: str, params: dict[str, Any]) -> None:
    """Refuse members the emulator does not model (rather than ignoring them)."""
    allowed = SUPPORTED.get(op)
    if allowed is None:
        return
    for name, value in params.items():
        unused = value in (None, [], {}) if name not in NEUTRAL else value in (None, NEUTRAL[name])
        if (name not in allowed or name in NEUTRAL) and not unused:
            shown = json.dumps(value, default=str)[:120]
            raise LambdaError(
                400,
                "InvalidParameterValueException",
                f"{name}={shown} is not supported by the testbed emulator",
            )


def _typed(text: str, member: Any) -> Any:
    if member.type_name in ("integer", "long"):
        try:
            return int(text)
        except ValueError:
            return text
    if member.type_name == "boolean":
        return text.lower() == "true"
    return text


def _spool_base64(value: Any, out: Any) -> tuple[str, int]:
    """Decode a base64 text (or take bytes) into the file ``out`` in 4 MiB pieces; (SHA-256 of the
    decoded bytes in base64, their length). binascii.Error when it is not base64."""
    digest, size = hashlib.sha256(), 0
    if isinstance(value, str):
        step = 4 << 20  # a multiple of 4 characters: each piece decodes on its own
        pieces = (base64.b64decode(value[i : i + step], validate=True) for i in range(0, len(value), step))
    else:
        pieces = (bytes(value),)
    for piece in pieces:
        digest.update(piece)
        size += len(piece)
        out.write(piece)
    return base64.b64encode(digest.digest()).decode(), size


def _json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), default=str).encode()


def _function_error(status: int, err: dict[str, Any], rid: str) -> tuple[bytes, str]:
    """The payload and log line of a failed call, as Lambda's Python runtime shapes them."""
    if status == 504:
        when = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
        message = f"{when} {rid} {err.get('message', 'Task timed out')}"
        return _json({"errorMessage": message}), message + "\n"
    if status == 502:
        text = (
            "signal: killed"
            if err.get("type") in ("MemoryLimitExceeded", "InstanceKilled")
            else "exit status 1"
        )
        body = {
            "errorType": "Runtime.ExitError",
            "errorMessage": f"RequestId: {rid} Error: Runtime exited with error: {text}",
        }
        return _json(body), f"{body['errorMessage']}\n{body['errorType']}\n"
    kind = err.get("exception") or "Exception"
    trace = [line for line in (err.get("trace") or "").splitlines() if line.strip()]
    body = {
        "errorMessage": err.get("message") or "",
        "errorType": kind,
        "requestId": rid,
        "stackTrace": trace,
    }
    return _json(body), f"[ERROR] {kind}: {body['errorMessage']}\n"


def _from_faas(err: TestbedError) -> LambdaError:
    status = getattr(err, "status", 400)
    if status == 404:
        return LambdaError(404, "ResourceNotFoundException", err.message)
    if status == 409:
        return LambdaError(409, "ResourceConflictException", err.message)
    if status >= 500:
        return LambdaError(500, "ServiceException", err.message, kind="Service")
    return LambdaError(
        400, "InvalidParameterValueException", err.message + (f" ({err.hint})" if err.hint else "")
    )
