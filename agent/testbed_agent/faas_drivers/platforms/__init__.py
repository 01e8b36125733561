"""FaaS platforms: one module per platform, one :class:`Platform` subclass in it, named as the
platform (``aws_lambda.py`` defines ``aws-lambda``), found by the discovery helper
(``testbed_shared.discovery``).

A module imports its SDK only when a driver connects, so every platform is known (its defaults,
prices, package) where its SDK is not installed. Adding a platform is one file here plus its
stand-in for the tests (docs/extending.md); nothing else lists them.
"""

from __future__ import annotations

from collections.abc import Mapping

from testbed_agent.faas_drivers.base import Platform
from testbed_shared.discovery import Plugins
from testbed_shared.errors import TestbedError

__all__ = ["PLUGINS", "get", "modelled_by", "names", "registry"]

PLUGINS: Plugins[Platform] = Plugins(__name__, Platform, "name", helpers=(), named_as_module=True)


def registry() -> Mapping[str, type[Platform]]:
    """Every platform by name."""
    return PLUGINS.found().plugins


def names() -> tuple[str, ...]:
    """The platforms' names, sorted."""
    return tuple(sorted(registry()))


def get(name: str) -> type[Platform]:
    """The platform called ``name``; a one-line error naming the known ones otherwise."""
    found = PLUGINS.get(name)
    if found is None:
        raise TestbedError(f"no FaaS platform {name!r} (known: {', '.join(names())})")
    return found


def modelled_by(profile: str) -> str | None:
    """The real platform an emulator profile models (None for test profiles)."""
    return next((p.name for p in registry().values() if p.real and p.models(profile)), None)
