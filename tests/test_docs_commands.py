"""Every command README.md and docs/*.md show works as written (issues 30 and 37).

The commands are the lines of the fenced shell blocks (``sh``, ``bash``, ``console`` or unmarked)
that start with one of PREFIXES, each with its continuation lines and any argument quoted over
several lines. Each one is classified in COMMANDS below:

- ``Run``: run here exactly as a user pastes it: its text as the doc shows it, newlines and all,
  in bash from the repository root, with the project venv active (README: ``source
  .venv/bin/activate``) and the user's real HOME. Only a placeholder is filled (``as_run`` with
  ``filled`` saying which: ``results/<run_id>``, ``RUN_A``, ``FILE``, a synopsis's ``[--options]``),
  with real data at toy size, and a plan that takes minutes gets a toy plan (``filled`` says so);
  ``check`` says what "works" means (an exit status and what the output must say - a command that
  stops with one line naming what is missing works). What a command needs first is a documented
  command of its own, run before it the way the doc says (the SSH key of the Azure dry run, the
  target file of the FaaS platform commands); what the walk creates in HOME that was not there is
  removed afterwards. ``session`` commands (the Lambda API walk-through) run as one pasted block in
  one shell.
- ``Excluded``: not run, with the reason (a cloud account, a lab, hours of measurement, or the
  same script run by another test); the doc shows the reason too, as a comment on the command.

A command in the docs that is in neither fails the test, so a new example gets run or a reason.
No command that runs may change a tracked file or leave a file in the repository root (git status
and the root's entries before and after each one). Cloud credentials of the environment are never
passed on, and the Azure CLI profile directory is an empty one: no command reaches a cloud.
docs/commands.md (every option of every command, from the parsers) must be current, and no option
may lack its help text. ``python tests/test_docs_commands.py`` prints the counts.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from testbed_agent.procs import proc_stat

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
#: the pages with examples (docs/commands.md is the generated reference: usage lines, not examples)
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "commands.md")]
PREFIXES = (
    "make ",
    "ansible-playbook ",
    "testbed-agent ",
    "testbed-report ",
    ".venv/",
    "sudo ",
    "python ",
    "source ",
    "eval ",
    "test -f ",
    "mkdir ",
)
QUICK_RUN = "reports/tests/data/quick-run"
#: docs/report.md's planner example (it simulates 400 data sets; 30 here)
DESIGN = (
    "testbed-report design --metrics 25 --effect 3 --margin 2 --power 0.8 --machine-spread 2 --run-noise 1 "
    '--spread-source "calibration campaign 2026-11" --machine-hour-cost 0.9 --run-cost 0 '
    "--run-minutes 10 --setup-minutes 10 --at-once 12"
)
#: the S1 slot of docs/campaigns.md at toy size (the slot writes and reads a GB through the emulator)
TOD_TOY_PLAN = """name: tod-toy
defaults: {wait_s: 0, repetitions: 1, timeout_s: 55}
benchmarks:
  - name: tod_aws
    type: faas
    params:
      profile: aws-lambda-2024
      function: dd
      memory_mb: 512
      tmp_mb: 512
      mode: sequence
      sequence:
        - {phase: write, event: {command: "if=/dev/zero of=/tmp/file1 bs=1024000 count=2"}}
        - {phase: read, event: {command: "if=/tmp/file1 of=/dev/null bs=1024000"}}
"""
TOY_PLAN = """name: toy
defaults: {wait_s: 0, repetitions: 1}
benchmarks:
  - {name: systeminfo, type: sysinfo}
  - name: fio_4k_randread
    type: fio
    params: {size: 8M, runtime_s: 1, ramp_s: 0}
"""


@dataclass
class Run:
    """Run it as the doc shows it; ``as_run`` only fills a placeholder (``{tmp}``, ``{toy}``,
    ``{port}``...) and ``filled`` says which; ``check`` judges the result; ``fixed`` says what was
    wrong in the docs before issue 30 or 37."""

    as_run: str = ""
    check: Callable[[subprocess.CompletedProcess, Path], None] | None = None
    fixed: str = ""
    group: str = ""  # commands of one walk-through (run in order, sharing a background service)
    filled: str = ""  # the placeholder as_run fills (required with as_run)
    session: str = ""  # commands pasted as one block into one shell (their outcome is the block's)


@dataclass
class Excluded:
    reason: str


@dataclass
class Outcome:
    command: str
    entry: Run | Excluded
    result: subprocess.CompletedProcess | None = None
    places: list[str] = field(default_factory=list)
    side_effects: list[str] = field(default_factory=list)  # tracked files changed, root files left
    seconds: float = 0.0  # wall time of the command, with the tree checks around it


def ok(res: subprocess.CompletedProcess, _: Path) -> None:
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


def stops_with(text: str, rc: int | None = None) -> Callable[[subprocess.CompletedProcess, Path], None]:
    """A command that refuses on purpose: non-zero (or ``rc``), one error line holding ``text``."""

    def check(res: subprocess.CompletedProcess, _: Path) -> None:
        out = res.stdout + res.stderr
        assert res.returncode != 0 if rc is None else res.returncode == rc, out[-3000:]
        errors = [x for x in out.splitlines() if x.startswith(("[ERROR]", "error:"))]
        assert errors and text in errors[0], out[-3000:]

    return check


def says(*texts: str) -> Callable[[subprocess.CompletedProcess, Path], None]:
    def check(res: subprocess.CompletedProcess, tmp: Path) -> None:
        ok(res, tmp)
        for t in texts:
            assert re.search(t, res.stdout + res.stderr), (t, (res.stdout + res.stderr)[-3000:])

    return check


def _make_run_ended(res: subprocess.CompletedProcess, tmp: Path) -> None:
    ok(res, tmp)
    runs = re.findall(r"^make run: install \S+, build \S+, plan \S+, total \S+$", res.stdout, re.M)
    reports = re.findall(r"^report: (\S+index\.html)$", res.stdout, re.M)
    # its timings, then its report (the path comes twice: the playbook's line and make's last line)
    assert len(runs) == 1 and len(set(reports)) == 1, res.stdout[-4000:]
    stats = json.loads((Path(reports[0]).parent / "stats.json").read_text())
    decided = [c for c in stats["comparisons"] if c["primary"]]
    assert [c["comparison"] for c in decided] == ["fio via agent vs bare fio"]
    assert decided[0]["decision"] in ("slower", "faster", "equivalent", "inconclusive")


def _dry_run_recorded(res: subprocess.CompletedProcess, tmp: Path) -> None:
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    bodies = [p for p in AZURE_STATE.rglob("requests/*.json") if p.stat().st_mtime >= WALK_START]
    assert bodies, res.stdout[-3000:]
    assert "would create sev-enc-1" in res.stdout


def _azure_check(res: subprocess.CompletedProcess, tmp: Path) -> None:
    ok(res, tmp)
    _dry_run_recorded(res, tmp)


def _cold_then_warm(res: subprocess.CompletedProcess, tmp: Path) -> None:
    """The quick start's two invocations (their outputs one after the other): ok, cold then warm."""
    ok(res, tmp)
    assert res.stdout.count('"status": "ok"') == 2, res.stdout[-3000:]
    assert re.findall(r'"new_instance": (true|false)', res.stdout) == ["true", "false"], res.stdout[-3000:]


