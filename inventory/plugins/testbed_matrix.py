"""Inventory plugin ``testbed_matrix``: machine matrices that join the run only when ``--limit`` names them.

The default inventory (ansible.cfg) is ``inventory/local.yml`` plus ``inventory/matrix.testbed.yml``,
which uses this plugin. A bare ``ansible-playbook run.yml`` sees only localhost; ``-l sev,tdx``
names groups of the Azure matrix, so its inventory files (``inventory/azure.yml`` and the
constructed groups) are loaded and the limit reaches those machines; ``-l kvm`` or ``-l hyperv``
loads the lab inventory the same way. A source joins when a term of the limit (split on ``,``
and ``:``, without ``&``/``!``, globs allowed) names one of its ``groups`` or one of its hosts.
``all``, ``local`` and ``localhost`` name no matrix. The plugin reads the limit from Ansible's
command-line context (``--limit``/``-l``, ``ANSIBLE_LIMIT`` is not a thing), so nothing else is needed.

Config (YAML)::

    plugin: testbed_matrix
    sources:
      - name: Azure confidential-VM matrix
        files: [azure.yml, azure.constructed.yml]   # relative to this file; parsed in order
        groups: [azure, sev, tdx, amd_baseline, intel_baseline]
"""

from __future__ import annotations

import fnmatch
import os
import re

from ansible import context
from ansible.errors import AnsibleParserError
from ansible.inventory.data import InventoryData
from ansible.plugins.inventory import BaseInventoryPlugin
from ansible.plugins.loader import inventory_loader

DOCUMENTATION = """
name: testbed_matrix
short_description: machine matrices that join only when --limit names them
description: see the module docstring (inventory/plugins/testbed_matrix.py)
options:
  plugin:
    description: the name of this plugin
    required: true
    choices: [testbed_matrix]
  sources:
    description: inventories with the groups that bring them in
    type: list
    elements: dict
    required: true
"""

#: limit terms that never bring a matrix in
NEUTRAL = {"all", "local", "localhost", "*"}


def limit_terms(subset: str | list | tuple | None) -> list[str]:
    """The host/group names (or globs) a --limit value mentions, without set operators."""
    if not subset:
        return []
    values = subset if isinstance(subset, (list, tuple)) else [subset]
    terms: list[str] = []
    for value in values:
        for raw in re.split(r"[,:]", str(value)):
            part = raw.strip().lstrip("&!")
            if part and not part.startswith("@") and part not in NEUTRAL:
                terms.append(part)
    return terms


def _names_match(terms: list[str], names: set[str]) -> bool:
    for term in terms:
        if term.startswith("~"):
            rx = re.compile(term[1:])
            if any(rx.match(n) for n in names):
                return True
        elif any(fnmatch.fnmatchcase(n, term) for n in names):
            return True
    return False


class InventoryModule(BaseInventoryPlugin):
    NAME = "testbed_matrix"

    def verify_file(self, path: str) -> bool:
        return super().verify_file(path) and path.endswith((".testbed.yml", ".testbed.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super().parse(inventory, loader, path, cache)
        config = self._read_config_data(path)
        terms = limit_terms(context.CLIARGS.get("subset"))
        if not terms:
            return
        here = os.path.dirname(path)
        for source in config.get("sources") or []:
            files = [os.path.join(here, f) for f in source.get("files") or []]
            missing = [f for f in files if not os.path.isfile(f)]
            if missing:
                raise AnsibleParserError(f"{path}: source {source.get('name')!r}: no file {missing[0]}")
            names = set(source.get("groups") or [])
            names |= set(self._load(InventoryData(), loader, files).hosts)
            if _names_match(terms, names):
                self._load(inventory, loader, files)

    @staticmethod
    def _load(inventory: InventoryData, loader, files: list[str]) -> InventoryData:
        """Parse ``files`` in order into ``inventory`` with the plugin each one names (yaml by default)."""
        for f in files:
            with open(f, encoding="utf-8") as fh:
                head = fh.read()
            m = re.search(r"^plugin:\s*(\S+)", head, re.M)
            plugin = inventory_loader.get(m.group(1) if m else "yaml")
            if plugin is None:
                raise AnsibleParserError(f"{f}: unknown inventory plugin")
            plugin.parse(inventory, loader, f, cache=False)
        inventory.reconcile_inventory()
        return inventory
