"""Regression tests of issue 12 items 2 and 9: what a function may touch, and hostile API input."""

from __future__ import annotations

import json
import os
import pwd
import socket
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from testbed_services.faas import credentials
from testbed_services.faas.logs import LOG_CAP
from testbed_shared import errors

pytestmark = pytest.mark.integration


def raw(url: str, data: bytes, auth: bool = True) -> tuple[int, dict]:
    """Send ``data`` as the whole HTTP request (with the emulator's bearer token after the request
    line, unless ``auth`` is false); the status and the strictly parsed JSON answer."""
    if auth:
        line, sep, rest = data.partition(b"\r\n")
        data = line + sep + f"Authorization: Bearer {credentials.find(url).token}\r\n".encode() + rest
    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := sock.recv(1 << 16):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), strict_json(body)


def strict_json(data: bytes | str) -> dict:
    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in a response")

    return json.loads(data, parse_constant=refuse)


def put(path: str, body: bytes, headers: str = "") -> bytes:
    length = f"Content-Length: {len(body)}\r\n" if "Content-Length" not in headers else ""
    return f"PUT {path} HTTP/1.1\r\nHost: x\r\n{headers}{length}\r\n".encode() + body


@pytest.fixture(scope="module")
def probe(served):
    served.client.deploy("probe", function="probe", memory_mb=256, env={"SECRET": "hunter2-value"})
    return served


def call(served, event: dict) -> tuple[int, dict]:
    status, body, _ = served.client.invoke("probe", event)
    return status, body


@pytest.mark.parametrize(
    ("path", "spec"),
    [
        ("/functions/x", {"function": "/etc"}),
        ("/functions/x", {"function": str(Path(__file__).parent / "functions" / "probe")}),
        ("/functions/x", {"function": "../functions/probe"}),
        ("/functions/x", {"function": "..%2Fprobe"}),
        ("/functions/x", {"function": ".."}),
        ("/functions/x", {"function": "pro be"}),
        ("/functions/x", {"function": ["probe"]}),
        ("/functions/..%2F..%2Fetc", {"function": "probe"}),
        ("/functions/..", {"function": "probe"}),
        ("/functions/.hidden", {"function": "probe"}),
    ],
)
def test_function_paths_and_traversal_names_rejected(served, path, spec):
    status, body = served.client.request("PUT", path, spec)
    assert status == 400, body
    assert body["error"]["type"] == "ApiError"


def test_symlink_out_of_the_functions_dir_rejected(start_emulator, tmp_path):
    outside = tmp_path / "outside" / "evil"
    outside.mkdir(parents=True)
    (outside / "handler.py").write_text("def handler(e, c):\n    return 'escaped'\n")
    fdir = tmp_path / "fns"
    fdir.mkdir()
    (fdir / "evil").symlink_to(outside)
    emu = start_emulator("--functions-dir", str(fdir), "--cgroup", "none")
    status, body = emu.client.request("PUT", "/functions/evil", {"function": "evil"})
    assert status == 400 and "unknown function" in body["error"]["message"]


def test_function_runs_unprivileged_and_cannot_read_shadow(probe):
    status, body = call(probe, {"op": "whoami"})
    assert status == 200
    uid = pwd.getpwnam("testbed-faas").pw_uid
    assert body["result"]["uid"] == body["result"]["euid"] == uid != 0
    assert body["result"]["groups"] == [] or 0 not in body["result"]["groups"]
    status, body = call(probe, {"op": "read", "path": "/etc/shadow"})
    assert status == 500 and body["error"]["exception"] == "PermissionError", body
    assert probe.client.info()["function_user"] == "testbed-faas"


@pytest.mark.parametrize("where", ["/var/tmp", "/tmp", "/dev/shm"])
def test_writes_to_shared_dirs_do_not_reach_the_host(probe, where):
    target = Path(where) / f"faas-probe-{uuid.uuid4().hex}"
    try:
        status, body = call(probe, {"op": "write", "path": str(target)})
        assert not target.exists(), f"{target} reached the host"
    finally:
        target.unlink(missing_ok=True)
    assert status == 200, body  # the function has its own private copy of these directories


