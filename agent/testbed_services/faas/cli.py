"""testbed-agent faas: run the emulator, deploy and invoke functions, force cold starts."""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import signal
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from testbed_services.faas import DEFAULT_PORT, credentials
from testbed_services.faas.client import FaasClient
from testbed_shared.atomic import write_atomically
from testbed_shared.errors import TestbedError

DEFAULT_URL = f"http://127.0.0.1:{DEFAULT_PORT}"


def add_parser(subparsers: Any) -> None:
    """Register ``faas`` and its subcommands on the agent's CLI."""
    faas = subparsers.add_parser(
        "faas", help="local FaaS emulator (serve, deploy, invoke, cold, info)", description=__doc__
    )
    sub = faas.add_subparsers(dest="faas_command", metavar="SUBCOMMAND", required=True)

    serve = sub.add_parser("serve", help="run the emulator (HTTP API) in the foreground")
    serve.add_argument(
        "--profile", default="aws-lambda", help="profile name or YAML path (default aws-lambda)"
    )
    serve.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to bind (default 127.0.0.1; an address beyond loopback needs --allow-remote)",
    )
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow --host beyond loopback: other machines may then call the emulator (with its "
        "credentials), which runs functions on this one; prints a warning",
    )
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0 picks one)"
    )
    serve.add_argument(
        "--state-dir",
        type=Path,
        help="instance files and /tmp images "
        "(default /var/lib/testbed-faas as root, else ~/.cache/testbed-faas)",
    )
    serve.add_argument(
        "--functions-dir",
        type=Path,
        action="append",
        default=[],
        help="extra directory of functions (repeatable; workloads/faas/functions always)",
    )
    serve.add_argument(
        "--profiles-dir", type=Path, help="directory of profiles (default workloads/faas/profiles)"
    )
    serve.add_argument(
        "--keep-alive",
        type=float,
        help="idle seconds before an instance is reclaimed (default: the profile's)",
    )
    serve.add_argument(
        "--max-concurrency", type=int, default=100, help="concurrent calls before 429 (default 100)"
    )
    serve.add_argument(
        "--max-uploads",
        type=int,
        default=2,
        help="Lambda uploads (CreateFunction, UpdateFunctionCode) processed at once; more are "
        "answered 429 TooManyRequestsException (default 2)",
    )
    serve.add_argument(
        "--cgroup",
        choices=("auto", "v2", "v1", "none"),
        default="auto",
        help="cgroup version for instance limits (default auto: v2 where usable, else v1)",
    )
    serve.add_argument(
        "--cpu-boost",
        action="store_true",
        help="largest CPU weight for instances against other work on the machine (tier fidelity runs)",
    )
    serve.add_argument(
        "--fill-idle-cpus",
        action="store_true",
        help="keep every CPU busy with a spinning process of the smallest CPU weight, so a vCPU that "
        "runs slow after halting does not slow the throttled tiers (a user-space idle=poll; "
        "tier fidelity runs on such VMs; every CPU then reads 100%% busy)",
    )
    serve.add_argument("--seed", type=int, help="seed of the drawn container and host lifetimes")
    serve.add_argument(
        "--time-scale",
        type=float,
        default=1.0,
        metavar="K",
        help="run the platform's clock K times faster: lifetimes, host ages, keep-alives and modelled "
        "cold-start seconds are divided by K (default 1; reduced reruns of retention studies)",
    )
    serve.add_argument("--url-file", type=Path, help="write the listening URL to this file once ready")
    serve.add_argument("--verbose", action="store_true", help="log every HTTP request")
    serve.set_defaults(func=_serve)

    for name, helptext in (
        ("deploy", "deploy or update a function (an update forces cold starts)"),
        ("invoke", "call a function once and print the response"),
        ("cold", "retire instances: the next calls start cold"),
        ("info", "print the emulator's profile, limits, hosts and instances"),
        ("credentials", "print the emulator's Lambda API credentials (for boto3 or the AWS CLI)"),
    ):
        p = sub.add_parser(name, help=helptext)
        p.add_argument(
            "--url",
            default=os.environ.get("TESTBED_FAAS_URL", DEFAULT_URL),
            help=f"emulator URL (default $TESTBED_FAAS_URL or {DEFAULT_URL})",
        )
        if name in ("deploy", "invoke"):
            p.add_argument("name", help="function name")
        if name == "deploy":
            p.add_argument("--function", help="code: a name under functions/ or a directory (default NAME)")
            p.add_argument("--memory", type=int, help="memory in MB (default: the profile's)")
            p.add_argument("--timeout", type=float, help="timeout in s")
            p.add_argument("--keep-alive", type=float, help="keep-alive in s for this function")
            p.add_argument("--tmp", type=int, help="/tmp size in MB (disk kinds)")
            p.add_argument(
                "--env", action="append", default=[], metavar="K=V", help="environment (repeatable)"
            )
        if name == "invoke":
            p.add_argument("--event", default="{}", help="event JSON (default {}); @FILE reads a file")
        if name == "cold":
            p.add_argument("--function", help="only this function (default: all)")
            p.add_argument("--host", action="store_true", help="host cold: fresh emulated hosts too")
        if name == "credentials":
            p.add_argument(
                "--format",
                choices=("env", "json"),
                default="env",
                help="env: export lines for a shell (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
                "AWS_ENDPOINT_URL_LAMBDA); json: the access key pair and the URL (default env)",
            )
        p.set_defaults(func=globals()[f"_{name}"])

    prof = sub.add_parser("profiles", help="list the platform profiles")
    prof.add_argument(
        "--profiles-dir", type=Path, help="directory of profiles (default workloads/faas/profiles)"
    )
    prof.set_defaults(func=_profiles)


