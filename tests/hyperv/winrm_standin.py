"""A WinRM endpoint on loopback that speaks WS-Management to pywinrm, for the Hyper-V role tests.

HTTPS with basic authentication (what pywinrm's ``basic`` transport sends). The WS-Management
Shell operations Create, Command, Send, Receive, Signal and Delete are answered as a Windows host
does. Every command is decoded the way PowerShell would receive it: the ``-EncodedCommand``
argument (base64 of UTF-16LE) and, for Ansible's bootstrap wrapper, the JSON read from stdin (the
exec wrapper's manifest: the module or executor script, its parameters, the module arguments).
What it asks for is recorded (``records``) and answered:

* ``ansible.windows.win_powershell`` with one of the roles' scripts: by the Hyper-V host model
  (hyperv_model.py), including the module's check-mode rule (scripts without SupportsShouldProcess
  are skipped) and its result shape;
* ``ansible.windows.win_copy`` (query and single modes) and the connection's ``put_file``: on a
  file store of the model (content kept on disk, SHA-1 as Ansible computes it);
* the temporary directory scripts (mkdtemp, expand user, Remove-Item).
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import re
import shutil
import ssl
import subprocess
import threading
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path, PureWindowsPath
from typing import Any

from hyperv_model import SHOULD_PROCESS, HyperVHost, ScriptError, role_scripts, winkey

NS = {
    "s": "http://www.w3.org/2003/05/soap-envelope",
    "a": "http://schemas.xmlsoap.org/ws/2004/08/addressing",
    "w": "http://schemas.dmtf.org/wbem/wsman/1/wsman.xsd",
    "rsp": "http://schemas.microsoft.com/wbem/wsman/1/windows/shell",
}
SHELL_URI = "http://schemas.microsoft.com/wbem/wsman/1/windows/shell"
SEPARATOR = b"\n\0\0\0\0\n"
ENVELOPE = (
    '<s:Envelope xmlns:s="{s}" xmlns:a="{a}" xmlns:w="{w}" xmlns:rsp="{rsp}"><s:Header>'
    "<a:Action>{action}</a:Action><a:MessageID>uuid:{mid}</a:MessageID>"
    "<a:RelatesTo>{relates}</a:RelatesTo></s:Header><s:Body>{body}</s:Body></s:Envelope>"
)


def decode_command(arguments: list[str]) -> str:
    """The script PowerShell runs for ``powershell.exe ... -EncodedCommand <b64>``."""
    if "-EncodedCommand" in arguments:
        return base64.b64decode(arguments[arguments.index("-EncodedCommand") + 1]).decode("utf-16-le")
    return " ".join(arguments)


class Command:
    """One command of a shell: its command line, stdin as received, its output once run."""

    def __init__(self, line: list[str]) -> None:
        self.line = line
        self.script = decode_command(line[1:])
        self.stdin = bytearray()
        self.put_target: Path | None = None
        self.put_sha1 = hashlib.sha1()
        self.result: tuple[bytes, int] | None = None


class Endpoint:
    """The WS-Management side: shells, commands, and what they ran."""

    def __init__(self, host: HyperVHost, store: Path) -> None:
        self.host = host
        self.store = store
        self.scripts = role_scripts()
        self.shells: dict[str, dict[str, Command]] = {}
        self.records: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    # --- WS-Management operations ----------------------------------------------------------
    def handle(self, body: bytes) -> str:
        root = ET.fromstring(body)
        action = root.findtext("s:Header/a:Action", namespaces=NS) or ""
        mid = root.findtext("s:Header/a:MessageID", namespaces=NS) or ""
        shell_id = root.findtext("s:Header/w:SelectorSet/w:Selector[@Name='ShellId']", namespaces=NS)
        op = action.rsplit("/", 1)[-1]
        with self.lock:
            reply = getattr(self, "ws_" + op)(root, shell_id)
        return ENVELOPE.format(**NS, action=action + "Response", mid=uuid.uuid4(), relates=mid, body=reply)

    def ws_Create(self, _root: ET.Element, _shell: str | None) -> str:
        shell_id = str(uuid.uuid4()).upper()
        self.shells[shell_id] = {}
        return (
            "<x:ResourceCreated xmlns:x='http://schemas.xmlsoap.org/ws/2004/09/transfer'>"
            f"<a:Address>https://127.0.0.1/wsman</a:Address><a:ReferenceParameters>"
            f"<w:ResourceURI>{SHELL_URI}/cmd</w:ResourceURI><w:SelectorSet>"
            f"<w:Selector Name='ShellId'>{shell_id}</w:Selector></w:SelectorSet></a:ReferenceParameters>"
            f"</x:ResourceCreated><rsp:Shell><rsp:ShellId>{shell_id}</rsp:ShellId></rsp:Shell>"
        )

    def ws_Command(self, root: ET.Element, shell: str | None) -> str:
        line = root.find("s:Body/rsp:CommandLine", NS)
        assert line is not None and shell in self.shells
        argv = [line.findtext("rsp:Command", "", NS).strip('"')]
        argv += [a.text or "" for a in line.findall("rsp:Arguments", NS)]
        if len(argv) == 2 and " " in argv[1]:
            argv = [argv[0], *argv[1].split(" ")]
        command_id = str(uuid.uuid4()).upper()
        self.shells[shell][command_id] = Command(argv)
        return f"<rsp:CommandResponse><rsp:CommandId>{command_id}</rsp:CommandId></rsp:CommandResponse>"

    def ws_Send(self, root: ET.Element, shell: str | None) -> str:
        stream = root.find("s:Body/rsp:Send/rsp:Stream", NS)
        assert stream is not None and shell in self.shells
        cmd = self.shells[shell][stream.get("CommandId", "")]
        self.feed(cmd, base64.b64decode(stream.text or ""))
        return "<rsp:SendResponse/>"

    def ws_Receive(self, root: ET.Element, shell: str | None) -> str:
        stream = root.find("s:Body/rsp:Receive/rsp:DesiredStream", NS)
        assert stream is not None and shell in self.shells
        command_id = stream.get("CommandId", "")
        cmd = self.shells[shell][command_id]
        if cmd.result is None:
            cmd.result = self.run(cmd)
        out, rc = cmd.result
        b64 = base64.b64encode(out).decode()
        return (
            f"<rsp:ReceiveResponse><rsp:Stream Name='stdout' CommandId='{command_id}'>{b64}</rsp:Stream>"
            f"<rsp:Stream Name='stdout' CommandId='{command_id}' End='true'/>"
            f"<rsp:Stream Name='stderr' CommandId='{command_id}' End='true'/>"
            f"<rsp:CommandState CommandId='{command_id}' State='{SHELL_URI}/CommandState/Done'>"
            f"<rsp:ExitCode>{rc}</rsp:ExitCode></rsp:CommandState></rsp:ReceiveResponse>"
        )

    def ws_Signal(self, _root: ET.Element, _shell: str | None) -> str:
        return "<rsp:SignalResponse/>"

    def ws_Delete(self, _root: ET.Element, shell: str | None) -> str:
        self.shells.pop(shell or "", None)
        return ""

    # --- what the commands ask for ---------------------------------------------------------
    def feed(self, cmd: Command, data: bytes) -> None:
        """Take stdin; put_file's data (base64 lines after the manifest) goes straight to the store."""
        if cmd.put_target is None:
            cmd.stdin += data
            parts = bytes(cmd.stdin).split(SEPARATOR)
            if len(parts) == 3 and '"winrm_put_file.ps1"' in parts[0].decode() + parts[1].decode():
                manifest = json.loads(parts[1])
                path = manifest["actions"][0]["params"]["Path"]
                cmd.put_target = self.store / hashlib.sha256(winkey(path).encode()).hexdigest()[:24]
                cmd.put_target.write_bytes(b"")
                self.host.files[winkey(path)] = {"path": path, "local": str(cmd.put_target)}
                self.records.append({"kind": "put_file", "path": path})
                data, cmd.stdin = parts[2], bytearray()
            else:
                return
        chunk = b"".join(base64.b64decode(line) for line in data.split(b"\r\n") if line.strip())
        cmd.put_sha1.update(chunk)
        with cmd.put_target.open("ab") as fh:
            fh.write(chunk)

    def run(self, cmd: Command) -> tuple[bytes, int]:
        """Answer a command once its stdin is complete."""
        if cmd.put_target is not None:
            return json.dumps({"sha1": cmd.put_sha1.hexdigest()}).encode(), 0
        parts = bytes(cmd.stdin).split(SEPARATOR)
        if "$codeJson" not in cmd.script or len(parts) < 2:
            self.records.append({"kind": "raw", "script": cmd.script})
            if removed := re.search(r"Remove-Item '([^']+?)(?:\\\.)?' -Force -Recurse", cmd.script):
                key = winkey(removed[1])
                self.host.dirs.discard(key)
                self.host.files = {k: v for k, v in self.host.files.items() if not k.startswith(key + "\\")}
            return b"", 0
        action = json.loads(parts[1])["actions"][-1]
        if action["name"] == "powershell_mkdtemp.ps1":
            path = str(
                PureWindowsPath(
                    action["params"]["Directory"].replace("%TEMP%", r"C:\Temp"), action["params"]["Name"]
                )
            )
            self.host.dirs.add(winkey(path))
            self.records.append({"kind": "mkdtemp", "path": path})
            return (path + "\r\n").encode(), 0
        if action["name"] == "powershell_expand_user.ps1":
            path = action["params"].get("Path", "~").replace("~", r"C:\Users\testbed", 1)
            return json.dumps({"path": path}).encode(), 0
        if action["name"] != "module_wrapper.ps1":
            raise AssertionError(f"unexpected executor script {action['name']}")
        module = action["params"]["Script"].rsplit(".", 1)[0]
        args = next(v["Value"] for v in action["params"]["Variables"] if v["Name"] == "complex_args")
        result = self.module(module, args)
        return json.dumps(result).encode(), 1 if result.get("failed") else 0

    def module(self, module: str, args: dict[str, Any]) -> dict[str, Any]:
        check = bool(args.get("_ansible_check_mode"))
        record: dict[str, Any] = {"kind": "module", "module": module, "check_mode": check}
        self.records.append(record)
        if module.endswith("win_powershell"):
            return self.win_powershell(args, check, record)
        if module.endswith("win_copy"):
            return self.win_copy(args, check, record)
        raise AssertionError(f"the stand-in does not answer module {module}")

    def win_powershell(self, args: dict[str, Any], check: bool, record: dict[str, Any]) -> dict[str, Any]:
        script = args["script"]
        name = self.scripts.get(script)
        params = args.get("parameters") or {}
        record |= {"script": name, "parameters": params}
        assert name is not None, f"a script that is none of the roles' files was sent:\n{script[:400]}"
        base = {
            "changed": False,
            "result": {},
            "output": [],
            "error": [],
            "warning": [],
            "verbose": [],
            "debug": [],
            "information": [],
            "host_out": "",
            "host_err": "",
        }
        if check and not SHOULD_PROCESS.search(script):
            return base | {"changed": True, "msg": "skipped, running in check mode"}
        try:
            changed, result = self.host.run(name, params, check)
        except ScriptError as err:
            record["error"] = str(err)
            return base | {
                "failed": True,
                "changed": False,
                "msg": f"{err}",
                "error": [{"output": str(err), "error_details": {"message": str(err)}}],
            }
        record |= {"changed": changed, "result": result}
        return base | {"changed": changed, "result": result}

    def win_copy(self, args: dict[str, Any], check: bool, record: dict[str, Any]) -> dict[str, Any]:
        mode = args.get("_copy_mode", "single")
        record |= {"mode": mode, "dest": args.get("dest")}
        if mode == "query":
            todo = [
                f
                for f in args.get("files", [])
                if self.checksum(str(PureWindowsPath(args["dest"], f["dest"]))) != f["checksum"]
            ]
            return {"changed": False, "files": todo, "directories": [], "symlinks": []}
        assert mode == "single" and not check
        src = self.host.files.pop(winkey(args["src"]))
        dest = args["dest"]
        if winkey(str(PureWindowsPath(dest).parent)) not in self.host.dirs:
            return {
                "failed": True,
                "msg": f"Destination directory '{PureWindowsPath(dest).parent}' does not exist",
            }
        self.host.files[winkey(dest)] = src | {"path": dest}
        local = Path(src["local"])
        return {
            "changed": True,
            "dest": dest,
            "checksum": self.checksum(dest),
            "size": local.stat().st_size,
            "operation": "file_copy",
            "original_basename": args.get("_original_basename"),
        }

    def checksum(self, path: str) -> str | None:
        entry = self.host.files.get(winkey(path))
        if not entry or "local" not in entry:
            return None
        sha1 = hashlib.sha1()
        with open(entry["local"], "rb") as fh:
            while block := fh.read(1 << 20):
                sha1.update(block)
        return sha1.hexdigest()


