"""AWS Lambda through boto3: the same code against Lambda and against the emulator's Lambda API.

Credentials come from boto3's standard chain (environment, ``~/.aws`` profiles, SSO, a credential
process, web identity), checked before any request; the instance role (the EC2 metadata service)
only when ``options.instance_role`` is true, so no metadata service is asked elsewhere. Endpoints
come from botocore's standard settings (``AWS_ENDPOINT_URL_LAMBDA`` and friends) or
``options.endpoint_url``. What a deployment creates, each tagged with the run and its deadline:
the log group ``/aws/lambda/<name>`` (made first, with a one-day retention, so the function's logs
are the run's to delete), the function, and - when ``options.role_arn`` is not given - one
execution role per run with AWSLambdaBasicExecutionRole. Each call is invoked with
``LogType=Tail``; its measurements are Lambda's own REPORT line. A forced cold start changes an
environment variable (Lambda then starts new execution environments); host scope does not exist.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import re
import time
import uuid
from typing import Any, TextIO

from testbed_agent.faas_drivers.base import Call, FunctionSpec, Platform, Resource
from testbed_agent.faas_drivers.target import TAG_RUN, Target, selected
from testbed_services.faas.functions import default_dirs, find_function
from testbed_shared.errors import TestbedError

MIB = 1 << 20
REPORT = re.compile(r"^REPORT RequestId: (?P<rid>\S+)\t(?P<fields>.*)$", re.M)
FIELD = re.compile(r"(?P<key>[A-Za-z ]+): (?P<value>[0-9.]+) (?P<unit>ms|MB)")
TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
    ],
}
BASIC_POLICY = "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
LOG_RETENTION_DAYS = 1
#: seconds to retry CreateFunction while a new role propagates through IAM
ROLE_PROPAGATION_S = 60.0


def parse_report(log: str) -> dict[str, Any]:
    """Lambda's REPORT line as numbers: request_id, duration_s, billed_duration_s,
    memory_size_mb, max_memory_used_mb, init_duration_s (absent fields are missing)."""
    found = REPORT.search(log)
    if not found:
        return {}
    out: dict[str, Any] = {"request_id": found["rid"], "report": found.group(0)}
    keys = {
        "Duration": "duration_s",
        "Billed Duration": "billed_duration_s",
        "Memory Size": "memory_size_mb",
        "Max Memory Used": "max_memory_used_mb",
        "Init Duration": "init_duration_s",
    }
    for m in FIELD.finditer(found["fields"]):
        key = keys.get(m["key"].strip())
        if key:
            value = float(m["value"])
            out[key] = value / 1000.0 if m["unit"] == "ms" else value
    return out


class LambdaDriver(Platform):
    """AWS Lambda (or anything speaking its API) with boto3."""

    name = "aws-lambda"
    profiles = ("aws-lambda",)
    default_region = "us-east-1"
    default_runtime = "python3.12"
    architectures = ("x86_64", "arm64")
    default_memory_mb = 128
    default_timeout_s = 3.0
    delete_order = ("function", "log-group", "iam-role")

    def __init__(self, target: Target, *, dry_run: bool = False, out: TextIO | None = None) -> None:
        super().__init__(target, dry_run=dry_run, out=out)
        self._role: str | None = target.options.get("role_arn")
        if not dry_run:
            self.check_credentials(target)
        self.connect()

    @classmethod
    def vcpus(cls, memory_mb: float, pricing: Any) -> float:
        """One vCPU per 1769 MB, at most 6."""
        return min(6.0, memory_mb / 1769.0)

    @classmethod
    def check_credentials(cls, target: Target) -> None:
        """botocore's own resolution of the credentials, read from the environment and files only."""
        import botocore.exceptions  # noqa: PLC0415 - its SDK only when the platform is used

        where = f"aws-lambda ({target.path})"
        hint = (
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE naming a profile of "
            "~/.aws/credentials or ~/.aws/config (on an EC2 instance with a role: options.instance_role: "
            "true); docs/faas.md, Accounts and permissions"
        )
        try:
            found = _botocore_session(target).get_credentials()
        except botocore.exceptions.ProfileNotFound as exc:
            raise TestbedError(f"{where}: AWS_PROFILE: {exc}", hint=hint) from None
        except botocore.exceptions.BotoCoreError as exc:
            raise TestbedError(f"{where}: the AWS credentials cannot be read: {exc}", hint=hint) from None
        if found is None:
            raise TestbedError(
                f"{where}: no AWS credentials: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set "
                "and no profile of ~/.aws/credentials or ~/.aws/config provides any",
                hint=hint,
            )

    @classmethod
    def sdk_errors(cls) -> tuple[type[BaseException], ...]:
        import botocore.exceptions  # noqa: PLC0415 - its SDK only when the platform is used

        return (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError)

    def connect(self) -> None:
        """The clients (built in a dry run too: they send nothing there)."""
        import boto3  # noqa: PLC0415 - its SDK only when the platform is used
        from botocore.config import Config  # noqa: PLC0415 - its SDK only when the platform is used

        session = boto3.session.Session(
            botocore_session=_botocore_session(self.target), region_name=self.target.region
        )
        config = Config(retries={"mode": "standard", "max_attempts": 4}, read_timeout=905, connect_timeout=10)
        endpoint = self.target.options.get("endpoint_url")
        self.lam = session.client("lambda", endpoint_url=endpoint, config=config)
        self.iam = session.client("iam", config=config)
        self.logs = session.client("logs", config=config)

    # -- description -------------------------------------------------------------------------

    def endpoint(self) -> str:
        return str(self.lam.meta.endpoint_url)

    def _seen(self, resp: dict[str, Any]) -> None:
        """Note when the answering endpoint is the testbed emulator (its responses name its profile)."""
        headers = (resp.get("ResponseMetadata") or {}).get("HTTPHeaders") or {}
        if "x-testbed-emulator" in headers:
            self.standin = headers["x-testbed-emulator"]

    # -- deployment ---------------------------------------------------------------------------

    def role(self) -> str:
        """The execution role: ``options.role_arn``, else one per run, created here."""
        if self._role:
            return self._role
        name = self.target.resource_name("lambda-role")
        self.journal.creating("iam-role", name)
        try:
            resp = self.api(
                "iam:CreateRole",
                self.iam.create_role,
                {"Role": {"Arn": f"arn:aws:iam::000000000000:role/{name}"}},
                RoleName=name,
                AssumeRolePolicyDocument=json.dumps(TRUST),
                Description=f"testbed run {self.target.run_id}: Lambda execution role",
                Tags=[{"Key": k, "Value": v} for k, v in self.target.tags().items()],
            )
        except self.iam.exceptions.EntityAlreadyExistsException:
            resp = self.read("iam:GetRole", self.iam.get_role, RoleName=name)
            self._check_owned(resp["Role"].get("Tags") or [], f"IAM role {name}")
        self.api(
            "iam:AttachRolePolicy", self.iam.attach_role_policy, None, RoleName=name, PolicyArn=BASIC_POLICY
        )
        self._role = resp["Role"]["Arn"]
        return self._role

    def _check_owned(self, tags: list[dict[str, str]] | dict[str, str], what: str) -> None:
        values = tags if isinstance(tags, dict) else {t["Key"]: t["Value"] for t in tags}
        if values.get(TAG_RUN) != self.target.run_id:
            raise TestbedError(f"{what} exists and is not this run's ({TAG_RUN}={values.get(TAG_RUN)!r})")

    def deploy(self, spec: FunctionSpec) -> dict[str, Any]:
        if spec.name in self.deployed and self.deployed[spec.name]["function"] == spec.function:
            return self._update(self.deployed[spec.name], dict(spec.env), spec)  # a memory sweep's change
        name = self.target.resource_name(spec.name)
        code = find_function(spec.function, default_dirs())
        zipped = self.package(code)
        arch = spec.architecture or self.target.architecture
        role = self.role()
        group = f"/aws/lambda/{name}"
        tags = {**self.target.tags(), **spec.tags}
        self.journal.creating("log-group", group)
        with contextlib.suppress(self.logs.exceptions.ResourceAlreadyExistsException):
            self.api("logs:CreateLogGroup", self.logs.create_log_group, None, logGroupName=group, tags=tags)
        self.api(
            "logs:PutRetentionPolicy",
            self.logs.put_retention_policy,
            None,
            logGroupName=group,
            retentionInDays=LOG_RETENTION_DAYS,
        )
        params: dict[str, Any] = {
            "FunctionName": name,
            "Runtime": spec.runtime or self.target.runtime,
            "Role": role,
            "Handler": f"{code.module}.{code.handler}",
            "Code": {"ZipFile": zipped},
            "Description": f"testbed {spec.function} (run {self.target.run_id})",
            "Architectures": [arch],
            "Environment": {"Variables": dict(spec.env)},
            "Tags": tags,
            "LoggingConfig": {"LogFormat": "Text", "LogGroup": group},
            **_sizes(spec),
        }
        if spec.tmp_mb:
            params["EphemeralStorage"] = {"Size": max(512, int(spec.tmp_mb))}
        self.journal.creating("function", name, arn_region=self.target.region)
        config = self._create(params)
        self._wait("lambda:GetFunction (wait active)", "function_active_v2", name)
        self.deployed[spec.name] = {
            "name": name,
            "function": spec.function,
            "memory_mb": config.get("MemorySize", params.get("MemorySize", self.default_memory_mb)),
            "timeout_s": config.get("Timeout", params.get("Timeout", self.default_timeout_s)),
            "architecture": arch,
            "env": dict(spec.env),
        }
        return {
            **self.deployed[spec.name],
            "platform": self.name,
            "code_sha256": config.get("CodeSha256"),
        }

    def _update(
        self, dep: dict[str, Any], env: dict[str, str], spec: FunctionSpec | None = None
    ) -> dict[str, Any]:
        """UpdateFunctionConfiguration of a function this driver deployed: its environment, and the
        memory and timeout ``spec`` gives (Lambda retires the old configuration's instances)."""
        params = {"FunctionName": dep["name"], "Environment": {"Variables": env}, **_sizes(spec)}
        update = self.lam.update_function_configuration
        resp = self.api("lambda:UpdateFunctionConfiguration", update, {}, **params) or {}
        self._seen(resp)
        self._wait("lambda:GetFunction (wait updated)", "function_updated_v2", dep["name"])
        memory, timeout = params.get("MemorySize", dep["memory_mb"]), params.get("Timeout", dep["timeout_s"])
        dep.update(memory_mb=resp.get("MemorySize", memory), timeout_s=resp.get("Timeout", timeout), env=env)
        return {**dep, "platform": self.name, "code_sha256": resp.get("CodeSha256")}

    def _create(self, params: dict[str, Any]) -> dict[str, Any]:
        end = time.monotonic() + ROLE_PROPAGATION_S
        dry = {
            "MemorySize": params.get("MemorySize", self.default_memory_mb),
            "Timeout": params.get("Timeout", self.default_timeout_s),
        }
        while True:
            try:
                resp = self.api("lambda:CreateFunction", self.lam.create_function, dry, **params)
                if resp is not dry:
                    self._seen(resp)
                return resp
            except self.lam.exceptions.ResourceConflictException:
                existing = self.read(
                    "lambda:GetFunction", self.lam.get_function, FunctionName=params["FunctionName"]
                )
                self._check_owned(existing.get("Tags") or {}, f"function {params['FunctionName']}")
                self.delete_named(params["FunctionName"], keep_log_group=True)
            except self.lam.exceptions.InvalidParameterValueException as exc:
                if "cannot be assumed" not in str(exc) or time.monotonic() > end:
                    raise
                time.sleep(3)  # a role made a moment ago is not yet visible to Lambda

    def _wait(self, op: str, waiter: str, name: str) -> None:
        """Poll (boto3's waiter, counted as ``op``) until the function is active or updated."""
        config = {"Delay": 1, "MaxAttempts": 300}
        wait = self.lam.get_waiter(waiter).wait
        self.api(op, wait, None, FunctionName=name, WaiterConfig=config)

    # -- calls --------------------------------------------------------------------------------

    def invoke(self, name: str, event: Any) -> Call:
        dep = self._deployed(name)
        payload = json.dumps(event).encode()
        self.record("lambda:Invoke", {"FunctionName": dep["name"], "LogType": "Tail", "Payload": payload})
        if self.dry_run:
            return Call(200, True, 0.0, inspector={"new_instance": False, "handler_s": 0.0})
        t0 = time.perf_counter()
        resp = self.lam.invoke(FunctionName=dep["name"], LogType="Tail", Payload=payload)
        body = resp["Payload"].read()
        rtt = time.perf_counter() - t0
        self._seen(resp)
        log = base64.b64decode(resp.get("LogResult") or b"").decode("utf-8", "replace")
        report = parse_report(log)
        try:
            result = json.loads(body) if body else None
        except ValueError:
            result = body.decode("utf-8", "replace")
        error = None
        if resp.get("FunctionError"):
            detail = result if isinstance(result, dict) else {}
            error = f"{detail.get('errorType', resp['FunctionError'])}: {detail.get('errorMessage', '')}"
        cold = "init_duration_s" in report
        inspector = {
            "new_instance": cold,
            "handler_s": report.get("duration_s", 0.0),
            "init_s": report.get("init_duration_s", 0.0),
            "cold_start_s": report.get("init_duration_s", 0.0),
            "memory_peak_bytes": int(report.get("max_memory_used_mb", 0) * MIB) or None,
            "memory_limit_bytes": int(dep["memory_mb"]) * MIB,
            "request_id": report.get("request_id"),
        }
        billed = report.get("billed_duration_s", report.get("duration_s", 0.0))
        memory = report.get("memory_size_mb", dep["memory_mb"])
        cost = self.price(memory, billed, dep["architecture"], self.pricing)
        billing = {"duration_s": billed, "memory_mb": memory, "currency": self.pricing.currency, **cost}
        ok = error is None
        return self.charged(
            Call(200 if ok else 500, ok, rtt, result if ok else None, error, inspector, billing, report)
        )

    def cold(self, name: str | None, scope: str = "function") -> dict[str, Any]:
        """A changed environment variable: Lambda starts new execution environments."""
        names = [name] if name else list(self.deployed)
        for n in names:
            dep = self._deployed(n)
            self._update(dep, {**dep["env"], "TESTBED_COLD": uuid.uuid4().hex[:12]})
        return {"retired": len(names), "scope": "function", "host_scope": scope == "host" and "not available"}

    # -- deletion -----------------------------------------------------------------------------

    def delete(self, name: str) -> None:
        dep = self._deployed(name)
        self.delete_named(dep["name"])
        del self.deployed[name]

    def delete_named(self, name: str, keep_log_group: bool = False) -> None:
        """Delete function ``name`` (and its log group) if it exists."""
        with contextlib.suppress(self.lam.exceptions.ResourceNotFoundException):
            self.api("lambda:DeleteFunction", self.lam.delete_function, None, FunctionName=name)
        self.journal.deleted("function", name)
        if keep_log_group:
            return
        group = f"/aws/lambda/{name}"
        with contextlib.suppress(self.logs.exceptions.ResourceNotFoundException):
            self.api("logs:DeleteLogGroup", self.logs.delete_log_group, None, logGroupName=group)
        self.journal.deleted("log-group", group)

    def delete_role(self, name: str) -> None:
        with contextlib.suppress(self.iam.exceptions.NoSuchEntityException):
            listed = self.read(
                "iam:ListAttachedRolePolicies", self.iam.list_attached_role_policies, RoleName=name
            )
            attached = listed["AttachedPolicies"]
            for pol in attached:
                self.api(
                    "iam:DetachRolePolicy",
                    self.iam.detach_role_policy,
                    None,
                    RoleName=name,
                    PolicyArn=pol["PolicyArn"],
                )
            self.api("iam:DeleteRole", self.iam.delete_role, None, RoleName=name)
        self.journal.deleted("iam-role", name)

    # -- teardown -----------------------------------------------------------------------------

    def owned(self, run_id: str | None, now: float | None = None) -> list[Resource]:
        """Resources tagged as this toolkit's: of run ``run_id``, or (None) past their deadline."""
        found: list[Resource] = []
        marker: dict[str, Any] = {}
        while True:
            page = self.read("lambda:ListFunctions", self.lam.list_functions, **marker)
            self._seen(page)
            for fn in page["Functions"]:
                tags = (
                    self.read("lambda:ListTags", self.lam.list_tags, Resource=fn["FunctionArn"]).get("Tags")
                    or {}
                )
                if selected(tags, run_id, now):
                    found.append({"kind": "function", "id": fn["FunctionName"], "tags": tags})
            if not page.get("NextMarker"):
                break
            marker = {"Marker": page["NextMarker"]}
        token: dict[str, Any] = {}
        while True:
            page = self.read(
                "logs:DescribeLogGroups",
                self.logs.describe_log_groups,
                logGroupNamePrefix="/aws/lambda/",
                **token,
            )
            for group in page["logGroups"]:
                arn = group["arn"].removesuffix(":*")
                tags = self.read(
                    "logs:ListTagsForResource", self.logs.list_tags_for_resource, resourceArn=arn
                )
                if selected(tags.get("tags") or {}, run_id, now):
                    found.append({"kind": "log-group", "id": group["logGroupName"], "tags": tags.get("tags")})
            if not page.get("nextToken"):
                break
            token = {"nextToken": page["nextToken"]}
        for role in self.read("iam:ListRoles", self.iam.list_roles, PathPrefix="/")["Roles"]:
            if not role["RoleName"].startswith(f"{self.target.prefix}-"):
                continue
            listed = self.read("iam:ListRoleTags", self.iam.list_role_tags, RoleName=role["RoleName"])["Tags"]
            tags = {t["Key"]: t["Value"] for t in listed}
            if selected(tags, run_id, now):
                found.append({"kind": "iam-role", "id": role["RoleName"], "tags": tags})
        return found

    def remove(self, resource: Resource) -> None:
        kind, ident = resource["kind"], resource["id"]
        if kind == "function":
            self.delete_named(ident, keep_log_group=True)
        elif kind == "log-group":
            with contextlib.suppress(self.logs.exceptions.ResourceNotFoundException):
                self.api("logs:DeleteLogGroup", self.logs.delete_log_group, None, logGroupName=ident)
            self.journal.deleted("log-group", ident)
        elif kind == "iam-role":
            self.delete_role(ident)


def _sizes(spec: FunctionSpec | None) -> dict[str, int]:
    """MemorySize and Timeout (whole seconds) of a spec, where it gives them."""
    sizes = {"MemorySize": int(spec.memory_mb)} if spec and spec.memory_mb else {}
    return sizes | ({"Timeout": math.ceil(spec.timeout_s)} if spec and spec.timeout_s else {})


def _botocore_session(target: Target) -> Any:
    """A botocore session whose credential chain asks no metadata service unless the target says
    the machine has an instance role (``options.instance_role``)."""
    import botocore.session  # noqa: PLC0415 - its SDK only when the platform is used

    session = botocore.session.Session()
    if not target.options.get("instance_role"):
        session.get_component("credential_provider").remove("iam-role")
    return session