@pytest.mark.parametrize("path", ["/etc/faas-probe", "/work/faas-probe", "/root/faas-probe"])
def test_host_is_read_only_to_functions(probe, path):
    path = f"{path}-{uuid.uuid4().hex}"
    try:
        status, body = call(probe, {"op": "write", "path": path})
        assert not Path(path).exists()
    finally:
        Path(path).unlink(missing_ok=True)  # had the test failed, leave nothing behind
    assert status == 500 and body["error"]["exception"] in ("OSError", "PermissionError", "FileNotFoundError")


def test_root_home_hidden(probe):
    status, body = call(probe, {"op": "read", "path": "/root/.bashrc"})
    assert status == 500 and body["error"]["exception"] in ("FileNotFoundError", "PermissionError")


def test_info_redacts_environment_values(probe):
    text = json.dumps(probe.client.info())
    assert "hunter2-value" not in text
    assert probe.client.info()["functions"]["probe"]["env"] == {"SECRET": "<redacted>"}
    _status, body = call(probe, {"op": "env"})
    assert body["result"]["secret"] == "hunter2-value", "the function itself still gets it"


@pytest.mark.parametrize(
    "spec",
    [
        {"function": "calcs", "keep_alive_s": float("nan")},
        {"function": "calcs", "keep_alive_s": float("inf")},
        {"function": "calcs", "timeout_s": float("nan")},
        {"function": "calcs", "memory_mb": True},
        {"function": "calcs", "env": ["A=1"]},
        {"function": "calcs", "env": {"A": {"nested": 1}}},
        {"function": "calcs", "tmp_mb": "lots"},
    ],
)
def test_bad_deployment_values_rejected(served, spec):
    status, body = served.client.request("PUT", "/functions/bad", spec)
    assert status == 400, body


@pytest.mark.parametrize(
    "request_bytes",
    [
        put("/functions/m", b"{not json"),
        put("/functions/m", b"\xff\xfe{}"),
        put("/functions/m", b'{"keep_alive_s": NaN}'),
        put("/functions/m", b"[" * 100_000 + b"]" * 100_000),
        put("/functions/m", b"{}", "Content-Length: abc\r\n"),
        put("/functions/m", b"{}", "Content-Length: -5\r\n"),
        b"POST /cold HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n[]",
        b'POST /functions/probe/invoke HTTP/1.1\r\nHost: x\r\nContent-Length: 9\r\n\r\n{"a": 1e9',
        b"POST /functions/probe/invoke HTTP/1.1\r\nHost: x\r\nContent-Length: 4400\r\n\r\n" + b"9" * 4400,
    ],
)
def test_malformed_bodies_get_400_json(probe, request_bytes):
    status, body = raw(probe.url, request_bytes)
    assert status == 400, body
    assert body["status"] == "error" and body["error"]["message"]


def test_non_finite_result_is_an_error_not_invalid_json(probe):
    status, body = raw(
        probe.url,
        b'POST /functions/probe/invoke HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\n\r\n{"op": "nan"}',
    )
    assert status == 500 and body["error"]["type"] == "FunctionError"
    assert "JSON" in body["error"]["message"] or "float" in body["error"]["message"]


def test_function_output_is_capped(probe):
    status, _ = call(probe, {"op": "print", "n": 8 * LOG_CAP})
    assert status == 200
    time.sleep(0.5)  # the collector drains the pipe asynchronously
    inst = next(i for i in probe.client.info()["instances"] if i["function"] == "probe")
    assert inst["log_bytes"] >= 8 * LOG_CAP and inst["log_truncated_bytes"] >= 7 * LOG_CAP
    status, logs = probe.client.request("GET", "/functions/probe/logs")
    text = logs[inst["id"]]
    assert status == 200 and text.startswith("[... ") and "bytes truncated ...]" in text
    assert len(text) <= LOG_CAP + 100
    assert _disk_bytes(probe) < 8 * LOG_CAP, "function output is not written to an uncapped file"


