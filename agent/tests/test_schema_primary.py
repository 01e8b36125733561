"""The primary-metric rules of the workload types (each module's own), looked up by type."""

from testbed_agent.workloads import primary_metrics


def test_fio_primary_is_bandwidth_per_direction() -> None:
    names = ["read_bw_bytes", "read_iops", "write_bw_bytes", "read_clat_p99_s"]
    assert primary_metrics("fio", names) == ["read_bw_bytes", "write_bw_bytes"]


def test_dd_primary_is_latency() -> None:
    assert primary_metrics("dd", ["write_bytes", "write_seconds", "write_bw_bytes"]) == ["write_seconds"]


def test_crypto_throughput_or_time_per_op_per_cell() -> None:
    names = [
        "py.aes.4096.throughput",
        "py.aes.4096.cpu_percent",
        "py.ecdsa.time_per_op",
        "py.aes.4096.time_per_op",
    ]
    assert primary_metrics("crypto", names) == ["py.aes.4096.throughput", "py.ecdsa.time_per_op"]


def test_types_without_rule_have_none() -> None:
    assert primary_metrics("sysinfo", ["logical_cpus"]) == []
    assert primary_metrics("pyperformance", ["nbody", "float"]) == ["float", "nbody"]
