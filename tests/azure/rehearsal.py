"""Azure dress rehearsal: `ansible-playbook run.yml` on the Azure matrix against the local ARM.

Starts the ARM stand-in (tests/azure/arm/server.py, with the python of .venv/azure) and an sshd
on loopback addresses that the stand-in hands out as the machines' public IPs, then runs the
real playbook with the real azure collection (service principal auth, HTTPS through the
stand-in's proxy, its throw-away CA trusted through REQUESTS_CA_BUNDLE). The stand-in places
each VM on a simulated physical host (seeded: --placement-seed, --hosts-per-location) and writes
the guest's Hyper-V KVP pool, which the agent reads (TESTBED_HYPERV_KVP_POOL), so rotations
(-e rotations=N) record the host each placement got. Fails if any task of the azure collection was
skipped or if anything is left in the stand-in after teardown. Ends with

    rehearsal: N requests, M machines created, M deleted, 0 left, report: PATH
    rehearsal: placements: P (create C, redeploy R, start S), hosts seen: VM HOST,HOST; ...

    python tests/azure/rehearsal.py [--limit sev,tdx] [--workdir DIR] [-e VAR=VALUE]...

Runs twice in one checkout: what an earlier (or killed) rehearsal left in the work directory is
detected and not trusted - its stand-ins still running are stopped (by their pid files, after
checking that the pid is that stand-in), its endpoint, pid files, task log and Azure state are
removed before anything starts - and a second rehearsal on the same directory at the same time is
refused. The vTPMs need swtpm, tpm2-tools and the HCL report fixture of the repository; when one
is missing the rehearsal stops and says which (``--no-vtpm`` runs without them, deliberately).
"""

from __future__ import annotations

import argparse
import fcntl
import getpass
import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from forkserver import write_client  # beside this script (on sys.path as a script and under pytest)

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
AZURE_PY = ROOT / ".venv/azure/bin/python"
#: the venv's ansible-playbook (beside this Python), whether or not the venv is activated
ANSIBLE_PLAYBOOK = (
    shutil.which("ansible-playbook", path=str(Path(sys.executable).parent)) or "ansible-playbook"
)
ADDRESSES = [f"127.0.0.{n}" for n in range(11, 23)]
#: the matrix (replaced by --base-inventory, e.g. the study preset) and its constructed groups
INVENTORY = "inventory/azure.yml"
CONSTRUCTED = "inventory/azure.constructed.yml"