def _disk_bytes(served) -> int:
    state = Path(served.log).parent / "state"
    total = 0
    for root, _dirs, files in os.walk(state):
        if os.path.ismount(root):
            _dirs.clear()
            continue
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files if not f.endswith(".img"))
    return total


def test_instance_directories_removed_when_reclaimed(served):
    c = served.client
    c.deploy("short", function="calcs", memory_mb=128, keep_alive_s=0.3)
    assert c.invoke("short", {"array_size": 2, "function_calls": 2})[0] == 200
    state = next((Path(served.log).parent / "state").glob("emu-*"))
    end = time.monotonic() + 10
    while time.monotonic() < end:  # the reaper retires an instance just after taking it out of the pool
        live = {i["id"] for i in c.info()["instances"]}
        dirs = {p.name for p in state.glob("i-*")}
        if dirs <= live and not any(i["function"] == "short" for i in c.info()["instances"]):
            break
        time.sleep(0.1)
    assert dirs <= live, f"directories of reclaimed instances left: {dirs - live}"


# -- issue 40 finding 1: no way from a local caller to root ---------------------------------------

#: the unprivileged local user the red team acts as
NOBODY = 65534

SITECUSTOMIZE = """import os
with open(os.path.join({marks!r}, "py-%d" % os.getpid()), "w") as fh:
    fh.write(str(os.getuid()))
"""

PRELOAD_C = r"""
#include <stdio.h>
#include <unistd.h>
__attribute__((constructor)) static void testbed_red_team(void) {
    char path[512];
    snprintf(path, sizeof path, "%s/ld-%d", MARKS, (int)getpid());
    FILE *fh = fopen(path, "w");
    if (fh) { fprintf(fh, "%d", (int)getuid()); fclose(fh); }
}
"""

