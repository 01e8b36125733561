"""Every command README.md and docs/*.md show works as written (issue 30).

The commands are the lines of the fenced shell blocks (``sh``, ``bash``, ``console`` or unmarked)
that start with one of the toolkit's commands. Each one is classified in COMMANDS below:

- ``Run``: run here, as written; placeholders (``results/<run_id>``, ``RUN_A``, ``FILE``) are filled
  with real data at toy size, outputs go to a temporary directory, and a plan that takes minutes
  gets a toy plan (``toy``); ``check`` says what "works" means for it (an exit status and what
  the output must say - a command that stops with one line naming what is missing works);
- ``Excluded``: not run, with the reason (a cloud account, a lab, hours of measurement, or the
  same script run by another test).

A command in the docs that is in neither fails the test, so a new example gets run or a reason.
docs/commands.md (every option of every command, from the parsers) must be current, and no option
may lack its help text. ``python tests/test_docs_commands.py`` prints the counts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

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
)
QUICK_RUN = "reports/tests/data/quick-run"
#: docs/report.md's planner example (it simulates 400 data sets; 30 here)
DESIGN = (
    "testbed-report design --metrics 25 --effect 3 --margin 2 --power 0.8 --machine-spread 2 --run-noise 1 "
    '--spread-source "calibration campaign 2026-11" --machine-hour-cost 0.9 --run-cost 0 '
    "--run-minutes 10 --setup-minutes 10 --at-once 12"
)
#: the campaign's slot at toy size (the S1 slot writes and reads a GB through the FaaS emulator)
TOD_TOY_PLAN = """name: tod-toy
defaults: {wait_s: 0, repetitions: 1}
benchmarks:
  - name: dd_10k_512b
    type: dd
    params: {bs: 512, count: 20, source: urandom, conv: fsync, iflag: direct, pause_s: 0.2}
  - name: dd_1m_128k
    type: dd
    params: {bs: 128k, count: 8, source: urandom, conv: fsync, iflag: direct, pause_s: 0.2}
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
    """Run it; ``as_run`` fills the placeholders (``{tmp}``, ``{toy}``, ``{port}``...), ``check``
    judges the result; ``fixed`` says what was wrong in the docs before issue 30."""

    as_run: str = ""
    check: Callable[[subprocess.CompletedProcess, Path], None] | None = None
    fixed: str = ""
    group: str = ""  # commands of one walk-through (run in order, sharing a background service)


@dataclass
class Excluded:
    reason: str


@dataclass
class Outcome:
    command: str
    entry: Run | Excluded
    result: subprocess.CompletedProcess | None = None
    places: list[str] = field(default_factory=list)


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


def _make_run_twice(res: subprocess.CompletedProcess, tmp: Path) -> None:
    ok(res, tmp)
    runs = re.findall(r"^make run: install \S+, build \S+, plan \S+, total \S+$", res.stdout, re.M)
    reports = re.findall(r"^report: (\S+index\.html)$", res.stdout, re.M)
    assert len(runs) == 2 and len(set(reports)) == 2, res.stdout[-4000:]  # twice, two reports
    for report in set(reports):
        stats = json.loads((Path(report).parent / "stats.json").read_text())
        decided = [c for c in stats["comparisons"] if c["primary"]]
        assert [c["comparison"] for c in decided] == ["fio via agent vs bare fio"]
        assert decided[0]["decision"] in ("slower", "faster", "equivalent", "inconclusive")


def _dry_run_recorded(res: subprocess.CompletedProcess, tmp: Path) -> None:
    bodies = list((tmp / "home/.local/state/testbed/azure").rglob("requests/*.json"))
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