def _swtpm_starter():
    """``start_swtpm`` of shared/tests/swtpmproc.py (one way to start a race-free swtpm for the
    tests and the rehearsal), loaded by path: this script runs outside pytest's import paths."""
    spec = importlib.util.spec_from_file_location("swtpmproc", ROOT / "shared/tests/swtpmproc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.start_swtpm


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: what a rehearsal writes in its work directory and a new one must not trust (the SSH keys stay)
STALE = (
    "arm",
    "forkserver",
    "vtpm",
    "machines",
    "guests",
    "xdg-state",
    "tasks.jsonl",
    "rehearsal.yml",
    "ansible.log",
    "killed.log",
)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _stop_stale(pidfile: Path, marker: str) -> str | None:
    """Stop the process of ``pidfile`` if it is still alive and its command line holds ``marker``
    (a pid reused by another program is left alone). Returns what was done, or None."""
    try:
        pid = int(pidfile.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    cmd = _cmdline(pid)
    if not cmd or marker not in cmd:
        return None
    try:
        os.kill(pid, signal.SIGTERM)
        for _ in range(50):
            if not Path(f"/proc/{pid}").exists() or _cmdline(pid) != cmd:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return None
    return f"stopped a stale {pidfile.name.split('.')[0]} of an earlier rehearsal (pid {pid})"


def clear_stale(work: Path) -> list[str]:
    """Stop what an earlier rehearsal in ``work`` left running and remove what it left behind."""
    done = []
    candidates = [(work / "arm/server.pid", str(work / "arm")), (work / "ssh/sshd.pid", str(work / "ssh"))]
    candidates += [(p, str(p.parent)) for p in (work / "vtpm").glob("*/swtpm.pid")]
    candidates += [(work / "forkserver/server.pid", str(work / "forkserver"))]
    for pidfile, marker in candidates:
        note = _stop_stale(pidfile, marker)
        if note:
            done.append(note)
    for name in STALE:
        path = work / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
    (work / "ssh/sshd.pid").unlink(missing_ok=True)
    return done


@contextmanager
def exclusive(work: Path) -> Iterator[None]:
    """Refuse a second rehearsal on the same work directory while one runs."""
    work.mkdir(parents=True, exist_ok=True)
    with (work / ".lock").open("a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            raise SystemExit(
                f"rehearsal: another rehearsal is running on {work} (pid {fh.read().strip() or '?'}); "
                "wait for it or give --workdir another directory"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        yield


def _wait_for(path: Path, proc: subprocess.Popen, what: str, timeout: float = 60) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > end:
            raise SystemExit(f"rehearsal: {what} did not start (see {path.parent})")
        time.sleep(0.1)


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@contextmanager
def arm_server(work: Path, seed: int = 1, hosts_per_location: int = 16) -> Iterator[dict]:
    """The ARM stand-in (VMs placed on seeded simulated hosts, their KVP pools under work/guests);
    yields its endpoint.json."""
    (work / "arm").mkdir(parents=True, exist_ok=True)
    args = [
        str(AZURE_PY),
        str(HERE / "arm/server.py"),
        "--dir",
        str(work / "arm"),
        "--addresses",
        ",".join(ADDRESSES),
        "--guest-root",
        str(work / "guests"),
        "--seed",
        str(seed),
        "--hosts-per-location",
        str(hosts_per_location),
    ]
    with (work / "arm/server.log").open("w") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    (work / "arm/server.pid").write_text(f"{proc.pid}\n")
    try:
        _wait_for(work / "arm/endpoint.json", proc, "the ARM stand-in")
        yield json.loads((work / "arm/endpoint.json").read_text())
    finally:
        _stop(proc)


@contextmanager
def module_python(work: Path, env: dict[str, str], enabled: bool = True) -> Iterator[Path]:
    """The python the azure modules run with (``TESTBED_AZURE_PYTHON``): the client of a fork
    server (tests/azure/forkserver.py) that imports the Azure SDK once for all tasks, started in
    the playbook's environment; .venv/azure's python itself when ``enabled`` is false."""
    if not enabled:
        yield AZURE_PY
        return
    home = work / "forkserver"
    home.mkdir(parents=True, exist_ok=True)
    sock = home / "server.sock"
    args = [str(AZURE_PY), str(HERE / "forkserver.py"), "serve", "--socket", str(sock)]
    with (home / "server.log").open("w") as log:
        proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=home)
    (home / "server.pid").write_text(f"{proc.pid}\n")
    try:
        _wait_for(sock, proc, "the fork server of the azure modules")
        yield write_client(home / "python", sock, str(AZURE_PY))
    finally:
        _stop(proc)
        (home / "server.pid").unlink(missing_ok=True)


@contextmanager
def sshd(work: Path) -> Iterator[tuple[int, Path]]:
    """An sshd on the machines' loopback addresses; yields (port, client private key)."""
    ssh = work / "ssh"
    ssh.mkdir(parents=True, exist_ok=True)
    for name in ("host_ed25519", "id_ed25519"):
        if not (ssh / name).exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(ssh / name)], check=True)
    shutil.copy(ssh / "id_ed25519.pub", ssh / "authorized_keys")
    port = _free_port()
    config = [f"ListenAddress {a}:{port}" for a in ADDRESSES] + [
        f"HostKey {ssh / 'host_ed25519'}",
        f"PidFile {ssh / 'sshd.pid'}",
        f"AuthorizedKeysFile {ssh / 'authorized_keys'}",
        "StrictModes no",
        "UsePAM no",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "PermitRootLogin prohibit-password",
        f"AllowUsers {getpass.getuser()}",
        "MaxStartups 100",
        "Subsystem sftp internal-sftp",
        "MaxSessions 100",
    ]
    (ssh / "sshd_config").write_text("\n".join(config) + "\n")
    Path("/run/sshd").mkdir(exist_ok=True)  # privilege separation directory (root sshd only)
    proc = subprocess.Popen(
        ["/usr/sbin/sshd", "-D", "-e", "-f", str(ssh / "sshd_config")], stderr=(ssh / "sshd.log").open("w")
    )
    try:
        _wait_for(ssh / "sshd.pid", proc, "sshd")
        yield port, ssh / "id_ed25519"
    finally:
        _stop(proc)