#: what the unprivileged user runs (the system Python, standard library only): each vector is
#: (method, path, headers, body); it prints the statuses it got and the bodies of errors
ATTACKER = r"""
import json, sys, urllib.error, urllib.request
url, plan = sys.argv[1], json.load(open(sys.argv[2]))
out = []
for method, path, headers, body in plan:
    if method == "READ":  # a file the caller tries to read: [0, {}, text] or [errno, {}, error]
        try:
            with open(path) as fh:
                out.append([0, {}, fh.read(400)])
        except OSError as exc:
            out.append([exc.errno, {}, str(exc)])
        continue
    data = body.encode() if isinstance(body, str) else None
    req = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=120) as resp:
            out.append([resp.status, dict(resp.headers), resp.read().decode("utf-8", "replace")[:400]])
    except urllib.error.HTTPError as exc:
        out.append([exc.code, dict(exc.headers), exc.read().decode("utf-8", "replace")[:400]])
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def red_team(tmp_path_factory):
    """A payload directory (sitecustomize.py, an LD_PRELOAD library) and a directory where any
    process that runs the payload leaves a file holding its uid; both under /tmp, so a process that
    runs before the sandbox (or outside it) reaches them."""
    import shutil
    import subprocess
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="testbed-faas-redteam-", dir="/tmp"))
    try:
        base.chmod(0o755)
        marks, payload = base / "marks", base / "payload"
        marks.mkdir()
        marks.chmod(0o1777)
        payload.mkdir()
        (payload / "sitecustomize.py").write_text(SITECUSTOMIZE.format(marks=str(marks)))
        src = base / "preload.c"
        src.write_text(PRELOAD_C)
        cc = shutil.which("cc") or shutil.which("gcc")
        assert cc, "a C compiler is needed for the LD_PRELOAD vector (build-essential)"
        subprocess.run(
            [cc, "-shared", "-fPIC", f'-DMARKS="{marks}"', "-o", str(payload / "red.so"), str(src)],
            check=True,
            timeout=120,
        )
        for p in payload.iterdir():
            p.chmod(0o755)
        (base / "attacker.py").write_text(ATTACKER)
        (base / "attacker.py").chmod(0o644)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _as_nobody(red_team: Path, url: str, plan: list) -> list:
    """Run ``plan`` as the unprivileged user (setpriv); the answers it got."""
    import subprocess

    plan_file = red_team / f"plan-{uuid.uuid4().hex}.json"
    plan_file.write_text(json.dumps(plan))
    plan_file.chmod(0o644)
    argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
            "/usr/bin/python3", "-I", str(red_team / "attacker.py"), url, str(plan_file)]  # fmt: skip
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd="/",
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def _uids_that_ran(red_team: Path) -> list[int]:
    return [int(p.read_text() or -1) for p in (red_team / "marks").iterdir()]


def _zip_b64(name: str) -> str:
    import base64

    from testbed_services.faas import package
    from testbed_services.faas.functions import default_dirs, find_function

    return base64.b64encode(package.package(find_function(name, default_dirs()))).decode()


def _deploy_invoke(name: str, env: dict) -> list:
    spec = json.dumps({"function": "calcs", "memory_mb": 128, "env": env})
    json_headers = {"Content-Type": "application/json"}
    return [
        ["PUT", f"/functions/{name}", json_headers, spec],
        ["POST", f"/functions/{name}/invoke", json_headers, json.dumps({"level": 1})],
    ]


def _lambda_create_invoke(name: str, env: dict, authorization: str) -> list:
    body = json.dumps(
        {
            "FunctionName": name,
            "Runtime": "python3.12",
            "Role": "arn:aws:iam::123456789012:role/x",
            "Handler": "handler.handler",
            "Code": {"ZipFile": _zip_b64("calcs")},
            "Environment": {"Variables": env},
        }
    )
    headers = {
        "Content-Type": "application/json",
        "X-Amz-Date": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
        "Authorization": authorization,
    }
    return [
        ["POST", "/2015-03-31/functions", headers, body],
        ["POST", f"/2015-03-31/functions/{name}/invocations", headers, "{}"],
    ]


FORGED = (
    "AWS4-HMAC-SHA256 Credential=X/{day}/us-east-1/lambda/aws4_request, "
    "SignedHeaders=host;x-amz-date, Signature=" + "0" * 64
)


def test_a_local_user_cannot_run_code_as_root(served, red_team):
    """Issue 40 finding 1, as the red team did it: an unprivileged local user deploys ``calcs``
    with PYTHONPATH (a sitecustomize.py) or LD_PRELOAD through the emulator's own API, and with
    LD_PRELOAD through the Lambda API under a made-up SigV4 header, then invokes. No payload may
    run as uid 0; every attempt is refused with the API's own error shape, never a traceback."""
    payload = red_team / "payload"
    day = time.strftime("%Y%m%d", time.gmtime())
    vectors = {
        "PYTHONPATH": {"PYTHONPATH": str(payload)},
        "LD_PRELOAD": {"LD_PRELOAD": str(payload / "red.so")},
        "LD_LIBRARY_PATH+LD_PRELOAD": {"LD_LIBRARY_PATH": str(payload), "LD_PRELOAD": "red.so"},
        "PYTHONHOME": {"PYTHONHOME": str(payload)},
    }
    plan = []
    for i, env in enumerate(vectors.values()):
        plan += _deploy_invoke(f"rt{i}", env)
        plan += _lambda_create_invoke(f"rtl{i}", env, FORGED.format(day=day))
    answers = _as_nobody(red_team, served.url, plan)
    ran = _uids_that_ran(red_team)
    assert 0 not in ran, f"a payload ran as root: uids {ran}; answers {[a[0] for a in answers]}"
    own = [a for (m, p, *_), a in zip(plan, answers, strict=True) if not p.startswith("/2015")]
    lam = [a for (m, p, *_), a in zip(plan, answers, strict=True) if p.startswith("/2015")]
    assert {a[0] for a in own} == {401}, [a[:3:2] for a in own]
    assert all(json.loads(a[2])["error"]["type"] == "Unauthorized" for a in own)
    assert {a[0] for a in lam} == {403}, [a[:3:2] for a in lam]
    for _status, headers, body in lam:
        kind = {k.lower(): v for k, v in headers.items()}["x-amzn-errortype"]
        assert kind == "UnrecognizedClientException", (kind, body)
        assert json.loads(body) == {"message": "The security token included in the request is invalid."}
    assert not any("Traceback" in a[2] for a in answers)


