"""Filters that turn a failed Azure module result into Azure's own words.

A failed azure_rm_resource call carries the ARM error body somewhere in ``msg``, ``module_stderr``
or ``exception`` - often inside the repr of a Python exception with escaped quotes. These filters
find Azure's ``code`` and ``message`` (or Entra ID's ``error``/``error_description``) in it.
"""

from __future__ import annotations

import json
import re
from typing import Any

_OBJECT = re.compile(r"\{.*\}", re.S)
_FIELD = r'\\*"{0}\\*"\s*:\s*\\*"((?:[^"\\]|\\.)*?)\\*"'


def _texts(result: Any) -> list[str]:
    if not isinstance(result, dict):
        return [str(result)]
    keys = ("msg", "module_stderr", "module_stdout", "exception", "response")
    return [v if isinstance(v, str) else json.dumps(v) for k in keys if (v := result.get(k))]


def _unescape(text: str) -> str:
    try:
        return json.loads(f'"{text}"')
    except ValueError:
        return text.replace('\\"', '"').replace("\\'", "'")


def _from_json(text: str) -> tuple[str, str] | None:
    found = _OBJECT.search(text)
    try:
        body = json.loads(found.group(0)) if found else None
    except ValueError:
        return None
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and err.get("code"):
        return str(err["code"]), str(err.get("message", ""))
    return None


def _from_fields(text: str) -> tuple[str, str] | None:
    for code_key, message_key in (("code", "message"), ("error", "error_description")):
        code = re.search(_FIELD.format(code_key), text)
        message = re.search(_FIELD.format(message_key), text)
        if code and message:
            return _unescape(code.group(1)), _unescape(message.group(1))
    return None


def azure_vm_error(result: Any) -> str:
    """``Code: message`` of the Azure error in a failed module result, else its first line."""
    for text in _texts(result):
        found = _from_json(text) or _from_fields(text)
        if found:
            return f"{found[0]}: {found[1]}"
    texts = _texts(result)
    return texts[0].strip().splitlines()[0] if texts and texts[0].strip() else "unknown error (no message)"


class FilterModule:
    """Ansible entry point."""

    def filters(self) -> dict[str, Any]:
        return {"azure_vm_error": azure_vm_error}