def _serve(args: argparse.Namespace) -> int:
    from testbed_services.faas.emulator import Emulator, log  # noqa: PLC0415 - CLI start-up: a command imports what it runs (the emulator loads only for `faas serve`)
    from testbed_services.faas.functions import default_dirs  # noqa: PLC0415 - CLI start-up: a command imports what it runs (the emulator loads only for `faas serve`)
    from testbed_services.faas.profiles import load_profile  # noqa: PLC0415 - CLI start-up: a command imports what it runs (the emulator loads only for `faas serve`)
    from testbed_services.faas.server import FaasServer  # noqa: PLC0415 - CLI start-up: a command imports what it runs (the emulator loads only for `faas serve`)

    remote = listen_warning(args.host, args.allow_remote)
    if args.max_uploads < 1:
        raise TestbedError(f"--max-uploads must be at least 1, not {args.max_uploads}")
    # The emulator shares code, mount points and instance stores with the unprivileged function user:
    # a caller's umask (the agent runs with 077) must not make them unreadable to it.
    os.umask(0o022)
    profile = load_profile(args.profile, args.profiles_dir)
    state = args.state_dir or (
        Path("/var/lib/testbed-faas") if os.geteuid() == 0 else Path.home() / ".cache" / "testbed-faas"
    )
    emu = Emulator(
        profile,
        state,
        function_dirs=[*args.functions_dir, *default_dirs()],
        keep_alive_s=args.keep_alive,
        max_concurrency=args.max_concurrency,
        cgroup=args.cgroup,
        seed=args.seed,
        cpu_boost=args.cpu_boost,
        fill_idle_cpus=args.fill_idle_cpus,
        time_scale=args.time_scale,
    )
    try:
        server = FaasServer(emu, args.host, args.port, verbose=args.verbose, max_uploads=args.max_uploads)
    except OSError as exc:
        emu.shutdown()
        raise TestbedError(
            f"cannot listen on {args.host}:{args.port}: {exc.strerror}",
            hint="pick another --port (0 picks a free one)",
        ) from exc
    try:
        secrets_file = credentials.write(server.credentials, emu.state_dir)
    except (OSError, TestbedError) as exc:
        server.server_close()
        emu.shutdown()
        raise TestbedError(f"cannot write the emulator's credentials: {exc}") from exc
    if remote:
        log(remote)
    if emu.reclaimed:
        log(f"cleaned up after {emu.reclaimed} emulator(s) that had died without shutting down")
    for warning in emu.warnings():
        log(f"WARNING: {warning}")
    log(
        f"listening on {server.url} (profile {profile.name}, cgroup {emu.backend.version}, "
        f"limits {'enforced' if emu.limits_enforced else 'NOT enforced'}); credentials in {secrets_file}"
    )
    if args.url_file:
        write_atomically(args.url_file, server.url + "\n", what="--url-file")

    def stop(signum: int, frame: object) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        credentials.forget(server.credentials)
        emu.shutdown()
        log("stopped")
    return 0