NO_AZURE = "an Azure subscription; the same playbooks run against the local ARM in make azure-rehearsal"
LAB = (
    "a KVM or Hyper-V lab (hosts with hardware virtualization, Windows over WinRM); tests/kvm and "
    "tests/hyperv run the roles against real libvirt (TCG) and a WinRM stand-in"
)

REAL_FAAS = (
    "a target file of a real FaaS account (lambda.yml, my-faas.yml: docs/faas.md); tests/faas runs the"
    " platform commands against local stand-ins of Lambda, GCF and Azure Functions"
)
LAMBDA_API = "the emulator's Lambda API walk-through; tests/faas/test_faas_lambda_api.py makes the same calls"
STUDY_RERUN = (
    "a published study rerun at full size (hours on the FaaS emulator); tests/studies runs each study"
    " plan derived small and its view (pytest -m study, make test-studies)"
)
STUDY_RUN = (
    "ansible-playbook run.yml -i inventory/azure-study.yml -i inventory/azure.constructed.yml "
    "-l sev,tdx,amd_baseline,intel_baseline -e plan=workloads/plans/cc-datascience-study.txt"
)

LAB_STOP = "the inventory still holds the example address 192.0.2."
NO_CREDS = "no Azure credentials: set AZURE_SUBSCRIPTION_ID, AZURE_CLIENT_ID, AZURE_SECRET and AZURE_TENANT"
LAMBDA = "~/testbed/lambda.yml"
SSH_KEY = "test -f ~/.ssh/id_ed25519.pub || ssh-keygen -t ed25519 -N '' -f ~/.ssh/id_ed25519"


def _estimate_over_cap(res: subprocess.CompletedProcess, _: Path) -> None:
    """docs/faas.md: `platform estimate` exits 3 when the plan's ceiling is over the target's cap."""
    assert res.returncode == 3 and "the ceiling is over it" in res.stdout, res.stdout + res.stderr


