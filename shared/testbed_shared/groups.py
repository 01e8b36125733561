"""The inventory groups (docs/design.md section 2) and what a machine's groups and label claim: one place
for the names and for the one judgement of a claim against the evidence, which the agent makes
when it writes the fingerprint and the report makes when it reads it."""

from __future__ import annotations

import re
from collections.abc import Sequence

#: every group a host may be in
GROUPS = ("sev", "tdx", "amd_baseline", "intel_baseline", "kvm", "hyperv", "faas", "local")
#: confidential groups and the technologies of the fingerprint (``cc.technology``) that prove them
CONFIDENTIAL = {"sev": ("sev", "sev-es", "sev-snp"), "tdx": ("tdx",)}
#: the baselines: machines claimed to run without confidential computing
BASELINES = ("amd_baseline", "intel_baseline")
#: each confidential group and the baseline it is compared with
PAIRS = (("sev", "amd_baseline"), ("tdx", "intel_baseline"))
#: what the evidence may say of a baseline without contradicting it
_NOT_CONFIDENTIAL = ("none", "unknown")


def claimed(groups: Sequence[str], label: str = "") -> str | None:
    """What the inventory claims: ``sev``, ``tdx``, ``none`` (a baseline) or None (no claim).
    Groups decide; without them, a label that names SEV/SNP or TDX claims it."""
    for group in CONFIDENTIAL:
        if group in groups:
            return group
    if any(g in groups for g in BASELINES):
        return "none"
    low = label.lower()
    if "snp" in low or re.search(r"(?<![a-z])sev", low):
        return "sev"
    if "tdx" in low:
        return "tdx"
    return None


def contradiction(groups: Sequence[str], technology: str, label: str = "") -> str | None:
    """Why the evidence (``technology``) contradicts what the groups and label claim, or None."""
    claim = claimed(groups, label)
    if claim in CONFIDENTIAL and technology not in CONFIDENTIAL[claim]:
        return f"claims {claim.upper()} but its evidence says '{technology}'"
    if claim == "none" and technology not in _NOT_CONFIDENTIAL:
        return f"is a baseline but its evidence says '{technology}'"
    return None
