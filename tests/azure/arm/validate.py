"""Strict validation of ARM request bodies against the Azure SDK's own model classes.

Azure rejects a body with a property its API version does not know ("Could not find member ...")
and an enum value outside the service's list; msrest's Model.deserialize ignores both, so the walk
below compares every JSON key with the model's ``_attribute_map`` (flattened keys such as
``properties.hardwareProfile`` included) and checks enum-typed strings against the SDK's enums.
"""

from __future__ import annotations

import enum
import inspect
import re
from types import ModuleType
from typing import Any


class ArmError(Exception):
    """An error as Azure returns it: HTTP status, code, message (and optional target)."""

    def __init__(self, status: int, code: str, message: str, target: str | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.status, self.code, self.message, self.target = status, code, message, target

    def body(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.target:
            err["target"] = self.target
        return {"error": err}


def _tree(model: type) -> dict[str, Any]:
    """The model's JSON shape: nested dicts of key -> (attribute name, type string)."""
    tree: dict[str, Any] = {}
    for attr, spec in model._attribute_map.items():
        parts = [p.replace("\\.", ".") for p in re.split(r"(?<!\\)\.", spec["key"])]
        node = tree
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = (attr, spec["type"])
    return tree


# Enums the SDK lists but Azure treats as open (the VM size list is years out of date; sizes are
# checked against the service's SKU table instead).
OPEN_ENUMS = {"VirtualMachineSizeTypes"}


def _enum_of(model: type, attr: str, models: ModuleType) -> type[enum.Enum] | None:
    param = inspect.signature(model.__init__).parameters.get(attr)
    for name in re.findall(r"_models\.(\w+)", str(param.annotation) if param else ""):
        if name in OPEN_ENUMS:
            continue
        found = getattr(models, name, None)
        if isinstance(found, type) and issubclass(found, enum.Enum):
            return found
    return None


def check(body: Any, model: type, models: ModuleType, path: str = "") -> None:
    """Raise ArmError for the first unknown member or invalid enum value in ``body``."""
    if not isinstance(body, dict):
        raise ArmError(
            400, "InvalidRequestContent", f"Error converting value to type '{model.__name__}'. Path '{path}'."
        )
    _walk(body, _tree(model), model, models, path)


def _walk(body: dict, tree: dict, model: type, models: ModuleType, path: str) -> None:
    for key, value in body.items():
        where = f"{path}.{key}" if path else key
        if key not in tree:
            raise ArmError(
                400,
                "InvalidRequestContent",
                "The request content was invalid and could not be deserialized: 'Could not find member "
                f"'{key}' on object of type '{model.__name__}'. Path '{where}'.'.",
            )
        node = tree[key]
        if isinstance(node, dict):
            if not isinstance(value, dict):
                raise ArmError(
                    400, "InvalidRequestContent", f"Unexpected value for '{where}': an object is required."
                )
            _walk(value, node, model, models, where)
        elif value is not None:
            _value(value, node, model, models, where)


def _value(value: Any, node: tuple[str, str], model: type, models: ModuleType, where: str) -> None:
    attr, kind = node
    if kind.startswith("[") and isinstance(value, list):
        for i, item in enumerate(value):
            _value(item, (attr, kind[1:-1]), model, models, f"{where}[{i}]")
        return
    if kind.startswith("{") and isinstance(value, dict):
        for k, item in value.items():
            _value(item, (attr, kind[1:-1]), model, models, f"{where}.{k}")
        return
    sub = getattr(models, kind, None)
    if isinstance(sub, type) and hasattr(sub, "_attribute_map"):
        check(value, sub, models, where)
        return
    _scalar(value, kind, _enum_of(model, attr, models), where)


def _scalar(value: Any, kind: str, choices: type[enum.Enum] | None, where: str) -> None:
    expected = {"str": str, "bool": bool, "int": int, "float": (int, float), "iso-8601": str}.get(kind)
    if (expected and not isinstance(value, expected)) or (kind == "int" and isinstance(value, bool)):
        raise ArmError(
            400,
            "InvalidRequestContent",
            f"Error converting value {value!r} to type '{kind}'. Path '{where}'.",
        )
    if choices is not None and isinstance(value, str) and value not in {c.value for c in choices}:
        name = where.rsplit(".", 1)[-1]
        raise ArmError(
            400,
            "InvalidParameter",
            f"The value '{value}' of parameter '{name}' is not allowed. "
            f"Allowed values are: {', '.join(c.value for c in choices)}.",
            name,
        )