#: every command of the docs, as written there (comments stripped), and what to do with it, in the
#: order the walk runs them (what a command needs first comes first)
COMMANDS: dict[str, Run | Excluded] = {
    # README.md: the venv every command below runs in, then the headline commands
    "source .venv/bin/activate": Run(
        check=ok, fixed="undocumented: without it a newcomer's shell has no testbed-agent, testbed-report"
    ),
    "make run": Run(
        "make run PLAN={toy} QUICK_PAIRS=2",
        _make_run_ended,
        fixed="took 15 min (install and build of what the quick plan never uses) and compared nothing",
        filled="PLAN and QUICK_PAIRS: a toy plan and 2 pairs (the quick plan's own 3-8 min are README's"
        " figure, from a make run in a fresh clone)",
    ),
    "make test": Excluded("the suite this test runs in"),
    "ansible-playbook run.yml -l sev,tdx": Run(
        check=stops_with(NO_CREDS),
        fixed="the default inventory left no hosts; then its line came twice in ~60 lines without"
        " AZURE_SUBSCRIPTION_ID",
    ),
    "ansible-playbook run.yml -l kvm,hyperv": Run(
        check=stops_with(LAB_STOP), fixed="its line came once per host (89 lines)"
    ),
    "testbed-report build results/RUN_A results/RUN_B --compare A:B --out reports/out/a-vs-b": Run(
        "testbed-report build {tmp}/run-a {tmp}/run-b --compare 'fio via agent:bare fio' --out {tmp}/a-vs-b",
        says("1 primary"),
        filled="RUN_A, RUN_B and A:B: the quick run's two arms as two runs, one label each",
    ),
    "ansible-playbook run.yml": Run(
        "ansible-playbook run.yml -e plan={toy} -e run_id=docs-{stamp}",
        ok,
        filled="the quick plan at toy size (a minute instead of 3-8) and a run id of its own",
    ),
    "ansible-playbook run.yml -e plan=workloads/plans/standard.txt": Excluded(
        "hours (the 12 fio jobs of a minute each, pyperformance's default group); the same playbook "
        "runs at toy size above and a published plan derived small runs through it in make test-studies"
    ),
    "ansible-playbook run.yml -l kvm": Run(check=stops_with(LAB_STOP)),
    "make azure-deps": Run(check=ok),
    SSH_KEY: Run(
        check=ok, fixed="the dry runs need ~/.ssh/id_ed25519.pub: no doc said how (a fake HOME hid it)"
    ),
    "make azure-check": Run(check=_azure_check),
    "make azure-run": Excluded(NO_AZURE),
    "make azure-run AZURE_LIMIT=sev,tdx,amd_baseline,intel_baseline": Excluded(NO_AZURE),
    "make azure-teardown": Excluded(NO_AZURE + " (it asks Azure which resources carry the run's tag)"),
    "make azure-teardown RUN=az20261122t040000z": Excluded(NO_AZURE),
    "make azure-reap": Excluded(NO_AZURE + " (it lists every testbed resource group of the subscription)"),
    "make azure-rehearsal": Excluded(
        "the same script runs three times in tests/azure/test_azure_rehearsal.py (one right after a "
        "killed one, on the same directory)"
    ),
    "ansible-playbook run.yml -l sev,tdx --check": Run(
        check=_dry_run_recorded, fixed="needed -i inventory/azure.yml -i inventory/azure.constructed.yml"
    ),
    "ansible-playbook playbooks/teardown_azure.yml": Run(check=ok),
    ".venv/azure/bin/ansible-inventory -i inventory/azure_rm.yml --graph": Excluded(
        "lists the VMs of an Azure subscription (azure_rm dynamic inventory)"
    ),
    # docs/attestation.md (a synopsis: FILE and its options filled with a real SEV-SNP report)
    "testbed-agent attest verify FILE [--chain PEM]... [--root PEM]... [--as-of DATE] [--allow-debug]": Run(
        "testbed-agent attest verify shared/tests/data/attestation-samples/sev-snp/report.bin"
        " --chain shared/tests/data/attestation-samples/sev-snp/vcek.der"
        " --chain shared/tests/data/attestation-samples/sev-snp/ask_ark_milan.pem --allow-debug",
        says('"verified": true'),
        filled="FILE and the synopsis's options: a real SEV-SNP report with its chain",
    ),
    # docs/azure.md
    "ansible-playbook run.yml -i inventory/azure.yml -i inventory/azure.constructed.yml -l sev-1,amd-base-1 "
    "-e rotations=2": Run(
        check=stops_with("no Azure credentials"),
        fixed="new command (issue 34: rotations; rehearsed in tests/azure/test_azure_rehearsal.py)",
    ),
    "python scripts/sequential.py --compare SEV:AMD-Baseline --cap 40 --batch-hours 1.5 "
    "-i inventory/azure.yml -i inventory/azure.constructed.yml -l sev-1,amd-base-1": Run(
        check=stops_with("amd-base-1: azure_vm_hour_price is 'not set', not a positive price"),
        fixed="new command (issue 34: the sequential loop; tests/azure/test_azure_sequential.py)",
    ),
    "make azure-rehearsal AZURE_REHEARSAL_LIMIT=": Excluded(
        "the whole matrix runs in tests/azure/test_azure_rehearsal.py (same script)"
    ),
    STUDY_RUN + ' -e \'{"agent_plan_set": ["wait_s=0", "fio.runtime_s=1", "fio.ramp_s=0", '
    '"fio.size=8M", '
    '"kaggle_notebook.scale=quick", "pyperformance.benchmarks=[float]", '
    '"pyperformance.mode=fast"]}\'': Run(check=stops_with(NO_CREDS)),
    # docs/campaigns.md
    "testbed-agent campaign workloads/plans/timeofday-dd.yml --out results/io-tod --every 2m --for 4d "
    "--label local": Excluded("four days; the synopsis below runs the same command on a toy campaign"),
    "testbed-report timeofday results/io-tod --metric write_latency_s --benchmark tod_aws": Excluded(
        "needs the four-day campaign above; the synopsis below runs the same command on a toy campaign"
    ),
    "testbed-report study S1 results/io-tod --out reports/out/s1-tod": Excluded(STUDY_RERUN),
    "testbed-report timeofday results/io-tod --metric write_latency_s [--benchmark NAME] [--label L] "
    "[--unit run|observation] [--tz UTC] [--block-days 1] [--business-days all|Mon-Fri] "
    "[--power-effect 15] [--min-per-group 1] [--alpha 0.05] [--json tod.json]": Run(
        "testbed-agent campaign {todtoy} --out {tmp}/io-tod --every 10s --for 25s --label local"
        " --node-exporter '' && testbed-report timeofday {tmp}/io-tod --metric write_latency_s"
        " --benchmark tod_aws --label local --unit run --tz UTC --block-days 1 --business-days all"
        " --power-effect 15 --min-per-group 1 --alpha 0.05 --json {tmp}/tod.json",
        says("weekday", "campaign io-tod: complete"),
        fixed="named read_seconds, a metric the campaign does not have (the toy campaign was a dd plan)",
        filled="results/io-tod and the synopsis's options: a three-slot campaign of the S1 slot, 2 MB"
        " instead of 1 GB a call",
    ),
    # docs/faas.md and docs/plans.md: the published studies
    "testbed-agent run workloads/plans/faas-io.yml --out results/s1": Excluded(STUDY_RERUN),
    "testbed-agent campaign workloads/plans/timeofday-dd.yml --out results/tod --every 2m --for 4d": Excluded(
        STUDY_RERUN + "; docs/campaigns.md's synopsis runs here on a toy campaign"
    ),
    "testbed-report study S1 results/s1 results/tod --out reports/out/s1": Excluded(STUDY_RERUN),
    "testbed-report study S1 --csv start_dump.sql --csv day-time-dataset.csv "
    "--out reports/out/s1-thesis": Excluded(
        "the thesis's own data files, which are not in the repository (reports/tests/test_study_s1.py"
        " reads the same formats from synthetic rows)"
    ),
    "testbed-agent run workloads/plans/faas-factors-$p.yml --out results/s3-$p; done": Excluded(STUDY_RERUN),
    "testbed-report study S3 results/s3-* --out reports/out/s3": Excluded(STUDY_RERUN),
    "testbed-agent run workloads/plans/faas-crypto-kms.yml --out results/s0": Excluded(STUDY_RERUN),
    "testbed-report study S0 results/s0 --out reports/out/s0": Excluded(STUDY_RERUN),
    "testbed-agent plan derive workloads/plans/faas-factors-retention.yml --set faas.time_scale=20 "
    "-o .scratch/plans/rq4-fast.yml": Run(check=ok, fixed="wrote rq4-fast.yml into the repository root"),
    "testbed-agent plan derive workloads/plans/faas-io.yml --set repetitions=2 "
    "-o .scratch/plans/s1-small.yml": Run(
        check=ok, fixed="wrote s1-small.yml into the repository root, after which make lint failed"
    ),
    "testbed-agent plan derive workloads/plans/faas-factors-retention.yml --set faas.time_scale=20 "
    "--set faas.concurrency=16 -o .scratch/plans/s3-rq4-small.yml": Run(check=ok, group="derive"),
    "testbed-agent plan show .scratch/plans/s3-rq4-small.yml": Run(check=ok, group="derive"),
    # docs/crypto.md and docs/plans.md: the VM studies (S2 on Azure, S4 on a KVM and Hyper-V lab)
    "ansible-playbook -i inventory/lab-s4.yml run.yml -l kvm,hyperv "
    "-e plan=workloads/plans/crypto-hypervisor.yml": Run(check=stops_with("the inventory still holds")),
    "testbed-report study S2 results/<run_id> --out reports/out/s2": Excluded(
        "records of the S2 rerun on Azure; tests/notebooks/test_s2_report.py runs the S2 view"
        " on synthetic reruns"
    ),
    "testbed-report study S4 results/<run_id> --out reports/out/s4": Excluded(
        "records of the S4 rerun on a KVM and Hyper-V lab; tests/crypto/test_s4_report.py runs the S4 view"
        " on synthetic reruns"
    ),
    # README.md and docs/faas.md: real FaaS platforms (a target file of one's own) and the Lambda API
    "testbed-agent plan show workloads/plans/faas-io.yml": Run(check=ok),
    "mkdir -p ~/testbed && cat > ~/testbed/lambda.yml <<'EOF' platform: aws-lambda region: eu-west-1 "
    "cost_cap_usd: 5 EOF": Run(check=ok, fixed="the --target lambda.yml file was never shown"),
    f"testbed-agent platform estimate workloads/plans/faas-io.yml --target {LAMBDA}": Run(
        check=_estimate_over_cap
    ),
    f"testbed-agent platform dry-run workloads/plans/faas-smoke.yml --target {LAMBDA}": Run(
        check=says(r"\[dry-run\] aws-lambda lambda:CreateFunction", '"requests"')
    ),
    f"testbed-agent platform check --target {LAMBDA}": Run(check=stops_with("no AWS credentials")),
    f"testbed-agent platform smoke --target {LAMBDA}": Run(check=stops_with("no AWS credentials")),
    f"testbed-agent platform teardown --target {LAMBDA}": Run(check=stops_with("no AWS credentials")),
    f"testbed-agent platform teardown --target {LAMBDA} --expired": Run(
        check=stops_with("no AWS credentials")
    ),
    "ansible-playbook run.yml -i inventory/local.yml -i ~/testbed/my-faas.yml -l faas "
    "-e plan=workloads/plans/faas-io.yml": Excluded(REAL_FAAS),
    "testbed-report platform-check results/REAL results/EMULATED --out reports/out/check": Excluded(
        "records of a real platform's run; reports/tests/test_platform_check_view.py builds the view"
    ),
    # docs/faas.md (the quick start, in order, on a port of its own when 8650 is taken)
    ".venv/bin/testbed-agent faas profiles": Run(check=says("aws-lambda", "gcf-gen2"), fixed="undocumented"),
    ".venv/bin/testbed-agent faas serve --profile aws-lambda --port 8650 &": Run(
        check=ok, fixed="began with sudo, which a machine without sudo lacks", group="faas"
    ),
    ".venv/bin/testbed-agent faas deploy calcs --memory 128": Run(check=ok, group="faas"),
    ".venv/bin/testbed-agent faas invoke calcs --event '{\"level\": 2}'": Run(
        check=_cold_then_warm,
        fixed="level 3 at 128 MB (0.072 vCPU) always timed out after the profile's 3 s",
        group="faas",
    ),
    ".venv/bin/testbed-agent faas cold --function calcs": Run(check=ok, group="faas"),
    # docs/faas.md: the Lambda API walk-through, pasted as one block while the emulator runs
    "testbed-agent faas deploy calcs --memory 128": Run(
        check=says("200", "REPORT RequestId"), session="lambda"
    ),
    'eval "$(testbed-agent faas credentials)"': Run(check=says("200", "REPORT RequestId"), session="lambda"),
    'python -c \'import boto3, base64; r = boto3.client("lambda", region_name="us-east-1").invoke( '
    'FunctionName="calcs", LogType="Tail"); print(r["StatusCode"], r["Payload"].read(), '
    'base64.b64decode(r["LogResult"]).decode(), sep="\\n")\'': Run(
        check=says("200", "REPORT RequestId"),
        session="lambda",
        fixed="an IndentationError when pasted (the test joined its three lines into one and never saw it)",
    ),
    "make faas-smoke": Run(check=ok),
    "make bench": Excluded("about 15 minutes of measurement; run by hand; its figures: docs/bench.md"),
    # docs/hyperv.md, docs/kvm.md: the example lab stops at its documentation addresses
    "ansible-playbook run.yml -i inventory/lab.yml -l kvm,hyperv "
    "-e plan=workloads/plans/crypto-hypervisor.yml": Run(check=stops_with(LAB_STOP)),
    "ansible-playbook -i inventory/lab.yml run.yml": Run(check=stops_with(LAB_STOP)),
    "ansible-playbook -i inventory/lab.yml run.yml -l kvm_hosts,sev": Run(check=stops_with(LAB_STOP)),
    "ansible-playbook -i inventory/lab.yml playbooks/teardown_kvm.yml": Run(
        check=stops_with(LAB_STOP), fixed="tried SSH to 192.0.2.10 (rc 4)"
    ),
    # docs/plans.md
    STUDY_RUN: Run(check=stops_with(NO_CREDS)),
    STUDY_RUN + ' -e \'{"agent_plan_set": ["wait_s=0", "fio.runtime_s=1", "fio.size=8M", '
    '"notebook.scale=quick", "pyperformance.benchmarks=[float]", "pyperformance.mode=fast"]}\'': Run(
        check=stops_with(NO_CREDS)
    ),
    "testbed-agent plan show workloads/plans/cc-datascience-study.txt -i inventory/azure-study.yml "
    "-i inventory/azure.constructed.yml": Run(check=says("6 machines, each running the plan")),
    # docs/report.md
    "testbed-report build results/<run_id> [results/<other_run> ...] --out reports/out/<run_id>": Run(
        "testbed-report build " + QUICK_RUN + " --out {tmp}/report",
        says("report: "),
        filled="results/<run_id>: the quick run's records; reports/out/<run_id>: a directory of the test",
    ),
    "testbed-report build results/2026-11-22T0400 results/baselines --out reports/out/cvm "
    "--compare SEV-Encrypted:AMD-Baseline --compare TDX-Encrypted:Intel-Baseline": Run(
        "testbed-report build {tmp}/cvm-results/2026-11-22T0400 {tmp}/cvm-results/baselines"
        " --out {tmp}/cvm --compare SEV-Encrypted:AMD-Baseline --compare TDX-Encrypted:Intel-Baseline",
        says("SEV-Encrypted vs AMD-Baseline|comparisons"),
        group="cvm",
        filled="the example's two result directories: synthetic runs of its four labels",
    ),
    "make report RESULTS='results/<run_id> results/baselines' COMPARE='SEV-Encrypted:AMD-Baseline'": Run(
        "make report RESULTS='{tmp}/cvm-results/2026-11-22T0400 {tmp}/cvm-results/baselines'"
        " COMPARE='SEV-Encrypted:AMD-Baseline' REPORT_OUT={tmp}/make-report",
        ok,
        group="cvm",
        filled="results/<run_id> and results/baselines: synthetic runs of the example's labels",
    ),
    "make report RESULTS=results/<run_id> COMPARE='fio via agent:bare fio'": Run(
        "make report RESULTS=" + QUICK_RUN + " COMPARE='fio via agent:bare fio'",
        says("1 primary"),
        fixed="new line: COMPARE split its labels at their spaces",
        filled="results/<run_id>: the quick run's records",
    ),
    "testbed-report analyze --csv serverless_io.csv --metric latency_ms --by platform,memory_mb "
    "--where io=write --out reports/out/serverless-io [--tukey]": Run(
        "testbed-report analyze --csv {tmp}/serverless_io.csv --metric latency_ms --by platform,memory_mb"
        " --where io=write --out {tmp}/serverless-io --tukey",
        ok,
        fixed="named a CSV the project does not ship without saying so",
        filled="serverless_io.csv (a data set of the reader's own): a toy one with its columns",
    ),
    "testbed-report export reports/tests/data/quick-run --csv reports/out/quick-obs.csv": Run(check=ok),
    "testbed-report analyze --csv reports/out/quick-obs.csv --metric value --by label "
    "--where metric=read_bw_bytes --out reports/out/quick-obs": Run(check=says("3 groups")),
    "testbed-report export results/<run_id> [more ...] --csv reports/out/obs.csv": Run(
        "testbed-report export " + QUICK_RUN + " --csv {tmp}/obs.csv",
        ok,
        fixed="wrote obs.csv into the repository root",
        filled="results/<run_id>: the quick run's records",
    ),
    DESIGN: Run(
        DESIGN + " --sets 30",
        says("design: ", "simulated through the report's analysis"),
        filled="--sets 30: 30 simulated data sets instead of 400",
    ),
    # the toy reports have one machine a label: no machine spread to plan from, no look to take
    "testbed-report design --from reports/out/<run_id>/stats.json --effect 3": Run(
        "testbed-report design --from {tmp}/cvm/stats.json --effect 3 --sets 30",
        stops_with("no machine spread measured"),
        group="cvm",
        filled="reports/out/<run_id>: the report built above",
    ),
    "testbed-report sequential results/<run_id> --compare SEV-Encrypted:AMD-Baseline --looks 3,6 "
    "--max-machines 12": Run(
        "testbed-report sequential {tmp}/cvm-results --compare SEV-Encrypted:AMD-Baseline --looks 3,6 "
        "--max-machines 12",
        stops_with("the results hold 1"),
        filled="results/<run_id>: the synthetic runs above",
    ),
    "testbed-report history --compare SEV-Encrypted:AMD-Baseline --metric fio_4k_randread.read_bw_bytes "
    "[--window 12] [--between RUN1:RUN2] [--margin 2] [--store DIR] [--out DIR]": Run(
        "testbed-report history --compare SEV-Encrypted:AMD-Baseline --metric fio_4k_randread.read_bw_bytes"
        " --window 12 --margin 2 --store {tmp}/empty-store --out {tmp}/history",
        stops_with("no results store here"),
        filled="the synopsis's options; --store: a directory holding no store (tests/test_history*.py"
        " and reports/tests build real histories)",
    ),
}


