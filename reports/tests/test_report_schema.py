"""One record schema: the report and the agent read testbed_shared.records (issues 13 and 28)."""

from __future__ import annotations

from testbed_agent import results, workloads
from testbed_reports import load
from testbed_shared import records as schema


def test_report_and_agent_share_the_record_schema() -> None:
    assert load.STATUSES is schema.STATUSES and load.BETTER is schema.BETTER
    assert load.FINAL_STATUSES is schema.FINAL_STATUSES
    assert tuple(results.STATUSES) == schema.STATUSES and tuple(results.BETTER) == schema.BETTER
    assert frozenset(results.FINAL_STATUSES) == schema.FINAL_STATUSES


def test_primary_metric_of_each_workload_type() -> None:
    assert workloads.primary_metrics("fio", ["read_bw_bytes", "read_iops", "clat_mean_s"]) == [
        "read_bw_bytes"
    ]
    assert workloads.primary_metrics("dd", ["write_seconds", "write_bw_bytes"]) == ["write_seconds"]
    assert workloads.primary_metrics("sysinfo", ["x"]) == []


def test_faas_primary_is_the_functions_latency_when_it_reports_one() -> None:
    assert workloads.primary_metrics("faas", ["latency_s", "round_trip_p50_s", "round_trip_s"]) == [
        "latency_s"
    ]
    assert workloads.primary_metrics("faas", ["round_trip_p50_s", "round_trip_s"]) == ["round_trip_p50_s"]
