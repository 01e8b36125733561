"""One record path (issue 28): the report counts what the agent counts.

Regression tests of the bugs the issue names: a retried execution counted as its failed first
attempt (from a real kill-and-resume run of the agent), an ok record without ``metrics`` ending
in a traceback, two runs that share a run id merged as conflicting duplicates, and readers that
re-read the files without the record module (crypto tables counted a copied record twice).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from report_helpers import write_jsonl
from report_support.synth import Machine, write_run
from test_report_crypto import crypto_record

from testbed_reports import crypto_tables
from testbed_reports.cli import main
from testbed_reports.errors import SchemaError
from testbed_reports.load import load

PLAN = """\
benchmarks:
  - name: dd_x
    type: dd
    repetitions: 2
    params: {bs: 1M, count: 128, source: urandom, read: false, conv: ""}
"""


def _agent(plan: Path, out: Path, scratch: Path) -> list[str]:
    return [
        sys.executable, "-m", "testbed_agent", "run", str(plan), "--out", str(out), "--host", "h1",
        "--node-exporter", "", "--no-progress", "--scratch", str(scratch),
    ]  # fmt: skip


def _dd_child_of(agent: int) -> int | None:
    """The pid of a dd process the agent ``agent`` started (its benchmark), or None."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(")") + 2 :].split()[1])
        if ppid == agent and Path(argv[0].decode(errors="replace")).name == "dd":
            return int(entry.name)
    return None


def test_a_retried_execution_counts_its_final_attempt(tmp_path: Path) -> None:
    """A real run: repetition 0's dd is killed (SIGKILL), the agent records it failed and goes on;
    the resumed run retries it (attempt 2, ok). Both the agent and the report count two ok
    executions, and the report warns of nothing (it used to keep the failed attempt: n = 1 and a
    CONFLICTING duplicate)."""
    plan = tmp_path / "plan.yml"
    plan.write_text(PLAN)
    out, scratch = tmp_path / "results" / "r1", tmp_path / "scratch"
    proc = subprocess.Popen(
        _agent(plan, out, scratch), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        pid = _dd_child_of(proc.pid)
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            killed = pid
        time.sleep(0.005)
    _, err = proc.communicate(timeout=300)
    assert killed is not None, f"never saw dd run: {err[-500:]}"
    assert proc.returncode == 3, err  # the plan ran to the end with a failure
    lines = (out / "h1.jsonl").read_text().splitlines()
    assert len(lines) == 2

    resumed = subprocess.run(_agent(plan, out, scratch), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    from testbed_agent.results import dedupe, read_records

    recs = read_records(out / "h1.jsonl")
    assert [(r["repetition"], r["attempt"], r["status"]) for r in recs] == [
        (0, 1, "failed"),
        (1, 1, "ok"),
        (0, 2, "ok"),
    ]
    assert "exited with -9" in recs[0]["error"]
    assert sorted((r["repetition"], r["status"]) for r in dedupe(recs).kept) == [(0, "ok"), (1, "ok")]

    ds = load([out])
    assert sorted(ds.records["status"]) == ["ok", "ok"]
    assert sorted(ds.obs[ds.obs["metric"] == "write_seconds"]["repetition"]) == [0, 1]
    assert not [w for w in ds.warnings if "CONFLICTING" in w], ds.warnings


def test_an_ok_record_without_metrics_is_a_clean_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "r" / "h.jsonl"
    path.parent.mkdir()
    path.write_text(
        '{"schema": 1, "run_id": "r", "host": "h", "benchmark": "b", "repetition": 0, "status": "ok"}\n'
    )
    with pytest.raises(SchemaError, match=r"h\.jsonl:1: field 'metrics' is missing"):
        load([path.parent])
    assert main(["build", str(path.parent), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert "h.jsonl:1: field 'metrics' is missing" in err


def _two_machines() -> list[Machine]:
    return [
        Machine("a-1", "A", ["sev"], factor=1.05, technology="sev-snp"),
        Machine("b-1", "B", ["amd_baseline"]),
    ]


def test_two_runs_with_one_run_id_are_kept_apart(tmp_path: Path) -> None:
    """Two results directories of different runs that both carry run id ``run1`` (it is the
    directory's name by default): every record counts, the second run as ``run1@2``."""
    first = write_run(tmp_path / "site-a", "run1", _two_machines(), ["dd_x"], reps=5, seed=1)
    second = write_run(tmp_path / "site-b", "run1", _two_machines(), ["dd_x"], reps=5, seed=2)
    ds = load([first, second])
    assert len(ds.records) == 20
    assert sorted(set(ds.records["run_id"])) == ["run1", "run1@2"]
    assert not [w for w in ds.warnings if "CONFLICTING" in w]
    assert [w for w in ds.warnings if "kept apart" in w]
    assert len(ds.obs[(ds.obs["metric"] == "bw_bytes") & (ds.obs["label"] == "A")]) == 10


def test_a_copy_of_a_run_counts_once(tmp_path: Path) -> None:
    """The same run fetched to two places is one run: its records count once."""
    first = write_run(tmp_path / "site-a", "run1", _two_machines(), ["dd_x"], reps=5, seed=1)
    copy = tmp_path / "copy" / "run1"
    shutil.copytree(first, copy)
    ds = load([first, copy])
    assert len(ds.records) == 10 and set(ds.records["run_id"]) == {"run1"}
    assert any("identical copies" in w for w in ds.warnings)


def test_crypto_tables_count_each_execution_once(tmp_path: Path) -> None:
    """The crypto tables read through the record module: a record repeated in the file (a
    fetched-twice append) is one execution, as in the rest of the report."""
    recs = [crypto_record("kvm", "aes-cbc-text", "text", 1e-3, rep) for rep in range(2)]
    path = write_jsonl(tmp_path / "r" / "h.jsonl", recs + recs)
    cells = crypto_tables.cells([path])
    assert len(cells) == 4  # 2 repetitions x 2 cells, not 8


def test_the_reports_crypto_cells_come_from_its_one_read(tmp_path: Path) -> None:
    """build takes the crypto records that load already chose instead of reading every file again
    (a second full read and validation, 22 of 45 s at 10^6 observations): the same cells as a read
    of the files, with a duplicate, a retried execution and two runs sharing a run id."""
    recs = [crypto_record("kvm", "aes-cbc-text", "text", 1e-3, rep) for rep in range(3)]
    failed = {**recs[1], "status": "failed", "error": "killed", "metrics": {}, "samples": {}}
    retried = {**recs[1], "attempt": 2, "session": "s2"}
    first = write_jsonl(tmp_path / "a" / "run1" / "h.jsonl", [recs[0], recs[0], failed, retried, recs[2]])
    other = [crypto_record("hyperv", "aes-cbc-text", "text", 2e-3, rep) for rep in range(2)]
    other = [{**r, "host": "h-kvm", "session": "other"} for r in other]  # another run: same run id and host
    second = write_jsonl(tmp_path / "b" / "run1" / "h.jsonl", other)
    paths = [first.parent, second.parent]
    ds = load(paths)
    mine = crypto_tables.cells_of(ds.crypto)
    read = crypto_tables.cells(paths)
    assert len(mine) == 10  # 3 + 2 executions x 2 cells: the copy once, the retry by its last attempt
    key = ["run_id", "host", "benchmark", "repetition", "language", "op"]
    pd.testing.assert_frame_equal(
        mine.sort_values(key).reset_index(drop=True), read.sort_values(key).reset_index(drop=True)
    )
    assert sorted(set(mine["run_id"])) == sorted(set(ds.records["run_id"])) == ["r1", "r1@2"]