#: the Azure HCL report of a real SEV-SNP CVM (a fixture with its licence: shared/tests/data/...)
HCL_REPORT = ROOT / "shared/tests/data/attestation-samples/azure-cvm/hcl-report-snp.bin"
HCL_NV_INDEX = "0x01400001"


def _hosts(group: dict) -> dict[str, dict]:
    """Every host of an inventory group and its children, with its own variables."""
    found = {name: v or {} for name, v in (group.get("hosts") or {}).items()}
    for child in (group.get("children") or {}).values():
        found.update(_hosts(child or {}))
    return found


def _confidential_hosts(inventory: Path) -> list[str]:
    hosts = _hosts(yaml.safe_load((ROOT / inventory).read_text())["all"])
    return [name for name, v in hosts.items() if v.get("azure_vm_security_type") == "ConfidentialVM"]


@contextmanager
def vtpms(work: Path, report: Path, inventory: Path) -> Iterator[dict[str, str]]:
    """A swtpm per confidential machine whose NV index 0x01400001 holds ``report`` (an Azure HCL
    report); yields {host: TCTI}. Stops with what is missing when swtpm, tpm2-tools or the report
    are not there (``report=None``: deliberately without vTPMs, yields {})."""
    if report is None:
        yield {}
        return
    missing = [t for t in ("swtpm", "tpm2_nvdefine", "tpm2_nvwrite") if not shutil.which(t)]
    if missing:
        raise SystemExit(
            f"rehearsal: {', '.join(missing)} not found: the vTPMs need swtpm and tpm2-tools (make install); "
            "--no-vtpm runs without them"
        )
    if not report.is_file():
        raise SystemExit(f"rehearsal: the HCL report {report} is missing; --no-vtpm runs without vTPMs")
    start_swtpm = _swtpm_starter()
    procs, tctis = [], {}
    try:
        for host in _confidential_hosts(inventory):
            state = work / "vtpm" / host
            state.mkdir(parents=True, exist_ok=True)
            proc, tctis[host] = start_swtpm(state, state / "swtpm.log")
            procs.append(proc)
            (state / "swtpm.pid").write_text(f"{proc.pid}\n")
            _nv_write(tctis[host], report)
        yield tctis
    finally:
        for proc in procs:
            _stop(proc)


def _nv_write(tcti: str, report: Path) -> None:
    env = dict(os.environ, TPM2TOOLS_TCTI=tcti)
    size = str(report.stat().st_size)
    for attempt in range(50):
        define = [
            "tpm2_nvdefine",
            HCL_NV_INDEX,
            "-C",
            "o",
            "-s",
            size,
            "-a",
            "ownerread|ownerwrite|authread|authwrite",
        ]
        if subprocess.run(define, env=env, capture_output=True).returncode == 0:
            break
        time.sleep(0.1 * (attempt + 1))
    subprocess.run(
        ["tpm2_nvwrite", HCL_NV_INDEX, "-C", "o", "-i", str(report)], env=env, capture_output=True, check=True
    )


def overlay(work: Path, endpoint: dict, port: int, key: Path, tctis: dict[str, str]) -> Path:
    """Inventory overlay: where the machines' SSH, IMDS and KVP pool are, and the agent in place."""
    imds = endpoint["proxy"] + "/imds/{{ inventory_hostname }}"
    kvp = str(work / "guests/{{ inventory_hostname }}/.kvp_pool_3")
    agent_env = {"TESTBED_AZURE_IMDS": imds, "TESTBED_HYPERV_KVP_POOL": kvp}
    azure_vars = {
        "ansible_port": port,
        "ansible_ssh_private_key_file": str(key),
        "ansible_ssh_common_args": "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null",
        "ansible_python_interpreter": sys.executable,
        "azure_vm_subscription_id": "",
        "azure_vm_ssh_public_key": Path(str(key) + ".pub").read_text().strip(),
        "azure_vm_polling_interval": 1,
        "azure_vm_wait_for_ssh_timeout": 60,
        "azure_vm_guest_packages": [],
        "agent_python": sys.executable,
        "agent_install_dir": str(work / "machines/{{ inventory_hostname }}"),
        "agent_scratch_dir": str(work / "machines/{{ inventory_hostname }}/scratch"),
        "node_exporter_enabled": False,
        "testbed_agent_extra_env": agent_env,
    }
    # The machines' vTPMs: a host-level environment for the agent (replaces the group's).
    hosts = {
        h: {"testbed_agent_extra_env": {**agent_env, "TESTBED_AZURE_TPM_TCTI": t}} for h, t in tctis.items()
    }
    path = work / "rehearsal.yml"
    azure = {"vars": azure_vars, "hosts": hosts}
    path.write_text(yaml.safe_dump({"all": {"children": {"azure": azure}}}, sort_keys=True))
    return path


