"""Deployment packages of the functions under ``workloads/faas/functions``, as each platform wants
them: one zip, built byte for byte the same from the same files (sorted names, fixed times).

- ``aws-lambda``: the function's directory plus its ``python_path`` libraries at the zip's root;
  the handler is the function's own ``module.handler`` (Lambda's REPORT line is the measurement).
- ``gcf-gen2``: the same plus ``main.py`` (a Functions Framework HTTP entry point, ``testbed_entry``),
  ``testbed_shim.py`` and ``requirements.txt``.
- ``azure-functions``: the same plus ``function_app.py`` (Python v2 programming model, one HTTP
  function ``testbed``), ``testbed_shim.py``, ``host.json`` and ``requirements.txt``.

The shims (``workloads/faas/shims/``) time the handler and report the instance's cold/warm state,
its init time and peak RSS, because those platforms have no per-call report line.
The emulator's Lambda API recognises a CreateFunction zip by comparing its files with these
packages (:func:`read_zip`, :func:`match`): it runs only the functions it knows.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path, PurePosixPath

from testbed_services.faas import faas_dir
from testbed_services.faas.functions import FunctionCode
from testbed_shared.errors import TestbedError

PLATFORMS = ("aws-lambda", "gcf-gen2", "azure-functions")
#: Lambda's limits on a package: 50 MB zipped (direct upload), 250 MB unzipped
MAX_ZIP_BYTES = 50 * 1024 * 1024
MAX_UNZIPPED_BYTES = 262_144_000
MAX_ENTRIES = 20_000
#: the entry point names the drivers deploy with
GCF_ENTRY_POINT = "testbed_entry"
AZURE_FUNCTION = "testbed"
#: what the platform installs next to the package (its build resolves them from PyPI)
GCF_REQUIREMENTS = "functions-framework==3.10.2\n"
AZURE_REQUIREMENTS = "azure-functions==1.26.0\n"
AZURE_HOST_JSON = {
    "version": "2.0",
    "extensionBundle": {"id": "Microsoft.Azure.Functions.ExtensionBundle", "version": "[4.*, 5.0.0)"},
    "logging": {"logLevel": {"default": "Warning"}},
}
_SKIP = ("__pycache__", ".pyc", ".pytest_cache")


def shims_dir() -> Path:
    return faas_dir() / "shims"


def _tree(root: Path, prefix: str = "") -> dict[str, bytes]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not any(s in rel for s in _SKIP):
            out[prefix + rel] = path.read_bytes()
    return out


def files(code: FunctionCode, platform: str = "aws-lambda") -> dict[str, bytes]:
    """The package's files (zip name -> content) for ``platform``."""
    if platform not in PLATFORMS:
        raise TestbedError(f"no package format for platform {platform!r}", hint=", ".join(PLATFORMS))
    out = _tree(code.code_dir)
    for lib in code.python_path:
        for name, data in _tree(lib).items():
            if name in out:
                raise TestbedError(f"{code.name}: {name} is both in the function and in {lib}")
            out[name] = data
    if platform == "aws-lambda":
        return out
    shims = shims_dir()
    config = {"function": code.name, "module": code.module, "handler": code.handler}
    out["testbed_shim.py"] = (shims / "testbed_shim.py").read_bytes()
    out["testbed_shim.json"] = (json.dumps(config, sort_keys=True) + "\n").encode()
    if platform == "gcf-gen2":
        out["main.py"] = (shims / "gcf_main.py").read_bytes()
        out["requirements.txt"] = GCF_REQUIREMENTS.encode()
    else:
        out["function_app.py"] = (shims / "azure_function_app.py").read_bytes()
        out["host.json"] = (json.dumps(AZURE_HOST_JSON, indent=2) + "\n").encode()
        out["requirements.txt"] = AZURE_REQUIREMENTS.encode()
    return out


def build_zip(content: dict[str, bytes]) -> bytes:
    """A deterministic zip of ``content`` (sorted names, 1980-01-01 times, mode 0644)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(content):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o100644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, content[name])
    return buf.getvalue()


def package(code: FunctionCode, platform: str = "aws-lambda") -> bytes:
    """The zip a driver uploads for ``code`` on ``platform``."""
    return build_zip(files(code, platform))


def read_zip(data: bytes) -> dict[str, bytes]:
    """The files of an uploaded zip (name -> content), within Lambda's size limits; a ValueError
    names what is wrong (not a zip, too large, a path leaving the package)."""
    if len(data) > MAX_ZIP_BYTES:
        raise ValueError(f"zip of {len(data)} bytes over the {MAX_ZIP_BYTES}-byte direct-upload limit")
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise ValueError(f"could not unzip the uploaded file: {exc}") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > MAX_ENTRIES:
            raise ValueError(f"{len(infos)} files in the zip (limit {MAX_ENTRIES})")
        total = sum(i.file_size for i in infos)
        if total > MAX_UNZIPPED_BYTES:
            raise ValueError(f"unzipped size {total} bytes over the limit of {MAX_UNZIPPED_BYTES}")
        out = {}
        for info in infos:
            name = PurePosixPath(info.filename)
            if name.is_absolute() or ".." in name.parts or "\\" in info.filename:
                raise ValueError(f"zip entry {info.filename!r} leaves the package")
            out[name.as_posix()] = zf.read(info)
        return out


def match(content: dict[str, bytes], candidates: list[FunctionCode], platform: str) -> FunctionCode | None:
    """The function whose ``platform`` package has exactly these files (compiled caches ignored)."""
    wanted = {k: v for k, v in content.items() if not any(s in k for s in _SKIP)}
    for code in candidates:
        if files(code, platform) == wanted:
            return code
    return None