class _Handler(http.server.BaseHTTPRequestHandler):
    endpoint: Endpoint
    auth: str

    def do_POST(self) -> None:
        if self.headers.get("Authorization") != self.auth:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="WSMAN"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        reply = self.endpoint.handle(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/soap+xml;charset=UTF-8")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *_args: object) -> None:
        """Quiet."""


def make_certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl), like a WinRM HTTPS listener's."""
    cert, key = directory / "winrm.crt", directory / "winrm.key"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


class WinRMStandIn:
    """A running endpoint: ``port``, ``endpoint.records``, ``endpoint.host``."""

    def __init__(
        self, profile: str, workdir: Path, user: str = "testbed", password: str = "Pa55-word"
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        store = workdir / "store"
        shutil.rmtree(store, ignore_errors=True)
        store.mkdir()
        self.endpoint = Endpoint(HyperVHost(profile), store)
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        handler = type("Handler", (_Handler,), {"endpoint": self.endpoint, "auth": f"Basic {token}"})
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(*make_certificate(workdir))
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.port = int(self.server.server_address[1])
        self.user, self.password = user, password
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def scripts_run(self, *, check: bool | None = None) -> list[str]:
        """Names of the role scripts run, in order (optionally only in or out of check mode)."""
        return [
            r["script"]
            for r in self.endpoint.records
            if r.get("script") and (check is None or r["check_mode"] == check)
        ]
