"""Automatic comparison pairs from inventory groups, the evidence checks behind the banner, and
labels measured in blocks (record field ``block``) compared pair by pair."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from report_helpers import record, write_jsonl

from testbed_reports.build import build
from testbed_reports.compare import auto_pairs
from testbed_reports.fingerprint import claims_encryption, disk_encrypted, fingerprints, mismatches


def _factors(rows: list[tuple[str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"label": lab, "groups": g, "protection": None, "vendor": None, "disk": d} for lab, g, d in rows]
    )


def test_pairs_follow_the_inventory_groups() -> None:
    factors = _factors(
        [
            ("SEV-Encrypted", "sev", "encrypted"),
            ("SEV-Plain", "sev", "plain"),
            ("AMD-Encrypted", "amd_baseline", "encrypted"),
            ("AMD-Plain", "amd_baseline", "plain"),
            ("TDX", "tdx", "plain"),
            ("Intel", "intel_baseline", "plain"),
            ("KVM-guest", "kvm", "plain"),
            ("HyperV-guest", "hyperv", "plain"),
            ("aws-like", "faas", None),
            ("gcp-like", "faas", None),
            ("azure-like", "faas", None),
            ("controller", "local", "plain"),
        ]
    )
    pairs = {(p.a, p.b): p.kind for p in auto_pairs(factors)}
    assert pairs == {
        ("SEV-Encrypted", "AMD-Encrypted"): "sev vs amd_baseline",
        ("SEV-Plain", "AMD-Plain"): "sev vs amd_baseline",
        ("SEV-Encrypted", "SEV-Plain"): "encrypted vs plain (sev)",
        ("TDX", "Intel"): "tdx vs intel_baseline",
        ("KVM-guest", "HyperV-guest"): "kvm vs hyperv",
        ("aws-like", "azure-like"): "faas platform vs platform",
        ("aws-like", "gcp-like"): "faas platform vs platform",
        ("azure-like", "gcp-like"): "faas platform vs platform",
    }


def test_disk_encryption_forms_and_label_claims() -> None:
    assert disk_encrypted({"declared": "false", "dm_crypt_devices": []}) is False
    assert disk_encrypted({"dm_crypt_devices": [{"name": "root", "cipher": "aes-xts-plain64"}]}) is True
    assert disk_encrypted(True) is True and disk_encrypted(None) is None
    assert claims_encryption("SEV-Encrypted") and claims_encryption("tdx_encrypt")
    assert not claims_encryption("SEV-Unencrypted") and not claims_encryption("AMD-Plain")


def test_mismatches_cover_labels_baselines_missing_sysinfo_and_agent_findings() -> None:
    records = pd.DataFrame(
        [
            {"label": "SEV", "run_id": "r", "host": "a", "groups": "sev"},
            {"label": "Base", "run_id": "r", "host": "b", "groups": "amd_baseline"},
            {"label": "TDX", "run_id": "r", "host": "c", "groups": "tdx"},
            {"label": "TDX-ok", "run_id": "r", "host": "d", "groups": "tdx"},
        ]
    )
    finding = "label says sev, CPUID says none"
    sysinfo = {
        ("r", "a"): {"cc": {"technology": "none", "label_mismatch": finding}},
        ("r", "b"): {"cc": {"technology": "sev-snp"}},
        ("r", "d"): {"cc": {"technology": "tdx", "disk_encryption": None}},
    }
    found = mismatches(fingerprints(records, sysinfo))
    labels = [lab for lab, _ in found]
    assert labels == ["Base", "SEV", "SEV", "TDX"]
    text = " | ".join(p for _, p in found)
    assert "is a baseline but its evidence says 'sev-snp'" in text
    assert "claims SEV but its evidence says 'none'" in text
    assert "the agent reports a label mismatch: label says sev, CPUID says none" in text
    assert "claims TDX but has no sysinfo" in text


def test_guest_fingerprint_shows_the_hypervisor_host() -> None:
    records = pd.DataFrame(
        [
            {"label": "KVM-plain", "run_id": "r", "host": "g", "groups": "kvm"},
            {"label": "bare", "run_id": "r", "host": "b", "groups": "local"},
        ]
    )
    host = {
        "virtualization": "software emulation (QEMU TCG)",
        "domain_type": "qemu",
        "qemu_version": "7.2.19",
        "libvirt_version": "9.0.0",
        "host_cpu_model": "EPYC 7763",
        "vcpus": 1,
        "memory_mib": 1536,
        "disk_cache": "none",
    }
    sysinfo = {
        ("r", "g"): {"cc": {"technology": "none"}, "host": host},
        ("r", "b"): {"cc": {"technology": "none"}},
    }
    fp = fingerprints(records, sysinfo).set_index("host")
    assert fp.loc["g", "hypervisor_host"] == (
        "software emulation (QEMU TCG); QEMU 7.2.19, libvirt 9.0.0; "
        "host CPU EPYC 7763; 1 vCPU, 1536 MiB, disk cache none"
    )
    assert fp.loc["b", "hypervisor_host"] == ""


def _blocked_records(tmp: Path, with_blocks: bool) -> Path:
    """Two one-machine labels measured in 8 blocks that share a state (the machine's level in that
    block moves by +-10 %), label A 3 % slower; a ninth run of A has no partner."""
    rng = np.random.default_rng(4)
    state = rng.normal(0, 0.10, 9)
    recs = []
    for lab, host, f in (("A", "ha", 1.03), ("B", "hb", 1.0)):
        for r in range(9 if lab == "A" else 8):
            over = {"block": f"pair-{r}"} if with_blocks else {}
            rec = record(
                label=lab, host=host, groups=[], type="dd", benchmark="dd_write", repetition=r, **over
            )
            value = f * float(np.exp(state[r] + rng.normal(0, 0.005)))
            rec["metrics"] = {"write_seconds": {"value": value, "unit": "s", "better": "lower"}}
            recs.append(rec)
    return write_jsonl(tmp / "r" / "x.jsonl", recs)


def test_blocked_runs_are_compared_pair_by_pair(tmp_path: Path) -> None:
    """What both labels' runs in a block share cancels: the 3 % difference under a +-10 % shared
    state is decided; analysed as two independent samples it is not (issue 34 item 2)."""
    rep = build([_blocked_records(tmp_path / "p", True)], tmp_path / "out", compare_specs=["A:B"])
    (row,) = rep.comparisons.itertuples(index=False)
    assert row.test_unit == "pair" and row.decision == "slower", row.verdict
    assert row.overhead_ci_low < 3.0 < row.overhead_ci_high
    unpaired = build([_blocked_records(tmp_path / "u", False)], tmp_path / "out2", compare_specs=["A:B"])
    (row,) = unpaired.comparisons.itertuples(index=False)
    assert row.test_unit == "run" and row.decision == "inconclusive"