#: every command of the docs, as written there (comments stripped), and what to do with it
COMMANDS: dict[str, Run | Excluded] = {
    # README.md
    "make run": Run(
        "make run PLAN={toy} QUICK_PAIRS=2 && make run PLAN={toy} QUICK_PAIRS=2",
        _make_run_twice,
        fixed="took 15 min (install and build of what the quick plan never uses) and compared nothing",
    ),
    "make test": Excluded("the suite this test runs in"),
    "ansible-playbook run.yml -l sev,tdx": Run(
        check=stops_with("no Azure credentials: set AZURE_SUBSCRIPTION_ID, AZURE_CLIENT_ID, AZURE_SECRET and AZURE_TENANT"),
        fixed="the default inventory left no hosts ('--limit leaves us with no hosts to target')",
    ),
    "ansible-playbook run.yml -l kvm,hyperv": Run(
        check=stops_with("the inventory still holds the example address 192.0.2."),
        fixed="new command (the lab joins the default inventory when -l names it)",
    ),
    "testbed-report build results/RUN_A results/RUN_B --compare A:B --out reports/out/a-vs-b": Run(
        "testbed-report build {tmp}/run-a {tmp}/run-b --compare 'fio via agent:bare fio' --out {tmp}/a-vs-b",
        says("1 primary"),
    ),
    "ansible-playbook run.yml": Run("ansible-playbook run.yml -e plan={toy} -e run_id=docs-{stamp}", ok),
    "ansible-playbook run.yml -e plan=workloads/plans/standard.txt": Excluded(
        "hours (the 12 fio jobs of a minute each, pyperformance's default group); the same playbook "
        "runs at toy size above and a published plan derived small runs through it in make test-studies"
    ),
    "ansible-playbook run.yml -l kvm": Run(check=stops_with("the inventory still holds the example address")),
    "make azure-deps": Run(check=ok),
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
    ),
    # docs/azure.md
    "make azure-rehearsal AZURE_REHEARSAL_LIMIT=": Excluded(
        "the whole matrix runs in tests/azure/test_azure_rehearsal.py (same script)"
    ),
    STUDY_RUN + ' -e \'{"agent_plan_set": ["wait_s=0", "fio.runtime_s=1", "fio.ramp_s=0", '
    '"fio.size=8M", '
    '"kaggle_notebook.scale=quick", "pyperformance.benchmarks=[float]", '
    '"pyperformance.mode=fast"]}\'': Excluded(
        NO_AZURE + " (make test-studies runs this very command against the local ARM)"
    ),
    # docs/campaigns.md (four days at one run every 2 minutes: the toy runs three slots of a dd plan)
    "testbed-agent campaign workloads/plans/timeofday-dd.yml --out results/io-tod --every 2m --for 4d "
    "--label local": Run(
        "testbed-agent campaign {todtoy} --out {tmp}/io-tod --every 3s --for 7s --label local"
        " --node-exporter ''",
        says("campaign io-tod: complete"),
        group="campaign",
    ),
    "testbed-report timeofday results/io-tod --metric write_latency_s --benchmark tod_aws": Excluded(
        "needs the S1 slot's campaign (a GB written through the FaaS emulator every 2 minutes for days);"
        " the synopsis below runs the same command on the toy campaign"
    ),
    "testbed-report study S1 results/io-tod --out reports/out/s1-tod": Excluded(STUDY_RERUN),
    "testbed-report timeofday results/io-tod --metric read_seconds [--benchmark NAME] [--label L] "
    "[--unit run|observation] [--tz UTC] [--block-days 1] [--min-per-group 1] [--alpha 0.05] "
    "[--json tod.json]": Run(
        "testbed-report timeofday {tmp}/io-tod --metric read_seconds --benchmark dd_1m_128k --label local"
        " --unit run --tz UTC --block-days 1 --min-per-group 1 --alpha 0.05 --json {tmp}/tod.json",
        says("weekday"),
        group="campaign",
    ),
    # docs/faas.md and docs/plans.md: the published studies
    "testbed-agent run workloads/plans/faas-io.yml --out results/s1": Excluded(STUDY_RERUN),
    "testbed-agent campaign workloads/plans/timeofday-dd.yml --out results/tod --every 2m --for 4d": Excluded(
        STUDY_RERUN + "; docs/campaigns.md's campaign runs here at toy size"
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
    "-o rq4-fast.yml": Run(
        "testbed-agent plan derive workloads/plans/faas-factors-retention.yml --set faas.time_scale=20"
        " -o {tmp}/rq4-fast.yml",
        ok,
    ),
    "testbed-agent plan derive workloads/plans/faas-io.yml --set repetitions=2 -o s1-small.yml": Run(
        "testbed-agent plan derive workloads/plans/faas-io.yml --set repetitions=2 -o {tmp}/s1-small.yml", ok
    ),
    "testbed-agent plan derive workloads/plans/faas-factors-retention.yml --set faas.time_scale=20 "
    "--set faas.concurrency=16 -o s3-rq4-small.yml": Run(
        "testbed-agent plan derive workloads/plans/faas-factors-retention.yml --set faas.time_scale=20"
        " --set faas.concurrency=16 -o {tmp}/s3-rq4-small.yml",
        ok,
        group="derive",
    ),
    "testbed-agent plan show s3-rq4-small.yml": Run(
        "testbed-agent plan show {tmp}/s3-rq4-small.yml", ok, group="derive"
    ),
    # docs/crypto.md and docs/plans.md: the VM studies (S2 on Azure, S4 on a KVM and Hyper-V lab)
    "ansible-playbook -i inventory/lab-s4.yml run.yml -l kvm,hyperv "
    "-e plan=workloads/plans/crypto-hypervisor.yml": Excluded(LAB),
    "testbed-report study S2 results/<run_id> --out reports/out/s2": Excluded(
        "records of the S2 rerun on Azure; tests/notebooks/test_s2_report.py runs the S2 view"
        " on synthetic reruns"
    ),
    "testbed-report study S4 results/<run_id> --out reports/out/s4": Excluded(
        "records of the S4 rerun on a KVM and Hyper-V lab; tests/crypto/test_s4_report.py runs the S4 view"
        " on synthetic reruns"
    ),
    # README.md and docs/faas.md: real FaaS platforms (a target file per account) and the Lambda API
    "ansible-playbook run.yml -i inventory/local.yml -i my-faas.yml -l faas "
    "-e plan=workloads/plans/faas-io.yml": Excluded(REAL_FAAS),
    "testbed-agent plan show workloads/plans/faas-io.yml": Run(check=ok),
    "testbed-agent platform estimate workloads/plans/faas-io.yml --target lambda.yml": Excluded(REAL_FAAS),
    "testbed-agent platform dry-run workloads/plans/faas-smoke.yml --target lambda.yml": Excluded(REAL_FAAS),
    "testbed-agent platform check --target lambda.yml": Excluded(REAL_FAAS),
    "testbed-report platform-check results/REAL results/EMULATED --out reports/out/check": Excluded(
        "records of a real platform's run; reports/tests/test_platform_check_view.py builds the view"
    ),
    "testbed-agent faas deploy calcs --memory 128": Excluded(LAMBDA_API),
    'python -c \'import boto3, base64; r = boto3.client("lambda", region_name="us-east-1").invoke( '
    'FunctionName="calcs", LogType="Tail"); print(r["StatusCode"], r["Payload"].read(), '
    'base64.b64decode(r["LogResult"]).decode(), sep="\\n")\'': Excluded(LAMBDA_API),
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
    "make faas-smoke": Run(check=ok),
    "make bench": Excluded("about half an hour of measurement; run by hand, its figures are in README.md"),
    # docs/hyperv.md, docs/kvm.md
    "ansible-playbook run.yml -i inventory/lab.yml -l kvm,hyperv "
    "-e plan=workloads/plans/crypto-hypervisor.yml": Excluded(LAB),
    "ansible-playbook -i inventory/lab.yml run.yml": Excluded(LAB),
    "ansible-playbook -i inventory/lab.yml run.yml -l kvm_hosts,sev": Excluded(LAB),
    "ansible-playbook -i inventory/lab.yml playbooks/teardown_kvm.yml": Excluded(LAB),
    # docs/plans.md
    STUDY_RUN: Excluded(NO_AZURE + " (the study's six machines; make test-studies runs it derived small)"),
    STUDY_RUN + ' -e \'{"agent_plan_set": ["wait_s=0", "fio.runtime_s=1", "fio.size=8M", '
    '"notebook.scale=quick", "pyperformance.benchmarks=[float]", "pyperformance.mode=fast"]}\'': Excluded(
        NO_AZURE + " (make test-studies runs the same, derived through agent_plan_set)"
    ),
    "testbed-agent plan show workloads/plans/cc-datascience-study.txt -i inventory/azure-study.yml "
    "-i inventory/azure.constructed.yml": Run(check=says("6 machines, each running the plan")),
    # docs/report.md
    "testbed-report build results/<run_id> [results/<other_run> ...] --out reports/out/<run_id>": Run(
        "testbed-report build " + QUICK_RUN + " --out {tmp}/report", says("report: ")
    ),
    "testbed-report build results/2026-11-22T0400 results/baselines --out reports/out/cvm "
    "--compare SEV-Encrypted:AMD-Baseline --compare TDX-Encrypted:Intel-Baseline": Run(
        "testbed-report build {tmp}/cvm-results/2026-11-22T0400 {tmp}/cvm-results/baselines"
        " --out {tmp}/cvm --compare SEV-Encrypted:AMD-Baseline --compare TDX-Encrypted:Intel-Baseline",
        says("SEV-Encrypted vs AMD-Baseline|comparisons"),
        group="cvm",
    ),
    "make report RESULTS='results/<run_id> results/baselines' COMPARE='SEV-Encrypted:AMD-Baseline'": Run(
        "make report RESULTS='{tmp}/cvm-results/2026-11-22T0400 {tmp}/cvm-results/baselines'"
        " COMPARE='SEV-Encrypted:AMD-Baseline' REPORT_OUT={tmp}/make-report",
        ok,
        group="cvm",
    ),
    "testbed-report analyze --csv serverless_io.csv --metric latency_ms --by platform,memory_mb "
    "--where io=write --out reports/out/serverless-io [--tukey]": Run(
        "testbed-report analyze --csv {tmp}/serverless_io.csv --metric latency_ms --by platform,memory_mb"
        " --where io=write --out {tmp}/serverless-io --tukey",
        ok,
    ),
    "testbed-report export results/<run_id> [more ...] --csv obs.csv": Run(
        "testbed-report export " + QUICK_RUN + " --csv {tmp}/obs.csv", ok
    ),
    DESIGN: Run(DESIGN + " --sets 30", says("design: ", "simulated through the report's analysis")),
    # the toy reports have one machine a label: no machine spread to plan from, no look to take
    "testbed-report design --from reports/out/<run_id>/stats.json --effect 3": Run(
        "testbed-report design --from {tmp}/cvm/stats.json --effect 3 --sets 30",
        stops_with("no machine spread measured"),
        group="cvm",
    ),
    "testbed-report sequential results/<run_id> --compare SEV-Encrypted:AMD-Baseline --looks 3,6 "
    "--max-machines 12": Run(
        "testbed-report sequential {tmp}/cvm-results --compare SEV-Encrypted:AMD-Baseline --looks 3,6 "
        "--max-machines 12",
        stops_with("the results hold 1"),
    ),
}