def test_red_team_as_an_unprivileged_user(served, red_team):
    """The wider round of issue 40: an unprivileged local user tries the emulator's own API
    without, with a wrong and with a malformed token, path spellings, the key service without its
    capability, the Lambda API's side doors (stats, package URLs), unsigned, forged, malformed and
    query-string signatures, a large forged upload, and reading the credentials. Every try is a
    clean refusal; no traceback, no payload runs, no secret is on a command line."""
    from testbed_services.faas import credentials

    creds = credentials.find(served.url)
    index = credentials.index_dir() / f"port-{urlsplit(served.url).port}.json"
    secrets_file = json.loads(index.read_text())["credentials"]
    day, now = time.strftime("%Y%m%d", time.gmtime()), time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    lookalike = f"AWS4-HMAC-SHA256 Credential=TBEMUAAAAAAAAAAAAAAA/{day}/eu-west-1/lambda/aws4_request, " + (
        f"SignedHeaders=host;x-amz-date, Signature={'1' * 64}"
    )
    spec = json.dumps({"function": "calcs", "env": {"PYTHONPATH": str(red_team / "payload")}})
    big = json.dumps({"FunctionName": "big", "Code": {"ZipFile": "A" * (2 << 20)}})
    query_auth = (
        f"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=X%2F{day}%2Fus-east-1%2Flambda%2Faws4_request"
        f"&X-Amz-Date={now}&X-Amz-SignedHeaders=host&X-Amz-Signature={'0' * 64}"
    )
    json_h = {"Content-Type": "application/json"}
    forged = {"Authorization": FORGED.format(day=day), "X-Amz-Date": now}
    fns, signed_url = (
        "/2015-03-31/functions/",
        "/_lambda/packages/calcs.zip?X-Testbed-Expires=9999999999&X-Testbed-Signature=00",
    )
    unauthorized, denied, eacces = (401, "Unauthorized"), (403, None), (13, None)
    missing, unknown = (403, "MissingAuthenticationTokenException"), (403, "UnrecognizedClientException")
    incomplete = (400, "IncompleteSignatureException")
    tries = [
        (["GET", "/info", {}, None], unauthorized),
        (["GET", "/info", {"Authorization": "Bearer wrong"}, None], unauthorized),
        (["GET", "/info", {"Authorization": "Bearer "}, None], unauthorized),
        (["GET", "/info", {"Authorization": "bearer " + "x" * 8000}, None], unauthorized),
        (["GET", "/info", {"Authorization": "Basic dGVzdDp0ZXN0"}, None], unauthorized),
        (["GET", f"/info?token={'x' * 43}", {}, None], unauthorized),
        (["GET", "//info", {}, None], unauthorized),
        (["GET", "/%69nfo", {}, None], unauthorized),
        (["GET", "/functions", {}, None], unauthorized),
        (["PUT", "/functions/rt", json_h, spec], unauthorized),
        (["POST", "/functions/probe/invoke", json_h, "{}"], unauthorized),
        (["POST", "/cold", json_h, "{}"], unauthorized),
        (["DELETE", "/functions/probe", {}, None], unauthorized),
        (["GET", "/functions/probe/logs", {}, None], unauthorized),
        (["GET", "/keys/k1", {}, None], unauthorized),
        (["GET", "/ks/not-the-capability/keys/k1", {}, None], unauthorized),
        (["GET", "/_lambda/stats", {}, None], unauthorized),
        (["GET", "/_lambda/packages/calcs.zip", {}, None], denied),
        (["GET", signed_url, {}, None], denied),
        (["GET", fns, {}, None], missing),
        (["GET", fns + query_auth, {}, None], missing),
        (["GET", fns, forged, None], unknown),
        (["GET", fns, {"Authorization": lookalike, "X-Amz-Date": now}, None], unknown),
        (["GET", fns, {"Authorization": "AWS4-HMAC-SHA256 x"}, None], incomplete),
        (["GET", fns, {"Authorization": forged["Authorization"]}, None], incomplete),
        (["POST", "/2015-03-31/functions", {**forged, **json_h}, big], unknown),
        (["READ", str(index), {}, None], eacces),
        (["READ", secrets_file, {}, None], eacces),
        (["READ", f"/proc/{served.proc.pid}/environ", {}, None], eacces),
    ]
    for i, env in enumerate(({"LD_PRELOAD": str(red_team / "payload" / "red.so")}, {"GLIBC_TUNABLES": "x"})):
        for step in _deploy_invoke(f"rtc{i}", env):
            tries.append((step, unauthorized))
        for step in _lambda_create_invoke(f"rtcl{i}", env, FORGED.format(day=day)):
            tries.append((step, (403, "UnrecognizedClientException")))
    answers = _as_nobody(red_team, served.url, [plan for plan, _ in tries])
    clean = tracebacks = 0
    wrong = []
    for (step, (status, kind)), (got, raw_headers, body) in zip(tries, answers, strict=True):
        headers = {k.lower(): v for k, v in raw_headers.items()}
        shape = kind is None or (
            json.loads(body)["error"]["type"] == kind
            if status == 401
            else headers.get("x-amzn-errortype") == kind
        )
        if got == status and shape:
            clean += 1
        else:
            wrong.append((step[:2], got, body[:120]))
        tracebacks += got >= 500 or "Traceback" in body
    foreign = _uids_that_ran(red_team)
    cmdlines = b"".join(_read(p / "cmdline") for p in Path("/proc").iterdir() if p.name.isdigit())
    leaked = [
        name
        for name, value in (("token", creds.token), ("secret", creds.secret_access_key))
        if value.encode() in cmdlines
    ]
    print(
        f"\nred team (unprivileged caller): {len(tries)} tries, {clean} clean refusals, "
        f"{tracebacks} tracebacks, {len(foreign)} foreign exec, secrets on command lines: {leaked or 'none'}"
    )
    assert not wrong, wrong
    assert tracebacks == 0 and not foreign and not leaked