def environment(work: Path, endpoint: dict) -> dict[str, str]:
    """The process environment: the collection's service principal, the proxy and its CA."""
    env = dict(os.environ)
    for name in ("HTTP_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(name, None)
    env.update(
        HTTPS_PROXY=endpoint["proxy"],
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
        REQUESTS_CA_BUNDLE=endpoint["ca"],
        AZURE_CLIENT_ID=endpoint["client_id"],
        AZURE_SECRET=endpoint["secret"],
        AZURE_TENANT=endpoint["tenant"],
        AZURE_SUBSCRIPTION_ID=endpoint["subscription_id"],
        TESTBED_AZURE_PYTHON=str(AZURE_PY),
        TESTBED_REHEARSAL_TASKS=str(work / "tasks.jsonl"),
        # the rehearsal's callback beside the project's stdout callback (ansible.cfg)
        ANSIBLE_CALLBACK_PLUGINS=f"{HERE / 'callback_plugins'}:{ROOT / 'playbooks' / 'callback_plugins'}",
        ANSIBLE_CALLBACKS_ENABLED="rehearsal_tasks,ansible.posix.profile_tasks",
        ANSIBLE_FORCE_COLOR="0",
        ANSIBLE_HOST_KEY_CHECKING="False",
        XDG_STATE_HOME=str(work / "xdg-state"),
    )
    return env


def skipped_azure_tasks(work: Path) -> tuple[int, list[str]]:
    """(number of azure collection task results, the skipped ones)."""
    path = work / "tasks.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    azure = [r for r in rows if r["action"].startswith("azure.azcollection.")]
    return len(azure), [f"{r['host']}: {r['task']}" for r in azure if r["status"] == "skipped"]


def stats(endpoint: dict) -> dict:
    """The stand-in's counts (plain HTTP on loopback, never through a proxy)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(endpoint["proxy"] + "/_rehearsal/stats", timeout=10) as response:
        return json.loads(response.read())


def report_path(log: str) -> str:
    """The report's index.html named in the playbook output ('-' if none)."""
    found = [w.strip("\",'") for w in log.split() if w.strip("\",'").endswith("index.html")]
    return found[-1] if found else "-"


def run(args: argparse.Namespace) -> int:
    """Run the rehearsal; return the exit status."""
    work = args.workdir.resolve()
    with exclusive(work):
        for note in clear_stale(work):
            print(f"rehearsal: {note}")
        return _run(args, work)


def _run(args: argparse.Namespace, work: Path) -> int:
    matrix = args.base_inventory
    with (
        arm_server(work, args.placement_seed, args.hosts_per_location) as endpoint,
        sshd(work) as (port, key),
        vtpms(work, None if args.no_vtpm else args.hcl_report, matrix) as tctis,
    ):
        overlays = [str(overlay(work, endpoint, port, key, tctis)), *map(str, args.inventory)]
        inv = [arg for i in [str(matrix), CONSTRUCTED, *overlays] for arg in ("-i", i)]
        cmd = [ANSIBLE_PLAYBOOK, *inv, args.playbook, "-e", f"ansible_user={getpass.getuser()}"]
        cmd += ["-e", f"plan={args.plan}", "-e", f"run_id={args.run_id}"]
        cmd += ["-l", args.limit] if args.limit else []
        for extra in args.extra_vars:
            cmd += ["-e", extra]
        started = time.monotonic()
        env = environment(work, endpoint)
        with module_python(work, env, not args.no_forkserver) as python:
            env["TESTBED_AZURE_PYTHON"] = str(python)
            if args.kill_at:
                done = killed_then_reaped(cmd, env, work, endpoint, args.kill_at)
            else:
                done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        (work / "ansible.log").write_text(done.stdout + done.stderr)
        print(done.stdout[-6000:] if args.quiet else done.stdout, done.stderr[-3000:], sep="\n")
        return verdict(work, endpoint, done, time.monotonic() - started)


def killed_then_reaped(
    cmd: list[str], env: dict, work: Path, endpoint: dict, machines: int
) -> subprocess.CompletedProcess:
    """SIGKILL the playbook once ``machines`` VMs exist, then run `make azure-reap`."""
    with (work / "killed.log").open("w") as log:
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        while proc.poll() is None and stats(endpoint)["machines_created"] < machines:
            time.sleep(0.5)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            print(f"rehearsal: killed the playbook (SIGKILL) after {machines} machine(s) were created")
        proc.wait()
    # -o: the venv is there (the rehearsal runs in it); never reinstall it through the rehearsal's proxy.
    reap = ["make", "-o", ".venv/.installed", "-o", ".venv/azure/.installed", "azure-reap"]
    return subprocess.run(reap, cwd=ROOT, env=env, capture_output=True, text=True)


def verdict(work: Path, endpoint: dict, done: subprocess.CompletedProcess, seconds: float) -> int:
    """Check skipped Azure tasks and leftovers; print the closing line."""
    count, skipped = skipped_azure_tasks(work)
    s = stats(endpoint)
    left = len(s["resources_left"])
    print(
        f"rehearsal: {count} azure task results, {len(skipped)} skipped, "
        f"ansible exit {done.returncode}, {seconds:.0f} s"
    )
    for line in skipped:
        print(f"rehearsal: skipped Azure task: {line}")
    for rid in s["resources_left"]:
        print(f"rehearsal: left in Azure: {rid}")
    print(
        f"rehearsal: {s['requests']} requests, {s['machines_created']} machines created, "
        f"{s['machines_deleted']} deleted, {left} left, report: {report_path(done.stdout)}"
    )
    print(f"rehearsal: {placements_line(s)}")
    ok = done.returncode == 0 and count > 0 and not skipped and left == 0
    return 0 if ok and s["machines_deleted"] == s["machines_created"] else 1


def placements_line(s: dict) -> str:
    """Where the stand-in placed the VMs: placements by cause, and each VM's hosts in order."""
    whys: dict[str, int] = {}
    for p in s.get("placements", []):
        whys[p["why"]] = whys.get(p["why"], 0) + 1
    causes = ", ".join(f"{k} {v}" for k, v in sorted(whys.items()))
    seen = "; ".join(f"{vm} {','.join(hosts)}" for vm, hosts in sorted(s.get("hosts_seen", {}).items()))
    return f"placements: {sum(whys.values())} ({causes}), hosts seen: {seen or '-'}"


def main(argv: list[str] | None = None) -> int:
    """Command line."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-l", "--limit", default="", help="ansible --limit (default: the whole Azure matrix)")
    ap.add_argument("--workdir", type=Path, default=ROOT / ".cache/azure-rehearsal")
    ap.add_argument("--plan", default="tests/azure/rehearsal-plan.yml")
    ap.add_argument(
        "--base-inventory",
        type=Path,
        default=Path(INVENTORY),
        help=f"the machine matrix (default {INVENTORY}; e.g. inventory/azure-study.yml)",
    )
    ap.add_argument("--playbook", default="run.yml")
    ap.add_argument("--run-id", default=time.strftime("rh%Y%m%dt%H%M%Sz", time.gmtime()))
    ap.add_argument("-e", "--extra-vars", action="append", default=[])
    ap.add_argument(
        "-i", "--inventory", type=Path, action="append", default=[], help="further inventory overlay"
    )
    ap.add_argument(
        "--kill-at", type=int, default=0, help="SIGKILL the playbook once this many VMs exist, then reap"
    )
    ap.add_argument(
        "--hcl-report", type=Path, default=HCL_REPORT, help="report for the vTPMs' NV index 0x01400001"
    )
    ap.add_argument(
        "--no-vtpm", action="store_true", help="run the confidential machines without vTPMs (no HCL report)"
    )
    ap.add_argument("--quiet", action="store_true", help="print only the end of the playbook output")
    ap.add_argument(
        "--no-forkserver",
        action="store_true",
        help="run each azure module in a fresh .venv/azure python (slower: each imports the SDK)",
    )
    ap.add_argument("--placement-seed", type=int, default=1, help="seed of the VMs' simulated hosts")
    ap.add_argument(
        "--hosts-per-location", type=int, default=16, help="simulated physical hosts per location (>= 2)"
    )
    args = ap.parse_args(argv)
    if not AZURE_PY.exists():
        print(f"rehearsal: {AZURE_PY} is missing; run `make azure-deps`", file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