def _logical_lines(body: str) -> list[tuple[int, str]]:
    """(index of its first line, text) of each shell line: backslash continuations joined, and so
    are lines inside an open single quote (a JSON argument spread over lines)."""
    out: list[tuple[int, str]] = []
    buf, start = "", 0
    for k, line in enumerate(body.splitlines()):
        if not buf:
            start = k
        buf = f"{buf} {line.strip()}" if buf else line
        if buf.endswith("\\"):
            buf = buf[:-1]
            continue
        if buf.count("'") % 2:
            continue
        out.append((start, buf))
        buf = ""
    if buf:
        out.append((start, buf))
    return out


def doc_commands() -> dict[str, list[str]]:
    """{command: ["file:line", ...]} of every toolkit command in a fenced shell block."""
    found: dict[str, list[str]] = {}
    for path in DOCS:
        text = path.read_text()
        for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
            if m.group(1) not in ("", "sh", "bash", "console", "shell"):
                continue
            first = text[: m.start(2)].count("\n") + 1
            for k, line in _logical_lines(m.group(2)):
                cmd = re.sub(r"\s+#\s.*$", "", line.strip()).removeprefix("$ ").strip()
                if cmd.startswith(PREFIXES) and not cmd.startswith("ansible-playbook $INV"):
                    where = f"{path.relative_to(ROOT)}:{first + k}"
                    found.setdefault(" ".join(cmd.split()), []).append(where)
    return found