@pytest.mark.parametrize(
    "env",
    [
        {"PYTHONPATH": "/tmp"},
        {"PYTHONSTARTUP": "/tmp/x.py"},
        {"LD_PRELOAD": "/tmp/x.so"},
        {"LD_AUDIT": "/tmp/x.so"},
        {"GLIBC_TUNABLES": "glibc.malloc.mxfast=0"},
        {"PATH": "/tmp"},
        {"BASH_ENV": "/tmp/x.sh"},
        {"NODE_OPTIONS": "--require /tmp/x.js"},
        {"bad name": "1"},
        {"NUL": "a\x00b"},
    ],
    ids=lambda env: next(iter(env)),
)
def test_loader_and_interpreter_variables_are_refused(served, red_team, env):
    """Even the emulator's own authenticated callers cannot hand a loader, interpreter or path
    variable to a function: 400 naming the variable, nothing deployed, nothing run."""
    status, body = served.client.request("PUT", "/functions/envrt", {"function": "calcs", "env": env})
    assert status == 400, body
    assert "env" in body["error"]["message"], body
    assert "envrt" not in served.client.info()["functions"]
    assert 0 not in _uids_that_ran(red_team)


def test_worker_starts_with_a_clean_fixed_environment(served):
    """The worker is exec'd with the emulator's fixed environment: the deployment's variables are
    applied inside the worker after it dropped privileges (the function sees them), never in the
    environment it was started with, nor on its command line (any local user can read those)."""
    served.client.deploy("cleanenv", function="probe", memory_mb=256, env={"SECRET": "s3cr3t-value"})
    status, body, _ = served.client.invoke("cleanenv", {"op": "env"})
    assert status == 200 and body["result"]["secret"] == "s3cr3t-value"
    inst = next(i for i in served.client.info()["instances"] if i["function"] == "cleanenv")
    workers = [
        p for p in Path("/proc").iterdir() if p.name.isdigit() and inst["id"].encode() in _read(p / "environ")
    ]
    assert workers, "the instance's worker process"
    for proc in workers:
        environ = dict(item.split(b"=", 1) for item in _read(proc / "environ").split(b"\0") if b"=" in item)
        assert b"SECRET" not in environ and b"s3cr3t-value" not in _read(proc / "cmdline")
        assert not [k for k in environ if k.startswith((b"LD_", b"PYTHON"))], sorted(environ)
        assert environ[b"PATH"].split(b":")[-1] == b"/bin", environ[b"PATH"]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_binding_beyond_loopback_needs_a_flag(tmp_path):
    """``faas serve --host 0.0.0.0`` without ``--allow-remote`` stops with one line before it
    binds; the check accepts loopback names and addresses and, with the flag, warns."""
    import subprocess
    import sys

    from testbed_services.faas.cli import listen_warning

    argv = [sys.executable, "-m", "testbed_agent", "faas", "serve", "--host", "0.0.0.0", "--port", "0",
            "--state-dir", str(tmp_path / "state"), "--cgroup", "none"]  # fmt: skip
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert "--allow-remote" in lines[0] and "0.0.0.0" in lines[0], lines
    assert "Traceback" not in done.stderr and not (tmp_path / "state").exists()
    for host in ("127.0.0.1", "127.8.9.10", "::1", "localhost"):
        assert listen_warning(host, allow_remote=False) is None
    for host in ("0.0.0.0", "::", "10.0.0.5"):
        with pytest.raises(errors.TestbedError, match="--allow-remote"):
            listen_warning(host, allow_remote=False)
        assert "WARNING" in listen_warning(host, allow_remote=True)