def _logical_lines(body: str) -> list[tuple[int, str]]:
    """(index of its first line, text as written) of each shell command: the lines a backslash
    continues, and those inside an open quote (a JSON or Python argument spread over lines), stay
    part of it, newlines and all."""
    out: list[tuple[int, str]] = []
    lines: list[str] = []
    start = 0
    heredoc = ""
    for k, line in enumerate(body.splitlines()):
        if not lines:
            start = k
        lines.append(line)
        if heredoc:  # a here-document's lines belong to its command, up to the delimiter
            heredoc = "" if line.strip() == heredoc else heredoc
            if heredoc:
                continue
        elif m := re.search(r"<<-?\s*['\"]?(\w+)['\"]?", line):
            heredoc = m.group(1)
            continue
        text = "\n".join(lines)
        if text.endswith("\\") or _open_quote(text):
            continue
        out.append((start, text))
        lines = []
    if lines:
        out.append((start, "\n".join(lines)))
    return out


def _open_quote(text: str) -> bool:
    """Whether a quote of ``text`` is still open at its end (bash's single and double quotes)."""
    quote = ""
    escaped = False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and not quote:
            break
    return bool(quote)


def _key(raw: str) -> str:
    """A command's key in COMMANDS: its text on one line, the trailing comment left out."""
    flat = " ".join(line.rstrip("\\").strip() for line in raw.splitlines())
    return " ".join(re.sub(r"\s+#\s.*$", "", flat).removeprefix("$ ").split())


