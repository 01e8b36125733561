"""One judgement of a label against the evidence (issue 28): the agent, when it writes the
fingerprint, and the report, when it reads it, use testbed_shared.groups and agree."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from testbed_agent.sysinfo.cc import label_mismatch
from testbed_reports.fingerprint import mismatches
from testbed_shared import groups

CASES = list(
    itertools.product(
        [["sev"], ["tdx"], ["amd_baseline"], ["intel_baseline"], ["local"], []],
        ["", "SEV-SNP", "TDX-Encrypted", "Plain"],
        ["none", "unknown", "sev", "sev-es", "sev-snp", "tdx"],
    )
)


@pytest.mark.parametrize(("host_groups", "label", "tech"), CASES)
def test_agent_and_report_judge_alike(host_groups: list[str], label: str, tech: str) -> None:
    agent = label_mismatch(host_groups, tech, label)
    fp = pd.DataFrame(
        [
            {
                "host": "h",
                "label": label or "h",
                "run_id": "r",
                "groups": ",".join(host_groups),
                "cc_technology": tech,
                "sysinfo": True,
                "disk_encryption": None,
                "agent_mismatch": "",
            }
        ]
    )
    report = [text for _, text in mismatches(fp) if "disk encryption" not in text]
    if agent is None:
        assert report == []
    else:
        assert report == [f"h (label {label or 'h'}, run r) {agent.removeprefix('host ')}"]


def test_group_names_live_in_one_place() -> None:
    assert set(groups.CONFIDENTIAL) | set(groups.BASELINES) <= set(groups.GROUPS)
    assert {a for a, _ in groups.PAIRS} == set(groups.CONFIDENTIAL)
    assert {b for _, b in groups.PAIRS} == set(groups.BASELINES)
