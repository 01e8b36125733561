"""The report takes each benchmark's primary metrics from its records (the ``primary`` field, docs/design.md
section 4) and reads records made before the field by the frozen rules; it needs no workload registry."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from testbed_reports.errors import SchemaError
from testbed_reports.inference import primary_set
from testbed_reports.load import load

QUICK = Path(__file__).parent / "data" / "quick-run"
#: what the report took as primary from this store before records named their primary metrics
QUICK_PRIMARY = {
    ("SimplePrime.ipynb", "wall_s"),
    ("aes-256-gcm", "go.decrypt.throughput"),
    ("aes-256-gcm", "go.encrypt.throughput"),
    ("aes-256-gcm", "python.decrypt.throughput"),
    ("aes-256-gcm", "python.encrypt.throughput"),
    ("app-store.ipynb", "wall_s"),
    ("dd_write_read_64m_128k", "read_seconds"),
    ("dd_write_read_64m_128k", "write_seconds"),
    ("fio_1m_write", "write_bw_bytes"),
    ("fio_4k_randread", "read_bw_bytes"),
    ("systeminfo", "logical_cpus"),  # sysinfo has no rule: its first metric by name
}


def _rewrite(tmp_path: Path, change) -> Path:
    """A copy of the quick-run store with ``change(record)`` applied to every record of localhost."""
    store = tmp_path / "store"
    shutil.copytree(QUICK, store)
    path = store / "localhost.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    path.write_text("".join(json.dumps(change(r)) + "\n" for r in recs))
    return store


def test_records_made_before_the_field_read_as_they_did() -> None:
    ds = load([QUICK])
    assert set(primary_set(ds.obs)) == QUICK_PRIMARY
    assert ds.obs["primary"].dtype == bool


def test_the_record_says_which_metric_is_primary(tmp_path: Path) -> None:
    """A record's own word wins over any rule of its type: here fio's IOPS and no dd metric."""

    def say(rec: dict) -> dict:
        if rec["benchmark"] == "fio_4k_randread" and rec["status"] == "ok":
            rec["primary"] = ["read_iops"]
        elif rec["type"] == "dd":
            rec["primary"] = []
        return rec

    got = primary_set(load([_rewrite(tmp_path, say)]).obs)
    assert ("fio_4k_randread", "read_iops") in got
    assert ("fio_4k_randread", "read_bw_bytes") in got, "the bare fio store (no field) keeps its rule"
    dd = sorted(m for b, m in got if b == "dd_write_read_64m_128k")
    assert len(dd) == 1, "no primary metric named: the first by name, one member of the family"


def test_a_primary_field_naming_no_metric_is_refused(tmp_path: Path) -> None:
    def bad(rec: dict) -> dict:
        if rec["benchmark"] == "systeminfo":
            rec["primary"] = ["no_such_metric"]
        return rec

    with pytest.raises(SchemaError, match=r"localhost\.jsonl:\d+: field 'primary' names \"no_such_metric\""):
        load([_rewrite(tmp_path, bad)])
