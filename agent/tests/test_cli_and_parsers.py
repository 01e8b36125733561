"""CLI behaviour: --help everywhere, one-line errors with hints, parse of raw tool outputs."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from agenttest import agent

from testbed_agent.telemetry import ProgressExporter, counter_deltas, scrape_node_exporter


@pytest.mark.parametrize("cmd", [[], ["run"], ["sysinfo"], ["validate"], ["parse"]])
def test_help(cmd: list[str]) -> None:
    res = agent(*cmd, "--help")
    assert res.returncode == 0 and "usage: testbed-agent" in res.stdout


def test_missing_plan_is_one_line_with_no_traceback(tmp_path: Path) -> None:
    res = agent("validate", str(tmp_path / "nope.yml"))
    assert res.returncode == 2
    assert (
        res.stderr.strip() == f"error: {tmp_path / 'nope.yml'}: cannot read plan: No such file or directory"
    )
    debug = agent("--debug", "validate", str(tmp_path / "nope.yml"))
    assert "Traceback" in debug.stderr


def test_parse_pyperf_json_of_a_real_pyperf_run(tmp_path: Path) -> None:
    out = tmp_path / "timeit.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pyperf",
            "timeit",
            "--quiet",
            "--processes",
            "2",
            "--values",
            "2",
            "--warmups",
            "1",
            "--loops",
            "100",
            "--name",
            "sum_range",
            "-o",
            str(out),
            "sum(range(100))",
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    res = agent("parse", "pyperf", str(out))
    assert res.returncode == 0, res.stderr
    parsed = json.loads(res.stdout)
    m = parsed["metrics"]["sum_range"]
    assert m["unit"] == "s" and m["better"] == "lower" and m["value"] > 0
    assert len(parsed["samples"]["sum_range"]["values"]) == 4


def test_parse_rejects_garbage(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("not json")
    for kind in ("fio", "pyperf", "dd"):
        res = agent("parse", kind, str(bad))
        assert res.returncode == 2 and res.stderr.startswith("error: "), (kind, res.stderr)


def test_sysinfo_fingerprint() -> None:
    res = agent("sysinfo")
    info = json.loads(res.stdout)
    assert {"cpu", "kernel", "memory", "disks", "hypervisor", "clocksource", "cc", "tools"} <= info.keys()
    assert info["cc"]["technology"] in {"none", "sev", "sev-es", "sev-snp", "tdx"}
    assert info["cpu"]["flags"] and info["kernel"]["cmdline"] is not None
    assert info["tools"]["fio"].startswith("fio-")


def test_sysinfo_host_facts_mark_software_emulation(tmp_path: Path) -> None:
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"domain_type": "qemu", "qemu_version": "7.2"}))
    info = json.loads(agent("sysinfo", "--host-facts", str(facts)).stdout)
    assert info["host"]["qemu_version"] == "7.2"
    assert info["hypervisor"]["software_emulation"] is True


def test_node_exporter_deltas_and_progress(node_exporter: dict, tmp_path: Path) -> None:
    before = scrape_node_exporter(node_exporter["url"])
    sum(range(3_000_000))
    after = scrape_node_exporter(node_exporter["url"])
    deltas = counter_deltas(before, after)
    assert deltas is not None and deltas["cpu_seconds_user"] >= 0
    assert scrape_node_exporter("http://127.0.0.1:1/metrics") is None
    assert counter_deltas(None, after) is None
    ProgressExporter(node_exporter["textfile"], "r9", "hx").update(2, 5, "fio_4k_read")
    for _ in range(20):
        text = urllib.request.urlopen(node_exporter["url"]).read().decode()
        if 'testbed_agent_executions_done{host="hx",run_id="r9"} 2' in text:
            break
    assert 'testbed_agent_executions_total{host="hx",run_id="r9"} 5' in text


def test_output_piped_into_a_reader_that_stops_early_is_no_traceback() -> None:
    """``testbed-agent plan show PLAN --json | head -1``: exit 141 quietly, like other Unix tools."""
    plan = Path(__file__).resolve().parents[2] / "workloads" / "plans" / "faas-io.yml"
    proc = subprocess.Popen(
        [sys.executable, "-m", "testbed_agent", "plan", "show", str(plan), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"{")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert "Traceback" not in err and "Broken pipe" not in err, err
