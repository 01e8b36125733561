"""Plugins found by module: how workload types, clouds and FaaS platforms are registered.

A plugin family is one package and one base class: every module or subpackage directly in the
package, except the ones the family names as helpers (``base`` ...) and those starting with ``_``,
defines exactly one subclass of the base with its key attribute set (a workload's ``type``, a
cloud's ``name``). Nothing lists the plugins by hand; adding one is adding its module
(docs/extending.md).

:class:`Plugins` lists a family's modules without importing them (:meth:`Plugins.modules`), imports
one on demand (:meth:`Plugins.load`: a platform's SDK only when that platform is used), or all of
them once (:meth:`Plugins.found`). A module that needs a third-party library missing here is, for a
family that allows it (``optional=True``), left out and listed with the reason; a missing module of
the toolkit itself is always an error. The package's ``__path__`` is read at each listing, so a test
can add a directory to it (and :meth:`Plugins.forget` what was found).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Generic, TypeVar

T = TypeVar("T")

#: top-level packages of the toolkit: a missing one is a broken install, never an optional library
OWN_PREFIX = "testbed_"


@dataclass(frozen=True)
class Found(Generic[T]):
    """Every plugin of a family by key, and the modules left out here with why."""

    plugins: Mapping[str, type[T]]
    unavailable: Mapping[str, str]


class Plugins(Generic[T]):
    """The plugin family of ``package``: subclasses of ``base`` whose ``key`` attribute is set.

    ``helpers``: modules of the package that hold no plugin. ``named_as_module``: a plugin lives in
    the module named as its key, ``-`` written ``_`` (``aws-lambda`` in ``aws_lambda.py``), so one
    plugin is imported alone (:meth:`get`). ``optional``: a module whose import misses a third-party
    library is listed in ``unavailable`` instead of failing.
    """

    def __init__(
        self,
        package: str,
        base: type[T],
        key: str,
        *,
        helpers: Iterable[str] = ("base",),
        named_as_module: bool = False,
        optional: bool = False,
    ) -> None:
        self.package = package
        self.base = base
        self.key = key
        self.helpers = frozenset(helpers)
        self.named_as_module = named_as_module
        self.optional = optional
        self._found: Found[T] | None = None

    def modules(self) -> tuple[str, ...]:
        """The names of the modules that hold plugins, sorted, none imported."""
        path = importlib.import_module(self.package).__path__
        names = {i.name for i in pkgutil.iter_modules(path)}
        return tuple(sorted(n for n in names if n not in self.helpers and not n.startswith("_")))

    def keys(self) -> tuple[str, ...]:
        """The plugins' keys without importing them (families named as their modules whose keys have
        no ``-``: the module names are the keys)."""
        if not self.named_as_module:
            raise TypeError(f"{self.package}: plugins are not named as their modules; use found()")
        return self.modules()

    @staticmethod
    def module_of(key: str) -> str:
        """The module a plugin named as its module lives in (``aws-lambda``: ``aws_lambda``)."""
        return key.replace("-", "_")

    def load(self, module: str) -> type[T]:
        """Import one module of the family and return its plugin (ModuleNotFoundError propagates)."""
        name = f"{self.package}.{module}"
        mod = importlib.import_module(name)
        own = [
            obj
            for obj in vars(mod).values()
            if isinstance(obj, type)
            and issubclass(obj, self.base)
            and getattr(obj, self.key, None)
            and obj.__module__ == name
        ]
        if len(own) != 1:
            what = ", ".join(c.__name__ for c in own) or "none"
            raise TypeError(
                f"{name} must define one {self.base.__name__} subclass with its {self.key!r} set ({what})"
            )
        plugin = own[0]
        if self.named_as_module and self.module_of(getattr(plugin, self.key)) != module:
            raise TypeError(
                f"{self.base.__name__} {getattr(plugin, self.key)!r} must live in module {module!r}: "
                f"the module is named as the plugin"
            )
        return plugin

    def get(self, key: str) -> type[T] | None:
        """The plugin called ``key`` (None if there is none); a family named as its modules imports
        only that module."""
        if self.named_as_module:
            if self._found is not None:
                return self._found.plugins.get(key)
            module = self.module_of(key)
            if module not in self.modules():
                return None
            plugin = self.load(module)
            return plugin if getattr(plugin, self.key) == key else None
        return self.found().plugins.get(key)

    def found(self) -> Found[T]:
        """Every plugin of the family (each module imported once, then remembered)."""
        if self._found is None:
            plugins: dict[str, type[T]] = {}
            unavailable: dict[str, str] = {}
            for module in self.modules():
                try:
                    plugin = self.load(module)
                except ModuleNotFoundError as exc:
                    if not self.optional or exc.name is None or exc.name.startswith(OWN_PREFIX):
                        raise
                    unavailable[module] = f"needs {exc.name}, not installed here"
                    continue
                key = getattr(plugin, self.key)
                if key in plugins:
                    raise TypeError(f"{self.key} {key!r} defined twice ({plugins[key]}, {plugin})")
                plugins[key] = plugin
            self._found = Found(MappingProxyType(plugins), MappingProxyType(unavailable))
        return self._found

    def forget(self) -> None:
        """Drop what was found (a test that changed the package's path calls it before and after)."""
        self._found = None