def test_a_copy_of_the_credentials_lets_another_user_in(served):
    """A client that is not the emulator's user (or on another machine) is given a copy of the
    credentials file in TESTBED_FAAS_CREDENTIALS: a 0600 copy it owns lets it in; a copy others
    may read is refused with one line, before anything is sent."""
    import shutil
    import subprocess
    import sys
    import tempfile

    index = credentials.index_dir() / f"port-{urlsplit(served.url).port}.json"
    base = Path(tempfile.mkdtemp(prefix="testbed-faas-copy-", dir="/tmp"))
    try:
        base.chmod(0o755)
        copy = base / "credentials.json"
        shutil.copyfile(json.loads(index.read_text())["credentials"], copy)
        os.chown(copy, NOBODY, NOBODY)
        copy.chmod(0o600)
        argv = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                sys.executable, "-m", "testbed_agent", "faas", "info", "--url", served.url]  # fmt: skip
        env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", credentials.ENV: str(copy)}

        def run(env: dict[str, str]) -> subprocess.CompletedProcess:
            return subprocess.run(
                argv, capture_output=True, text=True, timeout=120, env=env, cwd="/", check=False
            )

        done = run(env)
        assert done.returncode == 0, done.stderr[-2000:]
        assert json.loads(done.stdout)["emulator_id"] == served.client.info()["emulator_id"]
        copy.chmod(0o644)
        done = run(env)
        assert done.returncode != 0 and "not the emulator's credentials file" in done.stderr, done.stderr
        assert "readable or writable by other users" in done.stderr
        done = run({k: v for k, v in env.items() if k != credentials.ENV})
        assert done.returncode != 0 and "401" in done.stderr and "TESTBED_FAAS_CREDENTIALS" in done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 2  # error, hint
    finally:
        shutil.rmtree(base, ignore_errors=True)