def _blocks() -> list[tuple[Path, int, str]]:
    """(page, line of its first command line, text) of every command in a fenced shell block."""
    found = []
    for path in DOCS:
        text = path.read_text()
        for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
            if m.group(1) not in ("", "sh", "bash", "console", "shell"):
                continue
            first = text[: m.start(2)].count("\n") + 1
            for k, raw in _logical_lines(m.group(2)):
                found.append((path, first + k, raw.removeprefix("$ ")))
    return found


def doc_commands() -> dict[str, list[str]]:
    """{command: ["file:line", ...]} of every toolkit command in a fenced shell block."""
    found: dict[str, list[str]] = {}
    for path, line, raw in _blocks():
        cmd = _key(raw)
        if cmd.startswith(PREFIXES) and not cmd.startswith("ansible-playbook $INV"):
            found.setdefault(cmd, []).append(f"{path.relative_to(ROOT)}:{line}")
    return found


def doc_text() -> dict[str, str]:
    """{command: its text as the first doc that shows it writes it (continuations, comment and all)}."""
    out: dict[str, str] = {}
    for _, _, raw in _blocks():
        out.setdefault(_key(raw), raw)
    return out


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


#: the Azure role's state directory in the real HOME (dry-run request records land there)
AZURE_STATE = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local/state") / "testbed/azure"
#: what the walk may create in the real HOME the way the docs say (removed again when it was not
#: there before): the Azure machines' SSH key, the FaaS target file of docs/faas.md
HOME_MADE = [Path.home() / ".ssh/id_ed25519", Path.home() / ".ssh/id_ed25519.pub", Path.home() / "testbed"]
WALK_START = time.time()
#: environment variables a command never gets: cloud credentials (no command may reach a cloud)
CLOUD_ENV = ("AZURE_", "ANSIBLE_AZURE", "TESTBED_AZURE", "AWS_", "GOOGLE_", "CLOUDSDK_", "ARM_")