def _free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _prepare(tmp: Path) -> dict[str, str]:
    """The toy data the placeholders stand for, and the environment the commands run in."""
    home = tmp / "home"
    (home / ".ssh").mkdir(parents=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(home / ".ssh/id_ed25519")], check=True
    )
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
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("AZURE_", "ANSIBLE_AZURE", "TESTBED_AZURE"))
    }
    env |= {
        "HOME": str(home),
        "AZURE_CONFIG_DIR": str(home / ".azure"),
        "PATH": f"{VENV_BIN}:{env.get('PATH', '/usr/bin:/bin')}",
        "TESTBED_FAAS_URL": f"http://127.0.0.1:{port}",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
    }
    return {
        "tmp": str(tmp),
        "toy": str(tmp / "toy.yml"),
        "todtoy": str(tmp / "tod-toy.yml"),
        "port": str(port),
        "stamp": str(int(time.time())),
        **env,
    }


def _shell(cmd: str, env: dict[str, str], timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", cmd], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def _fill(text: str, fill: dict[str, str]) -> str:
    for key, value in fill.items():
        text = text.replace("{" + key + "}", value)
    return text


def run_all(tmp: Path) -> list[Outcome]:
    """Run every Run entry (groups in order); return the outcomes of all commands."""
    values = _prepare(tmp)
    env = {k: v for k, v in values.items() if k.isupper() or k in os.environ}
    fill = {k: v for k, v in values.items() if not k.isupper()}
    outcomes = []
    serve = None
    try:
        for cmd, entry in COMMANDS.items():
            out = Outcome(cmd, entry)
            outcomes.append(out)
            if isinstance(entry, Excluded):
                continue
            text = _fill(entry.as_run or cmd, fill)
            if text.endswith("faas serve --profile aws-lambda --port 8650 &"):
                argv = text.removesuffix(" &").replace("--port 8650", f"--port {fill['port']}").split()
                argv[0] = str(ROOT / argv[0])
                serve = subprocess.Popen(
                    argv, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
                )
                deadline = time.monotonic() + 60
                while _free(int(fill["port"])) and time.monotonic() < deadline and serve.poll() is None:
                    time.sleep(0.2)
                out.result = subprocess.CompletedProcess(argv, 0 if serve.poll() is None else 1, "", "")
                continue
            if "faas invoke" in text:  # the quick start invokes twice: first cold, then warm
                first = _shell(text, env)
                out.result = _shell(text, env)
                out.result.stdout = first.stdout + out.result.stdout
                continue
            out.result = _shell(text, env, timeout=1800)
    finally:
        if serve is not None:
            serve.terminate()
            serve.wait(timeout=30)
    return outcomes


@pytest.fixture(scope="module")
def walk(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Outcome]]:
    found = doc_commands()
    missing = {c: p for c, p in found.items() if c not in COMMANDS}
    assert not missing, f"commands in the docs that are neither run nor excluded here: {missing}"
    stale = [c for c in COMMANDS if c not in found]
    assert not stale, f"entries here that no doc shows any more: {stale}"
    tmp = tmp_path_factory.mktemp("docs")
    done = run_all(tmp)
    for out in done:
        out.places = found[out.command]
    yield tmp, {o.command: o for o in done}
    for out in done:  # results and reports that `make run` and `make faas-smoke` write in the checkout
        for m in re.finditer(r"report: (\S+)/index\.html", out.result.stdout if out.result else ""):
            shutil.rmtree(m.group(1), ignore_errors=True)
            shutil.rmtree(ROOT / "results" / Path(m.group(1)).name, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("command", [c for c, e in COMMANDS.items() if isinstance(e, Run)])
def test_the_command_works_as_written(command: str, walk: tuple[Path, dict[str, Outcome]]) -> None:
    tmp, done = walk
    out = done[command]
    assert out.result is not None and isinstance(out.entry, Run)
    (out.entry.check or ok)(out.result, tmp)


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


if __name__ == "__main__":  # the counts for the report
    runs = [e for e in COMMANDS.values() if isinstance(e, Run)]
    print(
        f"{len(COMMANDS)} documented commands: {sum(1 for e in runs if not e.fixed)} run as written, "
        f"{sum(1 for e in runs if e.fixed)} run after a fix, "
        f"{len(COMMANDS) - len(runs)} excluded"
    )
    for cmd, e in COMMANDS.items():
        tag = (
            "excluded: " + e.reason
            if isinstance(e, Excluded)
            else ("fixed: " + e.fixed if e.fixed else "as written")
        )
        print(f"- {cmd}\n    {tag}")