def listen_warning(host: str, allow_remote: bool) -> str | None:
    """None for a loopback address; for any other, the warning to print with ``--allow-remote``,
    else a TestbedError (the emulator runs functions on this machine for its callers)."""
    try:
        addresses = {info[4][0] for info in socket.getaddrinfo(host, None)}
        loopback = bool(addresses) and all(
            ipaddress.ip_address(a.split("%")[0]).is_loopback for a in addresses
        )
    except (OSError, ValueError):
        loopback = False
    if loopback:
        return None
    if not allow_remote:
        raise TestbedError(
            f"--host {host} is beyond loopback: other machines could call the emulator, which runs "
            "functions on this one; add --allow-remote to mean it",
            hint="keep the default 127.0.0.1 unless the callers are elsewhere",
        )
    return (
        f"WARNING: listening on {host}, beyond loopback (--allow-remote): any machine that reaches "
        "this port and holds the emulator's credentials runs functions here"
    )


def _deploy(args: argparse.Namespace) -> int:
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep:
            raise TestbedError(f"--env {item!r}: expected K=V")
        env[key] = value
    spec = {
        "function": args.function,
        "memory_mb": args.memory,
        "timeout_s": args.timeout,
        "keep_alive_s": args.keep_alive,
        "tmp_mb": args.tmp,
        "env": env,
    }
    _print(FaasClient(args.url).deploy(args.name, **{k: v for k, v in spec.items() if v is not None}))
    return 0


def _invoke(args: argparse.Namespace) -> int:
    text = Path(args.event[1:]).read_text() if args.event.startswith("@") else args.event
    try:
        event = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TestbedError(f"--event is not JSON: {exc}") from exc
    status, body, rtt = FaasClient(args.url).invoke(args.name, event)
    body["round_trip_s"] = rtt
    _print(body)
    return 0 if status == 200 else 1


def _cold(args: argparse.Namespace) -> int:
    _print(FaasClient(args.url).cold(args.function, "host" if args.host else "function"))
    return 0


def _info(args: argparse.Namespace) -> int:
    _print(FaasClient(args.url).info())
    return 0


def _credentials(args: argparse.Namespace) -> int:
    creds = credentials.find(args.url)
    if creds is None:
        raise TestbedError(
            f"no credentials of an emulator at {args.url} readable by this user",
            hint=f"run as the emulator's user, or set {credentials.ENV} to a copy of its credentials.json",
        )
    if args.format == "json":
        _print({"url": args.url, **creds.boto3()})
        return 0
    for key, value in (
        ("AWS_ACCESS_KEY_ID", creds.access_key_id),
        ("AWS_SECRET_ACCESS_KEY", creds.secret_access_key),
        ("AWS_ENDPOINT_URL_LAMBDA", args.url),
    ):
        print(f"export {key}={value}")
    return 0


def _profiles(args: argparse.Namespace) -> int:
    from testbed_services.faas.profiles import available, load_profile  # noqa: PLC0415 - CLI start-up: a command imports what it runs (the emulator loads only for `faas serve`)

    for name in available(args.profiles_dir):
        p = load_profile(name, args.profiles_dir)
        print(
            f"{p.name:20} memory {p.memory_min_mb}-{p.memory_max_mb} MB, cpu {p.cpu_model}, "
            f"/tmp {p.tmp_kind}, {p.instance_concurrency} call(s)/instance - {p.description}"
        )
    return 0


def _print(obj: Any) -> None:
    json.dump(obj, sys.stdout, indent=2, sort_keys=True, default=str)
    print()