def _prepare(tmp: Path) -> dict[str, str]:
    """The toy data the placeholders stand for, and the environment the commands run in: the
    user's own (real HOME), without cloud credentials and with an empty Azure CLI profile."""
    (tmp / "toy.yml").write_text(TOY_PLAN)
    (tmp / "tod-toy.yml").write_text(TOD_TOY_PLAN)
    for run, host in (("run-a", "fio-agent"), ("run-b", "fio-bare")):  # two runs, one label each
        (tmp / run).mkdir()
        for f in (ROOT / QUICK_RUN).glob(f"{host}.*"):
            shutil.copy(f, tmp / run / f.name)
    sys.path.insert(0, str(ROOT / "reports" / "tests"))
    from report_support.synth import Machine, write_run

    cvm = [
        Machine("sev-enc-1", "SEV-Encrypted", ["sev"], 1.05, "sev-snp", True),
        Machine("tdx-enc-1", "TDX-Encrypted", ["tdx"], 1.03, "tdx", True, "Intel Xeon Platinum 8370C"),
    ]
    base = [
        Machine("amd-base-1", "AMD-Baseline", ["amd_baseline"]),
        Machine("intel-base-1", "Intel-Baseline", ["intel_baseline"], cpu_model="Intel Xeon Platinum 8370C"),
    ]
    write_run(tmp / "cvm-results", "2026-11-22T0400", cvm, ["fio_4k_randwrite"], reps=5, seed=3)
    write_run(tmp / "cvm-results", "baselines", base, ["fio_4k_randwrite"], reps=5, seed=4)
    rows = ["platform,memory_mb,io,latency_ms"]
    for i in range(40):
        platform, memory, io = ("aws", "gcf")[i % 2], (128, 2048)[i // 2 % 2], ("write", "read")[i // 4 % 2]
        rows.append(f"{platform},{memory},{io},{1 + (i % 7) * 0.1 + (i % 2) * 0.5}")
    (tmp / "serverless_io.csv").write_text("\n".join(rows) + "\n")
    port = 8650 if _free(8650) else next(p for p in range(18650, 18700) if _free(p))
    (tmp / "azure-cli").mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(CLOUD_ENV)}
    env |= {"AZURE_CONFIG_DIR": str(tmp / "azure-cli"), "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0"}
    if port != 8650:  # another test holds the quick start's port: the emulator and its clients move
        env["TESTBED_FAAS_URL"] = f"http://127.0.0.1:{port}"
    return {
        "tmp": str(tmp),
        "toy": str(tmp / "toy.yml"),
        "todtoy": str(tmp / "tod-toy.yml"),
        "port": str(port),
        "stamp": str(int(time.time())),
        **env,
    }


