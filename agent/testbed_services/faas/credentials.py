"""The emulator's credentials: issued at start, kept in a 0600 file, found by the toolkit's clients.

``faas serve`` issues, once it listens, a bearer token for its own HTTP API and an access key pair
for its Lambda API (SigV4). They live in ``<state dir>/emu-<id>/credentials.json`` (mode 0600,
owned by the emulator's user, removed with the state at shutdown) and nowhere else. So that a
client given only the URL finds them, the emulator also writes an index entry for its port,
``<index>/port-<N>.json``, naming that file; the index is ``/run/testbed-faas`` for root, else
``$XDG_RUNTIME_DIR/testbed-faas`` or ``~/.cache/testbed-faas/run`` (a 0700 directory of the user).

:func:`find` is what every client of the toolkit calls (``FaasClient``, the Lambda rehearsals'
boto3 clients): ``$TESTBED_FAAS_CREDENTIALS`` (a copy of the file, e.g. on another machine) if
set, else the index entry of the URL's port. Only files owned by this user (or root) and not
readable by anyone else are trusted; an entry of an emulator that is gone is ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import urlsplit

from testbed_shared.errors import TestbedError

FILE_NAME = "credentials.json"
ENV = "TESTBED_FAAS_CREDENTIALS"
#: an access key id looks like AWS's (20 characters, upper case and digits) but cannot be one
KEY_PREFIX = "TBEMU"
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"


@dataclass(frozen=True)
class Credentials:
    """What one running emulator issued."""

    url: str
    pid: int
    #: ``Authorization: Bearer <token>`` on the emulator's own API
    token: str
    #: SigV4 credentials of the Lambda API (any region, service ``lambda``)
    access_key_id: str
    secret_access_key: str

    def boto3(self) -> dict[str, str]:
        """Keyword arguments of ``boto3.client("lambda", endpoint_url=..., **creds.boto3())``."""
        return {"aws_access_key_id": self.access_key_id, "aws_secret_access_key": self.secret_access_key}


def issue(url: str) -> Credentials:
    """Fresh credentials for the emulator at ``url`` (this process)."""
    key = KEY_PREFIX + "".join(secrets.choice(_ALPHABET) for _ in range(20 - len(KEY_PREFIX)))
    return Credentials(
        url=url,
        pid=os.getpid(),
        token=secrets.token_urlsafe(32),
        access_key_id=key,
        secret_access_key=secrets.token_urlsafe(30)[:40],
    )


def write(creds: Credentials, state_dir: Path) -> Path:
    """Write ``creds`` to ``state_dir/credentials.json`` (0600, new file) and index it by port;
    returns the file's path."""
    path = state_dir / FILE_NAME
    _write_private(path, json.dumps(asdict(creds), indent=2) + "\n")
    index = index_dir(create=True)
    _prune(index)
    entry = {"url": creds.url, "pid": creds.pid, "credentials": str(path.resolve())}
    _write_private(index / _entry_name(creds.url), json.dumps(entry) + "\n", replace=True)
    return path


def forget(creds: Credentials) -> None:
    """Remove the index entry of ``creds`` (if it is still theirs); the file goes with the state."""
    entry = index_dir() / _entry_name(creds.url)
    with contextlib.suppress(OSError, ValueError):
        if json.loads(entry.read_text()).get("pid") == creds.pid:
            entry.unlink()


def find(url: str) -> Credentials | None:
    """The credentials of the emulator at ``url``: ``$TESTBED_FAAS_CREDENTIALS`` if set, else its
    port's index entry; None when there are none this user may trust. A set variable naming a file
    that is unreadable or not the emulator's is an error (a typo must not send unauthenticated)."""
    given = os.environ.get(ENV)
    if given:
        creds = _load(Path(given), strict=True)
        return creds
    try:
        entry = json.loads((index_dir() / _entry_name(url)).read_text())
        path = Path(entry["credentials"])
        if not _trusted(index_dir() / _entry_name(url)) or not _alive(int(entry["pid"])):
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return _load(path, strict=False)


def index_dir(create: bool = False) -> Path:
    """Where the port index lives for this user (made 0700 when ``create``)."""
    if os.geteuid() == 0:
        d = Path("/run/testbed-faas")
    elif os.environ.get("XDG_RUNTIME_DIR"):
        d = Path(os.environ["XDG_RUNTIME_DIR"]) / "testbed-faas"
    else:
        d = Path.home() / ".cache" / "testbed-faas" / "run"
    if create:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.lstat(d)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid():
            raise TestbedError(f"{d} is not a directory of this user", hint="remove it and start again")
        os.chmod(d, 0o700)
    return d


def _prune(index: Path) -> None:
    """Remove the entries of emulators that died without shutting down (SIGKILL, power loss)."""
    for entry in index.glob("port-*.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            if not _alive(int(json.loads(entry.read_text())["pid"])):
                entry.unlink()


def _entry_name(url: str) -> str:
    parts = urlsplit(url)
    if parts.port is None:
        raise ValueError(f"URL {url!r} names no port")
    return f"port-{parts.port}.json"


def _write_private(path: Path, text: str, replace: bool = False) -> None:
    """Write ``text`` to a new 0600 file (never through a link); ``replace`` renames it over
    ``path``, else ``path`` must not exist."""
    target = path.with_name(f".{path.name}.{secrets.token_hex(4)}") if replace else path
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    if replace:
        os.replace(target, path)


def _trusted(path: Path) -> bool:
    """A regular file owned by this user or root that nobody else can read or write."""
    st = os.lstat(path)
    return stat.S_ISREG(st.st_mode) and st.st_uid in (os.geteuid(), 0) and not st.st_mode & 0o077


def _load(path: Path, strict: bool) -> Credentials | None:
    try:
        if not _trusted(path):
            raise ValueError("readable or writable by other users, or not a regular file of this user")
        doc = json.loads(path.read_text())
        return Credentials(
            url=str(doc["url"]),
            pid=int(doc["pid"]),
            token=str(doc["token"]),
            access_key_id=str(doc["access_key_id"]),
            secret_access_key=str(doc["secret_access_key"]),
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        if not strict:
            return None
        raise TestbedError(
            f"${ENV}={path}: not the emulator's credentials file ({exc})",
            hint=f"point it at a copy (mode 0600) of the emulator's <state dir>/emu-<id>/{FILE_NAME}",
        ) from None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