def _shell(cmd: str, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess:
    """``cmd`` pasted into bash at the repository root, the project venv active (README)."""
    script = f"source {ROOT}/.venv/bin/activate\n{cmd}\n"
    return subprocess.run(
        ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )


def _fill(text: str, fill: dict[str, str]) -> str:
    for key, value in fill.items():
        text = text.replace("{" + key + "}", value)
    return text


def _tree_state() -> tuple[dict[str, str], set[str]]:
    """The tracked files that differ from HEAD or are untracked (each with a hash of its content),
    and the entries of the repository root: what a command must not change."""
    res = subprocess.run(
        ["git", "status", "--porcelain=v1", "-z", "--untracked-files=all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    state = {}
    for entry in res.stdout.split("\0"):
        if len(entry) < 4:
            continue
        path = ROOT / entry[3:]
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "-"
        state[entry[3:]] = f"{entry[:2]} {digest}"
    return state, set(os.listdir(ROOT))


#: the test tools' own caches in the root (git ignores them): the lanes beside the walk create them
#: whenever their first test runs (ruff's at the 18:24 clean clone, during `make run`)
TOOL_CACHES = {".pytest_cache", ".hypothesis", ".ruff_cache", "__pycache__"}
#: what the documented commands are meant to make in the root (git ignores them): the results store
#: and the agent's scratch (README, "make run"). The suite's earlier tests usually made them first;
#: the walk alone in a fresh clone (2026-11-30 21:00) saw `make run` make them
DESIGNED_OUTPUTS = {"results", ".scratch"}


def _changes(before: tuple[dict[str, str], set[str]], after: tuple[dict[str, str], set[str]]) -> list[str]:
    """What changed in the checkout between two ``_tree_state`` snapshots."""
    (files_a, root_a), (files_b, root_b) = before, after
    changed = sorted(p for p in set(files_a) | set(files_b) if files_a.get(p) != files_b.get(p))
    out = [f"{p}: {files_a.get(p, 'as in HEAD')} -> {files_b.get(p, 'as in HEAD')}" for p in changed]
    new = root_b - root_a - TOOL_CACHES - DESIGNED_OUTPUTS
    return out + [f"new in the repository root: {name}" for name in sorted(new)]


def _sessions() -> dict[str, str]:
    """Each session's commands as one pasted block, in the docs' order."""
    text = doc_text()
    out: dict[str, list[str]] = {}
    for cmd, entry in COMMANDS.items():
        if isinstance(entry, Run) and entry.session:
            out.setdefault(entry.session, []).append(text[cmd])
    return {name: "\n".join(parts) for name, parts in out.items()}


def run_all(tmp: Path) -> list[Outcome]:
    """Run every Run entry (groups in order) as the docs write it; return the outcomes of all."""
    values = _prepare(tmp)
    env = {k: v for k, v in values.items() if k.isupper() or k in os.environ}
    fill = {k: v for k, v in values.items() if not k.isupper()}
    text = doc_text()
    sessions = _sessions()
    done_sessions: dict[str, subprocess.CompletedProcess] = {}
    outcomes = []
    serve = None
    try:
        for cmd, entry in COMMANDS.items():
            out = Outcome(cmd, entry)
            outcomes.append(out)
            if isinstance(entry, Excluded):
                continue
            started = time.monotonic()
            before = _tree_state()
            as_written = _fill(entry.as_run, fill) if entry.as_run else text.get(cmd, cmd)
            if entry.session:
                if entry.session not in done_sessions:
                    done_sessions[entry.session] = _shell(sessions[entry.session], env)
                out.result = done_sessions[entry.session]
            elif cmd.endswith("faas serve --profile aws-lambda --port 8650 &"):
                argv = _key(as_written).removesuffix(" &").split()
                argv = [f"{fill['port']}" if a == "8650" else a for a in argv]
                argv[0] = str(ROOT / argv[0])
                serve = subprocess.Popen(
                    argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
                )
                deadline = time.monotonic() + 60
                while _free(int(fill["port"])) and time.monotonic() < deadline and serve.poll() is None:
                    time.sleep(0.2)
                out.result = subprocess.CompletedProcess(argv, 0 if serve.poll() is None else 1, "", "")
            elif "faas invoke" in cmd:  # the quick start invokes twice: first cold, then warm
                first = _shell(as_written, env)
                out.result = _shell(as_written, env)
                out.result.stdout = first.stdout + out.result.stdout
            else:
                out.result = _shell(as_written, env, timeout=1800)
            out.side_effects = _changes(before, _tree_state())
            out.seconds = time.monotonic() - started
    finally:
        if serve is not None:
            serve.terminate()
            serve.wait(timeout=30)
    return outcomes


def _home_snapshot() -> set[Path]:
    return {p for p in HOME_MADE if p.exists()}


def _tidy(before_home: set[Path], azure_before: set[Path]) -> None:
    """Remove what the walk made in the real HOME that was not there before it."""
    for path in HOME_MADE:
        if path.exists() and path not in before_home:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    if AZURE_STATE.exists():
        for path in set(AZURE_STATE.iterdir()) - azure_before:
            shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


#: held while the walk runs, by any checkout on this machine (see ``walk``)
WALK_LOCK = Path("/run/lock/testbed-docs-walk.lock")
#: where the node_exporter role (its defaults) listens and writes the pid of the daemon it starts
#: without systemd: `make run` and `ansible-playbook run.yml` leave it running, as a service
NODE_EXPORTER_PORT = 9100
NODE_EXPORTER_PIDFILE = Path("/run/testbed-node-exporter.pid")


def _stop_node_exporter_started_since(started: float) -> None:
    """End the node_exporter the role started (its pid file) if it started after ``started``
    (seconds since boot, CLOCK_BOOTTIME): a service for a user of `make run`, a process left behind
    for the test suite."""
    try:
        pid = int(NODE_EXPORTER_PIDFILE.read_text().split()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, IndexError):
        return
    stat = proc_stat(pid)
    if stat is None or (b"node-exporter" not in cmdline and b"node_exporter" not in cmdline):
        return
    if stat[1] / os.sysconf("SC_CLK_TCK") + 1 < started:
        return  # there before the walk: not ours to stop
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    NODE_EXPORTER_PIDFILE.unlink(missing_ok=True)


#: the checkout's directories (ignored by git) where documented commands write what a user asks for:
#: what the walk adds there is removed afterwards
OUTPUTS = (ROOT / "results", ROOT / "reports" / "out", ROOT / ".scratch" / "plans")


@pytest.fixture(scope="module")
def one_walk_at_a_time() -> Iterator[None]:
    """The walk uses the real HOME (the SSH key, ~/testbed, the Azure state directory) and tidies
    what it made there, and serves the FaaS emulator on a port picked at its start: two walks at
    once (two checkouts' `make test` on one machine) would tidy and call each other's."""
    WALK_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with WALK_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture(scope="module")
def walk(
    tmp_path_factory: pytest.TempPathFactory, one_walk_at_a_time: None
) -> tuple[Path, dict[str, Outcome]]:
    found = doc_commands()
    missing = {c: p for c, p in found.items() if c not in COMMANDS}
    assert not missing, f"commands in the docs that are neither run nor excluded here: {missing}"
    stale = [c for c in COMMANDS if c not in found]
    assert not stale, f"entries here that no doc shows any more: {stale}"
    tmp = tmp_path_factory.mktemp("docs")
    home_before = _home_snapshot()
    azure_before = set(AZURE_STATE.iterdir()) if AZURE_STATE.exists() else set()
    outputs_before = {d: set(d.iterdir()) if d.exists() else set() for d in OUTPUTS}
    # `make run` starts node_exporter on its default port when nothing answers there
    exporter_before, walk_started = not _free(NODE_EXPORTER_PORT), time.clock_gettime(time.CLOCK_BOOTTIME)
    done: list[Outcome] = []
    try:
        done = run_all(tmp)
        for out in done:
            out.places = found[out.command]
        slow = sorted((o for o in done if o.result is not None), key=lambda o: -o.seconds)
        print(f"docs walk: {sum(o.seconds for o in slow):.0f} s; slowest:")
        for o in slow[:12]:
            print(f"  {o.seconds:6.1f} s  {o.command[:100]}")
        yield tmp, {o.command: o for o in done}
    finally:
        _tidy(home_before, azure_before)
        if not exporter_before:
            _stop_node_exporter_started_since(walk_started)
        # only what the walk's own commands named (the other lane of make test writes results too)
        said = " ".join(
            f"{o.command} {o.result.stdout} {o.result.stderr} {_fill(getattr(o.entry, 'as_run', ''), {})}"
            for o in done
            if o.result is not None
        )
        for d, before in outputs_before.items():
            for path in (set(d.iterdir()) if d.exists() else set()) - before:
                if re.search(rf"(^|[/\s'\"]){re.escape(path.name)}([/\s'\"]|$)", said):
                    shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.timeout(3600)  # the first one runs the walk (7 min here), after another checkout's walk
@pytest.mark.parametrize("command", [c for c, e in COMMANDS.items() if isinstance(e, Run)])
def test_the_command_works_as_written(command: str, walk: tuple[Path, dict[str, Outcome]]) -> None:
    tmp, done = walk
    out = done[command]
    assert out.result is not None and isinstance(out.entry, Run)
    (out.entry.check or ok)(out.result, tmp)
    assert out.side_effects == [], (out.places, out.side_effects)  # no tracked file, no root file


def test_every_option_is_documented_and_the_reference_is_current() -> None:
    res = subprocess.run(
        [sys.executable, str(ROOT / "scripts/gen-commands-doc.py"), "--check"], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    empty = [line for line in (ROOT / "docs/commands.md").read_text().splitlines() if line.endswith("|  |")]
    assert empty == [], f"options without a help text: {empty}"


def test_every_doc_command_is_classified() -> None:
    found = doc_commands()
    assert set(found) == set(COMMANDS), {
        "in the docs only": sorted(set(found) - set(COMMANDS)),
        "here only": sorted(set(COMMANDS) - set(found)),
    }


def test_a_filled_command_says_which_placeholder() -> None:
    """Only a placeholder is filled: a command runs as the doc writes it unless ``filled`` says why."""
    unexplained = [c for c, e in COMMANDS.items() if isinstance(e, Run) and e.as_run and not e.filled]
    assert unexplained == []


def test_an_excluded_command_says_why_in_the_docs() -> None:
    """A command the walk does not run carries the reason where a reader sees it: a comment on it."""
    text = doc_text()
    bare = [c for c, e in COMMANDS.items() if isinstance(e, Excluded) and not re.search(r"\s#\s", text[c])]
    assert bare == []


#: paths the docs name that are not in the checkout on purpose: made at run time (whether they
#: exist depends on what ran before this test, so they are never checked), or files of the
#: reader's own that a page shows how to write (docs/extending.md's example type and platform)
MADE_LATER = (
    ".cache/",
    ".scratch/",
    "reports/out/",
    "results/",
    "kaggle_notebooks/.datasets/",
    "inventory/group_vars/hyperv_hosts/vault.yml",
    "agent/testbed_agent/workloads/checksum.py",
    "agent/tests/test_workload_checksum.py",
    "agent/testbed_agent/faas_drivers/platforms/openwhisk.py",
    "tests/faas/openwhisk_standin.py",
    "tests/faas/test_faas_openwhisk.py",
    "workloads/faas/profiles/openwhisk.yml",
)


def test_every_path_the_docs_name_exists() -> None:
    """A path of the repository named in backquotes exists (crypto.md named crypto_files.py, which
    never existed; report.md two files that had moved); GCP role names (roles/run.invoker) and
    what MADE_LATER lists are not paths of the checkout."""
    tops = {p.name for p in ROOT.iterdir()} - {".git", ".venv"}
    missing = []
    for doc in [*DOCS, ROOT / "docs" / "commands.md"]:
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            for tok in re.findall(r"`([^`\s]+)`", line):
                path = tok.rstrip(".,:;)").split(":")[0]
                if "/" not in path or re.search(r"[<*{$]", path) or path.split("/")[0] not in tops:
                    continue
                if re.fullmatch(r"roles/[a-z]+\.[a-zA-Z]+", path) or path.startswith(MADE_LATER):
                    continue
                if not (ROOT / path).exists():
                    missing.append(f"{doc.relative_to(ROOT)}:{n}: {path}")
    assert missing == []


def test_commands_are_read_as_pasted() -> None:
    """A command spread over lines stays one command with its newlines (a Python argument over three
    lines was joined into one line, so an IndentationError in the doc went unseen)."""
    body = "python -c 'import a; b(\n  1); print(2,\n  3)'  # x\nmake run \\\n  PLAN=p\necho \"#\"\n"
    body += "cat > f <<'EOF'\na: 1\nEOF\nls\n"
    got = _logical_lines(body)
    assert [k for k, _ in got] == [0, 3, 5, 6, 9]
    assert got[3][1] == "cat > f <<'EOF'\na: 1\nEOF"
    assert got[0][1].count("\n") == 2 and _key(got[1][1]) == "make run PLAN=p"
    assert _key(got[0][1]) == "python -c 'import a; b( 1); print(2, 3)'"


if __name__ == "__main__":  # the counts for the report
    runs = [e for e in COMMANDS.values() if isinstance(e, Run)]
    print(
        f"{len(COMMANDS)} documented commands: {sum(1 for e in runs if not e.as_run)} run as written, "
        f"{sum(1 for e in runs if e.as_run)} with a placeholder filled, "
        f"{len(COMMANDS) - len(runs)} excluded"
    )
    for cmd, e in COMMANDS.items():
        tag = (
            "excluded: " + e.reason
            if isinstance(e, Excluded)
            else ("filled: " + e.filled if e.as_run else "as written")
            + (f" (fixed: {e.fixed})" if e.fixed else "")
        )
        print(f"- {cmd}\n    {tag}")


def test_the_walk_stops_only_the_node_exporter_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make run` leaves the role's node_exporter running as a service; the walk ends one started
    since it began (by its pid file) and leaves one that was there before."""
    exe = tmp_path / "prometheus-node-exporter"
    shutil.copy("/bin/sleep", exe)
    pidfile = tmp_path / "node-exporter.pid"
    monkeypatch.setattr(sys.modules[__name__], "NODE_EXPORTER_PIDFILE", pidfile)
    proc = subprocess.Popen([str(exe), "60"])
    try:
        pidfile.write_text(f"{proc.pid}\n")
        now = time.clock_gettime(time.CLOCK_BOOTTIME)
        _stop_node_exporter_started_since(now + 30)  # started before the "walk": kept
        assert proc.poll() is None and pidfile.exists()
        _stop_node_exporter_started_since(now - 30)
        assert proc.wait(timeout=10) == -signal.SIGTERM and not pidfile.exists()
    finally:
        proc.kill()
        proc.wait()
